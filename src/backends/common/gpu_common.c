/*
 * gpu_common.c -- what every GPU launcher shares (see gpu_common.h): the
 * error record's protocol, the programs built for a device, the layout
 * comment, the argument convention and the framing of cache entries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/gpu_common.h"

static _Atomic uint64_t next_prog_id = 1;

void gpu_records_init(gpu_records *r, const char *where) {
    tk_mutex_init(&r->lock);
    r->progs = NULL;
    r->pending = TACK_OK;
    r->pending_msg[0] = 0;
    r->where = where;
}

/* ------------------------------------------------------------- programs */
void gpu_prog_init(gpu_prog *g, tack_program *p) {
    tk_mutex_init(&g->lock);
    g->p = p;
    g->last = NULL;
    g->id = next_prog_id++;
}

void gpu_prog_fini(gpu_prog *g) {
    tack_stream_release(g->last);
    g->last = NULL;
    tk_mutex_destroy(&g->lock);
    tack_free(g->kinds);
    g->kinds = NULL;
    tack_free(g->bsize);
    g->bsize = NULL;
}

void gpu_link(gpu_records *r, gpu_prog *g) {
    g->next = r->progs;
    r->progs = g;
}

void gpu_unlink(gpu_records *r, gpu_prog *g) {
    for (gpu_prog **q = &r->progs; *q; q = &(*q)->next)
        if (*q == g) {
            *q = g->next;
            break;
        }
}

const gpu_prog *gpu_find_prog(const gpu_records *r, uint64_t id) {
    for (const gpu_prog *q = r->progs; q; q = q->next)
        if (q->id == id) return q;
    return NULL;
}

/* ------------------------------------------------------------ reporting */
static tack_status report(const gpu_records *r, const tack_program *p, const gpu_err_record *rec) {
    if (rec->site < 0 || rec->site >= p->nsites)
        return tack_set_error(TACK_ERR_RUNTIME, "kernel '%s' failed a check on %s", p->kernel_name, r->where);
    return tk_site_error(p, rec->site, rec->a, rec->b);
}

tack_status gpu_check_record(gpu_records *r, tack_device *d, gpu_take_fn take) {
    tack_status st = TACK_OK, rst;
    gpu_err_record rec;
    tk_mutex_lock(&r->lock);
    if (r->pending != TACK_OK) {
        st = tack_set_error(r->pending, "%s", r->pending_msg);
        r->pending = TACK_OK;
        r->pending_msg[0] = 0;
        take(d, &rec, &rst); /* a later failure is dropped: the first one wins */
    } else if (take(d, &rec, &rst)) {
        const gpu_prog *found = gpu_find_prog(r, rec.prog);
        if (found) st = report(r, found->p, &rec);
        else st = tack_set_error(TACK_ERR_RUNTIME, "a kernel failed a check on %s (its program is gone)", d->name);
    } else {
        st = rst;
    }
    tk_mutex_unlock(&r->lock);
    return st;
}

void gpu_keep_pending(gpu_records *r, tack_device *d, gpu_take_fn take) {
    gpu_err_record rec;
    tack_status st;
    if (take(d, &rec, &st) && r->pending == TACK_OK) {
        const gpu_prog *found = gpu_find_prog(r, rec.prog);
        if (found) {
            r->pending = report(r, found->p, &rec);
            snprintf(r->pending_msg, sizeof r->pending_msg, "%s", tack_last_error());
        }
    }
}

