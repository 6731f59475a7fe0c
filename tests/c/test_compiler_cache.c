/*
 * test_compiler_cache.c -- the CPU toolchain's disk cache and the compiler
 * under allocation failure.
 *
 *   - two processes building one kernel into one empty cache concurrently
 *     both succeed;
 *   - a truncated cache entry is detected and rebuilt;
 *   - a cache directory writable by others is refused with a clear error;
 *   - failing the Nth allocation of tack_compile, for every N until it
 *     succeeds, returns TACK_ERR_NOMEM cleanly (LSan checks for leaks);
 *   - tack_launch from two threads at once.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tack.h"
#include "tack_kernel.h"
#include "check.h"
#include "tk_ast.h"


static tack_device *cpu;
static int kernel_index;
static tack_argtype sig[3];

/* A kernel with a bit of everything, for the allocation-failure loop. */
static void make_module(double salt) {
    tack_module_new(&tb_m);
    int f = tack_module_add_function(tb_m, TACK_FUNC_DEVICE, "sq", "cache.py", 1, NULL);
    tack_function_add_param(tb_m, f, "x", NULL);
    tack_function_set_body(tb_m, f, BLOCK(1, RETURN(BIN(TACK_OP_MUL, NAME("x"), NAME("x")))));
    tack_node *body = BLOCK(2,
        ASSIGN(NAME("n"), SHAPE("x", 0)),
        FOR(NAME("i"), CALL("range", 1, NAME("n")), BLOCK(3,
            ASSIGN(NAME("v"), CALL("vec3", 3, SUB(NAME("x"), 1, NAME("i")), FLT(salt), INT(0))),
            ASSIGN(NAME("t"), BIN(TACK_OP_ADD, FCALL(f, "sq", 1, ATTR(NAME("v"), "x")), CALL("sqrt", 1, CALL("abs", 1, NAME("k"))))),
            IF(CMP(NAME("t"), TACK_OP_GT, INT(0)),
               BLOCK(1, ASSIGN(SUB(NAME("y"), 1, NAME("i")), BIN(TACK_OP_FLOORDIV, NAME("t"), FLT(2.0)))),
               BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("y"), 1, INT(0)), NAME("t")))))));
    kernel_index = FUNC(TACK_FUNC_KERNEL, "mixed", "x y k", body);
    sig[0] = ARR(TACK_F32, 1);
    sig[1] = ARR(TACK_F32, 1);
    sig[2] = WEAK(TACK_I64);
}

static char *make_dir(const char *tag) {
    static char buf[4][256];
    static int next;
    char *d = buf[next++ & 3];
    snprintf(d, 256, "/tmp/tack-cache-test-%s-XXXXXX", tag);
    if (!mkdtemp(d)) abort();
    return d;
}

static void rm_dir(const char *d) {
    DIR *dir = opendir(d);
    if (!dir) return;
    struct dirent *e;
    char p[600];
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        unlink(p);
    }
    closedir(dir);
    rmdir(d);
}

static int count_so(const char *d, char *first, size_t n) {
    DIR *dir = opendir(d);
    if (!dir) return 0;
    struct dirent *e;
    int c = 0;
    while ((e = readdir(dir))) {
        size_t l = strlen(e->d_name);
        if (l > 3 && !strcmp(e->d_name + l - 3, ".so")) {
            if (c == 0 && first) snprintf(first, n, "%s/%s", d, e->d_name);
            c++;
        }
    }
    closedir(dir);
    return c;
}

static tack_status compile_build(tack_program **out) {
    tack_program *p = NULL;
    tack_status st = tack_compile(tb_m, kernel_index, sig, 3, NULL, &p);
    if (st == TACK_OK) st = tack_program_build(p, cpu);
    if (st != TACK_OK) {
        tack_program_free(p);
        p = NULL;
    }
    *out = p;
    return st;
}

static int run_ok(tack_program *p) {
    int64_t shape[1] = {1000};
    tack_array *x = NULL, *y = NULL;
    tack_array_zeros(cpu, TACK_F32, 1, shape, &x);
    tack_array_zeros(cpu, TACK_F32, 1, shape, &y);
    float *px = tack_array_data(x), *py = tack_array_data(y);
    for (int i = 0; i < 1000; i++) px[i] = (float)i;
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = x;
    args[1].array = y;
    args[2].scalar.i = 4;
    int ok = tack_launch(p, args, 3) == TACK_OK && py[10] == 51.0f && py[0] == 1.0f;
    tack_array_release(x);
    tack_array_release(y);
    return ok;
}

