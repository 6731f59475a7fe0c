/*
 * win32_files.c -- the kernel cache's files on Windows (platform.h).
 *
 * The rules are kcache.c's and docs/security.md's; Windows states them in
 * owners and access control lists instead of uids and mode bits:
 *
 *   - a directory Tack creates gets a protected DACL (nothing inherited)
 *     granting full control to the user, SYSTEM and the Administrators
 *     group only -- what 0700 says on POSIX;
 *   - the path is resolved once (GetFinalPathNameByHandle: junctions and
 *     symbolic links followed, as realpath does), then walked from its root
 *     one component at a time with FILE_FLAG_OPEN_REPARSE_POINT, refusing
 *     any component that is itself a reparse point (a junction or link
 *     planted after the resolution).  Each component must be owned by the
 *     user or by the system (SYSTEM, Administrators, TrustedInstaller: the
 *     owners of C:\ and C:\Users, as root owns / and /home), and no one
 *     else may delete, rename or re-permission entries in it
 *     (FILE_DELETE_CHILD, DELETE, WRITE_DAC, WRITE_OWNER, GENERIC_ALL) --
 *     the sticky bit's promise, which C:\ keeps: users may create folders
 *     there, not remove others'.  The cache directory itself must be the
 *     user's, and no one else may add to it either;
 *   - the directory stays open without FILE_SHARE_DELETE for as long as
 *     the cache is in use, so it cannot be renamed or removed meanwhile, and
 *     every entry is reached by the path that handle resolves to, opened
 *     with FILE_FLAG_OPEN_REPARSE_POINT: a reparse point is refused (ELOOP),
 *     never followed;
 *   - an entry must be a file on disk (not a directory, pipe or device),
 *     owned by the user, writable by no one else (the same DACL test);
 *     Tack creates its files with an owner-only DACL;
 *   - build locks are LockFileEx, released when the handle closes (and by
 *     the system when the process dies).
 */
#include "platform/win32.h"

#if TK_WINDOWS
#include <errno.h>
#include <aclapi.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "runtime/runtime.h"

#define KC_WHY " (loading cached kernels runs their code; set TACK_CACHE_DIR to a directory only you can write)"

/* What others may not do to a directory on the cache's path: remove,
 * rename or re-permission what is in it, or the directory itself. */
#define REPLACE_RIGHTS (FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_ALL)
/* ... and to the cache directory or an entry: anything that writes. */
#define WRITE_RIGHTS \
    (REPLACE_RIGHTS | FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES | GENERIC_WRITE)

static int set_errno(void) { return errno = tk_win_errno(GetLastError()); }

static int is_sid(PSID sid, const char *text) {
    char *s = NULL;
    int same = 0;
    if (ConvertSidToStringSidA(sid, &s)) {
        same = strcmp(s, text) == 0;
        LocalFree(s);
    }
    return same;
}

/* The system's own principals, trusted as root is on POSIX. */
static int is_system(PSID sid) {
    return IsWellKnownSid(sid, WinLocalSystemSid) || IsWellKnownSid(sid, WinBuiltinAdministratorsSid) ||
           is_sid(sid, "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"); /* TrustedInstaller */
}

/* 0 the user's, 1 the system's, 2 another's, -1 unknown; and whether an
 * ACE that applies to the object lets someone other than the user and the
 * system have any of `rights` (a NULL DACL lets everyone). */
