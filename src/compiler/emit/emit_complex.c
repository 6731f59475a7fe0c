/*
 * emit_complex.c -- complex numbers in the emitted source: the expressions
 * of complex type or operands, and the helpers every dialect's prelude
 * carries for them (complex.c lowers them; this file only writes).
 *
 *   emission   every operation calls a helper of the prelude, tk_<op>_<T>
 *              (T = tk_c64, tk_c128), written once below as a macro and
 *              spelled for each dialect with its qualifier and math names.
 *              The helpers use explicit formulas, not C's _Complex (Annex
 *              G's multiplication and division differ from NumPy's), so every
 *              backend gives the same bits, and they are NumPy's: a product
 *              rounds as NumPy's vector loops on FMA hardware do (one of the
 *              two products fused, with the dialect's correctly rounded fma),
 *              a quotient is Smith's method, abs is the vector loop's larger
 *              part times sqrt(fma(r, r, 1)).  exp, sqrt and log give
 *              C99 Annex G's values (the C library's, which NumPy calls) at
 *              zeros, infinities and NaNs, bit for bit, and stay within 2 ulps
 *              of it at the extremes: sqrt rescales by a power of 4 near
 *              overflow and underflow (and halves last, as the library does,
 *              so a subnormal part rounds as there); log takes log|z| as
 *              log(l) + log1p((s/l)^2)/2, and near |z| = 1 from l*l + s*s - 1
 *              in double-word arithmetic (fma products, two-sums), with
 *              Goldberg's log1p; exp whose real part overflows exp() is
 *              exp(x/2) squared (4 ulps).  tests/python/test_complex_edges.py
 *              sweeps the grid of special parts against NumPy.
 *              OpenCL writes complex128 only when the kernel enables fp64.
 *
 *   atomics    `a[i] += z` in a parallel loop adds the two parts with two
 *              float atomics: no update of either part is lost, but another
 *              thread may see one part added before the other (documented).
 */
#include <string.h>

#include "compiler/emit/emit.h"

/* -------------------------------------------------------------- emission */
static const char *cname(tk_emitter *e, int dt) { return ctype(e, dt); }

/* IR_VEC of a complex type. */
void em_complex_make(tk_emitter *e, tk_ir *x) {
    P(e, "tk_mk_%s(", cname(e, x->ty.dt)); ex(e, x->k[0]); P(e, ", "); ex(e, x->k[1]); P(e, ")");
}

/* IR_CAST from or to a complex type (complex to complex, complex to bool). */
void em_complex_cast(tk_emitter *e, tk_ir *x) {
    tk_ir *s = x->k[0];
    if (x->ty.dt == s->ty.dt) { ex(e, s); return; }
    if (ty_is_bool(x->ty)) P(e, "tk_truth_%s(", cname(e, s->ty.dt));
    else P(e, "tk_%s_of_%s(", cname(e, x->ty.dt), cname(e, s->ty.dt));
    ex(e, s);
    P(e, ")");
}

void em_complex_bin(tk_emitter *e, tk_ir *x) {
    static const char *nm[B_COUNT] = {[B_ADD] = "add", [B_SUB] = "sub", [B_MUL] = "mul", [B_DIV] = "div",
                                      [B_EQ] = "eq", [B_NE] = "ne"};
    int b = x->sub, dt = (b == B_EQ || b == B_NE) ? x->aux_ty.dt : x->ty.dt;
    P(e, "tk_%s_%s(", nm[b] ? nm[b] : "bad", cname(e, dt));
    ex(e, x->k[0]); P(e, ", "); ex(e, x->k[1]); P(e, ")");
}

/* IR_UN whose operand is complex: -z, abs(z), the truth of z. */
void em_complex_un(tk_emitter *e, tk_ir *x) {
    const char *op = x->sub == U_NEG ? "neg" : x->sub == U_ABS ? "abs" : x->sub == U_TRUTH ? "truth" : "bad";
    if (x->sub == U_NOT) op = "not";
    P(e, "%stk_%s_%s(", x->sub == U_NOT ? "!" : "", x->sub == U_NOT ? "truth" : op, cname(e, x->k[0]->ty.dt));
    ex(e, x->k[0]);
    P(e, ")");
}

void em_complex_math(tk_emitter *e, tk_ir *x) {
    const char *f = x->sub == M_EXP ? "exp" : x->sub == M_SQRT ? "sqrt" : x->sub == M_LOG ? "log" : "bad";
    P(e, "tk_%s_%s(", f, cname(e, x->aux_ty.dt));
    ex(e, x->k[0]);
    P(e, ")");
}