static void test_concurrent_processes(void) {
    char *d = make_dir("fork");
    CHECK(tack_config_set("cache_dir", d) == TACK_OK);
    make_module(1.25);
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            tack_program *p;
            tack_status st = compile_build(&p);
            int ok = st == TACK_OK && run_ok(p);
            tack_program_free(p);
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < 2; i++) {
        int status = 0;
        waitpid(kids[i], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(count_so(d, NULL, 0) == 1);
    /* and this process loads what they built */
    tack_program *p;
    CHECK(compile_build(&p) == TACK_OK);
    CHECK(p && run_ok(p));
    tack_program_free(p);
    tack_module_free(tb_m);
    rm_dir(d);
}

static void test_truncated_entry(void) {
    char *d = make_dir("trunc");
    CHECK(tack_config_set("cache_dir", d) == TACK_OK);
    make_module(2.5);
    tack_program *p;
    CHECK(compile_build(&p) == TACK_OK);
    tack_program_free(p); /* dlclose: the next build must read the file again */
    char so[600];
    CHECK(count_so(d, so, sizeof so) == 1);
    CHECK(truncate(so, 64) == 0);
    CHECK(compile_build(&p) == TACK_OK);
    CHECK(p && run_ok(p));
    tack_program_free(p);
    struct stat sb;
    CHECK(stat(so, &sb) == 0 && sb.st_size > 64);
    /* garbage of the right size is rebuilt too */
    FILE *f = fopen(so, "r+b");
    if (f) {
        fwrite("garbage!", 1, 8, f);
        fclose(f);
    }
    CHECK(compile_build(&p) == TACK_OK);
    CHECK(p && run_ok(p));
    tack_program_free(p);
    tack_module_free(tb_m);
    rm_dir(d);
}

static void test_unsafe_dir(void) {
    char *d = make_dir("unsafe");
    chmod(d, 0777);
    CHECK(tack_config_set("cache_dir", d) == TACK_OK);
    make_module(3.0);
    tack_program *p;
    tack_status st = compile_build(&p);
    CHECK(st != TACK_OK && p == NULL);
    CHECK(strstr(tack_last_error(), "writable by group or others") != NULL);
    CHECK(strstr(tack_last_error(), d) != NULL);
    chmod(d, 0700);
    CHECK(compile_build(&p) == TACK_OK);
    tack_program_free(p);
    tack_module_free(tb_m);
    rm_dir(d);
}

/* ------------------------------------------------ allocation failures */
static long alloc_count, fail_at;
static void *fail_malloc(size_t n, void *ud) {
    if (++alloc_count == fail_at) return NULL;
    return malloc(n);
}
static void *fail_realloc(void *p, size_t n, void *ud) {
    if (++alloc_count == fail_at) return NULL;
    return realloc(p, n);
}
static void fail_free(void *p, void *ud) { free(p); }

static void test_nomem(void) {
    make_module(4.0);
    tack_allocator a = {fail_malloc, fail_realloc, fail_free, NULL};
    int all_nomem = 1, succeeded = 0;
    long n;
    for (n = 1; n < 10000; n++) {
        alloc_count = 0;
        fail_at = n;
        tack_set_allocator(&a);
        tack_program *p = NULL;
        tack_status st = tack_compile(tb_m, kernel_index, sig, 3, NULL, &p);
        tack_set_allocator(NULL);
        if (st == TACK_OK) {
            succeeded = 1;
            tack_program_free(p);
            break;
        }
        if (st != TACK_ERR_NOMEM || p != NULL) {
            all_nomem = 0;
            fprintf(stderr, "allocation %ld: status %d (%s)\n", n, (int)st, tack_last_error());
            break;
        }
    }
    CHECK(succeeded);
    CHECK(all_nomem);
    CHECK(n > 3);
    /* the builder API reports NOMEM too */
    alloc_count = 0;
    fail_at = 1;
    tack_set_allocator(&a);
    tack_module *m2 = NULL;
    tack_status st = tack_module_new(&m2);
    tack_set_allocator(NULL);
    CHECK(st == TACK_ERR_NOMEM && m2 == NULL);
    tack_module_free(tb_m);
}

/* ---------------------------------------------- launches from threads */
static tack_program *shared_prog;
static void *launcher(void *arg) {
    int ok = 1;
    for (int i = 0; i < 20; i++) ok = ok && run_ok(shared_prog);
    return ok ? (void *)1 : NULL;
}

static void test_threads(void) {
    char *d = make_dir("threads");
    CHECK(tack_config_set("cache_dir", d) == TACK_OK);
    make_module(5.0);
    CHECK(compile_build(&shared_prog) == TACK_OK);
    if (shared_prog) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, launcher, NULL);
        for (int i = 0; i < 4; i++) {
            void *r;
            pthread_join(t[i], &r);
            CHECK(r != NULL);
        }
        tack_program_free(shared_prog);
    }
    tack_module_free(tb_m);
    rm_dir(d);
}

int main(void) {
    if (tack_device_get("cpu", &cpu) != TACK_OK) {
        fprintf(stderr, "no cpu device: %s\n", tack_last_error());
        return 1;
    }
    test_concurrent_processes();
    test_truncated_entry();
    test_unsafe_dir();
    test_nomem();
    test_threads();
    return CHECK_SUMMARY();
}