static int security_of(HANDLE h, DWORD rights, int *others) {
    PSID owner = NULL;
    PACL dacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    *others = 1;
    if (GetSecurityInfo(h, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION, &owner, NULL, &dacl,
                        NULL, &sd) != ERROR_SUCCESS)
        return -1;
    PSID me = tk_win_user_sid();
    int kind = !owner ? -1 : me && EqualSid(owner, me) ? 0 : is_system(owner) ? 1 : 2;
    if (dacl) {
        *others = 0;
        for (DWORD i = 0; i < dacl->AceCount; i++) {
            ACE_HEADER *ace = NULL;
            if (!GetAce(dacl, i, (void **)&ace) || ace->AceType != ACCESS_ALLOWED_ACE_TYPE) continue;
            if (ace->AceFlags & INHERIT_ONLY_ACE) continue; /* for what is created below, not this object */
            ACCESS_ALLOWED_ACE *a = (ACCESS_ALLOWED_ACE *)ace;
            PSID who = (PSID)&a->SidStart;
            if ((a->Mask & rights) == 0 || (me && EqualSid(who, me)) || is_system(who)) continue;
            if (IsWellKnownSid(who, WinCreatorOwnerSid) || is_sid(who, "S-1-3-4")) { /* OWNER RIGHTS */
                if (kind == 0 || kind == 1) continue; /* the owner is the user or the system */
            }
            *others = 1;
            break;
        }
    }
    LocalFree(sd);
    return kind;
}

/* An owner-only security descriptor (the user, SYSTEM, Administrators),
 * for what Tack creates; LocalFree it. */
static PSECURITY_DESCRIPTOR private_sd(int dir) {
    PSID me = tk_win_user_sid();
    wchar_t *sid = NULL;
    if (!me || !ConvertSidToStringSidW(me, &sid)) return NULL;
    wchar_t sddl[256];
    const wchar_t *inherit = dir ? L"OICI" : L"";
    swprintf(sddl, sizeof sddl / sizeof sddl[0], L"D:P(A;%ls;FA;;;%ls)(A;%ls;FA;;;SY)(A;%ls;FA;;;BA)", inherit, sid,
             inherit, inherit);
    LocalFree(sid);
    PSECURITY_DESCRIPTOR sd = NULL;
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, &sd, NULL)) return NULL;
    return sd;
}

/* The length of the root of a full path: "C:\" or "\\server\share\". */
static size_t root_len(const wchar_t *w) {
    if (w[0] && w[1] == L':' && w[2] == L'\\') return 3;
    if (w[0] == L'\\' && w[1] == L'\\') {
        size_t i = 2;
        for (int parts = 0; w[i] && parts < 2; i++)
            if (w[i] == L'\\') parts++;
        return i;
    }
    return 0;
}

static tack_status mkdirs(wchar_t *w, const char *shown) {
    size_t r = root_len(w);
    if (!r) return tack_set_error(TACK_ERR_RUNTIME, "the kernel cache directory '%s' is not an absolute path", shown);
    PSECURITY_DESCRIPTOR sd = private_sd(1);
    SECURITY_ATTRIBUTES sa = {sizeof sa, sd, FALSE};
    tack_status st = TACK_OK;
    for (wchar_t *p = w + r;; p++) {
        if (*p && *p != L'\\') continue;
        wchar_t c = *p;
        *p = 0;
        if (p > w + r && !CreateDirectoryW(w, sd ? &sa : NULL) && GetLastError() != ERROR_ALREADY_EXISTS) {
            int err = set_errno();
            st = tack_set_error(TACK_ERR_RUNTIME, "cannot create the kernel cache directory %s: %s", shown, strerror(err));
        }
        *p = c;
        if (st != TACK_OK || !c) break;
    }
    if (sd) LocalFree(sd);
    return st;
}

static HANDLE open_dir(const wchar_t *w, int follow) {
    return CreateFileW(w, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | READ_CONTROL, FILE_SHARE_READ | FILE_SHARE_WRITE,
                       NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | (follow ? 0 : FILE_FLAG_OPEN_REPARSE_POINT), NULL);
}

