/*
 * program.c -- what the runtime does with a compiled kernel: build it for a
 * device, launch it, word its failed checks, free it.
 *
 * The compiler hands over a tack_program (program.h) that owns copies of
 * everything it needs: the source, the parameter table and the check sites.
 * Building goes to the device's backend once; a program is built for one
 * device.  tack_launch makes, once for every backend, the checks of the
 * arguments a backend relies on (count, arrays of the compiled dtype and
 * rank, on the program's device, writable where the kernel writes), so a
 * backend's launch only packs them.  A failed check in the generated code
 * reports a site number and two values; tk_site_error turns them into the
 * same error on every device, naming the kernel, the file and the line.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/program.h"
#include "runtime/runtime.h"

char *tk_program_strdup(const char *s, int *fail) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = tack_malloc(n);
    if (!p) {
        *fail = 1;
        return NULL;
    }
    memcpy(p, s, n);
    return p;
}

TACK_API void tack_program_free(tack_program *p) {
    if (!p) return;
    /* a graph keeps it (graph.c): the last of them frees it */
    if (atomic_fetch_sub_explicit(&p->holds, 1, memory_order_acq_rel) > 0) return;
    if (p->device && p->device->backend && p->device->backend->unload) p->device->backend->unload(p->device, p);
    tack_free(p->kernel_name);
    tack_free(p->filename);
    tack_free(p->source);
    tack_free(p->ir);
    tack_free(p->dialect);
    if (p->params)
        for (int i = 0; i < p->nparams; i++) tack_free(p->params[i].name);
    tack_free(p->params);
    if (p->sites)
        for (int i = 0; i < p->nsites; i++) {
            tack_free((char *)p->sites[i].array);
            tack_free((char *)p->sites[i].message);
            tack_free((char *)p->sites[i].func);
            tack_free((char *)p->sites[i].file);
        }
    tack_free(p->sites);
    if (p->warnings)
        for (int i = 0; i < p->nwarnings; i++) {
            tack_free(p->warnings[i].file);
            tack_free(p->warnings[i].message);
        }
    tack_free(p->warnings);
    for (int i = 0; p->rloops && i < p->nrloops; i++) {
        tack_free(p->rloops[i].file);
        for (int d = 0; d < TACK_MAX_NDIM; d++) tack_free(p->rloops[i].vars[d]);
        tack_free(p->rloops[i].width);
    }
    tack_free(p->rloops);
    for (int i = 0; p->rsites && i < p->nrsites; i++) {
        tack_free(p->rsites[i].file);
        tack_free(p->rsites[i].text);
    }
    tack_free(p->rsites);
    tack_free(p);
}

TACK_API const char *tack_program_source(const tack_program *p) { return p ? p->source : NULL; }
TACK_API const char *tack_program_ir(const tack_program *p) { return p ? p->ir : NULL; }

TACK_API const char *tack_program_warning(const tack_program *p, int i, const char **file, int *line) {
    if (!p || i < 0 || i >= p->nwarnings) return NULL;
    if (file) *file = p->warnings[i].file;
    if (line) *line = p->warnings[i].line;
    return p->warnings[i].message;
}

TACK_API int tack_program_param_written(const tack_program *p, int i) {
    if (!p || i < 0 || i >= p->nparams) return 0;
    return p->params[i].written;
}

TACK_API int tack_program_param_range(const tack_program *p, int i, int64_t *lo, int64_t *hi, tack_dtype *narrow) {
    if (!p || i < 0 || i >= p->nparams) return 0;
    const tk_pinfo *pi = &p->params[i];
    if (pi->is_array || pi->narrow == TACK_DTYPE_COUNT) return 0;
    *lo = pi->lo;
    *hi = pi->hi;
    *narrow = pi->narrow;
    return 1;
}

TACK_API int tack_program_param_aliases(const tack_program *p, int i, uint64_t *same, uint64_t *part) {
    if (!p || i < 0 || i >= p->nparams || !p->params[i].is_array) return 0;
    *same = p->params[i].alias_same;
    *part = p->params[i].alias_part;
    return 1;
}

