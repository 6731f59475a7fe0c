/*
 * cuda_image.c -- what a CUDA device is given to load: PTX or a cubin,
 * chosen from the driver's version and NVRTC's, and cached on disk.
 *
 * The versions: NVRTC X.Y writes PTX of ISA version P(X.Y) (its `.version`
 * line: CUDA 12.4 writes 8.4, 12.8 writes 8.7, 13.0 writes 9.0), whatever
 * virtual architecture it is asked for -- an older compute_XX changes the
 * instructions it may use, not the ISA version.  A driver of CUDA version
 * D.E JIT-compiles PTX up to P(D.E) and refuses newer PTX with
 * CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222).  A cubin -- machine code for one
 * architecture, sm_XY, that the driver loads without JIT -- built by a newer
 * toolkit of the same major version loads on an older driver (CUDA's minor
 * version compatibility), but not one of a newer major version.  So, with
 * the driver's version from cuDriverGetVersion and NVRTC's from nvrtcVersion:
 *
 *   - driver >= NVRTC: PTX, for the newest virtual architecture NVRTC knows
 *     that is not newer than the GPU (a GPU newer than NVRTC gets PTX for an
 *     older architecture, which the driver compiles for it);
 *   - same major version, driver older: a cubin for the GPU's own sm_XY
 *     (NVRTC must know the GPU's architecture);
 *   - otherwise nothing fits, and the error names both versions, the PTX
 *     ISA each means, and how to get an NVRTC that fits.
 *
 * PTX is also checked after it is compiled: its `.version` must be one the
 * driver's CUDA version loads (where this file's table knows it), so that
 * PTX the driver would refuse is never handed over.
 *
 * The disk cache keeps PTX per virtual architecture and cubins per real one
 * under a key that hashes what determines them -- the source, the dialect,
 * NVRTC's version, the kind and architecture, NVRTC's options, Tack's
 * version and the launcher's ABI -- in the directory and under the rules of
 * the CPU's cache (kcache.c).  A PTX entry, `KEY.compute_XY.ptx`, starts
 * with a line naming its key and ends with a trailer line; a cubin entry,
 * `KEY.sm_XY.cubin`, is gpu_common.c's binary entry.  One that lacks either
 * (truncated, foreign) or that the driver refuses is rebuilt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/common/kcache.h"
#include "runtime/program.h"

#define PTX_TRAILER "\n// tack-end\n"
#define CUBIN_HEAD "tack-cubin-key "

/* The PTX ISA version (major*10 + minor) that CUDA version v (major*1000 +
 * minor*10) writes and loads; 0 when this table does not know it. */
int cuda_ptx_isa(int v) {
    int major = v / 1000, minor = v % 1000 / 10;
    if (major == 11 && minor <= 8) return 70 + minor;
    if (major == 12 && minor <= 5) return 80 + minor;
    if (major == 12 && minor <= 9) return 80 + minor - 1; /* 12.6: 8.5, 12.8: 8.7, 12.9: 8.8 */
    if (major == 13 && minor <= 9) return 90 + minor;
    return 0;
}

int cuda_image_kind(int driver, int nvrtc) {
    if (driver >= nvrtc) return CUDA_IMAGE_PTX;
    if (driver / 1000 == nvrtc / 1000) return CUDA_IMAGE_CUBIN;
    return CUDA_IMAGE_NONE;
}

/* "CUDA 12.4 (PTX ISA up to 8.4)" */
static void cuda_version_words(char *out, size_t n, int v, const char *isa_words) {
    int isa = cuda_ptx_isa(v);
    if (isa) snprintf(out, n, "CUDA %d.%d (%s %d.%d)", v / 1000, v % 1000 / 10, isa_words, isa / 10, isa % 10);
    else snprintf(out, n, "CUDA %d.%d", v / 1000, v % 1000 / 10);
}

void cuda_versions_sentence(char *out, size_t n, int driver, int nvrtc) {
    char dw[80], nw[80];
    const char *from = nvrtc_loaded_from();
    cuda_version_words(dw, sizeof dw, driver, "loads PTX ISA up to");
    cuda_version_words(nw, sizeof nw, nvrtc, "writes PTX ISA");
    snprintf(out, n, "the NVIDIA driver supports %s and NVRTC is %s, from %s", dw, nw, from ? from : "?");
}

/* The `.version X.Y` line of PTX, as X*10 + Y; 0 when there is none. */
int cuda_ptx_version(const char *ptx) {
    const char *v = strstr(ptx, "\n.version ");
    int major = 0, minor = 0;
    if (!v && strncmp(ptx, ".version ", 9) == 0) v = ptx - 1;
    if (!v || sscanf(v + 10, "%d.%d", &major, &minor) != 2) return 0;
    return major * 10 + minor;
}

static tack_status no_fit(tack_device *d, tack_program *p, int driver, int nvrtc, const char *why) {
    char vs[400];
    cuda_versions_sentence(vs, sizeof vs, driver, nvrtc);
    return tack_set_error(TACK_ERR_DEVICE,
                          "kernel '%s' cannot be built for %s: %s; %s. Use an NVRTC of CUDA %d.x not newer than the "
                          "driver (pip install nvidia-cuda-nvrtc-cu%d, or set TACK_NVRTC_PATH), or update the NVIDIA "
                          "driver",
                          p->kernel_name, d->name, vs, why, driver / 1000, driver / 1000);
}

/* ------------------------------------------------------------- the cache */
static char *read_ptx(const kc_dir *d, const char *name, const char *key) {
    size_t n = 0;
    char *buf = gpu_entry_read(d, name, &n);
    if (!buf) return NULL;
    char head[80];
    snprintf(head, sizeof head, "// tack-cache-key %s\n", key);
    size_t tl = strlen(PTX_TRAILER);
    if (strncmp(buf, head, strlen(head)) != 0 || strlen(buf) != n || n < tl || strcmp(buf + n - tl, PTX_TRAILER) != 0) {
        tack_free(buf);
        return NULL;
    }
    return buf;
}

