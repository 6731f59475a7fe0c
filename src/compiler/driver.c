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
 * backend vtable; for the CPU that is cpu_jit.c.  The errors a pass raises
 * (tk_error and the others) are errors.c's, which every pass calls and which
 * call nothing back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"
#include "platform/platform.h"
#include "runtime/config.h"
#include "runtime/runtime.h"

/* The defaults of the options that are settings (config.def) are the
 * settings' values now: what the caller assigns after this call wins. */
TACK_API void tack_compile_options_init(tack_compile_options *o) {
    if (!o) return;
    o->checks = tk_config_int(TK_CFG_CHECKS);
    o->fast_math = 0;
    o->optimize = tk_config_int(TK_CFG_OPTIMIZE);
    o->target = "c";
    o->default_float = tk_config_int(TK_CFG_DEFAULT_FLOAT) ? TACK_F64 : TACK_F32;
    o->flush_denormals = 0;
    o->check_races = tk_config_int(TK_CFG_CHECK_RACES);
}

/* ------------------------------------------------------------- program */
/* How often local `loc` is read in e, and how often such a read is directly
 * converted to u64 (`out[i] = a` with out a uint64 array).  A read passed
 * whole to a @tack.func counts as converted when the function converts it:
 * when every read of that parameter in its body is, the same way, down the
 * calls (tack.random's functions take a seed and convert it to u64 there). */
static void count_reads(const tk_cc *C, const tk_ir *e, int loc, int *reads, int *to_u64, int depth);

static int param_only_to_u64(const tk_cc *C, int spec, int i, int depth) {
    if (spec < 0 || spec >= C->nspecs || depth > 16) return 0;
    const tk_spec *S = C->specs[spec];
    if (!S || !S->plocal || i >= S->nparams) return 0;
    int loc = S->plocal[i], reads = 0, to_u64 = 0;
    if (loc < 0 || ir_assigns_local(S->body, loc)) return 0;
    count_reads(C, S->body, loc, &reads, &to_u64, depth + 1);
    return reads == to_u64;
}

static void count_reads(const tk_cc *C, const tk_ir *e, int loc, int *reads, int *to_u64, int depth) {
    if (!e) return;
    if (e->op == IR_LOCAL && e->local == loc) (*reads)++;
    if (e->op == IR_CAST && e->n == 1 && e->k[0] && e->k[0]->op == IR_LOCAL && e->k[0]->local == loc &&
        e->ty.kind == TY_VALUE && !e->ty.weak && e->ty.dt == TACK_U64)
        (*to_u64)++;
    for (int i = 0; i < e->n; i++) {
        const tk_ir *k = e->k[i];
        if (e->op == IR_CALL && k && k->op == IR_LOCAL && k->local == loc) {
            (*reads)++;
            if (param_only_to_u64(C, e->aux, i, depth)) (*to_u64)++;
            continue;
        }
        count_reads(C, k, loc, reads, to_u64, depth);
    }
    count_reads(C, e->red, loc, reads, to_u64, depth);
    count_reads(C, e->off, loc, reads, to_u64, depth);
    count_reads(C, e->hi, loc, reads, to_u64, depth);
    count_reads(C, e->bnd, loc, reads, to_u64, depth);
}

/* A Python int argument in [2**63, 2**64) (tack_argtype: weak, TACK_U64)
 * travels as the 64 bits of a weak i64.  Those bits are its value only where
 * it is converted to u64: so the launch accepts it only when every read of
 * the parameter is such a conversion (NumPy 2 stores 2**63 into a uint64
 * array and raises OverflowError for it against any signed type); any other
 * read -- arithmetic, an index, a signed type -- refuses it, naming the type
 * it meets there (int64 for the weak int's own arithmetic). */
static void big_pyint_param(const tk_cc *C, const tk_spec *K, int i, tk_pinfo *pi) {
    int loc = K->plocal ? K->plocal[i] : -1, reads = 0, to_u64 = 0;
    if (loc >= 0 && !ir_assigns_local(K->body, loc)) count_reads(C, K->body, loc, &reads, &to_u64, 0);
    else reads = 1;
    pi->lo = 0;
    pi->hi = 0;
    pi->narrow = TACK_U64;
    if (reads == to_u64) return; /* lo = hi = 0 with narrow u64: accepted (runtime/program.c) */
    pi->lo = 1; /* an empty range: always refused */
    pi->narrow = K->pdt[i] != TACK_DTYPE_COUNT && K->pdt[i] != TACK_U64 ? (tack_dtype)K->pdt[i] : TACK_I64;
}

