/* test_diagnostics.c -- what `python -m tack` reports, from C: the device
 * families by name with their device counts and, for an absent one, the
 * reason tack_device_get gives too; every device's description and, on
 * the CPU and OpenCL, its memory; the GPU
 * toolchains (a library's path and version, or why it is absent); the C compiler a CPU build would choose
 * (a missing TACK_CC is an error naming it, a compiler that does not run is
 * one too); the kernel cache's path (not created), what each file in it is
 * (a sealed entry, a kept source, a temporary, or foreign: unsealed,
 * damaged, a name with a slash) and removal that refuses what Tack did not
 * write and leaves it in place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "tack.h"

static void test_backends(void) {
    CHECK(tack_backend_name(0) && strcmp(tack_backend_name(0), "cpu") == 0);
    int n = 0;
    while (tack_backend_name(n)) n++;
    CHECK(n == 6);
    CHECK(tack_backend_name(-1) == NULL && tack_backend_name(n) == NULL);
    char why[512];
    CHECK(tack_backend_status("cpu", why, sizeof why) == 1 && why[0] == 0);
    tack_device *devs[32];
    int nd = tack_devices(devs, 32);
    for (int i = 0; i < nd && i < 32; i++) {
        CHECK(tack_device_description(devs[i])[0] != 0); /* every device says what it is */
        tack_device_type t = tack_device_kind(devs[i]);
        if (t == TACK_DEVICE_CPU || t == TACK_DEVICE_OPENCL) CHECK(tack_device_memory(devs[i]) >= (1u << 20));
    }
    for (int i = 1; i < n; i++) {
        const char *name = tack_backend_name(i);
        int k = tack_backend_status(name, why, sizeof why);
        CHECK(k >= 0);
        tack_device *d = NULL;
        tack_status st = tack_device_get(name, &d);
        CHECK((k > 0) == (st == TACK_OK));
        if (k == 0) { /* the same reason as the device's error */
            CHECK(why[0] != 0);
            CHECK(strstr(tack_last_error(), why) != NULL);
        }
        CHECK(tack_backend_status(name, NULL, 0) == k); /* no buffer: the count alone */
    }
    const char *chains[] = {"nvrtc", "hiprtc", "ocloc"};
    for (int i = 0; i < 3; i++) {
        int v = -1, r = tack_toolchain(chains[i], why, sizeof why, &v);
        CHECK(r == 0 || r == 1);
        if (r == 1) CHECK(why[0] == '/' && (i == 2 || v >= 1000)); /* a path; NVRTC's and hiprtc's versions */
        else CHECK(why[0] != 0 && v == 0);                        /* why not */
        CHECK(tack_toolchain(chains[i], NULL, 0, NULL) == r);
    }
    CHECK(tack_toolchain("nvcc", why, sizeof why, NULL) == -1 && strstr(tack_last_error(), "'nvcc'") != NULL);
    CHECK(tack_backend_status("gpu", why, sizeof why) == -1);
    CHECK(tack_last_status() == TACK_ERR_VALUE && strstr(tack_last_error(), "'gpu'") != NULL);
    CHECK(tack_backend_status(NULL, why, sizeof why) == -1 && tack_last_status() == TACK_ERR_VALUE);
}

static void test_compiler(void) {
    char cmd[4096], ver[256];
    const char *from = "x";
    CHECK(tack_config_set("cc", "/nonexistent/tack-cc") == TACK_OK);
    CHECK(tack_cpu_compiler(cmd, sizeof cmd, ver, sizeof ver, &from) == -1);
    CHECK(strstr(tack_last_error(), "/nonexistent/tack-cc") != NULL && strstr(tack_last_error(), "TACK_CC") != NULL);
    CHECK(from == NULL && cmd[0] == 0);
    CHECK(tack_config_set("cc", "/bin/false") == TACK_OK); /* runs, but fails to give its version */
    CHECK(tack_cpu_compiler(cmd, sizeof cmd, ver, sizeof ver, &from) == -1);
    CHECK(strstr(tack_last_error(), "--version") != NULL);
    CHECK(tack_config_set("cc", "cc") == TACK_OK);
    if (tack_cpu_compiler(NULL, 0, NULL, 0, NULL) == 1) { /* a machine with cc on PATH */
        CHECK(tack_cpu_compiler(cmd, sizeof cmd, ver, sizeof ver, &from) == 1);
        CHECK(cmd[0] == '/' && strstr(cmd, "cc") != NULL && ver[0] != 0 && strcmp(from, "TACK_CC") == 0);
    }
    CHECK(tack_config_set("cc", NULL) == TACK_OK);
}

static int exists(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void put(const char *dir, const char *name, const char *text) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
    chmod(p, 0600);
}

static tack_cache_kind kind_of(const char *name) {
    tack_cache_kind k = (tack_cache_kind)-1;
    CHECK(tack_cache_classify(name, &k) == TACK_OK);
    return k;
}

