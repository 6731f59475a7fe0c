/*
 * dialect_msl.c -- the "metal" target: kernels as Metal Shading Language 3
 * for Apple GPUs.
 *
 * MSL is C++14 with address spaces, so expressions and statements come out
 * of emit.c as for HIP (C++ literals `T{{...}}`) and the kernel is laid out
 * on a grid by layout_grid.c, as for OpenCL, the closest dialect: arrays are
 * buffers, scalars travel in 8-byte words.  What differs is supplied here.
 *
 * The arguments.  Every phase is
 *
 *   kernel void tk_phaseK(device tk_ctx *ctx [[buffer(0)]],
 *                         device uchar *fb_ [[buffer(1)]],
 *                         constant ulong *A [[buffer(2)]],
 *                         device T0 *a<p0> [[buffer(3)]], device T1 *a<p1> [[buffer(4)]], ...,
 *                         uint tk_tid [[thread_position_in_grid]],
 *                         uint tk_nth [[threads_per_grid]])
 *
 * buffer(0) is the 32-byte error record {int failed; int site; ulong prog;
 * long a, b} of gpu_common.h; buffer(1) the frame buffer (bound even when
 * the trailer says frame=0); buffer(2) an array of 8-byte words: word 0 the
 * program id, then for each kernel parameter in order an array's ndim
 * extents (int64, one word each; a strided view's element strides follow
 * them, its buffer bound at its element (0, ..., 0)) or a scalar's one word
 * (a complex's two, real then imaginary).  A float scalar's word holds the f32 bits in its
 * low 4 bytes, always: Metal has no double, and a kernel that would read a
 * double is refused (below), so every float slot of a kernel that compiles
 * is one that tk_param_f32 says is f32.  The i-th array parameter is bound
 * at buffer(3 + i); Metal guarantees 31 buffer slots, so more than 28 array
 * parameters is a CompileError.  The last line is the layout comment
 * `/ * tack-metal: phases=... frame=N * /` as for the other grid dialects.
 *
 * What Metal lacks, refused at compile time with a message that says what
 * to use instead (refuse(), before any source is written):
 *
 *   - double precision: Apple GPUs have no f64.  A float64 or complex128
 *     array or scalar parameter, an f64 local or expression, f64 vectors
 *     and matrices: CompileError naming the parameter, value or line.  A
 *     Python float that meets only f32 is an f32 (weak_float.c) and fine;
 *   - 64-bit atomics (an `a[i] += v` on an int64 array in a parallel loop):
 *     CompileError suggesting an int32 accumulator or a reduction;
 *   - print: MSL has no printf (NotImplementedError, as OpenCL's complex print).
 *
 * Atomics: 32-bit integers by Metal's atomic_int / atomic_uint fetch-add,
 * -sub, -min, -max, -and, -or, -xor and exchange; float add and sub by
 * atomic_float (Metal 3); a float's exchange by the atomic_uint of its bits;
 * float min and max, and every operation on 8/16-bit integers (on the
 * enclosing 32-bit word), by compare-exchange loops; compare-and-swap by
 * Metal's weak compare-exchange, retried while it fails seeing the expected
 * value; all memory_order_relaxed.  Checks write the error
 * record with a compare-exchange on `failed` (first failure wins); the host
 * reads it after the command buffer completes, which orders the writes.
 *
 * Math: the transcendental functions through `tk_m::`, an alias of
 * metal::precise (metal::fast with fast_math), so results do not depend on
 * the library's fast-math default; the exact ones (floor, fabs, fmod,
 * copysign, isnan, ...) as metal::; hypot, which MSL lacks, in the prelude.
 * No contraction of a * b + c: MSL's compiler fuses unless fast math is off,
 * so the backend must compile with MTLCompileOptions.mathMode =
 * MTLMathModeSafe (fastMathEnabled = NO on older systems), and with
 * MTLMathModeFast only for fast_math.  f16 is MSL's `half`, reached by
 * as_type (conversions round to nearest even).  Vectors and matrices are
 * our own packed structs (a vec3 is 12 bytes, as on the host), complex64
 * emit_complex.c's.  64-bit integer constants take the L suffix (`long` is
 * MSL's 64-bit type; `long long` is not one of its types), and float
 * constants are decimal with 9 significant digits, which gives back every
 * f32 exactly (hexadecimal floats are C++17; MSL is C++14).
 *
 * Nothing of this has run on Apple hardware: the tests type-check every
 * kernel of the language suite with clang++ against tests/msl/metal_stdlib,
 * a header of our own written from Apple's specification.
 */
#include <string.h>

#include "compiler/grid/grid.h"
#include "compiler/target.h"

enum { MSL_MAX_BUFFERS = 28 }; /* 31 slots, 3 of them ours */

static const char *msl_ctype(tack_dtype dt) { return tk_dialect_c.ctype(dt); }

