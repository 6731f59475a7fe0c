/*
 * win32.c -- the platform layer on Windows: threads, the clock, the machine,
 * dynamic loading and the environment (platform.h).
 *
 * Locks are slim reader/writer locks taken exclusively and conditions are
 * CONDITION_VARIABLEs: both are one pointer, zero when initialized, so they
 * need no destruction and can be initialized statically, as pthreads' can.
 * One-time initialization is InitOnceExecuteOnce.  The pool's membership
 * key, whose destructor runs when a member thread ends, is fiber-local
 * storage (FlsAlloc), the one Windows slot with a destructor; the
 * destructors are called through a table of our own, since a callback's
 * calling convention is the system's.  Windows has no fork, so there is
 * nothing to do after one.
 *
 * Libraries load by their UTF-16 path, with their own folder searched for
 * their dependencies (LOAD_WITH_ALTERED_SEARCH_PATH) when the path is
 * absolute; the message of a failure is the system's, kept per thread.
 */
#include "platform/win32.h"

#if TK_WINDOWS
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime.h"

_Static_assert(sizeof(SRWLOCK) == sizeof(tk_mutex_t), "tk_mutex_t mirrors SRWLOCK");
_Static_assert(sizeof(CONDITION_VARIABLE) == sizeof(tk_cond_t), "tk_cond_t mirrors CONDITION_VARIABLE");
_Static_assert(sizeof(INIT_ONCE) == sizeof(tk_once_t), "tk_once_t mirrors INIT_ONCE");

/* ------------------------------------------------------------- threads */
void tk_mutex_init(tk_mutex_t *m) { InitializeSRWLock((PSRWLOCK)m); }
void tk_mutex_destroy(tk_mutex_t *m) { (void)m; }
void tk_mutex_lock(tk_mutex_t *m) { AcquireSRWLockExclusive((PSRWLOCK)m); }
int tk_mutex_trylock(tk_mutex_t *m) { return TryAcquireSRWLockExclusive((PSRWLOCK)m) ? 0 : EBUSY; }
void tk_mutex_unlock(tk_mutex_t *m) { ReleaseSRWLockExclusive((PSRWLOCK)m); }
void tk_cond_init(tk_cond_t *c) { InitializeConditionVariable((PCONDITION_VARIABLE)c); }
void tk_cond_wait(tk_cond_t *c, tk_mutex_t *m) {
    SleepConditionVariableSRW((PCONDITION_VARIABLE)c, (PSRWLOCK)m, INFINITE, 0);
}
void tk_cond_signal(tk_cond_t *c) { WakeConditionVariable((PCONDITION_VARIABLE)c); }
void tk_cond_broadcast(tk_cond_t *c) { WakeAllConditionVariable((PCONDITION_VARIABLE)c); }

typedef struct once_box {
    void (*fn)(void);
} once_box;

static BOOL CALLBACK once_run(PINIT_ONCE once, PVOID param, PVOID *context) {
    (void)once;
    (void)context;
    ((once_box *)param)->fn();
    return TRUE;
}

void tk_once(tk_once_t *o, void (*fn)(void)) {
    once_box box = {fn};
    InitOnceExecuteOnce((PINIT_ONCE)o, once_run, &box, NULL);
}

/* Fiber-local slots with destructors: the system calls key_gone_N, which
 * calls the destructor registered for slot N. */
#define TK_MAX_KEYS 4
static void (*key_destructor[TK_MAX_KEYS])(void *);
static LONG keys_made;
#define KEY_GONE(n) \
    static VOID WINAPI key_gone_##n(PVOID v) { \
        if (v && key_destructor[n]) key_destructor[n](v); \
    }
KEY_GONE(0)
KEY_GONE(1)
KEY_GONE(2)
KEY_GONE(3)
static PFLS_CALLBACK_FUNCTION const key_gone[TK_MAX_KEYS] = {key_gone_0, key_gone_1, key_gone_2, key_gone_3};