/* ---------------------------------------------------------------- prelude */
/* The helpers of one complex type N of part T.  Q is the dialect's function
 * qualifier, G the address space of an atomic's pointer; the math functions
 * are the dialect's own spellings for T (passed by tk_complex_prelude). */
static const char CPLX[] =
    "#ifndef TK_ROUNDED\n"
    "#define TK_ROUNDED(x) (x)\n"
    "#endif\n"
    "#define TK_CPLX(Q, N, T, SQRT, HYPOT, EXP, LOG, COS, SIN, ATAN2, FABS, COPYSIGN, INF, FMA, BIG, TINY, SUP, SDN) \\\n"
    "typedef struct N { T v[2]; } N; \\\n"
    "Q N tk_mk_##N(T re, T im) { N r; r.v[0] = re; r.v[1] = im; return r; } \\\n"
    "Q N tk_add_##N(N a, N b) { return tk_mk_##N(a.v[0] + b.v[0], a.v[1] + b.v[1]); } \\\n"
    "Q N tk_sub_##N(N a, N b) { return tk_mk_##N(a.v[0] - b.v[0], a.v[1] - b.v[1]); } \\\n"
    "Q N tk_neg_##N(N a) { return tk_mk_##N(-a.v[0], -a.v[1]); } \\\n"
    "Q N tk_mul_##N(N a, N b) { /* NumPy's SIMD loops' rounding: one product fused */ \\\n"
    "    return tk_mk_##N(FMA(a.v[0], b.v[0], -(a.v[1] * b.v[1])), FMA(a.v[0], b.v[1], a.v[1] * b.v[0])); } \\\n"
    "Q N tk_div_##N(N a, N b) { /* Smith's method, as NumPy divides */ \\\n"
    "    T br = b.v[0], bi = b.v[1], abr = FABS(br), abi = FABS(bi); \\\n"
    "    if (abr >= abi) { \\\n"
    "        if (abr == 0 && abi == 0) return tk_mk_##N(a.v[0] / abr, a.v[1] / abr); \\\n"
    "        T rat = bi / br, scl = (T)1.0 / (br + bi * rat); \\\n"
    "        return tk_mk_##N((a.v[0] + TK_ROUNDED(a.v[1] * rat)) * scl, (a.v[1] - TK_ROUNDED(a.v[0] * rat)) * scl); \\\n"
    "    } \\\n"
    "    T rat = br / bi, scl = (T)1.0 / (bi + br * rat); \\\n"
    "    return tk_mk_##N((TK_ROUNDED(a.v[0] * rat) + a.v[1]) * scl, (TK_ROUNDED(a.v[1] * rat) - a.v[0]) * scl); } \\\n"
    "Q tk_bool tk_eq_##N(N a, N b) { return a.v[0] == b.v[0] && a.v[1] == b.v[1]; } \\\n"
    "Q tk_bool tk_ne_##N(N a, N b) { return !(a.v[0] == b.v[0] && a.v[1] == b.v[1]); } \\\n"
    "Q tk_bool tk_truth_##N(N a) { return a.v[0] != 0 || a.v[1] != 0; } \\\n"
    "Q T tk_abs_##N(N a) { /* NumPy's: the larger part times sqrt(1 + ratio^2), fused */ \\\n"
    "    T x = FABS(a.v[0]), y = FABS(a.v[1]); \\\n"
    "    if (x - x != 0 && x == x) return x; \\\n"
    "    if (y - y != 0 && y == y) return y; \\\n"
    "    if (x != x || y != y) return x + y; \\\n"
    "    T l = x > y ? x : y, s = x > y ? y : x; \\\n"
    "    if (l == 0) return l; \\\n"
    "    T r = s / l; \\\n"
    "    return l * SQRT(FMA(r, r, (T)1)); } \\\n"
    "Q N tk_exp_##N(N a) { /* C99 Annex G's values; exp(x) past overflow in halves */ \\\n"
    "    T x = a.v[0], y = a.v[1]; \\\n"
    "    if (y == 0) return tk_mk_##N(EXP(x), y); \\\n"
    "    if (y - y != 0) { /* an infinite or nan imaginary part; the NaNs' signs are the library's */ \\\n"
    "        T n = FABS(y - y); \\\n"
    "        if (x - x != 0 && x == x) return x > 0 ? tk_mk_##N(x, y - y) : tk_mk_##N((T)0, COPYSIGN((T)0, y)); \\\n"
    "        return tk_mk_##N(n, n); } \\\n"
    "    T c = COS(y), s = SIN(y), m = EXP(x); \\\n"
    "    if (m - m != 0 && x - x == 0) { T h = EXP(x * (T)0.5); return tk_mk_##N(c * h * h, s * h * h); } \\\n"
    "    return tk_mk_##N(m * c, m * s); } \\\n"
    "Q T tk_log1p_##N(T d) { /* log(1 + d), Goldberg's way: a few ulps */ \\\n"
    "    T u = (T)1 + d; \\\n"
    "    return u == (T)1 ? d : LOG(u) * d / (u - (T)1); } \\\n"
    "Q N tk_log_##N(N a) { /* log|z| without overflow or underflow, and near |z| = 1 \\\n"
    "                         from l*l + s*s - 1 in double-word arithmetic */ \\\n"
    "    T x = FABS(a.v[0]), y = FABS(a.v[1]), th = ATAN2(a.v[1], a.v[0]); \\\n"
    "    if (x - x != 0 || y - y != 0) \\\n"
    "        return tk_mk_##N((x - x != 0 && x == x) || (y - y != 0 && y == y) ? INF : x + y, th); \\\n"
    "    T l = x > y ? x : y, s = x > y ? y : x; \\\n"
    "    if (s == 0) return tk_mk_##N(LOG(l), th); /* -inf at 0 */ \\\n"
    "    if (l >= (T)0.5 && l <= (T)2) { /* products split by fma, sums by two-sum */ \\\n"
    "        T ah = l * l, al = FMA(l, l, -ah), bh = s * s, bl = FMA(s, s, -bh); \\\n"
    "        T t = ah - (T)1, tb = t - ah, te = (ah - (t - tb)) + ((T)-1 - tb); \\\n"
    "        T sh = t + bh, bb = sh - t, err = (t - (sh - bb)) + (bh - bb); \\\n"
    "        return tk_mk_##N((T)0.5 * tk_log1p_##N(sh + (err + te + al + bl)), th); } \\\n"
    "    T r = s / l; \\\n"
    "    return tk_mk_##N(LOG(l) + (T)0.5 * tk_log1p_##N(r * r), th); } \\\n"
    "Q N tk_sqrt_##N(N a) { /* scaled by a power of 4 near overflow and underflow */ \\\n"
    "    T x = a.v[0], y = a.v[1]; \\\n"
    "    if (x == 0 && y == 0) return tk_mk_##N((T)0, y); \\\n"
    "    if (y - y != 0 && y == y) return tk_mk_##N(INF, y); /* an infinite imaginary part */ \\\n"
    "    if (x - x != 0 && x == x) { /* an infinite real part */ \\\n"
    "        if (x > 0) return tk_mk_##N(x, y == y ? COPYSIGN((T)0, y) : y); \\\n"
    "        return tk_mk_##N(y == y ? (T)0 : FABS(y), y == y ? COPYSIGN(-x, y) : -x); } \\\n"
    "    if (x != x || y != y) return tk_mk_##N(x + y, x + y); \\\n"
    "    T ax = FABS(x), ay = FABS(y), l = ax > ay ? ax : ay, k = (T)1, t; \\\n"
    "    if (l > BIG) { ax *= (T)0.25; ay *= (T)0.25; k = (T)2; } \\\n"
    "    else if (l < TINY) { ax *= SUP; ay *= SUP; k = SDN; } \\\n"
    "    if (ax == 0) { t = SQRT((T)0.5 * ay) * k; return tk_mk_##N(t, COPYSIGN(t, y)); } \\\n"
    "    t = SQRT((ax + HYPOT(ax, ay)) * (T)0.5); \\\n"
    "    T o = (T)0.5 * (ay / t); /* halved last, as the C library does (a subnormal rounds as there) */ \\\n"
    "    if (x >= 0) return tk_mk_##N(t * k, COPYSIGN(o * k, y)); \\\n"
    "    return tk_mk_##N(o * k, COPYSIGN(t * k, y)); }\n";