TACK_API tack_status tack_program_build(tack_program *p, tack_device *dev) {
    if (!p || !dev) return tack_set_error(TACK_ERR_VALUE, "tack_program_build: program and device are required");
    if (p->device) {
        if (p->device == dev) return TACK_OK;
        return tack_set_error(TACK_ERR_DEVICE, "kernel '%s' is already built for device %s", p->kernel_name,
                              tack_device_name(p->device));
    }
    if (!dev->backend || !dev->backend->build)
        return tack_set_error(TACK_ERR_UNSUPPORTED, "device %s cannot run kernels yet", dev->name);
    int64_t t0 = rt_prof_on() ? rt_prof_now() : 0;
    rt_prof_build = NULL;
    tack_status st = dev->backend->build(dev, p);
    if (st == TACK_OK) p->device = dev;
    if (t0) rt_prof_step(rt_prof_build ? rt_prof_build : "build", p->kernel_name, dev->name, t0);
    return st;
}

/* Two arrays that are one array: the same bytes, read as the same elements. */
static int same_array(const tack_array *a, const tack_array *b) {
    if (tack_array_data(a) != tack_array_data(b) || a->offset != b->offset || tack_array_nbytes(a) != tack_array_nbytes(b) ||
        tack_array_dtype(a) != tack_array_dtype(b) || tack_array_ndim(a) != tack_array_ndim(b))
        return 0;
    if (memcmp(tack_array_shape(a), tack_array_shape(b), sizeof(int64_t) * (size_t)tack_array_ndim(a)) != 0)
        return 0;
    const int64_t *sa = tack_array_strides(a), *sb = tack_array_strides(b); /* m and m.T of a square m differ here */
    if (!sa || !sb) return !sa && !sb;
    return memcmp(sa, sb, sizeof(int64_t) * (size_t)tack_array_ndim(a)) == 0;
}

/* The race check knows arrays by parameter; the compiler marked the pairs
 * whose sharing memory would make a parallel loop race (tk_pinfo.alias_*).
 * A call that passes such a pair is refused before anything runs: the same
 * array for both (step(u, v, u, v) where the kernel reads u's neighbours
 * and writes the other), or views that share bytes.  One array passed for
 * two parameters that the kernel reads and writes only at each iteration's
 * own element (an update in place) is not marked and runs.  Only the
 * marked pairs are compared, and not at all in a restrict build, whose
 * arrays were already found apart. */
static tack_status check_aliases(const tack_program *p, const tack_arg *args, int nargs) {
    for (int i = 0; i < nargs && i < 64; i++) {
        const tk_pinfo *pi = &p->params[i];
        uint64_t m = pi->alias_same | pi->alias_part;
        if (!pi->is_array || pi->distinct || !m) continue;
        for (int j = i + 1; j < nargs && j < 64; j++) {
            if (!(m >> j & 1) || !tack_arrays_overlap(args[i].array, args[j].array)) continue;
            int same = same_array(args[i].array, args[j].array);
            if (same && !(pi->alias_same >> j & 1)) continue;
            const char *w = p->params[i].written ? pi->name : p->params[j].name;
            const char *r = p->params[i].written ? p->params[j].name : pi->name;
            return tack_set_error(TACK_ERR_VALUE,
                                  "arguments '%s' and '%s' of kernel '%s' %s, and a parallel loop of the kernel "
                                  "writes '%s' where its iterations also read or write '%s' at other elements: "
                                  "the iterations would race through the shared memory and the result would change "
                                  "from run to run. Pass a copy for the one that is only read (np.copy(...)), or "
                                  "separate output arrays",
                                  pi->name, p->params[j].name, p->kernel_name,
                                  same ? "are the same array" : "share memory", w, r);
        }
    }
    return TACK_OK;
}

/* A launch while a profile records (profile.c): its host time from here,
 * the checks above not counted; its device time as the backend measured it. */