static const char *msl_storage(tack_dtype dt) {
    switch (dt) {
    case TACK_BOOL: return "device uint8_t";
    case TACK_I8: return "device int8_t";
    case TACK_I16: return "device int16_t";
    case TACK_I32: return "device int32_t";
    case TACK_I64: return "device int64_t";
    case TACK_U8: return "device uint8_t";
    case TACK_U16: return "device uint16_t";
    case TACK_U32: return "device uint32_t";
    case TACK_U64: return "device uint64_t";
    case TACK_F16: return "device uint16_t";
    case TACK_BF16: return "device uint16_t";
    case TACK_F32: return "device float";
    case TACK_VEC2: return "device tk_vec2";
    case TACK_VEC3: return "device tk_vec3";
    case TACK_VEC4: return "device tk_vec4";
    case TACK_VEC2I: return "device tk_vec2i";
    case TACK_VEC3I: return "device tk_vec3i";
    case TACK_VEC4I: return "device tk_vec4i";
    case TACK_MAT22: return "device tk_mat22";
    case TACK_MAT33: return "device tk_mat33";
    case TACK_MAT44: return "device tk_mat44";
    case TACK_C64: return "device tk_c64";
    case TACK_QUAT: return "device tk_quat";
    case TACK_TRANSFORM: return "device tk_xform";
    default: return "device void"; /* f64 kinds: refused before anything is written */
    }
}

/* Transcendental functions through tk_m (precise, or fast with fast_math);
 * exactly rounded ones as metal::. */
static const char *msl_math(int m, tack_dtype dt) {
    (void)dt;
    switch (m) {
    case M_SQRT: return "tk_m::sqrt";
    case M_EXP: return "tk_m::exp";
    case M_LOG: return "tk_m::log";
    case M_LOG2: return "tk_m::log2";
    case M_LOG10: return "tk_m::log10";
    case M_SIN: return "tk_m::sin";
    case M_COS: return "tk_m::cos";
    case M_TAN: return "tk_m::tan";
    case M_ASIN: return "tk_m::asin";
    case M_ACOS: return "tk_m::acos";
    case M_ATAN: return "tk_m::atan";
    case M_SINH: return "tk_m::sinh";
    case M_COSH: return "tk_m::cosh";
    case M_TANH: return "tk_m::tanh";
    case M_ATAN2: return "tk_m::atan2";
    case M_POW: return "tk_m::pow";
    case M_HYPOT: return "tk_hypot"; /* emit_complex.c spells the fused multiply-add from it: tk_fma */
    case M_FLOOR: return "metal::floor";
    case M_CEIL: return "metal::ceil";
    case M_TRUNC: return "metal::trunc";
    case M_FABS: return "metal::fabs";
    case M_FMOD: return "metal::fmod";
    case M_COPYSIGN: return "metal::copysign";
    case M_ISNAN: return "metal::isnan";
    case M_ISINF: return "metal::isinf";
    case M_ISFINITE: return "metal::isfinite";
    case M_EXP2: return "tk_m::exp2";
    case M_ASINH: return "tk_m::asinh";
    case M_ACOSH: return "tk_m::acosh";
    case M_ATANH: return "tk_m::atanh";
    case M_RSQRT: return "tk_m::rsqrt";
    case M_RINT: return "metal::rint";
    case M_FMA: return "metal::fma";
    default: { /* MSL lacks erf, erfc, log1p, expm1, cbrt and remainder: the prelude's (prelude_math.c) */
        const char *h = tk_math_helper(m, TACK_F32);
        if (h) return h;
        switch (m) {
        case M_ERF: return "tk_erf_f32";
        case M_ERFC: return "tk_erfc_f32";
        case M_LOG1P: return "tk_log1p_f32";
        case M_EXPM1: return "tk_expm1_f32";
        case M_CBRT: return "tk_cbrt_f32";
        case M_REMAINDER: return "tk_remainder_f32";
        default: return "?";
        }
    }
    }
}

/* ------------------------------------------------------------ refusals */
static int ty_f64(tk_type t) {
    if (t.kind != TY_VALUE && t.kind != TY_ARRAY) return 0;
    return dt_scalar((tack_dtype)t.dt) == TACK_F64 || t.dt == TACK_C128;
}

static const char *local_label(const tk_spec *S, int l) {
    const char *n = l >= 0 && l < S->nlocals ? S->locals[l].name : NULL;
    return n ? n : "(a temporary)";
}

static const char *param_name(const tk_spec *S, int p) {
    return p >= 0 && p < S->nparams && S->pnames[p] ? S->pnames[p] : "?";
}

/* The NumPy name of a dtype ("float64"), as the user knows it. */
static const char *dtype_name(int dt) {
    switch (dt) {
    case TACK_F64: return "float64";
    case TACK_C128: return "complex128";
    case TACK_I64: return "int64";
    case TACK_U64: return "uint64";
    default: return tack_dtype_get((tack_dtype)dt)->name;
    }
}

/* The first node of x (preorder) that Metal cannot compile, or NULL: what
 * the target's descriptor (target.h) says it lacks -- an f64 value, a 64-bit
 * atomic, a print. */