/* --------------------------------------------------------------- layout */
tack_status gpu_layout(tack_program *p, gpu_prog *g, const char *dialect, const char *mark, const char *device,
                       const char *missing, const char **rest) {
    const char *m = NULL;
    if (p->source)
        for (const char *s = strstr(p->source, mark); s; s = strstr(s + 1, mark)) m = s; /* the last one */
    if (!p->dialect || strcmp(p->dialect, dialect) != 0 || (!m && !missing))
        return tack_set_error(TACK_ERR_VALUE,
                              "kernel '%s' was compiled for the '%s' target; compile it with target \"%s\" to run "
                              "on %s",
                              p->kernel_name, p->dialect ? p->dialect : "?", dialect, device);
    if (!m) return tack_set_error(TACK_ERR_VALUE, missing, p->kernel_name);
    m += strlen(mark);
    int n = 0;
    while (m[n] == 'p' || m[n] == 's' || m[n] == 'b') n++;
    if (!(g->kinds = tack_calloc((size_t)n + 1, 1)) || !(g->bsize = tack_calloc((size_t)n + 1, sizeof *g->bsize)))
        return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    memcpy(g->kinds, m, (size_t)n);
    g->nph = n;
    *rest = m + n;
    /* the blocks phases' block sizes: `/ * tack-grid-block: K:B ... * /` (layout_grid.c) */
    const char *bm = strstr(p->source, "/* tack-grid-block:");
    for (const char *q = bm ? bm + strlen("/* tack-grid-block:") : NULL; q && *q == ' ';) {
        int k = -1, used = 0;
        unsigned b = 0;
        if (sscanf(q, " %d:%u%n", &k, &b, &used) != 2 || used == 0) break;
        if (k >= 0 && k < n && b >= 1 && b <= 1024) g->bsize[k] = b;
        q += used;
    }
    for (int k = 0; k < n; k++)
        if (g->kinds[k] == 'b' && !g->bsize[k])
            return tack_set_error(TACK_ERR_VALUE, "kernel '%s': phase %d is a blocks loop whose block size the "
                                                  "source does not say ('/* tack-grid-block: ... */')", p->kernel_name, k);
    return TACK_OK;
}

#define OPENCL_MARK "/* tack-opencl: phases="

tack_status gpu_opencl_layout(tack_program *p, gpu_prog *g, const char *device, int *fp64) {
    const char *rest = NULL;
    tack_status st = gpu_layout(p, g, "opencl", OPENCL_MARK, device,
                                "kernel '%s': its OpenCL source has no layout comment ('/* tack-opencl: phases=... "
                                "frame=N fp64=0|1 */' last)",
                                &rest);
    if (st != TACK_OK) return st;
    unsigned long long frame = 0;
    int used = 0;
    *fp64 = -1;
    if (sscanf(rest, " frame=%llu fp64=%d */%n", &frame, fp64, &used) != 2 || used == 0 || (*fp64 != 0 && *fp64 != 1) ||
        frame > ((unsigned long long)1 << 40))
        return tack_set_error(TACK_ERR_VALUE,
                              "kernel '%s': malformed OpenCL layout comment (expected '/* tack-opencl: phases=[ps]* "
                              "frame=N fp64=0|1 */')",
                              p->kernel_name);
    g->frame_bytes = (size_t)frame;
    return TACK_OK;
}

/* ------------------------------------------------------------ arguments */
int gpu_arg_count(const tack_program *p) {
    int n = 3;
    for (int i = 0; i < p->nparams; i++)
        n += p->params[i].is_array ? 1 + p->params[i].ndim * (p->params[i].strided ? 2 : 1) : gpu_scalar_slots(&p->params[i]);
    return n;
}

void gpu_strides(const tack_array *a, int ndim, int64_t *out) {
    const int64_t *s = tack_array_strides(a), *shape = tack_array_shape(a); /* NULL: C order's */
    int64_t c = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        out[k] = s ? s[k] : c;
        c *= shape[k];
    }
}

int gpu_scalar_slots(const tk_pinfo *pi) { return tack_dtype_get(pi->dtype)->kind == TACK_KIND_COMPLEX ? 2 : 1; }

