/*
 * driver.c -- tack_compile: the whole pipeline in one function, and the
 * program object it produces.
 *
 * A compile owns a tk_cc: an arena for every allocation of the compile and a
 * jump buffer.  A compile error (tk_error) or a failed allocation inside the
 * arena longjmps back here; the driver then frees the arena and returns
 * TACK_ERR_COMPILE (message and location set) or TACK_ERR_NOMEM.  No pass
 * needs cleanup code of its own.
 *
 * The program that comes out is independent of the module and of the arena:
 * the emitted source, the IR dump, the parameter table (which array
 * parameters the kernel writes), and the check sites the runtime uses to
 * word an error ("index 10 is out of bounds for axis 0 with size 8 (kernel
 * fill, file.py:12)").  Building and launching go through the device's
 * backend vtable; for the CPU that is cpu_jit.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "runtime/runtime.h"

static _Thread_local struct {
    char file[512];
    int line, col;
} err_loc;

TACK_API void tack_compile_error_location(const char **filename, int *line, int *col) {
    if (filename) *filename = err_loc.file[0] ? err_loc.file : NULL;
    if (line) *line = err_loc.line;
    if (col) *col = err_loc.col;
}

_Noreturn void tk_error(tk_cc *C, int func, int line, int col, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *file = (func >= 0 && func < C->m->nfuncs) ? C->m->funcs[func].filename : "<kernel>";
    snprintf(err_loc.file, sizeof err_loc.file, "%s", file ? file : "<kernel>");
    err_loc.line = line;
    err_loc.col = col;
    tack_set_error(TACK_ERR_COMPILE, "%s", msg);
    longjmp(C->jmp, 2);
}

_Noreturn void tk_oom(tk_cc *C) { longjmp(C->jmp, 1); }

TACK_API void tack_compile_options_init(tack_compile_options *o) {
    if (!o) return;
    o->checks = 1;
    o->fast_math = 0;
    o->optimize = 1;
    o->target = "c";
}

/* ------------------------------------------------------------- program */
static char *dup_heap(const char *s, int *fail) {
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
    tack_free(p);
}

static tack_program *make_program(tk_cc *C, tk_spec *K, const char *ir, const char *src) {
    int fail = 0;
    tk_func *F = &C->m->funcs[K->func];
    tack_program *p = tack_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->kernel_name = dup_heap(F->name, &fail);
    p->filename = dup_heap(F->filename, &fail);
    p->source = dup_heap(src, &fail);
    p->ir = dup_heap(ir, &fail);
    p->dialect = dup_heap(C->dialect->name, &fail);
    p->fast_math = C->opts.fast_math;
    p->params = tack_calloc((size_t)K->nparams + 1, sizeof(tk_pinfo));
    if (!p->params) fail = 1;
    else {
        p->nparams = K->nparams;
        for (int i = 0; i < K->nparams && !fail; i++) {
            tk_pinfo *pi = &p->params[i];
            pi->name = dup_heap(K->pnames[i], &fail);
            pi->is_array = C->args[i].is_array;
            pi->dtype = C->args[i].dtype;
            pi->ndim = C->args[i].ndim;
            pi->weak = C->args[i].weak;
            pi->written = pi->is_array && (K->written >> i & 1);
        }
    }
    p->sites = tack_calloc((size_t)C->nsites + 1, sizeof(tk_site));
    if (!p->sites) fail = 1;
    else {
        p->nsites = C->nsites;
        for (int i = 0; i < C->nsites && !fail; i++) {
            tk_site *d = &p->sites[i], *s = &C->sites[i];
            d->kind = s->kind;
            d->line = s->line;
            d->axis = s->axis;
            d->array = dup_heap(s->array, &fail);
            d->message = dup_heap(s->message, &fail);
            d->func = dup_heap(s->func, &fail);
            d->file = dup_heap(s->file, &fail);
        }
    }
    if (fail) {
        tack_program_free(p);
        return NULL;
    }
    return p;
}

