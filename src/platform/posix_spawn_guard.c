/*
 * posix_spawn_guard.c -- running a tool (the C compiler) so that nothing of
 * it outlives the process that asked for it (platform.h: tk_spawn_guarded),
 * on Linux and macOS.
 *
 * A compile runs for a second or a minute.  If the process that started it
 * is killed meanwhile (SIGKILL, the out-of-memory killer, a batch system),
 * a compiler started the ordinary way keeps running as an orphan, and so do
 * the programs it starts (cc1, as, ld; a wrapper script's own children),
 * writing into a cache directory that nobody will read.  Two things are
 * needed: every process of the compile in one process group, so that one
 * kill reaches them all, and something alive to send that kill when we die.
 * Linux gives the second as PR_SET_PDEATHSIG: a signal sent to a process
 * when its parent dies.  But it applies to one process, is not inherited by
 * its children, and must be set by that process itself -- posix_spawn runs
 * no code of ours in the child.  The choices weighed (docs/design/
 * decisions.md has them in full):
 *
 *   - vfork, prctl, exec: the compiler driver dies with us, but its own
 *     children do not; a killed gcc leaves cc1 running;
 *   - POSIX_SPAWN_SETPGROUP and killing the group on every exit path:
 *     SIGKILL has no exit path;
 *   - a shim program that sets the death signal and watches the group:
 *     right, but a second binary to install and find next to libtack,
 *     which a static link of libtack has no place for;
 *   - fork() a watcher: a copy of a large process (page tables, every
 *     pthread_atfork handler of every library, and ENOMEM where overcommit
 *     is strict), for each compile.
 *
 * So the watcher -- the guardian -- is a process that shares our memory
 * and needs no program of its own: clone(CLONE_VM | CLONE_VFORK) on a stack
 * of its own, exactly as glibc's posix_spawn starts its child, except that
 * the guardian runs to the end of the compile instead of calling exec.  The
 * calling thread is suspended until the guardian exits (CLONE_VFORK), as it
 * would be blocked reading the compiler's output anyway; the guardian reads
 * that output into the caller's buffer.  It shares the caller's memory, so
 * it must touch nothing another thread could be using: it runs with every
 * signal blocked (the caller blocks them before the clone, as posix_spawn
 * does, so no handler of ours can run in it, and it resets every caught
 * signal to its default before anything else), takes signals through a
 * signalfd, calls nothing but system calls, and leaves by _exit.  It:
 *
 *   1. asks for SIGTERM when its parent -- the calling thread -- dies
 *      (PR_SET_PDEATHSIG), then checks that the parent is still there (it
 *      may have died before the request);
 *   2. starts the compiler (vfork, exec) in a new process group (the
 *      compiler's pid is its number), with SIGKILL as its own death signal,
 *      its output into the pipe, stdin from /dev/null, the caller's signal
 *      mask;
 *   3. waits on the pipe and the signalfd.  SIGTERM with the parent gone:
 *      SIGKILL to the compiler's group, and out.  SIGINT, SIGTERM, SIGHUP,
 *      SIGQUIT otherwise (the guardian is in our process group, so Ctrl-C
 *      and a signal to the group reach it; the compiler, in a group of its
 *      own, would not see them): passed on to the compiler's group, except
 *      SIGINT when the caller's launch is not interruptible (interrupt.c:
 *      the program's own SIGINT handler, SIG_IGN, or a thread other than
 *      Python's main one), whose compile then runs to its end;
 *   4. when the compiler exits: SIGKILL to what is left of its group (seen
 *      with WNOWAIT, before the reaping frees the number for reuse), then
 *      reaps it and records its status for the caller.
 *
 * The group and the death signal are Linux's (prctl, signalfd, clone).
 * macOS has none of the three: there the compiler runs by posix_spawn in a
 * process group of its own (the plain path below, also the sanitizers'),
 * Ctrl-C passed on by the process group alone, and a compile whose caller is
 * killed with SIGKILL runs to its end as an orphan (docs/security.md says
 * so); the shim would be the way to close that.  The death signal follows the thread that cloned the
 * guardian, which here cannot end before the guardian does: it is
 * suspended until then, and dies only with the whole process.
 */
#include "platform/platform.h"

#if TK_POSIX
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#endif

#if TK_MACOS
#include <crt_externs.h>
#define TK_ENVIRON (*_NSGetEnviron()) /* a dylib cannot reach `environ` itself */
#else
extern char **environ;
#define TK_ENVIRON environ
#endif

