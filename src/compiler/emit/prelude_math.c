/*
 * prelude_math.c -- the math functions Tack writes itself, once for every dialect.
 *
 * Most rows of intrinsics.def name a C99 <math.h> function, which every
 * dialect has (GCC's builtins, CUDA's and HIP's device libraries, OpenCL C's
 * built-ins).  Two kinds of row are Tack's own:
 *
 *   - the rows without a C library name (rsqrt, sign, clamp, lerp,
 *     smoothstep, step, degrees, radians): the prelude's tk_<name>_f32 and
 *     tk_<name>_f64, which every dialect calls (tk_math_helper) unless it has
 *     the function itself (the GPUs' rsqrt).  Each is one short formula, the
 *     same text on every dialect, so that a kernel gives the same bits on the
 *     CPU, on a GPU and in debug mode (python/tack/_intrinsics.py computes the
 *     same formula in NumPy scalars of the same type);
 *   - C99 functions a dialect lacks: the Metal Shading Language has no erf,
 *     erfc, log1p, expm1, cbrt or remainder.  The Metal dialect spells those
 *     rows as tk_<name>_f32 too, and the helpers are written here in f32 on
 *     Metal's own exp, log, exp2, log2, fmod and fma: log1p and expm1 by
 *     Goldberg's and Kahan's corrections (log(u) * x / (u - 1) with
 *     u = 1 + x, and the same for exp), cbrt as exp2(log2|x| / 3) with one
 *     Newton step, remainder by the exact reduction fmod(|x|, 2|y|) then at
 *     most two exact subtractions (ties to the even quotient), erf as
 *     x + x * P(x^2) below 0.75 and erfc above it as exp(-x^2) * t * Q(t),
 *     t = 1 / (1 + x / 2), with x^2 split into two floats by fma so that the
 *     exponential keeps f32's precision out to erfc's underflow.  P and Q are
 *     least-squares fits we made against mpmath (1.5e-9 and 3.8e-9 relative).
 *
 * Which helpers a kernel needs is known after lowering (tk_cc.uses_math, one
 * bit per IR_MATH row), so a kernel that calls none of them carries none, and
 * a helper is written only where the dialect's own spelling of its row names
 * it (s->math(m) is "tk_<name>_f32"): no list of dialects here.  The accuracy
 * each row is held to is intrinsics.def's; tests/python/test_math_library.py
 * measures all of them, the Metal ones through the MSL emulation.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

/* Whether the dialect calls row m of dtype dt by our helper's name. */
static int ours(const tk_prelude_style *s, int m, tack_dtype dt) {
    const char *h = tk_math_helper(m, dt);
    char own[48];
    if (!h) { /* a C library row: ours only where the dialect spells it tk_<name>_f32 */
        snprintf(own, sizeof own, "tk_%s_%s", tk_math_name(m), dt == TACK_F32 ? "f32" : "f64");
        h = own;
    }
    return !strcmp(s->math(m, dt), h);
}

static int used(const tk_cc *C, int m) { return (C->uses_math >> m) & 1; }

