/* test_config.c -- the settings table (src/runtime/config.c): every entry
 * describes itself and its default parses; values round-trip by name;
 * bad names and values are refused by name; NULL puts the environment's
 * value back; the environment is read once, at the first use (children
 * forked before it); a bad environment value is reported; compile options
 * take their defaults from the settings; nothing allocates; a reader never
 * sees half of a concurrent change. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tack.h"
#include "tack_kernel.h"

static int in_env_test; /* set in the children: their checks end with _exit */

static int get_is(const char *name, const char *want, tack_config_source src) {
    char buf[4096];
    tack_config_source s = (tack_config_source)-1;
    if (tack_config_get(name, buf, sizeof buf, &s) != TACK_OK) return 0;
    if (strcmp(buf, want) || s != src) fprintf(stderr, "%s: '%s' (source %d), not '%s' (%d)\n", name, buf, s, want, src);
    return !strcmp(buf, want) && s == src;
}

static void test_table(void) {
    int n = tack_config_count();
    CHECK(n >= 20);
    for (int i = 0; i < n; i++) {
        tack_config_info info;
        CHECK(tack_config_describe(i, &info) == TACK_OK);
        CHECK(info.name && info.env && !strncmp(info.env, "TACK_", 5) && info.doc && *info.doc && info.effect);
        CHECK(!strcmp(info.type, "bool") || !strcmp(info.type, "int") || !strcmp(info.type, "choice") ||
              !strcmp(info.type, "str"));
        CHECK(!strcmp(info.type, "choice") == (info.choices != NULL));
        for (int j = 0; j < i; j++) { /* names and variables are unique */
            tack_config_info other;
            tack_config_describe(j, &other);
            CHECK(strcmp(other.name, info.name) && strcmp(other.env, info.env));
        }
        /* the default parses, and reads back as itself */
        char before[4096];
        tack_config_source src;
        CHECK(tack_config_get(info.name, before, sizeof before, &src) == TACK_OK);
        CHECK(tack_config_set(info.name, info.default_value) == TACK_OK);
        CHECK(get_is(info.name, info.default_value, TACK_CONFIG_SET));
        CHECK(tack_config_set(info.name, NULL) == TACK_OK);
        CHECK(get_is(info.name, before, src));
        if (src == TACK_CONFIG_DEFAULT) CHECK(!strcmp(before, info.default_value));
    }
    tack_config_info info;
    CHECK(tack_config_describe(n, &info) == TACK_ERR_VALUE);
    CHECK(tack_config_describe(-1, &info) == TACK_ERR_VALUE);
    CHECK(tack_config_describe(0, NULL) == TACK_ERR_VALUE);
}

static void test_round_trip(void) {
    CHECK(tack_config_set("optimize", "0") == TACK_OK && get_is("optimize", "0", TACK_CONFIG_SET));
    CHECK(tack_config_set("optimize", "1") == TACK_OK && get_is("optimize", "1", TACK_CONFIG_SET));
    CHECK(tack_config_set("num_threads", "7") == TACK_OK && get_is("num_threads", "7", TACK_CONFIG_SET));
    CHECK(tack_config_set("dump", "source") == TACK_OK && get_is("dump", "source", TACK_CONFIG_SET));
    CHECK(tack_config_set("dump", "0") == TACK_OK && get_is("dump", "off", TACK_CONFIG_SET)); /* 0: off */
    CHECK(tack_config_set("race_analysis", "1") == TACK_OK && get_is("race_analysis", "on", TACK_CONFIG_SET));
    CHECK(tack_config_set("default_float", "float64") == TACK_OK && get_is("default_float", "f64", TACK_CONFIG_SET));
    CHECK(tack_config_set("cflags", "-DX=1 -g") == TACK_OK && get_is("cflags", "-DX=1 -g", TACK_CONFIG_SET));
    CHECK(tack_config_set("cflags", "") == TACK_OK && get_is("cflags", "", TACK_CONFIG_SET));
    /* a short buffer is an error, not a cut value */
    char small[4];
    CHECK(tack_config_set("cflags", "-O2 -g") == TACK_OK);
    CHECK(tack_config_get("cflags", small, sizeof small, NULL) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "'cflags'") != NULL);
    const char *names[] = {"optimize", "num_threads", "dump", "race_analysis", "default_float", "cflags"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) CHECK(tack_config_set(names[i], NULL) == TACK_OK);
}