static void test_cache(void) {
    char dir[] = "/tmp/tack-diag-XXXXXX", sub[600], path[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(sub, sizeof sub, "%s/cache", dir);
    CHECK(tack_config_set("cache_dir", sub) == TACK_OK);
    CHECK(tack_cache_path(path, sizeof path) == TACK_OK && strcmp(path, sub) == 0);
    CHECK(!exists(dir, "cache")); /* the path alone creates nothing */
    CHECK(tack_cache_path(path, 4) == TACK_ERR_VALUE && strstr(tack_last_error(), sub) != NULL);

    /* the compiler query remembers cc's --version in an existing cache: a sealed entry */
    CHECK(mkdir(sub, 0700) == 0);
    CHECK(tack_config_set("cc", "cc") == TACK_OK);
    int have_cc = tack_cpu_compiler(NULL, 0, NULL, 0, NULL) == 1;
    char entry[300] = "";
    DIR *dp = opendir(sub);
    for (struct dirent *e; dp && (e = readdir(dp)) != NULL;)
        if (strncmp(e->d_name, "cc-", 3) == 0) snprintf(entry, sizeof entry, "%s", e->d_name);
    if (dp) closedir(dp);
    CHECK(!have_cc || entry[0]);
    if (entry[0]) CHECK(kind_of(entry) == TACK_CACHE_ENTRY);

    put(sub, "notes.txt", "mine, not Tack's\n");
    put(sub, "0123456789abcdef0123456789abcdef.c", "int x;\n");
    put(sub, "0123456789abcdef0123456789abcdef-4242-1.so.tmp", "half\n");
    put(sub, "fake.so", "not sealed TACKSEAL but no digest......\n");
    CHECK(kind_of("notes.txt") == TACK_CACHE_FOREIGN);
    CHECK(kind_of("fake.so") == TACK_CACHE_FOREIGN);
    CHECK(kind_of("0123456789abcdef0123456789abcdef.c") == TACK_CACHE_SOURCE);
    CHECK(kind_of("0123456789abcdef0123456789abcdef-4242-1.so.tmp") == TACK_CACHE_TEMPORARY);
    CHECK(kind_of("missing") == TACK_CACHE_FOREIGN);
    CHECK(kind_of("../cache/notes.txt") == TACK_CACHE_FOREIGN);
    CHECK(kind_of("..") == TACK_CACHE_FOREIGN);

    CHECK(tack_cache_remove("notes.txt") == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "notes.txt") != NULL && exists(sub, "notes.txt"));
    CHECK(tack_cache_remove("fake.so") == TACK_ERR_VALUE && exists(sub, "fake.so"));
    CHECK(tack_cache_remove("0123456789abcdef0123456789abcdef.c") == TACK_OK);
    CHECK(!exists(sub, "0123456789abcdef0123456789abcdef.c"));
    if (entry[0]) {
        /* a damaged copy of an entry is no longer Tack's to remove */
        char p[1200], q[1200];
        snprintf(p, sizeof p, "%s/%s", sub, entry);
        snprintf(q, sizeof q, "%s/damaged.id", sub);
        FILE *in = fopen(p, "rb"), *out = fopen(q, "wb");
        CHECK(in && out);
        if (in && out) {
            int c;
            while ((c = fgetc(in)) != EOF) fputc(c, out);
            fputc('!', out);
        }
        if (in) fclose(in);
        if (out) fclose(out);
        chmod(q, 0600);
        CHECK(kind_of("damaged.id") == TACK_CACHE_FOREIGN);
        CHECK(tack_cache_remove(entry) == TACK_OK && !exists(sub, entry));
        unlink(q);
    }
    CHECK(tack_cache_remove("0123456789abcdef0123456789abcdef-4242-1.so.tmp") == TACK_OK);

    /* a cache directory others may write is refused, as builds refuse it */
    chmod(sub, 0777);
    tack_cache_kind k;
    CHECK(tack_cache_classify("notes.txt", &k) == TACK_ERR_RUNTIME && strstr(tack_last_error(), "writable") != NULL);
    CHECK(tack_cache_remove("notes.txt") == TACK_ERR_RUNTIME && exists(sub, "notes.txt"));
    chmod(sub, 0700);

    put(sub, "x", "");
    char p[1200];
    const char *left[] = {"notes.txt", "fake.so", "x"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", sub, left[i]);
        unlink(p);
    }
    CHECK(rmdir(sub) == 0 && rmdir(dir) == 0);
    CHECK(tack_config_set("cache_dir", NULL) == TACK_OK && tack_config_set("cc", NULL) == TACK_OK);
}

int main(void) {
    test_backends();
    test_cache(); /* first: the compiler's --version is remembered in the cache once per process */
    test_compiler();
    return CHECK_SUMMARY();
}