static const tk_ir *first_bad(const tk_target *T, const tk_spec *S, const tk_ir *x) {
    if (!x) return NULL;
    int no_f64 = T->fp64 == TK_FP64_NONE;
    if ((no_f64 && (ty_f64(x->ty) || ty_f64(x->aux_ty))) || (!T->print && x->op == IR_PRINT)) return x;
    if (no_f64 && (x->op == IR_ASSIGN || x->op == IR_FOR || x->op == IR_LFILL) && x->local >= 0 &&
        x->local < S->nlocals && ty_f64(S->locals[x->local].ty))
        return x; /* an f64 local or local array, named */
    if (!T->atomics64 && x->op == IR_ATOMIC && x->ty.kind == TY_VALUE && dt_bits((tack_dtype)x->ty.dt) == 64 &&
        (dt_kind((tack_dtype)x->ty.dt) == TACK_KIND_INT || dt_kind((tack_dtype)x->ty.dt) == TACK_KIND_UINT))
        return x;
    for (int i = 0; i < x->n; i++) {
        const tk_ir *b = first_bad(T, S, x->k[i]);
        if (b) return b;
    }
    if (x->op == IR_PFOR) {
        const tk_ir *b = first_bad(T, S, x->off);
        if (!b) b = first_bad(T, S, x->red);
        return b;
    }
    return NULL;
}

static _Noreturn void refuse_node(tk_cc *C, const tk_spec *S, const tk_ir *x) {
    if (x->op == IR_PRINT)
        tk_unsupported(C, S->func, x->line,
                       "print() is not supported on Metal: the Metal Shading Language has no printf; "
                       "run the kernel on the CPU to print");
    if (x->op == IR_ATOMIC && !ty_f64(x->ty) && (x->sub == A_ADD || x->sub == A_SUB))
        tk_error(C, S->func, x->line, 0,
                 "Metal has no 64-bit atomics: the update of %s array '%s' in a parallel loop needs one; "
                 "accumulate into an int32 array, or sum into a local (a reduction) and store it once",
                 dtype_name(x->ty.dt), param_name(S, x->param));
    if (x->op == IR_ATOMIC && !ty_f64(x->ty))
        tk_error(C, S->func, x->line, 0,
                 "Metal has no 64-bit atomics: tack.atomic_%s on %s array '%s' needs one; use an int32 or uint32 "
                 "array (tack.atomic_%s there is Metal's own)",
                 tk_atom_name(x->sub), dtype_name(x->ty.dt), param_name(S, x->param), tk_atom_name(x->sub));
    const char *what = ty_f64(x->ty) ? dtype_name(x->ty.dt) : dtype_name(x->aux_ty.dt);
    if ((x->op == IR_ASSIGN || x->op == IR_FOR || x->op == IR_LOCAL || x->op == IR_LFILL) && x->local >= 0 &&
        x->local < S->nlocals &&
        ty_f64(S->locals[x->local].ty))
        tk_error(C, S->func, x->line, 0,
                 "Metal has no double precision (Apple GPUs have no float64): the value '%s' is %s; "
                 "use float32 (tack.float32(...), float32 arrays)",
                 local_label(S, x->local), dtype_name(S->locals[x->local].ty.dt));
    tk_error(C, S->func, x->line, 0,
             "Metal has no double precision (Apple GPUs have no float64): this expression computes in %s; "
             "use float32 (tack.float32(...), float32 arrays)",
             what);
}

/* Refuse what Metal cannot run, naming it: too many arrays, f64 parameters,
 * then the first f64 value, 64-bit atomic or print of each function. */