int tk_key_create(tk_key_t *k, void (*destructor)(void *)) {
    LONG n = InterlockedIncrement(&keys_made) - 1;
    if (n >= TK_MAX_KEYS) return EAGAIN;
    key_destructor[n] = destructor;
    DWORD slot = FlsAlloc(key_gone[n]);
    if (slot == FLS_OUT_OF_INDEXES) return EAGAIN;
    k->k = slot;
    return 0;
}

int tk_key_set(tk_key_t k, void *value) { return FlsSetValue((DWORD)k.k, value) ? 0 : EINVAL; }

typedef struct thread_start {
    void *(*fn)(void *);
    void *arg;
} thread_start;

static DWORD WINAPI thread_run(LPVOID p) {
    thread_start s = *(thread_start *)p;
    free(p);
    s.fn(s.arg);
    return 0;
}

int tk_thread_start(void *(*fn)(void *), void *arg) {
    thread_start *s = malloc(sizeof *s);
    if (!s) return ENOMEM;
    s->fn = fn;
    s->arg = arg;
    HANDLE h = CreateThread(NULL, 0, thread_run, s, 0, NULL);
    if (!h) {
        free(s);
        return EAGAIN;
    }
    CloseHandle(h); /* detached: the thread runs on without its handle */
    return 0;
}

void tk_atfork_child(void (*child)(void)) { (void)child; }

int tk_cpu_count(void) {
    DWORD_PTR proc = 0, sys = 0;
    if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys) && proc) {
        int n = 0;
        for (; proc; proc &= proc - 1) n++;
        return n;
    }
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (int)n : 1;
}

void tk_advise_huge_pages(void *p, size_t n) {
    (void)p;
    (void)n;
}

uint64_t tk_physical_memory(void) {
    MEMORYSTATUSEX m;
    m.dwLength = sizeof m;
    return GlobalMemoryStatusEx(&m) ? (uint64_t)m.ullTotalPhys : 0;
}

int tk_machine(char *out, size_t cap) {
    SYSTEM_INFO si;
    GetNativeSystemInfo(&si);
    const char *name = si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64   ? "AMD64"
                       : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64 ? "ARM64"
                       : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_INTEL ? "x86"
                                                                                   : NULL;
    if (!name) return -1;
    snprintf(out, cap, "%s", name);
    return 0;
}

int tk_cpu_brand(char *out, size_t cap) {
    DWORD size = (DWORD)cap;
    if (!cap) return -1;
    if (RegGetValueA(HKEY_LOCAL_MACHINE, "HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0", "ProcessorNameString",
                     RRF_RT_REG_SZ, NULL, out, &size) != ERROR_SUCCESS)
        return -1;
    out[cap - 1] = 0;
    return 0;
}

long tk_getpid(void) { return (long)GetCurrentProcessId(); }

int tk_signal_is_interrupt(int sig) { return sig == SIGINT || sig == SIGTERM; }

/* ---------------------------------------------------------------- time */
int64_t tk_monotonic_ns(void) {
    static LARGE_INTEGER freq;
    LARGE_INTEGER now;
    if (!freq.QuadPart) QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&now);
    return (int64_t)((double)now.QuadPart * 1e9 / (double)freq.QuadPart);
}

int64_t tk_thread_cpu_ns(void) {
    FILETIME c, e, k, u;
    if (!GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u)) return 0;
    uint64_t kt = ((uint64_t)k.dwHighDateTime << 32) | k.dwLowDateTime;
    uint64_t ut = ((uint64_t)u.dwHighDateTime << 32) | u.dwLowDateTime;
    return (int64_t)(kt + ut) * 100;
}

int64_t tk_wall_s(void) { return (int64_t)time(NULL); }

int tk_sleep_ns(int64_t ns) {
    Sleep((DWORD)((ns + 999999) / 1000000));
    return 0;
}

/* ---------------------------------------------------- dynamic loading */
static _Thread_local char dl_message[512];
static _Thread_local int dl_failed;

static void dl_note(const char *what, const char *name) {
    DWORD err = GetLastError();
    char sys[300] = "";
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err, 0, sys, sizeof sys, NULL);
    sys[strcspn(sys, "\r\n")] = 0;
    snprintf(dl_message, sizeof dl_message, "%s %s: %s (error %lu)", what, name, sys, (unsigned long)err);
    dl_failed = 1;
}