/* --------------------------------------------------------------- compile */
static int env_is(const char *name, const char *value) {
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

TACK_API tack_status tack_compile(tack_module *m, int kernel, const tack_argtype *args, int nargs,
                                  const tack_compile_options *opts, tack_program **out) {
    if (!out) return tack_set_error(TACK_ERR_VALUE, "tack_compile: out is NULL");
    *out = NULL;
    if (!m || kernel < 0 || kernel >= m->nfuncs)
        return tack_set_error(TACK_ERR_VALUE, "tack_compile: no kernel %d in the module", kernel);
    if (nargs < 0 || (nargs > 0 && !args)) return tack_set_error(TACK_ERR_VALUE, "tack_compile: bad argument list");
    err_loc.file[0] = 0;
    err_loc.line = err_loc.col = 0;
    tack_compile_options o;
    tack_compile_options_init(&o);
    if (opts) o = *opts;
    const tk_dialect *dialect = tk_dialect_find(o.target);
    if (!dialect)
        return tack_set_error(TACK_ERR_UNSUPPORTED, "compile target '%s' is not supported (\"c\" and \"cuda\")", o.target);

    tk_cc *C = tack_calloc(1, sizeof *C);
    if (!C) return tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", m->funcs[kernel].name);
    tk_arena_init(&C->arena);
    C->arena.oom = &C->jmp;
    C->m = m;
    C->opts = o;
    C->args = args;
    C->nargs = nargs;
    C->dialect = dialect;
    tack_status st = TACK_OK;
    tack_program *volatile prog = NULL;
    int jumped = setjmp(C->jmp);
    if (jumped) {
        st = jumped == 1 ? tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", m->funcs[kernel].name)
                         : TACK_ERR_COMPILE;
        goto done;
    }
    for (int i = 0; i < nargs; i++)
        if (args[i].dtype >= TACK_VEC2 && args[i].dtype < TACK_DTYPE_COUNT) C->uses_vec = 1;

    /* The pipeline. */
    tk_spec *K = tk_lower_kernel(C, kernel, args, nargs); /* types + AST -> typed IR */
    tk_verify(C, "lowering");
    if (env_is("TACK_OPT", "0")) C->opts.optimize = o.optimize = 0; /* a debugging switch; tests compare both */
    if (o.optimize) {
        tk_fold(C);                                        /* constant folding */
        tk_verify(C, "constant folding");
        tk_checks(C);                                      /* bounds-check elision and hoisting */
        tk_verify(C, "check elision");
        tk_strength(C);                                    /* invariant divisors */
        tk_verify(C, "strength reduction");
        tk_privatize(C);                                   /* a[k] += v on a fixed cell */
        tk_verify(C, "reduction privatization");
        tk_fold(C);
    }
    const char *ir = tk_dump(C);                           /* textual IR */
    const char *src = tk_emit(C);                          /* C-family source for the dialect */
    if (env_is("TACK_DUMP", "ir")) fprintf(stderr, "%s\n", ir);
    if (env_is("TACK_DUMP", "source")) fprintf(stderr, "%s\n", src);
    prog = make_program(C, K, ir, src);
    if (!prog) st = tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", m->funcs[kernel].name);

done:
    tk_arena_free(&C->arena);
    tack_free(C);
    if (st == TACK_OK) *out = prog;
    return st;
}

/* ------------------------------------------------------------ accessors */
TACK_API const char *tack_program_source(const tack_program *p) { return p ? p->source : NULL; }
TACK_API const char *tack_program_ir(const tack_program *p) { return p ? p->ir : NULL; }

TACK_API int tack_program_param_written(const tack_program *p, int i) {
    if (!p || i < 0 || i >= p->nparams) return 0;
    return p->params[i].written;
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
    tack_status st = dev->backend->build(dev, p);
    if (st == TACK_OK) p->device = dev;
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
        if (!pi->is_array) continue;
        tack_array *a = args[i].array;
        if (!a) return tack_set_error(TACK_ERR_TYPE, "argument '%s' of kernel '%s' must be an array", pi->name, p->kernel_name);
        if (tack_array_dtype(a) != pi->dtype || tack_array_ndim(a) != pi->ndim)
            return tack_set_error(TACK_ERR_TYPE, "argument '%s' of kernel '%s' is a %d-D %s array; this build expects %d-D %s",
                                  pi->name, p->kernel_name, tack_array_ndim(a), dt_name(tack_array_dtype(a)), pi->ndim,
                                  dt_name(pi->dtype));
        if (tack_array_device(a) != p->device)
            return tack_set_error(TACK_ERR_DEVICE, "argument '%s' of kernel '%s' is on %s, the kernel runs on %s", pi->name,
                                  p->kernel_name, tack_device_name(tack_array_device(a)), tack_device_name(p->device));
        if (pi->written && !tack_array_writable(a))
            return tack_set_error(TACK_ERR_READONLY, "kernel '%s' writes to parameter '%s' but the array passed for it is read-only",
                                  p->kernel_name, pi->name);
    }
    return p->device->backend->launch(p->device, p, args, nargs);
}

/* The error for a failed check: site `site` of program p, with the values the
 * generated code passed (a, b: the index and the extent, or the exponent).
 * Every backend reports through this, so a check words its error the same
 * on every device. */
tack_status tk_site_error(const tack_program *p, int site, int64_t a, int64_t b) {
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
    case CK_COMP:
        return tack_set_error(TACK_ERR_INDEX, "index %lld is out of range for a vector of length %lld (%s)",
                              (long long)a, (long long)b, where);
    case CK_ZERODIV:
        return tack_set_error(TACK_ERR_ZERODIV, "%s (%s)", s->message ? s->message : "integer division by zero", where);
    case CK_NEGPOW:
        return tack_set_error(TACK_ERR_VALUE,
                              "integers to negative integer powers are not allowed: exponent %lld (%s); "
                              "make the base a float for a float result", (long long)a, where);
    case CK_ASSERT:
        if (s->message) return tack_set_error(TACK_ERR_ASSERT, "%s (%s)", s->message, where);
        return tack_set_error(TACK_ERR_ASSERT, "assertion failed (%s)", where);
    }
    return tack_set_error(TACK_ERR_RUNTIME, "kernel '%s' failed a check (%s)", p->kernel_name, where);
}