/* The formula helpers (rows without a C library name), for one float type. */
static void formulas(const tk_cc *C, tk_buf *b, const tk_prelude_style *s, tack_dtype dt) {
    const char *q = s->qual, *T = dt == TACK_F32 ? "float" : "double", *F = dt == TACK_F32 ? "f" : "",
               *x = dt == TACK_F32 ? "f32" : "f64";
    if (used(C, M_RSQRT) && ours(s, M_RSQRT, dt))
        tk_printf(b, "%s %s tk_rsqrt_%s(%s x) { return 1.0%s / %s(x); }\n", q, T, x, T, F, s->math(M_SQRT, dt));
    if (used(C, M_SIGN)) /* NumPy's sign: +0 for -0, NaN stays */
        tk_printf(b, "%s %s tk_sign_%s(%s x) { return x > 0 ? 1.0%s : x < 0 ? -1.0%s : x == 0 ? 0.0%s : x; }\n", q,
                  T, x, T, F, F, F);
    if (used(C, M_CLAMP) || used(C, M_SMOOTHSTEP)) /* min(max(x, lo), hi) as Python picks: a NaN x stays */
        tk_printf(b, "%s %s tk_clamp_%s(%s x, %s lo, %s hi) { %s m = lo > x ? lo : x; return hi < m ? hi : m; }\n",
                  q, T, x, T, T, T, T);
    if (used(C, M_LERP))
        tk_printf(b, "%s %s tk_lerp_%s(%s a, %s b, %s t) { return a + t * (b - a); }\n", q, T, x, T, T, T);
    if (used(C, M_SMOOTHSTEP))
        tk_printf(b,
                  "%s %s tk_smoothstep_%s(%s e0, %s e1, %s x) {\n"
                  "    %s t = tk_clamp_%s((x - e0) / (e1 - e0), 0.0%s, 1.0%s);\n"
                  "    return t * t * (3.0%s - 2.0%s * t);\n"
                  "}\n",
                  q, T, x, T, T, T, T, x, F, F, F, F);
    if (used(C, M_STEP)) /* 0 below the edge, 1 from it on, NaN for a NaN */
        tk_printf(b, "%s %s tk_step_%s(%s edge, %s x) { return x < edge ? 0.0%s : x >= edge ? 1.0%s : x + edge; }\n",
                  q, T, x, T, T, F, F);
    /* NumPy's constants: float32 degrees multiplies by 180.0f / (float)pi, one ulp below 180/pi in f32 */
    if (used(C, M_DEGREES))
        tk_printf(b, "%s %s tk_degrees_%s(%s x) { return x * %s; }\n", q, T, x, T,
                  dt == TACK_F32 ? "57.2957763671875f" : "57.29577951308232");
    if (used(C, M_RADIANS))
        tk_printf(b, "%s %s tk_radians_%s(%s x) { return x * %s; }\n", q, T, x, T,
                  dt == TACK_F32 ? "0.01745329238474369049f" : "0.017453292519943295");
}

/* erf and erfc in f32 for a dialect without them (the essay has the method). */
static void erf_f32(tk_buf *b, const tk_prelude_style *s, int want_erf, int want_erfc) {
    const char *q = s->qual, *ex = s->math(M_EXP, TACK_F32), *fabs = s->math(M_FABS, TACK_F32);
    /* F(a, b, c): a * b + c in one rounding */
    tk_printf(b, "#define F(a, b, c) %s(a, b, c)\n", s->math(M_FMA, TACK_F32));
    /* erfc(a) for a >= 0.75: exp(-a*a) * t * Q(t), t = 1 / (1 + a/2); 0 past its underflow */
    tk_printf(b,
              "%s float tk_erfc_big(float a) {\n"
              "    if (a > 10.1f) return 0.0f;\n"
              "    float t = 1.0f / (1.0f + 0.5f * a);\n"
              "    float r = -0.058855955290123586f;\n"
              "    r = F(r, t, 0.17919374842941976f); r = F(r, t, -0.12873757971249167f);\n"
              "    r = F(r, t, -0.08632561786876311f); r = F(r, t, 0.04016932598381928f);\n"
              "    r = F(r, t, 0.06219015322177268f); r = F(r, t, 0.18205375713458494f);\n"
              "    r = F(r, t, 0.2459371705632592f); r = F(r, t, 0.2821714727165125f);\n"
              "    r = F(r, t, 0.2820920051861238f);\n"
              "    float h = a * a, l = F(a, a, -h), p = t * r;\n"
              "    return %s(-h) * F(-p, l, p);\n"
              "}\n",
              q, ex);
    /* erf(x) for |x| < 0.75: x + x * P(x^2) */
    tk_printf(b,
              "%s float tk_erf_small(float x) {\n"
              "    float z = x * x;\n"
              "    float p = -0.0006758799393134654f;\n"
              "    p = F(p, z, 0.005115668115833298f); p = F(p, z, -0.02683528615639445f);\n"
              "    p = F(p, z, 0.11283390171087773f); p = F(p, z, -0.3761261975052778f);\n"
              "    p = F(p, z, 0.12837916562305393f);\n"
              "    return F(x, p, x);\n"
              "}\n",
              q);
    if (want_erf)
        tk_printf(b,
                  "%s float tk_erf_f32(float x) {\n"
                  "    if (x != x) return x + x;\n"
                  "    float a = %s(x);\n"
                  "    if (a < 0.75f) return tk_erf_small(x);\n"
                  "    float r = 1.0f - tk_erfc_big(a);\n"
                  "    return x < 0 ? -r : r;\n"
                  "}\n",
                  q, fabs);
    if (want_erfc)
        tk_printf(b,
                  "%s float tk_erfc_f32(float x) {\n"
                  "    if (x != x) return x + x;\n"
                  "    float a = %s(x);\n"
                  "    if (a < 0.75f) return 1.0f - tk_erf_small(x);\n"
                  "    float r = tk_erfc_big(a);\n"
                  "    return x < 0 ? 2.0f - r : r;\n"
                  "}\n",
                  q, fabs);
    tk_puts(b, "#undef F\n");
}

