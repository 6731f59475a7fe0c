/* The platform layer (src/platform) as the core uses it, on whatever system the
 * test runs: Linux here, Windows under Wine (make test-wine), macOS on a Mac.
 * Threads with a condition, once and a key whose destructor runs when its
 * thread ends; the clock; the cache directory opened and checked, a file
 * created only if new, judged, read, renamed, listed, locked against a second
 * handle and removed; a link in the cache refused; the compiler's spawn with
 * its output and exit status; a library loaded and a symbol found. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/platform.h"
#include "tack.h"

#ifndef TK_POSIX
#define TK_POSIX 0
#endif
#ifndef TK_WINDOWS
#define TK_WINDOWS 0
#endif

#if TK_WINDOWS
#include <windows.h> /* the test's own setup: a directory others may write */
#include <sddl.h>
#endif
#if TK_POSIX
#include <sys/stat.h>
#include <sys/wait.h> /* the test's own setup: a symbolic link, a second process */
#include <unistd.h>
#endif

static tk_mutex_t lock = TK_MUTEX_INIT;
static tk_cond_t cond = TK_COND_INIT;
static tk_once_t once = TK_ONCE_INIT;
static int once_runs, done, gone;
static tk_key_t key;

static void once_fn(void) { once_runs++; }
static void key_gone(void *v) {
    tk_mutex_lock(&lock);
    gone += *(int *)v;
    tk_cond_broadcast(&cond);
    tk_mutex_unlock(&lock);
}

static void *worker(void *arg) {
    static int one = 1;
    tk_once(&once, once_fn);
    tk_key_set(key, &one);
    tk_mutex_lock(&lock);
    done += *(int *)arg;
    tk_cond_signal(&cond);
    tk_mutex_unlock(&lock);
    return NULL;
}

static void test_threads(void) {
    CHECK(tk_key_create(&key, key_gone) == 0);
    int two = 2;
    for (int i = 0; i < 4; i++) CHECK(tk_thread_start(worker, &two) == 0);
    tk_mutex_lock(&lock);
    while (done < 8 || gone < 4) tk_cond_wait(&cond, &lock); /* each worker's key destructor ran */
    tk_mutex_unlock(&lock);
    CHECK(done == 8 && gone == 4 && once_runs == 1);
    CHECK(tk_mutex_trylock(&lock) == 0);
    tk_mutex_unlock(&lock);
    CHECK(tk_cpu_count() >= 1);
    char m[64] = "";
    CHECK(tk_machine(m, sizeof m) == 0 && m[0]);
    int64_t t0 = tk_monotonic_ns();
    CHECK(tk_sleep_ns(2000000) == 0);
    CHECK(tk_monotonic_ns() - t0 >= 1000000);
    CHECK(tk_wall_s() > 1700000000);
}

static int listed;
static void count(void *ctx, const char *name) {
    if (!strcmp(name, (const char *)ctx)) listed++;
}