static void refuse(tk_cc *C) {
    const tk_spec *K = C->specs[0];
    int line = C->m->funcs[K->func].first_line, narr = 0;
    for (int p = 0; p < C->nargs; p++) narr += C->args[p].is_array != 0;
    if (narr > MSL_MAX_BUFFERS)
        tk_error(C, K->func, line, 0,
                 "kernel has %d array parameters; Metal binds at most %d (31 buffer slots, 3 taken by Tack): "
                 "pass fewer arrays (stack some into one array of higher dimension)",
                 narr, MSL_MAX_BUFFERS);
    for (int p = 0; p < C->nargs && p < K->nparams; p++) {
        const tack_argtype *a = &C->args[p];
        int f64 = dt_scalar(a->dtype) == TACK_F64 || a->dtype == TACK_C128;
        if (!f64 || (!a->is_array && tk_param_f32(C, p))) continue;
        if (a->is_array)
            tk_error(C, K->func, line, 0,
                     "Metal has no double precision (Apple GPUs have no float64): array parameter '%s' is %s; "
                     "pass a %s array (x.astype(np.%s))",
                     param_name(K, p), dtype_name(a->dtype), a->dtype == TACK_C128 ? "complex64" : "float32",
                     a->dtype == TACK_C128 ? "complex64" : "float32");
        if (a->weak)
            tk_error(C, K->func, line, 0,
                     "Metal has no double precision (Apple GPUs have no float64): the Python %s '%s' is used "
                     "as a %s; pass np.%s(...) or convert it where it is used (tack.%s(%s))",
                     a->dtype == TACK_C128 ? "complex" : "float", param_name(K, p), dtype_name(a->dtype),
                     a->dtype == TACK_C128 ? "complex64" : "float32", a->dtype == TACK_C128 ? "complex64" : "float32",
                     param_name(K, p));
        const char *name = param_name(K, p), *dot = strstr(name, "\xc2\xb7"); /* a leaf: 'g\u00b70', 'q\u00b7mass' */
        if (dot)
            tk_error(C, K->func, line, 0,
                     "Metal has no double precision (Apple GPUs have no float64): '%.*s' is passed by value with "
                     "%s components ('%s'); give it a float32 type (a vector annotated tack.vec3, not tack.vec3d; "
                     "a struct's fields tack.f32)",
                     (int)(dot - name), name, dtype_name(a->dtype), name);
        tk_error(C, K->func, line, 0,
                 "Metal has no double precision (Apple GPUs have no float64): scalar parameter '%s' is %s; "
                 "pass np.%s(...)",
                 param_name(K, p), dtype_name(a->dtype), a->dtype == TACK_C128 ? "complex64" : "float32");
    }
    for (int s = 0; s < C->nspecs; s++) {
        const tk_spec *S = C->specs[s];
        for (int p = 0; p < S->nparams; p++)
            if (ty_f64(S->ptypes[p]))
                tk_error(C, S->func, C->m->funcs[S->func].first_line, 0,
                         "Metal has no double precision (Apple GPUs have no float64): parameter '%s' of this "
                         "function is %s; use float32",
                         param_name(S, p), dtype_name(S->ptypes[p].dt));
        const tk_ir *b = first_bad(C->target, S, S->body);
        if (b) refuse_node(C, S, b);
        if (ty_f64(S->ret))
            tk_error(C, S->func, C->m->funcs[S->func].first_line, 0,
                     "Metal has no double precision (Apple GPUs have no float64): this function returns %s; "
                     "use float32",
                     dtype_name(S->ret.dt));
        for (int i = 0; i < S->nlocals; i++)
            if (ty_f64(S->locals[i].ty))
                tk_error(C, S->func, C->m->funcs[S->func].first_line, 0,
                         "Metal has no double precision (Apple GPUs have no float64): the value '%s' is %s; "
                         "use float32 (tack.float32(...), float32 arrays)",
                         local_label(S, i), dtype_name(S->locals[i].ty.dt));
    }
}

/* ------------------------------------------------------------ the prelude */
static const char PRELUDE_HEAD[] =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "#if defined(__has_builtin)\n"
    "#if !__has_builtin(__builtin_expect)\n"
    "#define __builtin_expect(x, y) (x)\n"
    "#endif\n"
    "#endif\n"
    "typedef bool tk_bool;\n"
    "typedef float tk_wide; /* the widest float: Apple GPUs have no double */\n"
    "/* The device's error record (32 bytes), as gpu_common.h lays it out. */\n"
    "typedef struct tk_ctx { int failed; int site; ulong prog; long a, b; } tk_ctx;\n"
    "typedef struct tk_abi { ulong prog; thread int *fl; } tk_abi; /* fl: the thread's failure flag */\n"
    "#define TK_FAILED(c) (atomic_load_explicit((device atomic_int *)&(c)->failed, memory_order_relaxed) != 0)\n"
    "#define TK_CALL_FAILED(c, a) (*(a)->fl)\n"
    "#define tk_wrap(i, s) ((i) < 0 ? (i) + (s) : (i))\n"
    "/* The first failure wins the record; the host reads it after the command\n"
    " * buffer completes, which makes these plain stores visible. */\n"
    "static inline void tk_fail(device tk_ctx *c, ulong prog, int site, long a, long b) {\n"
    "    device atomic_int *f = (device atomic_int *)&c->failed;\n"
    "    int expected = 0;\n"
    "    while (!atomic_compare_exchange_weak_explicit(f, &expected, 1, memory_order_relaxed, memory_order_relaxed)) {\n"
    "        if (expected != 0) return; /* another thread failed first */\n"
    "        expected = 0;              /* a spurious failure of the weak exchange */\n"
    "    }\n"
    "    c->site = site; c->prog = prog; c->a = a; c->b = b;\n"
    "}\n"
    "#define TK_FAIL(c, s, a, b) (*abi->fl = 1, tk_fail(c, abi->prog, s, a, b))\n";

/* The helpers every dialect shares (prelude.c), spelled for MSL: float is
 * the widest float, so no float64 ones. */
static const tk_prelude_style MSL_STYLE = {
    .qual = "static inline",
    .wide = "float",
    .wide_suffix = "f",
    .int_suffix = "L",
    .math = msl_math,
    .f64 = TK_PRELUDE_F64_NONE,
    .shifts_note = "/* Shifts as NumPy does them: a count at or past the width shifts every bit out. */\n",
};