static tack_program *make_program(tk_cc *C, tk_spec *K, const char *ir, const char *src) {
    int fail = 0;
    tk_func *F = &C->m->funcs[K->func];
    tack_program *p = tack_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->kernel_name = tk_program_strdup(F->name, &fail);
    p->filename = tk_program_strdup(F->filename, &fail);
    p->source = tk_program_strdup(src, &fail);
    p->ir = tk_program_strdup(ir, &fail);
    p->dialect = tk_program_strdup(C->target->name, &fail);
    p->fast_math = C->opts.fast_math;
    p->flush_denormals = C->opts.flush_denormals;
    if (C->nrcloops && tk_race_tables(C, p)) fail = 1;
    p->params = tack_calloc((size_t)K->nparams + 1, sizeof(tk_pinfo));
    if (!p->params) fail = 1;
    else {
        p->nparams = K->nparams;
        for (int i = 0; i < K->nparams && !fail; i++) {
            tk_pinfo *pi = &p->params[i];
            pi->name = tk_program_strdup(K->pnames[i], &fail);
            pi->is_array = C->args[i].is_array;
            pi->dtype = C->args[i].dtype;
            pi->ndim = C->args[i].ndim;
            pi->weak = C->args[i].weak;
            pi->carry_f32 = tk_param_f32(C, i);
            pi->written = pi->is_array && (K->written >> i & 1);
            pi->distinct = pi->is_array && C->args[i].distinct;
            pi->strided = pi->is_array && C->args[i].strided;
            pi->alias_same = C->alias_same && i < 64 ? C->alias_same[i] : 0;
            pi->alias_part = C->alias_part && i < 64 ? C->alias_part[i] : 0;
            pi->lo = INT64_MIN;
            pi->hi = INT64_MAX;
            pi->narrow = TACK_DTYPE_COUNT;
            int loc = K->plocal ? K->plocal[i] : -1;
            if (!pi->is_array && pi->weak && loc >= 0 && !ir_assigns_local(K->body, loc) && K->pdt[i] != TACK_DTYPE_COUNT) {
                pi->lo = K->plo[i]; /* a reassigned parameter is not the argument where it meets the type */
                pi->hi = K->phi[i];
                pi->narrow = (tack_dtype)K->pdt[i];
            }
            if (!pi->is_array && pi->weak && pi->dtype == TACK_U64) big_pyint_param(C, K, i, pi);
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
            d->array = tk_program_strdup(s->array, &fail);
            d->message = tk_program_strdup(s->message, &fail);
            d->func = tk_program_strdup(s->func, &fail);
            d->file = tk_program_strdup(s->file, &fail);
        }
    }
    if (C->nwarns && !fail) {
        p->warnings = tack_calloc((size_t)C->nwarns, sizeof(tk_pwarn));
        if (!p->warnings) fail = 1;
        else p->nwarnings = C->nwarns;
        for (int i = 0; i < C->nwarns && !fail; i++) {
            p->warnings[i].line = C->warns[i].line;
            p->warnings[i].file = tk_program_strdup(C->warns[i].file, &fail);
            p->warnings[i].message = tk_program_strdup(C->warns[i].message, &fail);
        }
    }
    if (fail) {
        tack_program_free(p);
        return NULL;
    }
    return p;
}

/* --------------------------------------------------------------- compile */
static double cpu_us(void) { /* this thread's CPU time: TACK_RACE_CHECK=time measures the check */
    return (double)tk_thread_cpu_ns() / 1e3;
}