static void test_files(const char *root) {
    char path[1024];
    snprintf(path, sizeof path, "%s%cplatform-test%cnew", root, TK_PATH_SEP, TK_PATH_SEP);
    tk_fd dir = TK_NO_FD;
    char *real = NULL;
    CHECK(tk_dir_open_checked(path, &dir, &real) == TACK_OK); /* made, owner only */
    if (dir == TK_NO_FD) return;
    int err = 0;
    tk_file_unlink(dir, "a.tmp"); /* a killed run's */
    tk_file_unlink(dir, "a");
    tk_fd f = tk_file_open(dir, "a.tmp", TK_F_WRITE | TK_F_CREATE | TK_F_EXCL, &err);
    CHECK(f != TK_NO_FD);
    CHECK(tk_file_write_all(f, "hello", 5) == 0 && tk_file_close(f) == 0);
    CHECK(tk_file_open(dir, "a.tmp", TK_F_WRITE | TK_F_CREATE | TK_F_EXCL, &err) == TK_NO_FD && err == EEXIST);
    CHECK(tk_file_open(dir, "missing", TK_F_READ, &err) == TK_NO_FD && err == ENOENT);
    f = tk_file_open(dir, "a.tmp", TK_F_RDWR | TK_F_NONBLOCK, &err);
    CHECK(f != TK_NO_FD && tk_file_block(f) == 0);
    CHECK(tk_file_append_sync(f, "!", 1) == 0);
    tk_file_info info, at;
    CHECK(tk_file_info_of(f, &info) == 0 && info.regular && info.ours && !info.others_write && info.size == 6);
    char buf[8] = "";
    CHECK(tk_file_pread(f, buf, 3, 2) == 3 && !memcmp(buf, "llo", 3));
    CHECK(tk_file_close(f) == 0);
    CHECK(tk_file_rename(dir, "a.tmp", "a") == 0);
    CHECK(tk_file_info_at(dir, "a", &at) == 0 && at.size == 6 && at.regular);
    CHECK(tk_file_info_at(dir, "a.tmp", &at) != 0);
    CHECK(tk_dir_list(dir, count, "a") == 0 && listed == 1);
    /* a build lock: a second handle cannot take it while the first holds it */
    tk_fd l1 = tk_file_open(dir, "k.lock", TK_F_RDWR | TK_F_CREATE, &err);
    tk_fd l2 = tk_file_open(dir, "k.lock", TK_F_RDWR | TK_F_CREATE, &err);
    CHECK(l1 != TK_NO_FD && l2 != TK_NO_FD);
    CHECK(tk_file_trylock(l1) == 0);
#if TK_POSIX /* record locks belong to the process: another one is refused */
    pid_t pid = fork();
    if (pid == 0) _exit(tk_file_trylock(l2) == 1 ? 0 : 1);
    int wst = -1;
    CHECK(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
#else /* LockFileEx's locks belong to the handle */
    CHECK(tk_file_trylock(l2) == 1);
#endif
    tk_file_close(l1);
    CHECK(tk_file_trylock(l2) == 0);
    tk_file_close(l2);
    CHECK(tk_file_unlink(dir, "k.lock") == 0 && tk_file_unlink(dir, "a") == 0);
    CHECK(tk_file_info_at(dir, "a", &at) != 0);
#if TK_POSIX
    /* a symbolic link in the cache is refused, never followed */
    char link[1100];
    snprintf(link, sizeof link, "%s/ln", real);
    CHECK(symlink("/etc/hostname", link) == 0);
    CHECK(tk_file_open(dir, "ln", TK_F_READ, &err) == TK_NO_FD && err == ELOOP);
    CHECK(tk_file_info_at(dir, "ln", &at) == 0 && !at.regular);
    CHECK(tk_file_unlink(dir, "ln") == 0);
#endif
    CHECK(tk_file_open(dir, "..\\x", TK_F_READ, &err) == TK_NO_FD || TK_POSIX); /* no separator in a name (Windows) */
    tk_file_close(dir);
    tack_free(real);
}

/* A cache directory that others may write is refused, with the reason. */
static void test_refused(const char *root) {
    char path[1024];
    snprintf(path, sizeof path, "%s%cplatform-open", root, TK_PATH_SEP);
#if TK_WINDOWS
    PSECURITY_DESCRIPTOR sd = NULL;
    CHECK(ConvertStringSecurityDescriptorToSecurityDescriptorA("D:P(A;OICI;FA;;;WD)", SDDL_REVISION_1, &sd, NULL));
    SECURITY_ATTRIBUTES sa = {sizeof sa, sd, FALSE};
    CHECK(CreateDirectoryA(path, &sa) || GetLastError() == ERROR_ALREADY_EXISTS); /* Everyone: full control */
    LocalFree(sd);
#else
    mkdir(path, 0700);
    CHECK(chmod(path, 0777) == 0);
#endif
    tk_fd dir = TK_NO_FD;
    char *real = NULL;
    CHECK(tk_dir_open_checked(path, &dir, &real) != TACK_OK && dir == TK_NO_FD && !real);
    CHECK(strstr(tack_last_error(), "others") != NULL);
}

static void test_spawn(void) {
    char out[256];
    size_t len = 0;
    int status = 0;
#if TK_WINDOWS
    char cmd[300];
    const char *sys = getenv("SystemRoot");
    snprintf(cmd, sizeof cmd, "%s\\system32\\cmd.exe", sys ? sys : "C:\\windows");
    char *argv[] = {cmd, "/c", "echo hi& exit 3", NULL};
#else
    char *argv[] = {"/bin/sh", "-c", "echo hi; exit 3", NULL};
#endif
    CHECK(tk_spawn_guarded(argv, TK_NO_FD, out, sizeof out, &len, &status, 0) == 0);
    CHECK(status == 3 && !TK_STATUS_OK(status) && TK_STATUS_SIGNAL(status) == 0);
    CHECK(len >= 2 && !strncmp(out, "hi", 2));
#if TK_POSIX
    char *killed[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
    CHECK(tk_spawn_guarded(killed, TK_NO_FD, out, sizeof out, &len, &status, 0) == 0);
    CHECK(tk_signal_is_interrupt(TK_STATUS_SIGNAL(status))); /* SIGTERM: an interruption */
#endif
    char *none[] = {"/no/such/compiler", NULL};
    CHECK(tk_spawn_guarded(none, TK_NO_FD, out, sizeof out, &len, &status, 0) != 0 || status != 0);
}

static void test_loading(void) {
#if TK_WINDOWS
    void *lib = tk_dl_open("kernel32.dll", 0);
    const char *sym = "GetTickCount";
#elif TK_MACOS
    void *lib = tk_dl_open("/usr/lib/libSystem.B.dylib", 0);
    const char *sym = "getpid";
#else
    void *lib = tk_dl_open("libc.so.6", 0);
    const char *sym = "getpid";
#endif
    CHECK(lib != NULL);
    if (!lib) return;
    CHECK(tk_dl_sym(lib, sym) != NULL);
    CHECK(tk_dl_sym(lib, "tack_no_such_symbol") == NULL && tk_dl_error() != NULL);
    char where[1024] = "";
    CHECK(tk_dl_path(lib, NULL, where, sizeof where) == 0 && tk_path_is_absolute(where));
    tk_dl_close(lib);
    CHECK(tk_dl_open("tack-no-such-library" TK_DL_SUFFIX, 0) == NULL && tk_dl_error() != NULL);
    CHECK(tk_dl_path(NULL, (const void *)test_loading, where, sizeof where) == 0 && where[0]);
}

int main(void) {
    const char *root = getenv("TACK_CACHE_DIR");
    test_threads();
    test_files(root && *root ? root : tk_temp_dir());
    test_refused(root && *root ? root : tk_temp_dir());
    test_spawn();
    test_loading();
    CHECK(tk_path_is_absolute(TK_WINDOWS ? "C:\\x" : "/x") && !tk_path_is_absolute("x"));
    return CHECK_SUMMARY();
}
