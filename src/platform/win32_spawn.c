/*
 * win32_spawn.c -- running the C compiler on Windows so that nothing of it
 * outlives us (platform.h: tk_spawn_guarded).
 *
 * Windows has what Linux needs a guardian process for: a job object.  The
 * compiler starts suspended, joins a job made for this compile whose limit
 * is JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, and only then runs; everything it
 * starts (clang's own processes, a wrapper's commands) joins the same job.
 * The job's only handle is ours and is not inherited, so when this process
 * ends, however it ends (TerminateProcess, a crash, the task manager), the
 * system closes the handle and kills the whole job.  After a normal end we
 * terminate the job too, as the POSIX side kills what is left of the
 * compiler's process group.
 *
 * Its output comes back through a pipe whose write end is the only handle
 * the child inherits (PROC_THREAD_ATTRIBUTE_HANDLE_LIST): another thread
 * starting a process at the same moment cannot inherit it and hold the pipe
 * open.  Standard input is NUL.  Ctrl-C: a console's Ctrl-C reaches every
 * process of the console's group, so an interruptible compile stays in
 * ours and gets it; any other starts in a new process group, which ignores
 * Ctrl-C, and runs to its end.  A compiler ended by Ctrl-C
 * (STATUS_TK_CTRL_C_EXIT) reports as ended by SIGINT.
 *
 * Arguments are quoted for the C runtime's parser (CommandLineToArgvW's
 * rules): quotes around an argument with a blank or a quote, backslashes
 * doubled before a quote.  No shell is involved.
 */
#include "platform/win32.h"

#if TK_WINDOWS
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "runtime/runtime.h"

#define TK_CTRL_C_EXIT 0xC000013AUL

/* argv as one command line, quoted (tack_malloc'd UTF-16). */
static wchar_t *command_line(char **argv) {
    size_t cap = 1;
    for (int i = 0; argv[i]; i++) cap += 3 + 2 * strlen(argv[i]) * 2;
    char *line = tack_malloc(cap), *o = line;
    if (!line) return NULL;
    for (int i = 0; argv[i]; i++) {
        const char *a = argv[i];
        if (i) *o++ = ' ';
        int quote = !*a || strpbrk(a, " \t\n\v\"") != NULL;
        if (quote) *o++ = '"';
        for (const char *p = a;; p++) {
            size_t slashes = 0;
            while (*p == '\\') {
                p++;
                slashes++;
            }
            if (!*p) { /* before the closing quote, backslashes are doubled */
                for (size_t k = 0; k < (quote ? 2 * slashes : slashes); k++) *o++ = '\\';
                break;
            }
            if (*p == '"') {
                for (size_t k = 0; k < 2 * slashes + 1; k++) *o++ = '\\';
                *o++ = '"';
            } else {
                for (size_t k = 0; k < slashes; k++) *o++ = '\\';
                *o++ = *p;
            }
        }
        if (quote) *o++ = '"';
    }
    *o = 0;
    wchar_t *w = tk_win_wide(line);
    tack_free(line);
    return w;
}

int tk_spawn_guarded(char **argv, tk_fd dir, char *out, size_t cap, size_t *len, int *status, int forward_int) {
    *len = 0;
    out[0] = 0;
    *status = 0;
    int err = 0;
    wchar_t *cmd = command_line(argv), *prog = tk_win_wide(argv[0]);
    wchar_t *cwd = dir != TK_NO_FD ? tk_win_handle_path((HANDLE)dir) : NULL;
    HANDLE rd = NULL, wr = NULL, nul = INVALID_HANDLE_VALUE, job = NULL;
    LPPROC_THREAD_ATTRIBUTE_LIST attrs = NULL;
    PROCESS_INFORMATION pi;
    memset(&pi, 0, sizeof pi);
    SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
    if (!cmd || !prog || (dir != TK_NO_FD && !cwd)) {
        err = ENOMEM;
        goto done;
    }
    if (!CreatePipe(&rd, &wr, &inherit, 0) || !SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0)) {
        err = tk_win_errno(GetLastError());
        goto done;
    }
    nul = CreateFileW(L"NUL", GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, &inherit, OPEN_EXISTING, 0, NULL);
    job = CreateJobObjectW(NULL, NULL);
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limit;
    memset(&limit, 0, sizeof limit);
    limit.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    if (nul == INVALID_HANDLE_VALUE || !job ||
        !SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limit, sizeof limit)) {
        err = tk_win_errno(GetLastError());
        goto done;
    }
    SIZE_T asize = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &asize);
    attrs = malloc(asize);
    HANDLE handles[2] = {wr, nul};
    if (!attrs || !InitializeProcThreadAttributeList(attrs, 1, 0, &asize) ||
        !UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, handles, sizeof handles, NULL, NULL)) {
        err = attrs ? tk_win_errno(GetLastError()) : ENOMEM;
        if (attrs) {
            free(attrs);
            attrs = NULL;
        }
        goto done;
    }
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof si);
    si.StartupInfo.cb = sizeof si;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = nul;
    si.StartupInfo.hStdOutput = wr;
    si.StartupInfo.hStdError = wr;
    si.lpAttributeList = attrs;
    DWORD flags = CREATE_SUSPENDED | CREATE_NO_WINDOW | EXTENDED_STARTUPINFO_PRESENT | CREATE_UNICODE_ENVIRONMENT;
    if (!forward_int) flags |= CREATE_NEW_PROCESS_GROUP;
    if (!CreateProcessW(prog, cmd, NULL, NULL, TRUE, flags, NULL, cwd, &si.StartupInfo, &pi)) {
        err = tk_win_errno(GetLastError());
        goto done;
    }
    if (!AssignProcessToJobObject(job, pi.hProcess)) {
        err = tk_win_errno(GetLastError());
        TerminateProcess(pi.hProcess, 1);
        goto done;
    }
    ResumeThread(pi.hThread);
    CloseHandle(wr); /* ours: the pipe ends when the job's last writer does */
    wr = NULL;
    size_t n = 0;
    for (;;) { /* the first cap - 1 bytes kept, the rest read and dropped */
        char chunk[512];
        DWORD got = 0;
        if (!ReadFile(rd, chunk, sizeof chunk, &got, NULL) || got == 0) break;
        size_t keep = got < cap - 1 - n ? got : cap - 1 - n;
        memcpy(out + n, chunk, keep);
        n += keep;
    }
    out[n] = 0;
    *len = n;
    WaitForSingleObject(pi.hProcess, INFINITE);
    DWORD code = 0;
    GetExitCodeProcess(pi.hProcess, &code);
    *status = code == TK_CTRL_C_EXIT ? -SIGINT : (int)(code & 0x7fffffffUL);
done:
    if (job) {
        TerminateJobObject(job, 1); /* what the compiler left running */
        CloseHandle(job);
    }
    if (pi.hThread) CloseHandle(pi.hThread);
    if (pi.hProcess) CloseHandle(pi.hProcess);
    if (attrs) {
        DeleteProcThreadAttributeList(attrs);
        free(attrs);
    }
    if (rd) CloseHandle(rd);
    if (wr) CloseHandle(wr);
    if (nul != INVALID_HANDLE_VALUE) CloseHandle(nul);
    tack_free(cmd);
    tack_free(prog);
    tack_free(cwd);
    return err;
}

#else
typedef int tk_win32_spawn_unused; /* ISO C wants something in a translation unit */
#endif