TACK_API tack_status tack_compile(tack_module *m, int kernel, const tack_argtype *args, int nargs,
                                  const tack_compile_options *opts, tack_program **out) {
    if (!out) return tack_set_error(TACK_ERR_VALUE, "tack_compile: out is NULL");
    *out = NULL;
    if (tk_config_env_check() != TACK_OK) return TACK_ERR_VALUE; /* a TACK_* variable it could not read */
    if (!m || kernel < 0 || kernel >= m->nfuncs)
        return tack_set_error(TACK_ERR_VALUE, "tack_compile: no kernel %d in the module", kernel);
    if (nargs < 0 || (nargs > 0 && !args)) return tack_set_error(TACK_ERR_VALUE, "tack_compile: bad argument list");
    tk_error_location_clear();
    tack_compile_options o;
    tack_compile_options_init(&o);
    if (opts) o = *opts;
    const tk_target *target = tk_target_find(o.target);
    if (!target) {
        char names[256];
        tk_target_names(names, sizeof names);
        return tack_set_error(TACK_ERR_UNSUPPORTED, "compile target '%s' is not supported (%s)", o.target, names);
    }
    tk_cc *C = tack_calloc(1, sizeof *C);
    if (!C) return tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", m->funcs[kernel].name);
    tk_arena_init(&C->arena);
    C->arena.oom = &C->jmp;
    C->m = m;
    C->opts = o;
    ty_set_default_float(o.default_float == TACK_F64 ? TACK_F64 : TACK_F32); /* this thread's compile */
    C->args = args;
    C->nargs = nargs;
    C->target = target;
    C->dialect = target->dialect;
    C->warp_shuffles = tk_config_int(TK_CFG_WARP_SHUFFLES);
    C->racy_rmw = tk_config_int(TK_CFG_DEBUG_RACY_RMW); /* a debugging switch: verify.c must catch it */
    tack_status st = TACK_OK;
    tack_program *volatile prog = NULL;
    int jumped = setjmp(C->jmp);
    if (jumped) {
        st = jumped == 1   ? tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", m->funcs[kernel].name)
             : jumped == 3 ? TACK_ERR_UNSUPPORTED
                           : TACK_ERR_COMPILE;
        goto done;
    }
    for (int i = 0; i < nargs; i++) {
        if ((unsigned)args[i].dtype >= TACK_DTYPE_COUNT) continue;
        if (dt_kind(args[i].dtype) == TACK_KIND_COMPLEX) C->uses_complex = 1;
        else if (dt_rows(args[i].dtype) * dt_cols(args[i].dtype) > 1) C->uses_vec = 1;
        if (dt_form(args[i].dtype)) C->uses_quat = 1; /* quaternion, transform arrays */
    }

    /* The pipeline. */
    double tstart = cpu_us();
    int64_t prof = rt_prof_on() ? rt_prof_now() : 0; /* a profile: lowering, passes, emission (profile.c) */
    tk_spec *K = tk_lower_kernel(C, kernel, args, nargs); /* types + AST -> typed IR */
    tk_verify(C, "lowering");
    if (o.check_races && !target->race_watch)
        tk_error(C, kernel, m->funcs[kernel].first_line, 0,
                 "check_races runs on the CPU: kernel '%s' cannot be checked for races on %s; run it on CPU arrays "
                 "(array.to('cpu')) to check it, and without check_races on the GPU",
                 m->funcs[kernel].name, target->name);
    double t0 = cpu_us();
    int race_analysis = tk_config_int(TK_CFG_RACE_ANALYSIS); /* 0 on, 1 off, 2 time */
    if (race_analysis != 1 || o.check_races) tk_depend(C, K); /* races in parallel loops; the switch is for measuring */
    double t1 = cpu_us();
    if (C->nrcloops) C->opts.optimize = o.optimize = 0; /* instrumented: each access as written (race_watch.c) */
    tk_check_frames(C, K);                                 /* local arrays of one iteration fit a stack */
    tk_weak_locals(C);                                     /* Python-float locals that only meet f32 */
    tk_verify(C, "weak locals");
    if (prof) {
        rt_prof_step("lower", m->funcs[kernel].name, target->name, prof);
        prof = rt_prof_now();
    }
    if (o.optimize) {
        tk_fold(C);                                        /* constant folding */
        tk_verify(C, "constant folding");
        tk_counted(C);                                     /* while loops that count by one as for loops */
        tk_verify(C, "counted loops");
        tk_unroll(C);                                      /* short constant loops as copies */
        tk_verify(C, "unrolling");
        tk_checks(C);                                      /* bounds-check elision and hoisting */
        tk_verify(C, "check elision");
        tk_speculate(C);                                   /* a branch's value computed before it */
        tk_verify(C, "speculation");
        tk_nests(C);                                       /* per-row check versioning, interchange */
        tk_verify(C, "loop nests");
        tk_periodic(C);                                    /* periodic indices */
        tk_verify(C, "periodic indices");
        tk_strength(C);                                    /* invariant divisors */
        tk_verify(C, "strength reduction");
        tk_privatize(C);                                   /* a[k] += v on a fixed cell */
        tk_verify(C, "reduction privatization");
        tk_fold(C);
    }
    if (target->weak_f32_params) {
        tk_weak_float(C, K);                               /* a Python float that only meets f32 */
        tk_verify(C, "weak float narrowing");
    }
    if (prof) {
        rt_prof_step("passes", m->funcs[kernel].name, target->name, prof);
        prof = rt_prof_now();
    }
    const char *ir = tk_dump(C);                           /* textual IR */
    const char *src = tk_emit(C);                          /* C-family source for the dialect */
    if (prof) rt_prof_step("emit", m->funcs[kernel].name, target->name, prof);
    if (race_analysis == 2)
        fprintf(stderr, "tack: race check %.1f us of a %.1f us compile (kernel %s)\n", t1 - t0,
                cpu_us() - tstart, m->funcs[kernel].name);
    int dump = tk_config_int(TK_CFG_DUMP); /* 0 off, 1 ir, 2 source */
    if (dump == 1) fprintf(stderr, "%s\n", ir);
    if (dump == 2) fprintf(stderr, "%s\n", src);
    prog = make_program(C, K, ir, src);
    if (!prog) st = tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", m->funcs[kernel].name);

done:
    tk_arena_free(&C->arena);
    tack_free(C);
    if (st == TACK_OK) *out = prog;
    return st;
}