static tack_status write_ptx(const kc_dir *d, const char *name, const char *key, const char *ptx) {
    char head[80];
    snprintf(head, sizeof head, "// tack-cache-key %s\n", key);
    const char *parts[3] = {head, ptx, PTX_TRAILER};
    return kc_store(d, name, parts, 3);
}

static int elf_magic(const unsigned char *bin, size_t len) { return len > 4 && memcmp(bin, "\177ELF", 4) == 0; }

static tack_status image_in(const kc_dir *dir, tack_device *d, tack_program *p, int refresh, cuda_image *im) {
    cuda_dev *c = d->state;
    int nvv = tack_nvrtc_version();
    if (!nvv) { /* without NVRTC this fails, saying why */
        size_t len;
        return nvrtc_build("", "probe.cu", 0, 0, 0, &im->buf, &len);
    }
    int cc = c->major * 10 + c->minor;
    int kind = cuda_image_kind(c->driver, nvv);
    if (kind == CUDA_IMAGE_NONE)
        return no_fit(d, p, c->driver, nvv, "PTX from a newer NVRTC is refused by an older driver, and so is a cubin "
                                            "of a newer major version");
    int arch = nvrtc_arch_for(cc);
    if (!arch)
        return tack_set_error(TACK_ERR_DEVICE, "NVRTC %d.%d (from %s) cannot compile for %s (sm_%d) or any older "
                              "architecture", nvv / 1000, nvv % 1000 / 10, nvrtc_loaded_from(), d->name, cc);
    if (kind == CUDA_IMAGE_CUBIN && arch != cc)
        return no_fit(d, p, c->driver, nvv, "a cubin would do, but this NVRTC does not know the GPU's architecture");
    im->cubin = kind == CUDA_IMAGE_CUBIN;
    const char *what = im->cubin ? "sm" : "compute";
    char misc[240];
    unsigned flags = (p->fast_math ? TACK_NVRTC_FAST_MATH : 0) | (p->flush_denormals ? TACK_NVRTC_FTZ : 0);
    snprintf(misc, sizeof misc, "nvrtc%d %s_%d %s tack%s launch%d", nvv, what, arch, nvrtc_options(flags),
             TACK_VERSION_STRING, CUDA_LAUNCH_ABI);
    char key[40];
    gpu_cache_key(p, misc, key);
    snprintf(im->path, sizeof im->path, "%s.%s_%d.%s", key, what, arch, im->cubin ? "cubin" : "ptx");
    snprintf(im->arch, sizeof im->arch, "%s_%d", what, arch);
    double t0 = kc_now_ms();
    if (!refresh) {
        if (im->cubin) {
            const unsigned char *bin = NULL;
            im->buf = gpu_bin_entry_read(dir, im->path, CUBIN_HEAD, key, "a cubin", elf_magic, &bin, &im->len);
            im->image = bin;
        } else if ((im->buf = read_ptx(dir, im->path, key))) {
            im->image = im->buf + strcspn(im->buf, "\n") + 1;
        }
        if (im->buf) {
            rt_prof_build = "cache hit";
            if (kc_log_info())
                fprintf(stderr, "tack: loaded kernel '%s' for %s from the cache in %.2f ms (%s/%s)\n", p->kernel_name,
                        im->arch, kc_now_ms() - t0, dir->path, im->path);
            return TACK_OK;
        }
    }
    char name[300];
    snprintf(name, sizeof name, "%s.cu", p->kernel_name);
    tack_status st = nvrtc_build(p->source, name, arch, im->cubin, flags, &im->buf, &im->len);
    if (st != TACK_OK) return st;
    im->image = im->buf;
    st = im->cubin ? gpu_bin_entry_write(dir, im->path, CUBIN_HEAD, key, (const unsigned char *)im->buf, im->len)
                   : write_ptx(dir, im->path, key, im->buf);
    if (st != TACK_OK) return st;
    rt_prof_build = "nvrtc";
    if (kc_log_info())
        fprintf(stderr, "tack: compiled kernel '%s' for %s in %.1f ms with NVRTC %d.%d (%s/%s)\n", p->kernel_name,
                im->arch, kc_now_ms() - t0, nvv / 1000, nvv % 1000 / 10, dir->path, im->path);
    return TACK_OK;
}

tack_status cuda_image_get(tack_device *d, tack_program *p, int refresh, cuda_image *im) {
    memset(im, 0, sizeof *im);
    kc_dir dir;
    tack_status st = kc_open(&dir);
    if (st != TACK_OK) return st;
    st = image_in(&dir, d, p, refresh, im);
    kc_close(&dir);
    if (st == TACK_OK && !im->cubin) {
        /* never hand the driver PTX newer than it loads */
        cuda_dev *c = d->state;
        int have = cuda_ptx_version(im->image), can = cuda_ptx_isa(c->driver);
        if (have && can && have > can) {
            char vs[400], why[120];
            cuda_versions_sentence(vs, sizeof vs, c->driver, tack_nvrtc_version());
            snprintf(why, sizeof why, "the PTX is of ISA version %d.%d", have / 10, have % 10);
            st = tack_set_error(TACK_ERR_DEVICE, "kernel '%s' cannot be loaded on %s: %s; %s, which the driver refuses",
                                p->kernel_name, d->name, vs, why);
        }
    }
    if (st != TACK_OK) cuda_image_free(im);
    return st;
}

void cuda_image_free(cuda_image *im) {
    tack_free(im->buf);
    im->buf = NULL;
    im->image = NULL;
}