/* One step of the walk: the directory `h`, named by `shown`. */
static tack_status check_step(HANDLE h, const char *shown, int last) {
    BY_HANDLE_FILE_INFORMATION fi;
    if (!GetFileInformationByHandle(h, &fi) || !(fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
        return tack_set_error(TACK_ERR_RUNTIME, "the kernel cache path %s is not a directory", shown);
    if (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory: %s became a junction or symbolic link" KC_WHY, shown);
    int others = 1;
    int kind = security_of(h, last ? WRITE_RIGHTS : REPLACE_RIGHTS, &others);
    if (kind < 0) return tack_set_error(TACK_ERR_RUNTIME, "cannot read the owner and permissions of %s" KC_WHY, shown);
    if (kind == 2 || (last && kind != 0))
        return tack_set_error(TACK_ERR_RUNTIME, "refusing the kernel cache directory: %s is owned by another user" KC_WHY,
                              shown);
    if (others && last)
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory %s: others may write it; give only yourself access "
                              "(icacls \"%s\" /inheritance:r /grant:r \"%%USERNAME%%:(OI)(CI)F\")" KC_WHY,
                              shown, shown);
    if (others)
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory: others may delete or rename what is in %s, so "
                              "another user could replace the cache" KC_WHY,
                              shown);
    return TACK_OK;
}

tack_status tk_dir_open_checked(const char *path, tk_fd *out, char **real_out) {
    *out = TK_NO_FD;
    *real_out = NULL;
    wchar_t *given = tk_win_wide(path), full[32768];
    DWORD n = given ? GetFullPathNameW(given, 32768, full, NULL) : 0;
    tack_free(given);
    if (n == 0 || n >= 32768) return tack_set_error(TACK_ERR_RUNTIME, "cannot use the kernel cache directory %s", path);
    tack_status st = mkdirs(full, path);
    if (st != TACK_OK) return st;
    HANDLE h = open_dir(full, 1);
    wchar_t *real = h != INVALID_HANDLE_VALUE ? tk_win_handle_path(h) : NULL;
    if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
    if (!real) return tack_set_error(TACK_ERR_RUNTIME, "cannot use the kernel cache directory %s: %s", path,
                                     strerror(set_errno()));
    char shown[4 * MAX_PATH];
    if (tk_win_utf8(real, shown, sizeof shown) != 0) snprintf(shown, sizeof shown, "%s", path);
    size_t r = root_len(real);
    HANDLE cur = INVALID_HANDLE_VALUE;
    if (r && real[r]) { /* the root ("C:\"): the system's, and no one else may replace what is in it */
        wchar_t c = real[r];
        real[r] = 0;
        cur = open_dir(real, 0);
        if (cur == INVALID_HANDLE_VALUE) st = tack_set_error(TACK_ERR_RUNTIME, "cannot open %ls: %s", real, strerror(set_errno()));
        else st = check_step(cur, "the drive's root", 0);
        real[r] = c;
    }
    for (wchar_t *p = real + (r ? r : wcslen(real)); st == TACK_OK; p++) {
        if (*p && *p != L'\\') continue;
        wchar_t c = *p;
        *p = 0;
        HANDLE next = open_dir(real, 0);
        if (next == INVALID_HANDLE_VALUE) {
            *p = c;
            st = tack_set_error(TACK_ERR_RUNTIME, "cannot open the kernel cache directory %s: %s", shown,
                                strerror(set_errno()));
            break;
        }
        if (cur != INVALID_HANDLE_VALUE) CloseHandle(cur);
        cur = next;
        char step[4 * MAX_PATH];
        if (tk_win_utf8(real, step, sizeof step) != 0) snprintf(step, sizeof step, "%s", shown);
        st = check_step(cur, step, !c);
        *p = c;
        if (st != TACK_OK || !c) break;
    }
    if (st == TACK_OK && !(*real_out = tack_malloc(strlen(shown) + 1)))
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache");
    if (st != TACK_OK) {
        if (cur != INVALID_HANDLE_VALUE) CloseHandle(cur);
        tack_free(real);
        return st;
    }
    memcpy(*real_out, shown, strlen(shown) + 1);
    tack_free(real);
    *out = (tk_fd)cur;
    return TACK_OK;
}

char *tk_default_cache_dir(void) {
    const char *base = getenv("LOCALAPPDATA");
    if (!base || !*base)
        return tack_set_error(TACK_ERR_RUNTIME, "no kernel cache directory: set TACK_CACHE_DIR (or LOCALAPPDATA)"), NULL;
    size_t n = strlen(base) + 7;
    char *path = tack_malloc(n);
    if (!path) return tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache"), NULL;
    snprintf(path, n, "%s\\tack", base);
    return path;
}

/* `name` in the open directory `dir`, as a UTF-16 path (tack_malloc'd);
 * NULL with errno set. */
static wchar_t *path_in(tk_fd dir, const char *name) {
    if (!*name || strpbrk(name, "\\/:") || !strcmp(name, ".") || !strcmp(name, "..")) {
        errno = EINVAL;
        return NULL;
    }
    wchar_t *d = tk_win_handle_path((HANDLE)dir), *nm = tk_win_wide(name), *w = NULL;
    if (d && nm) {
        size_t n = wcslen(d) + 1 + wcslen(nm) + 1;
        if ((w = tack_malloc(n * sizeof(wchar_t)))) swprintf(w, n, L"%ls\\%ls", d, nm);
    }
    if (!w) errno = ENOMEM;
    tack_free(d);
    tack_free(nm);
    return w;
}

tk_fd tk_file_open(tk_fd dir, const char *name, int flags, int *err) {
    wchar_t *w = path_in(dir, name);
    if (!w) {
        *err = errno;
        return TK_NO_FD;
    }
    DWORD access = READ_CONTROL | FILE_READ_ATTRIBUTES;
    access |= (flags & TK_F_RDWR) ? GENERIC_READ | GENERIC_WRITE : (flags & TK_F_WRITE) ? GENERIC_WRITE : GENERIC_READ;
    DWORD how = !(flags & TK_F_CREATE) ? OPEN_EXISTING : (flags & TK_F_EXCL) ? CREATE_NEW : OPEN_ALWAYS;
    PSECURITY_DESCRIPTOR sd = (flags & TK_F_CREATE) ? private_sd(0) : NULL;
    SECURITY_ATTRIBUTES sa = {sizeof sa, sd, FALSE};
    HANDLE h = CreateFileW(w, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, sd ? &sa : NULL, how,
                           FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    tack_free(w);
    if (sd) LocalFree(sd);
    if (h == INVALID_HANDLE_VALUE) {
        *err = set_errno();
        return TK_NO_FD;
    }
    BY_HANDLE_FILE_INFORMATION fi;
    if (GetFileInformationByHandle(h, &fi) && (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
        CloseHandle(h); /* a link or junction: refused, never followed */
        *err = errno = ELOOP;
        return TK_NO_FD;
    }
    *err = 0;
    return (tk_fd)h;
}

int tk_file_block(tk_fd fd) {
    (void)fd; /* opening a named pipe here does not block: nothing to undo */
    return 0;
}

static int64_t unix_seconds(FILETIME t) {
    uint64_t v = ((uint64_t)t.dwHighDateTime << 32) | t.dwLowDateTime;
    return (int64_t)(v / 10000000) - 11644473600LL;
}

int tk_file_info_of(tk_fd fd, tk_file_info *info) {
    HANDLE h = (HANDLE)fd;
    BY_HANDLE_FILE_INFORMATION fi;
    if (!GetFileInformationByHandle(h, &fi)) {
        set_errno();
        return -1;
    }
    int others = 1;
    int kind = security_of(h, WRITE_RIGHTS, &others);
    info->regular = GetFileType(h) == FILE_TYPE_DISK &&
                    !(fi.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT));
    info->dir = (fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !(fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT);
    info->ours = kind == 0;
    info->others_write = others;
    info->size = ((uint64_t)fi.nFileSizeHigh << 32) | fi.nFileSizeLow;
    info->mtime_s = unix_seconds(fi.ftLastWriteTime);
    info->dev = fi.dwVolumeSerialNumber;
    info->ino = ((uint64_t)fi.nFileIndexHigh << 32) | fi.nFileIndexLow;
    return 0;
}

int tk_file_info_at(tk_fd dir, const char *name, tk_file_info *info) {
    wchar_t *w = path_in(dir, name);
    if (!w) return -1;
    HANDLE h = CreateFileW(w, FILE_READ_ATTRIBUTES | READ_CONTROL, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    tack_free(w);
    if (h == INVALID_HANDLE_VALUE) {
        set_errno();
        return -1;
    }
    int r = tk_file_info_of((tk_fd)h, info);
    CloseHandle(h);
    return r;
}

long tk_file_pread(tk_fd fd, void *buf, size_t n, uint64_t at) {
    OVERLAPPED ov;
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)at;
    ov.OffsetHigh = (DWORD)(at >> 32);
    DWORD got = 0;
    if (n > 0x40000000) n = 0x40000000;
    if (!ReadFile((HANDLE)fd, buf, (DWORD)n, &got, &ov)) {
        if (GetLastError() == ERROR_HANDLE_EOF) return 0;
        set_errno();
        return -1;
    }
    return (long)got;
}

int tk_file_write_all(tk_fd fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        DWORD put = 0, want = n > 0x40000000 ? 0x40000000 : (DWORD)n;
        if (!WriteFile((HANDLE)fd, p, want, &put, NULL) || put == 0) {
            set_errno();
            return -1;
        }
        p += put;
        n -= put;
    }
    return 0;
}

int tk_file_append_sync(tk_fd fd, const void *buf, size_t n) {
    LARGE_INTEGER zero = {0};
    if (!SetFilePointerEx((HANDLE)fd, zero, NULL, FILE_END)) {
        set_errno();
        return -1;
    }
    if (tk_file_write_all(fd, buf, n) != 0) return -1;
    if (!FlushFileBuffers((HANDLE)fd)) {
        set_errno();
        return -1;
    }
    return 0;
}

int tk_file_close(tk_fd fd) {
    if (CloseHandle((HANDLE)fd)) return 0;
    set_errno();
    return -1;
}

int tk_file_unlink(tk_fd dir, const char *name) {
    wchar_t *w = path_in(dir, name);
    if (!w) return -1;
    BOOL ok = DeleteFileW(w);
    tack_free(w);
    if (ok) return 0;
    set_errno();
    return -1;
}

int tk_file_rename(tk_fd dir, const char *from, const char *to) {
    wchar_t *a = path_in(dir, from), *b = path_in(dir, to);
    BOOL ok = a && b && MoveFileExW(a, b, MOVEFILE_REPLACE_EXISTING);
    if (!ok && a && b) set_errno();
    tack_free(a);
    tack_free(b);
    return ok ? 0 : -1;
}

int tk_dir_list(tk_fd dir, void (*fn)(void *ctx, const char *name), void *ctx) {
    wchar_t *w = path_in(dir, "*");
    if (!w) return -1;
    WIN32_FIND_DATAW fd;
    HANDLE f = FindFirstFileExW(w, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
    tack_free(w);
    if (f == INVALID_HANDLE_VALUE) return GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : -1;
    do {
        char name[4 * MAX_PATH];
        if (wcscmp(fd.cFileName, L".") && wcscmp(fd.cFileName, L"..") &&
            tk_win_utf8(fd.cFileName, name, sizeof name) == 0)
            fn(ctx, name);
    } while (FindNextFileW(f, &fd));
    FindClose(f);
    return 0;
}

int tk_file_trylock(tk_fd fd) {
    OVERLAPPED ov;
    memset(&ov, 0, sizeof ov);
    if (LockFileEx((HANDLE)fd, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, MAXDWORD, MAXDWORD, &ov)) return 0;
    DWORD err = GetLastError();
    return err == ERROR_LOCK_VIOLATION || err == ERROR_IO_PENDING ? 1 : -1;
}

const char *tk_strerror(int err) { return strerror(err); }

#else
typedef int tk_win32_files_unused; /* ISO C wants something in a translation unit */
#endif