/* After the tk_m alias, which it names. */
static const char PRELUDE_HYPOT[] =
    "static inline float tk_fma(float a, float b, float c) { return metal::fma(a, b, c); }\n"
    "/* hypot, which MSL lacks: the larger magnitude times sqrt(1 + ratio^2) */\n"
    "static inline float tk_hypot(float x, float y) {\n"
    "    x = metal::fabs(x); y = metal::fabs(y);\n"
    "    if (metal::isinf(x) || metal::isinf(y)) return INFINITY;\n"
    "    if (metal::isnan(x) || metal::isnan(y)) return x + y;\n"
    "    float l = x > y ? x : y, s = x > y ? y : x;\n"
    "    if (l == 0) return l;\n"
    "    float r = s / l;\n"
    "    return l * tk_m::sqrt(metal::fma(r, r, 1.0f));\n"
    "}\n";

static const char PRELUDE_F16[] =
    "/* f16 storage is its bits; MSL's half converts, rounding to nearest even */\n"
    "static inline float tk_h2f(uint16_t h) { return float(as_type<half>(h)); }\n"
    "static inline uint16_t tk_f2h(float f) { return as_type<uint16_t>(half(f)); }\n";

/* bfloat16 storage as its bits (dialect_c.c says how a store rounds): integer
 * code, since MSL's own bfloat exists only from Metal 3.1 */
static const char PRELUDE_BF16[] =
    "static inline float tk_b2f(uint16_t h) { return as_type<float>((uint)h << 16); }\n"
    "static inline uint16_t tk_f2b(float f) {\n"
    "    uint u = as_type<uint>(f);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n";

static const char PRELUDE_ATOMIC[] =
    "/* 8 and 16-bit integers: compare-exchange on the enclosing aligned 32-bit word (op: add, sub, min, max,\n"
    " * exch, and, or, xor, cas). */\n"
    "#define TK_ATOMIC_SMALL(T, U) \\\n"
    "static inline T tk_atomic_rmw_##T(device T *p, T v, int op, T e) { \\\n"
    "    device uchar *b = (device uchar *)p; const uint off = (uint)((ulong)b & 3); \\\n"
    "    device atomic_uint *w = (device atomic_uint *)(b - off); \\\n"
    "    const uint sh = off * 8u, mask = (uint)(U)~(U)0 << sh; \\\n"
    "    uint o = atomic_load_explicit(w, memory_order_relaxed); \\\n"
    "    for (;;) { T cur = (T)(U)((o & mask) >> sh), nv; \\\n"
    "        if (op == 0) nv = (T)(U)((uint)(U)cur + (uint)(U)v); \\\n"
    "        else if (op == 1) nv = (T)(U)((uint)(U)cur - (uint)(U)v); \\\n"
    "        else if (op == 2) nv = v < cur ? v : cur; else if (op == 3) nv = v > cur ? v : cur; \\\n"
    "        else if (op == 4) nv = v; else if (op == 5) nv = (T)(cur & v); else if (op == 6) nv = (T)(cur | v); \\\n"
    "        else if (op == 7) nv = (T)(cur ^ v); else nv = cur == e ? v : cur; \\\n"
    "        if (nv == cur && op >= 2) return cur; \\\n"
    "        uint n = (o & ~mask) | (((uint)(U)nv << sh) & mask); \\\n"
    "        if (atomic_compare_exchange_weak_explicit(w, &o, n, memory_order_relaxed, memory_order_relaxed)) \\\n"
    "            return cur; } } \\\n"
    "static inline T tk_atomic_add_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 0, 0); } \\\n"
    "static inline T tk_atomic_sub_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 1, 0); } \\\n"
    "static inline T tk_atomic_min_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 2, 0); } \\\n"
    "static inline T tk_atomic_max_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 3, 0); } \\\n"
    "static inline T tk_atomic_exch_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 4, 0); } \\\n"
    "static inline T tk_atomic_and_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 5, 0); } \\\n"
    "static inline T tk_atomic_or_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 6, 0); } \\\n"
    "static inline T tk_atomic_xor_##T(device T *p, T v) { return tk_atomic_rmw_##T(p, v, 7, 0); } \\\n"
    "static inline T tk_atomic_cas_##T(device T *p, T e, T v) { return tk_atomic_rmw_##T(p, v, 8, e); }\n"
    "TK_ATOMIC_SMALL(int8_t, uint8_t) TK_ATOMIC_SMALL(uint8_t, uint8_t)\n"
    "TK_ATOMIC_SMALL(int16_t, uint16_t) TK_ATOMIC_SMALL(uint16_t, uint16_t)\n"
    "/* Compare-and-swap of a 32-bit word W through atomic type A: Metal's compare-exchange is the weak one,\n"
    " * which may fail with the cell equal to e; it is tried again until it succeeds or sees another value. */\n"
    "#define TK_ATOMIC_CAS32(N, A, W) \\\n"
    "static inline W tk_cas32_##N(device A *q, W e, W v) { \\\n"
    "    for (;;) { W o = e; \\\n"
    "        if (atomic_compare_exchange_weak_explicit(q, &o, v, memory_order_relaxed, memory_order_relaxed)) \\\n"
    "            return e; \\\n"
    "        if (o != e) return o; } }\n"
    "TK_ATOMIC_CAS32(int, atomic_int, int) TK_ATOMIC_CAS32(uint, atomic_uint, uint)\n"
    "/* 32-bit integers: Metal's own (64-bit ones are refused at compile time). */\n"
    "#define TK_ATOMIC_NATIVE(T, A, N) \\\n"
    "static inline T tk_atomic_add_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_add_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_sub_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_sub_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_min_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_min_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_max_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_max_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_exch_##T(device T *p, T v) { \\\n"
    "    return atomic_exchange_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_and_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_and_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_or_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_or_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_xor_##T(device T *p, T v) { \\\n"
    "    return atomic_fetch_xor_explicit((device A *)p, v, memory_order_relaxed); } \\\n"
    "static inline T tk_atomic_cas_##T(device T *p, T e, T v) { return tk_cas32_##N((device A *)p, e, v); }\n"
    "TK_ATOMIC_NATIVE(int32_t, atomic_int, int)\n"
    "TK_ATOMIC_NATIVE(uint32_t, atomic_uint, uint)\n"
    "/* float: add and sub native (Metal 3); min and max compare-exchange the bits\n"
    " * (a NaN argument leaves the cell alone); exchange and compare-and-swap move and\n"
    " * compare the bits (-0.0 is not 0.0; a NaN matches the same NaN) */\n"
    "static inline float tk_atomic_add_float(device float *p, float v) {\n"
    "    return atomic_fetch_add_explicit((device atomic_float *)p, v, memory_order_relaxed);\n"
    "}\n"
    "static inline float tk_atomic_sub_float(device float *p, float v) {\n"
    "    return atomic_fetch_sub_explicit((device atomic_float *)p, v, memory_order_relaxed);\n"
    "}\n"
    "static inline float tk_atomic_mm_float(device float *p, float v, int mx) {\n"
    "    device atomic_uint *q = (device atomic_uint *)p;\n"
    "    uint o = atomic_load_explicit(q, memory_order_relaxed);\n"
    "    for (;;) {\n"
    "        float f = as_type<float>(o), g = mx ? (v > f ? v : f) : (v < f ? v : f);\n"
    "        if (g == f) return f;\n"
    "        if (atomic_compare_exchange_weak_explicit(q, &o, as_type<uint>(g), memory_order_relaxed,\n"
    "                                                  memory_order_relaxed))\n"
    "            return f;\n"
    "    }\n"
    "}\n"
    "static inline float tk_atomic_min_float(device float *p, float v) { return tk_atomic_mm_float(p, v, 0); }\n"
    "static inline float tk_atomic_max_float(device float *p, float v) { return tk_atomic_mm_float(p, v, 1); }\n"
    "static inline float tk_atomic_exch_float(device float *p, float v) {\n"
    "    uint o = atomic_exchange_explicit((device atomic_uint *)p, as_type<uint>(v), memory_order_relaxed);\n"
    "    return as_type<float>(o);\n"
    "}\n"
    "static inline float tk_atomic_cas_float(device float *p, float e, float v) {\n"
    "    return as_type<float>(tk_cas32_uint((device atomic_uint *)p, as_type<uint>(e), as_type<uint>(v)));\n"
    "}\n";