/* The C99 functions a dialect lacks, in f32 (Metal: the essay has the methods). */
static void missing_f32(const tk_cc *C, tk_buf *b, const tk_prelude_style *s) {
    const char *q = s->qual, *ex = s->math(M_EXP, TACK_F32), *lg = s->math(M_LOG, TACK_F32),
               *isinf = s->math(M_ISINF, TACK_F32), *fabs = s->math(M_FABS, TACK_F32),
               *fmod = s->math(M_FMOD, TACK_F32), *isnan = s->math(M_ISNAN, TACK_F32),
               *exp2 = s->math(M_EXP2, TACK_F32), *log2 = s->math(M_LOG2, TACK_F32),
               *copysign = s->math(M_COPYSIGN, TACK_F32);
    if (used(C, M_LOG1P) && ours(s, M_LOG1P, TACK_F32))
        tk_printf(b,
                  "%s float tk_log1p_f32(float x) {\n"
                  "    float u = 1.0f + x;\n"
                  "    if (u == 1.0f) return x;\n"
                  "    if (%s(u)) return u > 0.0f ? u : u - u;\n"
                  "    return %s(u) * (x / (u - 1.0f));\n"
                  "}\n",
                  q, isinf, lg);
    if (used(C, M_EXPM1) && ours(s, M_EXPM1, TACK_F32))
        tk_printf(b,
                  "%s float tk_expm1_f32(float x) {\n"
                  "    float u = %s(x);\n"
                  "    if (u == 1.0f) return x;\n"
                  "    float d = u - 1.0f;\n"
                  "    if (d == -1.0f || %s(u)) return d;\n"
                  "    return d * (x / %s(u));\n"
                  "}\n",
                  q, ex, isinf, lg);
    if (used(C, M_CBRT) && ours(s, M_CBRT, TACK_F32))
        tk_printf(b,
                  "%s float tk_cbrt_f32(float x) {\n"
                  "    if (x == 0.0f || %s(x) || %s(x)) return x + x;\n"
                  "    float a = %s(x), y = %s(%s(a) * (1.0f / 3.0f));\n"
                  "    y = y + (a / (y * y) - y) * (1.0f / 3.0f);\n"
                  "    return %s(y, x);\n"
                  "}\n",
                  q, isinf, isnan, fabs, exp2, log2, copysign);
    if (used(C, M_REMAINDER) && ours(s, M_REMAINDER, TACK_F32))
        tk_printf(b,
                  "%s float tk_remainder_f32(float x, float y) {\n"
                  "    if (%s(x) || %s(y)) return x + y;\n"
                  "    if (%s(x) || y == 0.0f) return (x - x) / (x - x);\n"
                  "    if (%s(y)) return x;\n"
                  "    float p = %s(y), a = %s(x), p2 = p + p;\n"
                  "    if (!%s(p2)) a = %s(a, p2);\n"
                  "    if (p < 2.35098870164457501594e-38f) {\n"
                  "        if (a + a > p) { a -= p; if (a + a >= p) a -= p; }\n"
                  "    } else {\n"
                  "        float h = 0.5f * p;\n"
                  "        if (a > h) { a -= p; if (a >= h) a -= p; }\n"
                  "    }\n"
                  "    return %s(1.0f, x) < 0.0f ? -a : a;\n"
                  "}\n",
                  q, isnan, isnan, isinf, isinf, fabs, fabs, isinf, fmod, copysign);
    int e = used(C, M_ERF) && ours(s, M_ERF, TACK_F32), c = used(C, M_ERFC) && ours(s, M_ERFC, TACK_F32);
    if (e || c) erf_f32(b, s, e, c);
}

void tk_prelude_math(const tk_cc *C, tk_buf *b, const tk_prelude_style *s) {
    if (!C->uses_math) return;
    if (s->f64 != TK_PRELUDE_F64_NONE) {
        if (s->f64 == TK_PRELUDE_F64_IFDEF) tk_puts(b, "#ifdef TK_FP64\n");
        formulas(C, b, s, TACK_F64);
        if (s->f64 == TK_PRELUDE_F64_IFDEF) tk_puts(b, "#endif\n");
    }
    formulas(C, b, s, TACK_F32);
    missing_f32(C, b, s);
}