static const char CPLX_ATOMIC[] =
    "#define TK_CPLX_ATOMIC(Q, G, N, T) \\\n"
    "Q N tk_atomic_add_##N(G N *p, N v) { T r = tk_atomic_add_##T(&p->v[0], v.v[0]); \\\n"
    "    return tk_mk_##N(r, tk_atomic_add_##T(&p->v[1], v.v[1])); } \\\n"
    "Q N tk_atomic_sub_##N(G N *p, N v) { T r = tk_atomic_sub_##T(&p->v[0], v.v[0]); \\\n"
    "    return tk_mk_##N(r, tk_atomic_sub_##T(&p->v[1], v.v[1])); }\n";

/* The dialect's fused multiply-add for a part type: its hypot spelled fma
 * (__builtin_hypotf -> __builtin_fmaf, hypot -> fma); the math table has no
 * row for it because kernels do not call it. */
static const char *fma_name(tk_cc *C, const char *hypot) {
    const char *h = strstr(hypot, "hypot");
    if (!h) return "fma";
    return tk_fmt(&C->arena, "%.*sfma%s", (int)(h - hypot), hypot, h + 5);
}

/* The complex helpers (uses_complex), after the dialect's atomics.  with_f64:
 * whether complex128 may be written (OpenCL without fp64 must not name double). */