uint64_t gpu_scalar_bits(const tk_pinfo *pi, const tack_arg *a, int im) {
    uint64_t bits;
    if (tack_dtype_get(pi->dtype)->kind == TACK_KIND_COMPLEX) { /* one slot a part: f32 bits for complex64 */
        double d = a->scalar.z[im];
        if (pi->dtype == TACK_C64 || pi->carry_f32) { /* complex64, or a Python complex carried as one */
            float f = (float)d;
            uint32_t u;
            memcpy(&u, &f, 4);
            bits = u;
        } else memcpy(&bits, &d, 8);
    } else if (pi->carry_f32) { /* the kernel reads an f32 from the slot's low half (little-endian devices) */
        float f = (float)a->scalar.f;
        uint32_t u;
        memcpy(&u, &f, 4);
        bits = u;
    } else if (tack_dtype_get(pi->dtype)->kind == TACK_KIND_FLOAT)
        memcpy(&bits, &a->scalar.f, 8);
    else bits = a->scalar.u;
    return bits;
}

int gpu_any_shared(const tack_program *p, const tack_arg *args, int nargs) {
    for (int i = 0; i < nargs; i++)
        if (p->params[i].is_array && (tack_array_flags(args[i].array) & TACK_ARRAY_SHARED)) return 1;
    return 0;
}

/* ---------------------------------------------------------------- cache */
#define BIN_TRAILER "\ntack-end\n"

void gpu_cache_key(const tack_program *p, const char *misc, char key[40]) {
    hash2 h = TACK_HASH2_INIT;
    kc_hash_str(&h, p->source);
    kc_hash_str(&h, p->dialect);
    kc_hash_str(&h, misc);
    snprintf(key, 40, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

char *gpu_entry_read(const kc_dir *d, const char *name, size_t *n) {
    kc_entry e;
    const char *why = NULL;
    int r = kc_read(d, name, &e, &why);
    if (r < 0 && kc_log_info()) fprintf(stderr, "tack: cache entry %s/%s is %s; rebuilding it\n", d->path, name, why);
    if (r != 1) return NULL;
    char *buf = e.data;
    *n = e.size;
    e.data = NULL;
    kc_entry_free(&e);
    return buf;
}

char *gpu_bin_entry_read(const kc_dir *d, const char *name, const char *head, const char *key, const char *what,
                         int (*valid)(const unsigned char *bin, size_t len), const unsigned char **bin, size_t *len) {
    size_t n = 0;
    char *buf = gpu_entry_read(d, name, &n);
    if (!buf) return NULL;
    char line[80];
    int hl = snprintf(line, sizeof line, "%s%s ", head, key);
    size_t tl = strlen(BIN_TRAILER);
    if (n < (size_t)hl || memcmp(buf, line, (size_t)hl) != 0) goto bad;
    char *end = NULL;
    unsigned long long bl = strtoull(buf + hl, &end, 10);
    if (end == buf + hl || *end != '\n') goto bad;
    size_t start = (size_t)(end + 1 - buf);
    if (bl == 0 || bl > n || start + bl + tl != n || memcmp(buf + start + bl, BIN_TRAILER, tl) != 0) goto bad;
    if (valid && !valid((const unsigned char *)buf + start, (size_t)bl)) goto bad;
    *bin = (const unsigned char *)buf + start;
    *len = (size_t)bl;
    return buf;
bad:
    if (kc_log_info())
        fprintf(stderr, "tack: cache entry %s/%s is not %s for its key; rebuilding it\n", d->path, name, what);
    tack_free(buf);
    return NULL;
}

tack_status gpu_bin_entry_write(const kc_dir *d, const char *name, const char *head, const char *key,
                                const unsigned char *bin, size_t len) {
    char line[120];
    snprintf(line, sizeof line, "%s%s %zu\n", head, key, len);
    const void *parts[3] = {line, bin, BIN_TRAILER};
    size_t lens[3] = {strlen(line), len, strlen(BIN_TRAILER)};
    return kc_store_bytes(d, name, parts, lens, 3);
}