__attribute__((cold, noinline)) /* kept out of tack_launch's own code: the launch path is measured */
static tack_status launch_profiled(tack_program *p, const tack_arg *args, int nargs) {
    rt_prof_timer none = {NULL, NULL};
    rt_prof_cur_ns = -1;
    rt_prof_cur_timer = none;
    rt_prof_kernel = p->kernel_name;
    int64_t t0 = rt_prof_now();
    tack_status st = p->device->backend->launch(p->device, p, args, nargs);
    int64_t t1 = rt_prof_now();
    rt_prof_event("launch", "launch", p->kernel_name, p->device->name, rt_prof_thread(), t0, t1, rt_prof_cur_ns,
                  rt_prof_cur_timer);
    rt_prof_cur_ns = -1;
    rt_prof_cur_timer = none;
    rt_prof_kernel = NULL;
    return st;
}

TACK_API tack_status tack_launch(tack_program *p, const tack_arg *args, int nargs) {
    if (!p) return tack_set_error(TACK_ERR_VALUE, "tack_launch: program is NULL");
    if (!p->device) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built (call tack_program_build)", p->kernel_name);
    if (nargs != p->nparams)
        return tack_set_error(TACK_ERR_TYPE, "kernel '%s' takes %d arguments (%d given)", p->kernel_name, p->nparams, nargs);
    if (nargs > 0 && !args) return tack_set_error(TACK_ERR_VALUE, "tack_launch: args is NULL");
    /* What every backend needs of its array arguments, checked once here:
     * an array, of the dtype and rank this build was compiled for, on the
     * program's device, and writable where the kernel writes it. */
    for (int i = 0; i < nargs; i++) {
        const tk_pinfo *pi = &p->params[i];
        if (!pi->is_array && pi->weak && pi->dtype == TACK_U64) {
            /* a Python int in [2**63, 2**64), carried in scalar.u: fine where
             * every read converts it to u64 (lo == hi == 0), else refused */
            if (pi->lo > pi->hi)
                return tack_set_error(TACK_ERR_OVERFLOW,
                                      "Python integer %llu is out of bounds for %s (argument '%s' of kernel '%s'): "
                                      "only a uint64 holds it, so it is accepted only where every use of the "
                                      "argument converts it to uint64 (NumPy 2 raises OverflowError for it "
                                      "in arithmetic with a signed type)",
                                      (unsigned long long)args[i].scalar.u, tack_dtype_get(pi->narrow)->name,
                                      pi->name, p->kernel_name);
            continue;
        }
        if (!pi->is_array) {
            if (pi->narrow != TACK_DTYPE_COUNT && (args[i].scalar.i < pi->lo || args[i].scalar.i > pi->hi))
                return tack_set_error(TACK_ERR_OVERFLOW,
                                      "Python integer %lld is out of bounds for %s (argument '%s' of kernel '%s', "
                                      "which meets %s values; NumPy 2 raises the same in arithmetic)",
                                      (long long)args[i].scalar.i, tack_dtype_get(pi->narrow)->name, pi->name,
                                      p->kernel_name, tack_dtype_get(pi->narrow)->name);
            continue;
        }
        tack_array *a = args[i].array;
        if (!a) return tack_set_error(TACK_ERR_TYPE, "argument '%s' of kernel '%s' must be an array", pi->name, p->kernel_name);
        if (tack_array_dtype(a) != pi->dtype || tack_array_ndim(a) != pi->ndim)
            return tack_set_error(TACK_ERR_TYPE, "argument '%s' of kernel '%s' is a %d-D %s array; this build expects %d-D %s",
                                  pi->name, p->kernel_name, tack_array_ndim(a), tack_dtype_get(tack_array_dtype(a))->name, pi->ndim,
                                  tack_dtype_get(pi->dtype)->name);
        if (tack_array_device(a) != p->device)
            return tack_set_error(TACK_ERR_DEVICE, "argument '%s' of kernel '%s' is on %s, the kernel runs on %s", pi->name,
                                  p->kernel_name, tack_device_name(tack_array_device(a)), tack_device_name(p->device));
        if (pi->written && !tack_array_writable(a))
            return tack_set_error(TACK_ERR_READONLY, "kernel '%s' writes to parameter '%s' but the array passed for it is read-only",
                                  p->kernel_name, pi->name);
        if (tack_array_strides(a) && !pi->strided)
            return tack_set_error(TACK_ERR_TYPE, "argument '%s' of kernel '%s' is a strided view; this build indexes it "
                                  "in C order (compile it with tack_argtype.strided set)", pi->name, p->kernel_name);
        if (pi->written && tack_array_self_overlaps(a))
            return tack_set_error(TACK_ERR_VALUE,
                                  "kernel '%s' writes to parameter '%s' but elements of the view passed for it share "
                                  "memory (a zero or overlapping stride, as numpy.broadcast_to gives): the writes would "
                                  "collide. Pass an array whose elements are apart (x.copy(), and copy the results back "
                                  "where they are wanted)", p->kernel_name, pi->name);
    }
    /* A build that declared an array restrict (tack_argtype.distinct) runs
     * only on arrays that share no memory with the others. */
    for (int i = 0; i < nargs; i++) {
        if (!p->params[i].distinct) continue;
        for (int j = 0; j < nargs; j++)
            if (j != i && p->params[j].is_array && tack_arrays_overlap(args[i].array, args[j].array))
                return tack_set_error(TACK_ERR_VALUE, "argument '%s' of kernel '%s' shares memory with '%s', but this "
                                      "build was compiled for arrays that do not overlap (restrict); compile it for "
                                      "overlapping arrays", p->params[i].name, p->kernel_name, p->params[j].name);
    }
    tack_status st = check_aliases(p, args, nargs);
    if (st != TACK_OK) return st;
    /* a capture on the current stream keeps the launch for its replays (graph.c) */
    tack_stream *cur = rt_stream_now(p->device);
    if (cur && rt_captured(cur)) return rt_capture_launch(cur, p, args, nargs);
    /* streams (stream.c): each array ordered after the stream it was last used on */
    for (int i = 0; p->device->backend->streams && i < nargs; i++)
        if (p->params[i].is_array && (st = rt_storage_use(args[i].array->storage)) != TACK_OK) return st;
    if (rt_prof_on()) return launch_profiled(p, args, nargs);
    return p->device->backend->launch(p->device, p, args, nargs);
}