void *tk_dl_open(const char *path, int flags) {
    (void)flags; /* Windows binds a library's imports when it loads */
    wchar_t *w = tk_win_wide(path);
    if (!w) {
        snprintf(dl_message, sizeof dl_message, "cannot load %s: out of memory", path);
        dl_failed = 1;
        return NULL;
    }
    HMODULE h = LoadLibraryExW(w, NULL, tk_path_is_absolute(path) ? LOAD_WITH_ALTERED_SEARCH_PATH : 0);
    tack_free(w);
    if (!h) dl_note("cannot load", path);
    return (void *)h;
}

void *tk_dl_sym(void *lib, const char *name) {
    FARPROC f = GetProcAddress((HMODULE)lib, name);
    void *p;
    if (!f) {
        dl_note("no symbol", name);
        return NULL;
    }
    memcpy(&p, &f, sizeof p); /* a data pointer as dlsym gives it */
    return p;
}

void tk_dl_close(void *lib) { FreeLibrary((HMODULE)lib); }

const char *tk_dl_error(void) {
    if (!dl_failed) return NULL;
    dl_failed = 0;
    return dl_message;
}

int tk_dl_path(void *lib, const void *addr, char *out, size_t cap) {
    HMODULE h = (HMODULE)lib;
    if (!h && !GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                                  (LPCWSTR)addr, &h))
        return -1;
    wchar_t w[MAX_PATH * 4];
    DWORD n = GetModuleFileNameW(h, w, sizeof w / sizeof w[0]);
    if (n == 0 || n >= sizeof w / sizeof w[0]) return -1;
    return tk_win_utf8(w, out, cap);
}

/* ---------------------------------------------------------- environment */
const char *tk_temp_dir(void) {
    static char dir[MAX_PATH * 3];
    wchar_t w[MAX_PATH + 1];
    DWORD n = GetTempPathW(MAX_PATH + 1, w); /* TMP, TEMP, USERPROFILE, the Windows folder */
    if (n == 0 || n > MAX_PATH || tk_win_utf8(w, dir, sizeof dir) != 0) return "C:\\Windows\\Temp";
    size_t len = strlen(dir);
    if (len > 3 && (dir[len - 1] == '\\' || dir[len - 1] == '/')) dir[len - 1] = 0;
    return dir;
}