/* A pipe whose ends close on exec (pipe2 where there is one). */
static int pipe_cloexec(int fds[2]) {
#if defined(__linux__)
    return pipe2(fds, O_CLOEXEC);
#else
    if (pipe(fds) != 0) return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
#endif
}

#define GUARD_STACK (128 * 1024)

/* Under AddressSanitizer the guardian cannot run: the sanitizer's runtime
 * intercepts vfork and follows every stack, and a process that shares our
 * memory on a stack of its own (clone with CLONE_VM) is neither, so the
 * guardian dies before it starts the compiler.  The sanitized build (the C
 * unit tests, make test-asan) runs the compiler with posix_spawn in a
 * process group of its own and without the kill-with-us guarantee, which
 * the Python tests check on the real build (test_killed_build.py). */
#if !defined(__linux__)
#define TK_SPAWN_PLAIN 1 /* macOS: no parent-death signal, no signalfd */
#elif defined(__SANITIZE_ADDRESS__)
#define TK_SPAWN_PLAIN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TK_SPAWN_PLAIN 1
#endif
#endif

#ifdef TK_SPAWN_PLAIN
static int spawn_raw(char **argv, int dirfd, char *out, size_t cap, size_t *len, int *status, int forward_int) {
    (void)forward_int;
    int fds[2];
    *len = 0;
    out[0] = 0;
    *status = 0;
    if (pipe_cloexec(fds) != 0) return errno;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    int rc = dirfd >= 0 ? posix_spawn_file_actions_addfchdir_np(&fa, dirfd) : 0;
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    if (rc == 0) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0) rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    if (rc == 0) rc = posix_spawnattr_setpgroup(&at, 0);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, &at, argv, TK_ENVIRON);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return rc;
    }
    size_t n = 0;
    char chunk[512];
    for (;;) { /* the first cap - 1 bytes kept, the rest read and dropped */
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        size_t keep = (size_t)got < cap - 1 - n ? (size_t)got : cap - 1 - n;
        memcpy(out + n, chunk, keep);
        n += keep;
    }
    close(fds[0]);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    out[n] = 0;
    *len = n;
    return 0;
}
#else

/* What the caller, the guardian and the compiler's vfork child share (on the
 * caller's stack). */
typedef struct {
    char **argv;
    int dirfd;
    char *out;
    size_t cap, len;
    int forward_int;
    pid_t parent, guard; /* the caller's process, the guardian */
    int rfd, wfd;        /* the output pipe */
    sigset_t mask;       /* the caller's signal mask, the compiler's */
    int status;          /* the compiler's wait status */
    int err;             /* errno of the step that failed, else 0 */
    int finished;        /* the guardian got to its end */
} guard_job;

/* Read what the pipe holds into out (the first cap - 1 bytes; the rest is
 * read and dropped, so the compiler never blocks on a full pipe).  1 at end
 * of file, 0 when it is empty for now (its read end is non-blocking). */
static int take_output(guard_job *j) {
    char chunk[512];
    for (;;) {
        ssize_t n = read(j->rfd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) return 1;
        if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
        size_t keep = (size_t)n < j->cap - 1 - j->len ? (size_t)n : j->cap - 1 - j->len;
        memcpy(j->out + j->len, chunk, keep);
        j->len += keep;
    }
}

/* Start the compiler: vfork, so that its child runs code of ours before the
 * exec -- a group of its own, SIGKILL when the guardian dies (the kernel's
 * out-of-memory killer kills every process that shares the victim's memory,
 * the guardian included: the compiler driver then still goes) -- and
 * borrows the guardian's memory only until then.  The child calls nothing
 * but system calls; a failure is left in j->err.  Its pid, or -1. */
static pid_t start_compiler(guard_job *j) {
    pid_t pid = vfork();
    if (pid != 0) return pid;
    if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != j->guard) goto fail;
    if (j->dirfd >= 0 && fchdir(j->dirfd) != 0) goto fail;
    if (dup2(j->wfd, 1) < 0 || dup2(j->wfd, 2) < 0) goto fail;
    if (j->wfd <= 2 && fcntl(j->wfd, F_SETFD, 0) != 0) goto fail; /* dup2 onto itself keeps close-on-exec */
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul < 0 || dup2(nul, 0) < 0) goto fail;
    sigprocmask(SIG_SETMASK, &j->mask, NULL);
    execve(j->argv[0], j->argv, environ);