void tk_complex_prelude(tk_cc *C, tk_buf *b, const char *qual, const char *global, int with_f64) {
    tk_puts(b, CPLX);
    if (C->uses_atomic) tk_puts(b, CPLX_ATOMIC);
    const tk_dialect *D = C->dialect;
    /* each type's helpers; the conversions once both exist */
    const tack_dtype parts[2] = {TACK_F32, TACK_F64};
    for (int i = 0; i < (with_f64 ? 2 : 1); i++) {
        tack_dtype part = parts[i];
        const char *T = D->ctype(part), *N = D->ctype(dt_complex_of(part));
        /* sqrt's scaling: past BIG by 1/4, below TINY by SUP = 4^k, the
         * root then by 2 or SDN = 2^-k (powers of two: exact in 9 or 17 digits) */
        const int f = part == TACK_F32;
        const double big = f ? 0x1p125 : 0x1p1021, tiny = f ? 0x1p-100 : 0x1p-1000;
        const double sup = f ? 0x1p100 : 0x1p1000, sdn = f ? 0x1p-50 : 0x1p-500;
        const char *sfx = f ? "f" : "";
        tk_printf(b, "TK_CPLX(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                     "%.17g%s, %.17g%s, %.17g%s, %.17g%s)\n", qual, N, T,
                  D->math(M_SQRT, part), D->math(M_HYPOT, part), D->math(M_EXP, part), D->math(M_LOG, part),
                  D->math(M_COS, part), D->math(M_SIN, part), D->math(M_ATAN2, part), D->math(M_FABS, part),
                  D->math(M_COPYSIGN, part), part == TACK_F32 ? "(1.0f / 0.0f)" : "(1.0 / 0.0)",
                  fma_name(C, D->math(M_HYPOT, part)), big, sfx, tiny, sfx, sup, sfx, sdn, sfx);
        if (C->atomic_dts >> dt_complex_of(part) & 1) /* an atomic updates this complex type's elements */
            tk_printf(b, "TK_CPLX_ATOMIC(%s, %s, %s, %s)\n", qual, global, N, T);
    }
    if (with_f64) {
        const char *c64 = D->ctype(TACK_C64), *c128 = D->ctype(TACK_C128);
        tk_printf(b, "%s %s tk_%s_of_%s(%s a) { return tk_mk_%s((float)a.v[0], (float)a.v[1]); }\n", qual, c64, c64,
                  c128, c128, c64);
        /* GCC 12's SLP vectorizer folds the pair (double)(float)x back to x
         * when a narrowing meets this widening (a miscompile; clang is
         * right): an empty asm makes the parts opaque to it, one move. */
        tk_puts(b, "#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__OPENCL_VERSION__)\n"
                   "#define TK_OPAQUE2(x, y) __asm__(\"\" : \"+g\"(x), \"+g\"(y))\n"
                   "#else\n"
                   "#define TK_OPAQUE2(x, y) (void)0\n"
                   "#endif\n");
        tk_printf(b, "%s %s tk_%s_of_%s(%s a) { %s re = a.v[0], im = a.v[1]; TK_OPAQUE2(re, im); "
                  "return tk_mk_%s((double)re, (double)im); }\n", qual, c128, c128, c64, c64, D->ctype(TACK_F32), c128);
    }
}
