/*
 * win32.h -- what the Windows files of the platform layer share: windows.h
 * itself (kept out of every other header), UTF-8 to UTF-16 conversions
 * (Tack's strings are UTF-8; the system's wide calls are the only ones that
 * reach every path), the current user's SID, and Windows errors as errno
 * values, which the rest of the core understands.
 */
#ifndef TACK_PLATFORM_WIN32_H
#define TACK_PLATFORM_WIN32_H

#include "platform/platform.h"

#if TK_WINDOWS
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

/* `s` as UTF-16 (tack_malloc'd), or NULL. */
wchar_t *tk_win_wide(const char *s);
/* `w` as UTF-8 into out[0..cap); 0 when it fitted. */
int tk_win_utf8(const wchar_t *w, char *out, size_t cap);
/* The current user's SID (owned by this file; valid for the process's life). */
PSID tk_win_user_sid(void);
/* GetLastError's value as an errno value (ENOENT, EACCES, EEXIST, ...). */
int tk_win_errno(DWORD err);
/* The full path of an open file or directory, UTF-16, without the \\?\
 * prefix where it is a plain drive path (tack_malloc'd). */
wchar_t *tk_win_handle_path(HANDLE h);
#endif

#endif