tack_status tk_program_from_source(const char *kernel_name, const char *dialect, const char *source, int nparams,
                                   const tk_pinfo *params, int nsites, const tk_site *sites, tack_program **out) {
    if (!out || !kernel_name || !dialect || !source || nparams < 0 || nsites < 0 || (nparams && !params) ||
        (nsites && !sites))
        return tack_set_error(TACK_ERR_VALUE, "tk_program_from_source: missing arguments");
    *out = NULL;
    int fail = 0;
    tack_program *p = tack_calloc(1, sizeof *p);
    if (!p) return tack_set_error(TACK_ERR_NOMEM, "out of memory making kernel '%s'", kernel_name);
    p->kernel_name = tk_program_strdup(kernel_name, &fail);
    p->dialect = tk_program_strdup(dialect, &fail);
    p->source = tk_program_strdup(source, &fail);
    p->nparams = nparams;
    p->nsites = nsites;
    if (nparams && !(p->params = tack_calloc((size_t)nparams, sizeof *p->params))) fail = 1;
    for (int i = 0; p->params && i < nparams; i++) {
        p->params[i] = params[i];
        p->params[i].name = tk_program_strdup(params[i].name ? params[i].name : "?", &fail);
    }
    if (nsites && !(p->sites = tack_calloc((size_t)nsites, sizeof *p->sites))) fail = 1;
    for (int i = 0; p->sites && i < nsites; i++) {
        p->sites[i] = sites[i];
        p->sites[i].array = tk_program_strdup(sites[i].array, &fail);
        p->sites[i].message = tk_program_strdup(sites[i].message, &fail);
        p->sites[i].func = tk_program_strdup(sites[i].func, &fail);
        p->sites[i].file = tk_program_strdup(sites[i].file, &fail);
    }
    if (fail) {
        tack_program_free(p);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory making kernel '%s'", kernel_name);
    }
    *out = p;
    return TACK_OK;
}