static const char PRELUDE_VEC[] =
    "#define TK_VEC(N, T, LEN) \\\n"
    "typedef struct N { T v[LEN]; } N; \\\n"
    "static inline N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] + b.v[i]; return r; } \\\n"
    "static inline N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] - b.v[i]; return r; } \\\n"
    "static inline N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] * b.v[i]; return r; } \\\n"
    "static inline N tk_div_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] / b.v[i]; return r; } \\\n"
    "static inline N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = -a.v[i]; return r; } \\\n"
    "static inline T tk_dot_##N(N a, N b) { T s = 0; for (int i = 0; i < LEN; i++) s += a.v[i] * b.v[i]; return s; }\n"
    "#define TK_VECI(N, LEN) \\\n"
    "typedef struct N { int32_t v[LEN]; } N; \\\n"
    "static inline N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) \\\n"
    "    r.v[i] = (int32_t)((uint32_t)a.v[i] + (uint32_t)b.v[i]); return r; } \\\n"
    "static inline N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) \\\n"
    "    r.v[i] = (int32_t)((uint32_t)a.v[i] - (uint32_t)b.v[i]); return r; } \\\n"
    "static inline N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) \\\n"
    "    r.v[i] = (int32_t)((uint32_t)a.v[i] * (uint32_t)b.v[i]); return r; } \\\n"
    "static inline N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)(0u - (uint32_t)a.v[i]); \\\n"
    "    return r; } \\\n"
    "static inline int32_t tk_dot_##N(N a, N b) { uint32_t s = 0; for (int i = 0; i < LEN; i++) \\\n"
    "    s += (uint32_t)a.v[i] * (uint32_t)b.v[i]; return (int32_t)s; }\n"
    "#define TK_VECF(N, T, LEN) TK_VEC(N, T, LEN) \\\n"
    "static inline T tk_length_##N(N a) { return tk_m::sqrt(tk_dot_##N(a, a)); } \\\n"
    "static inline N tk_normalize_##N(N a) { T l = tk_length_##N(a); N r; \\\n"
    "    for (int i = 0; i < LEN; i++) r.v[i] = l != 0 ? a.v[i] / l : 0; return r; }\n"
    "#define TK_MAT(M, V, T, R) \\\n"
    "typedef struct M { T m[R][R]; } M; \\\n"
    "static inline M tk_add_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) \\\n"
    "    r.m[i][j] = a.m[i][j] + b.m[i][j]; return r; } \\\n"
    "static inline M tk_sub_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) \\\n"
    "    r.m[i][j] = a.m[i][j] - b.m[i][j]; return r; } \\\n"
    "static inline M tk_mul_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) \\\n"
    "    r.m[i][j] = a.m[i][j] * b.m[i][j]; return r; } \\\n"
    "static inline M tk_div_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) \\\n"
    "    r.m[i][j] = a.m[i][j] / b.m[i][j]; return r; } \\\n"
    "static inline M tk_neg_##M(M a) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) \\\n"
    "    r.m[i][j] = -a.m[i][j]; return r; } \\\n"
    "static inline V tk_mm_##M##_##V(M a, V b) { V r; for (int i = 0; i < R; i++) { T s = 0; \\\n"
    "    for (int j = 0; j < R; j++) s += a.m[i][j] * b.v[j]; r.v[i] = s; } return r; } \\\n"
    "static inline M tk_mm_##M##_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) { \\\n"
    "    T s = 0; for (int k = 0; k < R; k++) s += a.m[i][k] * b.m[k][j]; r.m[i][j] = s; } return r; }\n"
    "TK_VECF(tk_vec2, float, 2) TK_VECF(tk_vec3, float, 3) TK_VECF(tk_vec4, float, 4)\n"
    "TK_VECI(tk_vec2i, 2) TK_VECI(tk_vec3i, 3) TK_VECI(tk_vec4i, 4)\n"
    "static inline tk_vec3 tk_cross_tk_vec3(tk_vec3 a, tk_vec3 b) { tk_vec3 r;\n"
    "    r.v[0] = a.v[1] * b.v[2] - a.v[2] * b.v[1]; r.v[1] = a.v[2] * b.v[0] - a.v[0] * b.v[2];\n"
    "    r.v[2] = a.v[0] * b.v[1] - a.v[1] * b.v[0]; return r; }\n"
    "static inline tk_vec3i tk_cross_tk_vec3i(tk_vec3i a, tk_vec3i b) { tk_vec3i r; uint32_t x[3], y[3];\n"
    "    for (int i = 0; i < 3; i++) { x[i] = (uint32_t)a.v[i]; y[i] = (uint32_t)b.v[i]; }\n"
    "    r.v[0] = (int32_t)(x[1] * y[2] - x[2] * y[1]); r.v[1] = (int32_t)(x[2] * y[0] - x[0] * y[2]);\n"
    "    r.v[2] = (int32_t)(x[0] * y[1] - x[1] * y[0]); return r; }\n"
    "TK_MAT(tk_mat22, tk_vec2, float, 2) TK_MAT(tk_mat33, tk_vec3, float, 3) TK_MAT(tk_mat44, tk_vec4, float, 4)\n";