int tk_path_is_absolute(const char *p) {
    if (!p) return 0;
    if ((p[0] == '\\' && p[1] == '\\') || (p[0] == '/' && p[1] == '/')) return 1; /* \\server\share, \\?\ */
    return ((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')) && p[1] == ':' &&
           (p[2] == '\\' || p[2] == '/');
}

int tk_is_dir(const char *path) {
    wchar_t *w = tk_win_wide(path);
    DWORD a = w ? GetFileAttributesW(w) : INVALID_FILE_ATTRIBUTES;
    tack_free(w);
    return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY);
}

static int is_file(const char *path) {
    wchar_t *w = tk_win_wide(path);
    DWORD a = w ? GetFileAttributesW(w) : INVALID_FILE_ATTRIBUTES;
    tack_free(w);
    return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

/* An existing file, as named or with ".exe" added (as a search by
 * CreateProcess would), made absolute. */
int tk_is_program(char *path, size_t cap) {
    size_t n = strlen(path);
    if (!is_file(path)) {
        if (n + 5 > cap || (n > 4 && _stricmp(path + n - 4, ".exe") == 0)) return 0;
        memcpy(path + n, ".exe", 5);
        if (!is_file(path)) {
            path[n] = 0;
            return 0;
        }
    }
    if (tk_path_is_absolute(path)) return 1;
    wchar_t *w = tk_win_wide(path), full[MAX_PATH * 2];
    DWORD got = w ? GetFullPathNameW(w, sizeof full / sizeof full[0], full, NULL) : 0;
    tack_free(w);
    return got > 0 && got < sizeof full / sizeof full[0] && tk_win_utf8(full, path, cap) == 0;
}

int tk_program_stamp(const char *path, char *real, size_t cap, long long fields[4]) {
    wchar_t *w = tk_win_wide(path);
    HANDLE h = w ? CreateFileW(w, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                               OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL)
                 : INVALID_HANDLE_VALUE;
    tack_free(w);
    if (h == INVALID_HANDLE_VALUE) return -1;
    BY_HANDLE_FILE_INFORMATION fi;
    wchar_t *full = tk_win_handle_path(h);
    int ok = GetFileInformationByHandle(h, &fi) && full && tk_win_utf8(full, real, cap) == 0;
    tack_free(full);
    CloseHandle(h);
    if (!ok) return -1;
    fields[0] = (long long)(((uint64_t)fi.nFileSizeHigh << 32) | fi.nFileSizeLow);
    fields[1] = (long long)(((uint64_t)fi.nFileIndexHigh << 32) | fi.nFileIndexLow);
    fields[2] = (long long)fi.ftLastWriteTime.dwHighDateTime;
    fields[3] = (long long)fi.ftLastWriteTime.dwLowDateTime;
    return 0;
}

const char *tk_glibc_version(void) { return ""; }

/* ------------------------------------------------------------ helpers */
wchar_t *tk_win_wide(const char *s) {
    int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
    if (n <= 0) return NULL;
    wchar_t *w = tack_malloc((size_t)n * sizeof(wchar_t));
    if (w && MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n) != n) {
        tack_free(w);
        return NULL;
    }
    return w;
}

int tk_win_utf8(const wchar_t *w, char *out, size_t cap) {
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)cap, NULL, NULL);
    return n > 0 ? 0 : -1;
}

wchar_t *tk_win_handle_path(HANDLE h) {
    DWORD n = GetFinalPathNameByHandleW(h, NULL, 0, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
    if (n == 0) return NULL;
    wchar_t *w = tack_malloc(((size_t)n + 1) * sizeof(wchar_t));
    if (!w) return NULL;
    DWORD got = GetFinalPathNameByHandleW(h, w, n + 1, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
    if (got == 0 || got > n) {
        tack_free(w);
        return NULL;
    }
    /* \\?\C:\x -> C:\x; \\?\UNC\server\x stays as it is */
    if (wcsncmp(w, L"\\\\?\\", 4) == 0 && w[5] == L':') memmove(w, w + 4, (wcslen(w + 4) + 1) * sizeof(wchar_t));
    return w;
}

PSID tk_win_user_sid(void) {
    static PSID sid;
    static INIT_ONCE once = INIT_ONCE_STATIC_INIT;
    BOOL pending = FALSE;
    if (!InitOnceBeginInitialize(&once, 0, &pending, NULL)) return NULL;
    if (!pending) return sid;
    HANDLE tok = NULL;
    PSID found = NULL;
    if (OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok)) {
        DWORD len = 0;
        GetTokenInformation(tok, TokenUser, NULL, 0, &len);
        TOKEN_USER *tu = len ? malloc(len) : NULL;
        if (tu && GetTokenInformation(tok, TokenUser, tu, len, &len)) {
            DWORD sl = GetLengthSid(tu->User.Sid);
            found = malloc(sl);
            if (found && !CopySid(sl, found, tu->User.Sid)) {
                free(found);
                found = NULL;
            }
        }
        free(tu);
        CloseHandle(tok);
    }
    sid = found;
    InitOnceComplete(&once, 0, NULL);
    return sid;
}

int tk_win_errno(DWORD err) {
    switch (err) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
        return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
        return EACCES;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
        return EEXIST;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
        return ENOMEM;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
        return ENOSPC;
    case ERROR_DIRECTORY:
        return ENOTDIR;
    case ERROR_CANT_ACCESS_FILE:
    case ERROR_CANT_RESOLVE_FILENAME:
        return ELOOP;
    default:
        return EIO;
    }
}

#else
typedef int tk_win32_unused; /* ISO C wants something in a translation unit */
#endif