/* The error for a failed check: site `site` of program p, with the values the
 * generated code passed (a, b: the index and the extent, or the exponent).
 * Every backend reports through this, so a check words its error the same
 * on every device. */
tack_status tk_site_error(const tack_program *p, int site, int64_t a, int64_t b) {
    if (site == TK_SITE_INTERRUPT)
        return tack_set_error(TACK_ERR_INTERRUPTED,
                              "kernel '%s' was interrupted; the arrays it writes hold the iterations that ran",
                              p->kernel_name);
    if (site < 0 || site >= p->nsites)
        return tack_set_error(TACK_ERR_RUNTIME, "kernel '%s' failed a check", p->kernel_name);
    const tk_site *s = &p->sites[site];
    char where[600];
    if (s->func && strcmp(s->func, p->kernel_name) != 0)
        snprintf(where, sizeof where, "function %s called from kernel %s, %s:%d", s->func, p->kernel_name,
                 s->file ? s->file : "?", s->line);
    else
        snprintf(where, sizeof where, "kernel %s, %s:%d", p->kernel_name, s->file ? s->file : "?", s->line);
    switch (s->kind) {
    case CK_INDEX:
        return tack_set_error(TACK_ERR_INDEX, "index %lld is out of bounds for axis %d with size %lld (array '%s', %s)",
                              (long long)a, s->axis, (long long)b, s->array ? s->array : "?", where);
    case CK_COMP: /* a vector's component; a matrix's index on one axis, its type's name in message */
        if (s->message)
            return tack_set_error(TACK_ERR_INDEX, "index %lld is out of range for axis %d of a %s (%s)",
                                  (long long)a, s->axis, s->message, where);
        return tack_set_error(TACK_ERR_INDEX, "index %lld is out of range for a vector of length %lld (%s)",
                              (long long)a, (long long)b, where);
    case CK_ZERODIV:
        return tack_set_error(TACK_ERR_ZERODIV, "%s (%s)", s->message ? s->message : "integer division by zero", where);
    case CK_STEP: /* a site's axis 1 makes it an OverflowError (round() past int64's range) */
        return tack_set_error(s->axis == 1 ? TACK_ERR_OVERFLOW : TACK_ERR_VALUE, "%s (%s)", s->message ? s->message : "range() arg 3 must not be zero", where);
    case CK_NEGPOW:
        return tack_set_error(TACK_ERR_VALUE,
                              "integers to negative integer powers are not allowed: exponent %lld (%s); "
                              "make the base a float for a float result", (long long)a, where);
    case CK_INTFIT:
        return tack_set_error(TACK_ERR_OVERFLOW,
                              "Python integer %lld out of bounds for %s (%s); a Python int takes the type of the "
                              "%s value it meets in arithmetic, as in NumPy 2: widen that operand (tack.i64(...)) "
                              "for a wider result", (long long)a, s->message ? s->message : "?", where,
                              s->message ? s->message : "?");
    case CK_UNBOUND:
        return tack_set_error(TACK_ERR_UNBOUND,
                              "local variable '%s' is read before it is assigned (%s): in this iteration of the "
                              "parallel loop (or this call) no statement assigned it; each iteration's locals are "
                              "its own, so assign it on every path before the read",
                              s->message ? s->message : "?", where);
    case CK_ASSERT:
        if (s->message) return tack_set_error(TACK_ERR_ASSERT, "%s (%s)", s->message, where);
        return tack_set_error(TACK_ERR_ASSERT, "assertion failed (%s)", where);
    }
    return tack_set_error(TACK_ERR_RUNTIME, "kernel '%s' failed a check (%s)", p->kernel_name, where);
}