static int refused(const char *name, const char *value, const char *says) {
    tack_clear_error();
    if (tack_config_set(name, value) != TACK_ERR_VALUE) return 0;
    if (!strstr(tack_last_error(), says)) fprintf(stderr, "message: %s\n", tack_last_error());
    return strstr(tack_last_error(), says) != NULL;
}

static void test_bad_input(void) {
    CHECK(refused("optimise", "1", "no setting is named 'optimise'"));
    CHECK(refused(NULL, "1", "no setting is named"));
    CHECK(refused("optimize", "yes", "'optimize' must be 0 or 1, not 'yes'"));
    CHECK(refused("optimize", "", "'optimize' must be 0 or 1"));
    CHECK(refused("num_threads", "-1", "'num_threads' must be a whole number"));
    CHECK(refused("num_threads", "four", "not 'four'"));
    CHECK(refused("num_threads", "99999999", "from 0 to"));
    CHECK(refused("dump", "asm", "'dump' must be one of off/ir/source, not 'asm'"));
    CHECK(refused("default_float", "f16", "one of f32/f64"));
    static char big[40000];
    memset(big, 'x', sizeof big - 1);
    CHECK(refused("cflags", big, "'cflags' is 39999 bytes long"));
    /* a refused value changes nothing */
    CHECK(get_is("dump", "off", TACK_CONFIG_DEFAULT) || getenv("TACK_DUMP"));
    char buf[16];
    CHECK(tack_config_get("nope", buf, sizeof buf, NULL) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "'nope'") != NULL);
    CHECK(tack_config_get("optimize", NULL, 0, NULL) == TACK_ERR_VALUE);
}

static void test_compile_options(void) {
    tack_compile_options o;
    CHECK(tack_config_set("optimize", "0") == TACK_OK);
    CHECK(tack_config_set("checks", "0") == TACK_OK);
    CHECK(tack_config_set("default_float", "f64") == TACK_OK);
    CHECK(tack_config_set("check_races", "1") == TACK_OK);
    tack_compile_options_init(&o);
    CHECK(o.optimize == 0 && o.checks == 0 && o.default_float == TACK_F64 && o.check_races == 1);
    const char *names[] = {"optimize", "checks", "default_float", "check_races"};
    for (int i = 0; i < 4; i++) CHECK(tack_config_set(names[i], NULL) == TACK_OK);
    tack_compile_options_init(&o);
    if (!getenv("TACK_OPT")) CHECK(o.optimize == 1);
}

/* In a child forked before anything read the settings: the environment
 * becomes the initial values, once. */