static void msl_prelude(tk_cc *C, tk_buf *b) {
    refuse(C);
    tk_puts(b, "/* Compile with MTLCompileOptions.mathMode = MTLMathModeSafe (fastMathEnabled = NO):\n"
               " * no contraction of a * b + c, IEEE results as on the CPU. */\n");
    tk_puts(b, PRELUDE_HEAD);
    tk_prelude_helpers(b, &MSL_STYLE);
    tk_printf(b, "namespace tk_m = metal::%s;\n", C->opts.fast_math ? "fast" : "precise");
    tk_puts(b, PRELUDE_HYPOT);
    tk_prelude_math(C, b, &MSL_STYLE);
    if (C->uses_f16) tk_puts(b, PRELUDE_F16);
    if (C->uses_bf16) tk_puts(b, PRELUDE_BF16);
    if (C->uses_atomic) tk_puts(b, PRELUDE_ATOMIC);
    if (C->uses_vec) tk_puts(b, PRELUDE_VEC);
    if (C->uses_atomic && C->uses_vec) tk_vec_atomic_prelude(C, b, "static inline", "device", 0);
    tk_prelude_linalg(C, b, &MSL_STYLE);
    if (C->uses_complex) tk_complex_prelude(C, b, "static inline", "device", 0);
    if (C->uses_quat) tk_quat_prelude(C, b, "static inline", 0);
}