fail:
    j->err = errno ? errno : ECHILD;
    _exit(127);
}

static int guardian(void *arg) {
    guard_job *j = arg;
    for (int s = 1; s < NSIG; s++) { /* the caller's handlers must not run here, nor in the compiler */
        struct sigaction sa;
        if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &sa) != 0) continue;
        if ((sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_DFL)) {
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_DFL;
            sigaction(s, &sa, NULL);
        }
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, NULL); /* ignored, the compiler would be reaped before we could look */
    j->guard = getpid();
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != j->parent) {
        j->err = ECHILD;
        _exit(127);
    }
    sigset_t want;
    sigemptyset(&want);
    sigaddset(&want, SIGCHLD);
    sigaddset(&want, SIGTERM);
    sigaddset(&want, SIGINT);
    sigaddset(&want, SIGHUP);
    sigaddset(&want, SIGQUIT);
    int sfd = signalfd(-1, &want, SFD_CLOEXEC);
    if (sfd < 0) {
        j->err = errno;
        _exit(127);
    }
    pid_t cc = start_compiler(j);
    close(j->wfd);
    if (cc < 0 || j->err) {
        if (cc < 0) j->err = errno;
        if (cc > 0) while (waitpid(cc, NULL, 0) < 0 && errno == EINTR) {
            }
        _exit(127);
    }
    struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = j->rfd, .events = POLLIN}};
    nfds_t npoll = 2;
    for (;;) {
        if (poll(p, npoll, -1) < 0) {
            if (errno == EINTR) continue;
            break; /* cannot happen with valid descriptors: end the compile rather than spin */
        }
        if (npoll == 2 && p[1].revents && take_output(j)) npoll = 1; /* every writer is gone */
        if (!(p[0].revents & POLLIN)) continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si) continue;
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            siginfo_t info;
            memset(&info, 0, sizeof info);
            if (waitid(P_PID, (id_t)cc, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == cc) break;
            continue;
        }
        if (getppid() != j->parent) { /* our process is gone: so is the compile */
            kill(-cc, SIGKILL);
            _exit(1);
        }
        if (sig != SIGINT || j->forward_int) kill(-cc, sig);
    }
    kill(-cc, SIGKILL); /* what the compiler left in its group; its zombie keeps the number ours */
    int status = 0;
    while (waitpid(cc, &status, 0) < 0 && errno == EINTR) {
    }
    take_output(j);
    j->status = status;
    j->finished = 1;
    _exit(0);
}

static int spawn_raw(char **argv, int dirfd, char *out, size_t cap, size_t *len, int *status, int forward_int) {
    guard_job j = {.argv = argv, .dirfd = dirfd, .out = out, .cap = cap, .forward_int = forward_int,
                   .parent = getpid()};
    int fds[2], err = 0;
    *len = 0;
    out[0] = 0;
    *status = 0;
    if (pipe_cloexec(fds) != 0) return errno;
    j.rfd = fds[0];
    j.wfd = fds[1];
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &j.mask); /* no handler of ours may run in the guardian */
    char *stack = mmap(NULL, GUARD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) err = errno;
    else {
        pid_t g = clone(guardian, stack + GUARD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &j);
        if (g < 0) err = errno;
        else {
            /* ECHILD: a SIGCHLD handler elsewhere reaped it; j says what happened either way */
            while (waitpid(g, NULL, 0) < 0 && errno == EINTR) {
            }
            if (!j.finished) err = j.err ? j.err : ECHILD;
        }
        munmap(stack, GUARD_STACK);
    }
    pthread_sigmask(SIG_SETMASK, &j.mask, NULL);
    close(fds[0]);
    close(fds[1]);
    out[j.len] = 0;
    *len = j.len;
    *status = j.status;
    return err;
}
#endif /* TK_SPAWN_PLAIN */

int tk_spawn_guarded(char **argv, tk_fd dir, char *out, size_t cap, size_t *len, int *status, int forward_int) {
    int raw = 0;
    int err = spawn_raw(argv, dir, out, cap, len, &raw, forward_int);
    *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? -WTERMSIG(raw) : 0;
    return err;
}

#else
typedef int tk_posix_spawn_unused; /* ISO C wants something in a translation unit */
#endif