static int child(void (*fn)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        in_env_test = 1;
        fn();
        _exit(check_failed ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void env_read_once(void) {
    setenv("TACK_LOG", "info", 1);
    setenv("TACK_NUM_THREADS", "", 1); /* empty: unset */
    setenv("TACK_ZIG", "", 1);         /* empty text is a value */
    unsetenv("TACK_CFLAGS");
    CHECK(get_is("log", "info", TACK_CONFIG_ENV));
    CHECK(get_is("num_threads", "0", TACK_CONFIG_DEFAULT));
    CHECK(get_is("zig", "", TACK_CONFIG_ENV));
    CHECK(get_is("cflags", "", TACK_CONFIG_DEFAULT));
    setenv("TACK_LOG", "debug", 1); /* too late: read once */
    setenv("TACK_CFLAGS", "-g", 1);
    CHECK(get_is("log", "info", TACK_CONFIG_ENV));
    CHECK(get_is("cflags", "", TACK_CONFIG_DEFAULT));
    CHECK(tack_config_set("log", "off") == TACK_OK && get_is("log", "off", TACK_CONFIG_SET));
    CHECK(tack_config_set("log", NULL) == TACK_OK && get_is("log", "info", TACK_CONFIG_ENV)); /* the env's value */
    CHECK(tack_config_check_environment() == TACK_OK);
}

static void env_bad_value(void) {
    setenv("TACK_OPT", "yes", 1);
    tack_clear_error();
    CHECK(get_is("optimize", "1", TACK_CONFIG_DEFAULT)); /* the default meanwhile */
    CHECK(tack_last_status() == TACK_OK); /* reading the environment left no error behind */
    CHECK(tack_config_check_environment() == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "TACK_OPT must be 0 or 1, not 'yes'") != NULL);
    /* tack_compile refuses to run on it */
    tack_program *p = NULL;
    CHECK(tack_compile(NULL, 0, NULL, 0, NULL, &p) == TACK_ERR_VALUE); /* before it looks at the (missing) module */
    CHECK(strstr(tack_last_error(), "TACK_OPT") != NULL);
    CHECK(tack_config_set("optimize", "0") == TACK_OK); /* set: the environment's value no longer counts */
    CHECK(tack_config_check_environment() == TACK_OK);
    CHECK(tack_config_set("optimize", NULL) == TACK_OK); /* back to the environment's: bad again */
    CHECK(tack_config_check_environment() == TACK_ERR_VALUE);
}

/* Nothing in the module allocates: with every allocation failing, every call works. */
static void test_no_allocation(void) {
    failing_allocator_install(1);
    char buf[64];
    tack_config_info info;
    CHECK(tack_config_describe(0, &info) == TACK_OK);
    CHECK(tack_config_set("cache_dir", "/tmp/tack-config-test") == TACK_OK);
    CHECK(tack_config_get("cache_dir", buf, sizeof buf, NULL) == TACK_OK);
    CHECK(tack_config_set("cache_dir", NULL) == TACK_OK);
    CHECK(tack_config_set("num_threads", "3") == TACK_OK && tack_config_set("num_threads", NULL) == TACK_OK);
    CHECK(tack_config_check_environment() == TACK_OK);
    CHECK(alloc_live == 0);
    tack_set_allocator(NULL);
}

/* A text value changed by one thread while another reads it: never torn. */
static char va[3000], vb[3000];
static volatile int stop_writer;

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; !stop_writer; i++) tack_config_set("cflags", i & 1 ? va : vb);
    return NULL;
}

static void test_concurrent(void) {
    memset(va, 'a', sizeof va - 1);
    memset(vb, 'b', sizeof vb - 1);
    tack_config_set("cflags", va);
    pthread_t th;
    pthread_create(&th, NULL, writer, NULL);
    int torn = 0;
    static char buf[4096];
    for (int i = 0; i < 20000; i++) {
        if (tack_config_get("cflags", buf, sizeof buf, NULL) != TACK_OK) torn++;
        else if (strlen(buf) != sizeof va - 1 || buf[strspn(buf, buf[0] == 'a' ? "a" : "b")] != 0) torn++;
    }
    stop_writer = 1;
    pthread_join(th, NULL);
    CHECK(torn == 0);
    CHECK(tack_config_set("cflags", NULL) == TACK_OK);
}

int main(void) {
    CHECK(child(env_read_once));
    CHECK(child(env_bad_value));
    unsetenv("TACK_OPT"); /* this process's own checks assume the defaults there */
    unsetenv("TACK_DUMP");
    test_table();
    test_round_trip();
    test_bad_input();
    test_compile_options();
    test_no_allocation();
    test_concurrent();
    (void)in_env_test;
    return CHECK_SUMMARY();
}