/* ------------------------------------------------------------ print */
static void msl_print(tk_emitter *e, tk_ir *s) {
    tk_cc *C = tk_emitter_cc(e);
    tk_unsupported(C, tk_emitter_kernel(e)->func, s->line,
                   "print() is not supported on Metal: the Metal Shading Language has no printf; "
                   "run the kernel on the CPU to print");
}

/* ------------------------------------------------------------ the layout */
/* The word of A (buffer(2)) where scalar parameter p's slot lies. */
static int scalar_word(tk_cc *C, const tk_spec *K, int p) {
    int w = 1; /* word 0: the program id */
    for (int q = 0; q < p && q < K->nparams; q++) {
        if (K->ptypes[q].kind == TY_ARRAY) w += K->ptypes[q].ndim * (K->ptypes[q].strided ? 2 : 1);
        else w += q < C->nargs && dt_kind(C->args[q].dtype) == TACK_KIND_COMPLEX ? 2 : 1;
    }
    return w;
}

static void msl_phase_open(tk_emitter *e, const tk_spec *K, int k, int parallel) {
    (void)parallel;
    tk_emitter_printf(e,
                      "kernel void tk_phase%d(device tk_ctx *ctx [[buffer(0)]], device uchar *fb_ [[buffer(1)]], "
                      "constant ulong *A [[buffer(2)]]",
                      k);
    int nb = 3;
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind == TY_ARRAY)
            tk_emitter_printf(e, ",\n        %s *a%d [[buffer(%d)]]", msl_storage((tack_dtype)t.dt), p, nb++);
    }
    int blocks = 0; /* a kernel with a blocks loop (tack.blocks): its phases know their threadgroup too */
    for (int i = 0; K->body && i < K->body->n; i++) blocks |= ir_is_blocks(K->body->k[i]);
    tk_emitter_printf(e, ",\n        uint tk_tid [[thread_position_in_grid]], uint tk_nth [[threads_per_grid]]%s",
                      blocks ? ",\n        uint tk_gid [[threadgroup_position_in_grid]], uint tk_ngr [[threadgroups_per_grid]],\n"
                               "        uint tk_lid [[thread_position_in_threadgroup]]) {\n"
                             : ") {\n");
}

/* The frame buffer and the arrays' extents, from buffers 1 and 2. */
static void msl_phase_args(tk_emitter *e, const tk_spec *K) {
    tk_cc *C = tk_emitter_cc(e);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "device tk_fbuf *FB = (device tk_fbuf *)fb_; (void)FB;\n");
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind != TY_ARRAY) continue;
        int w = scalar_word(C, K, p);
        for (int d = 0; d < t.ndim; d++) {
            tk_emitter_indent(e);
            tk_emitter_printf(e, "const int64_t a%d_s%d = (int64_t)A[%d]; (void)a%d_s%d;\n", p, d, w + d, p, d);
        }
        for (int d = 0; t.strided && d < t.ndim; d++) { /* a strided view's element strides, after its extents */
            tk_emitter_indent(e);
            tk_emitter_printf(e, "const int64_t a%d_t%d = (int64_t)A[%d]; (void)a%d_t%d;\n", p, d, w + t.ndim + d, p, d);
        }
    }
}

static void msl_scalar(tk_emitter *e, int p, int im, const char *mem) {
    int w = scalar_word(tk_emitter_cc(e), tk_emitter_kernel(e), p) + (im ? 1 : 0);
    if (mem[0] == 'f') tk_emitter_printf(e, "as_type<float>((uint)A[%d])", w); /* f32 bits, always (see above) */
    else if (mem[0] == 'i') tk_emitter_printf(e, "((int64_t)A[%d])", w);
    else tk_emitter_printf(e, "A[%d]", w);
}

static const tk_grid msl_grid = {
    .tag = "tack-metal",
    .phase_open = msl_phase_open,
    .phase_args = msl_phase_args,
    .prog = "A[0]",
    .scalar = msl_scalar,
    .first_thread = "tk_tid == 0",
    .thread_index = "(uint64_t)tk_tid",
    .thread_stride = "(uint64_t)tk_nth",
    .group_index = "tk_gid",
    .group_count = "tk_ngr",
    .local_index = "tk_lid",
};

static void msl_kernel(tk_emitter *e, tk_buf *out) { tk_grid_kernel(e, out, &msl_grid); }

static const char *const msl_specials[4] = {"NAN", "NAN", "INFINITY", "INFINITY"};

const tk_dialect tk_dialect_msl = {
    .prelude = msl_prelude,
    .ctype = msl_ctype,
    .storage_type = msl_storage,
    .math = msl_math,
    .export_attr = "kernel",
    .ctx_param = "device tk_ctx *ctx",
    .fail_fn = "TK_FAIL",
    .wide_float = "tk_wide",
    .print = msl_print,
    .func_qual = "static inline",
    .cxx_literals = 1,
    .long_is_64 = 1,
    .decimal_floats = 1,
    .thread_ptr = "thread ",
    .float_specials = msl_specials,
    .barrier = "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);",
    .shared_qual = "threadgroup ",
    .kernel = msl_kernel,
};
