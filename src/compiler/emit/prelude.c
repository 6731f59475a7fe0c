/*
 * prelude.c -- the Python-semantics helpers every dialect's prelude carries.
 *
 * Python's integer floor division and modulo, saturating float-to-integer
 * conversion, NumPy's shifts, wrapping integer powers, Python's float floor
 * division and modulo, and the trip count of a range: the generated code
 * calls these by name (tk_fdiv_i64, tk_f2i64, tk_shl32, tk_ipow_i64,
 * tk_pyfdiv_f32, tk_trip, ...) on every backend, and they must compute the
 * same thing on every backend, since that is what makes a kernel give the
 * CPU's (and NumPy's) answers on a GPU.  So they are written once, here, and
 * each dialect only says how it spells them (tk_prelude_style): the function
 * qualifier ("static inline" in C and MSL, CUDA's TK_D, "static" in OpenCL
 * C), the float a float-to-integer conversion takes (double; tk_wide, which
 * is float on an OpenCL device without fp64; float on Metal) and how a
 * literal of it is written, how the 64-bit limits are written (<stdint.h>'s
 * names in C, hex literals with the suffix the language wants elsewhere),
 * the dialect's math names for fmod, floor and copysign (its own math hook,
 * so __builtin_fmodf in C, fmodf in CUDA, fmod in OpenCL, metal::fmod), and
 * whether float64 helpers are written at all (not on Metal) or only under
 * OpenCL's TK_FP64.  What one dialect alone has (C's strength-reduced
 * division, tk_fdivq_i64) stays in that dialect's file and is handed in to
 * be placed after the division helpers, as are the dialects' comments, so
 * the source each dialect emits is what it was when the four copies were
 * string literals.
 *
 * The float floor division is Python's, not floor(a / b): the quotient is
 * (a - fmod(a, b)) / b, exact, then adjusted to the floor with the sign of
 * the remainder; a float32 one computes in float32 throughout, as NumPy
 * does (its quotient rounds to float32 before the floor).
 */
#include <stdio.h>

#include "compiler/compiler.h"

/* The float literal `digits` as the style writes one of its wide type. */
static void wide_lit(tk_buf *b, const tk_prelude_style *s, const char *digits) {
    tk_printf(b, "%s%s%s", s->wide_cast ? s->wide_cast : "", digits, s->wide_suffix ? s->wide_suffix : "");
}

/* tk_f2i64, tk_f2u64: NaN to 0, out of range to the nearest limit, the
 * same on every backend where a plain C cast is undefined. */
static void conversions(tk_buf *b, const tk_prelude_style *s) {
    const char *q = s->qual, *w = s->wide;
    char imax[48], imin[48], umax[48];
    if (s->int_suffix) {
        snprintf(imax, sizeof imax, "(int64_t)0x7fffffffffffffff%s", s->int_suffix);
        snprintf(imin, sizeof imin, "(int64_t)(-0x7fffffffffffffff%s - 1)", s->int_suffix);
        snprintf(umax, sizeof umax, "(uint64_t)0xffffffffffffffffU%s", s->int_suffix);
    } else {
        snprintf(imax, sizeof imax, "INT64_MAX");
        snprintf(imin, sizeof imin, "INT64_MIN");
        snprintf(umax, sizeof umax, "UINT64_MAX");
    }
    tk_printf(b, "%s int64_t tk_f2i64(%s x) {\n", q, w);
    tk_puts(b, "    if (!(x == x)) return 0;\n    if (x >= ");
    wide_lit(b, s, "9223372036854775807.0");
    tk_printf(b, ") return %s;\n    if (x <= ", imax);
    wide_lit(b, s, "-9223372036854775808.0");
    tk_printf(b, ") return %s;\n    return (int64_t)x;\n}\n", imin);
    tk_printf(b, "%s uint64_t tk_f2u64(%s x) {\n", q, w);
    tk_puts(b, "    if (!(x == x)) return 0;\n"
               "    if (x < 0) return (uint64_t)tk_f2i64(x);\n"
               "    if (x >= ");
    wide_lit(b, s, "18446744073709551615.0");
    tk_printf(b, ") return %s;\n    return (uint64_t)x;\n}\n", umax);
}

/* Python's // and % on integers (0 for a zero divisor, which the checks
 * report as ZeroDivisionError where they are on; -1 wraps as NumPy does).
 * The step from C's truncated quotient to Python's floor is arithmetic, not a
 * branch: a remainder of the divisor's other sign takes one off the quotient
 * (adds the divisor to the remainder) through a 0-or-1 mask.  With a constant
 * divisor the C compiler's `a / 2` has no branch either, where the test of
 * the remainder's sign was a branch on the parity of `a`, taken half the time
 * at random: a binary search's `mid = (lo + hi) // 2` ran 1.4-1.7x slower
 * than the same loop compiled by LLVM (Numba), which emits no branch there. */
static void divisions(tk_buf *b, const char *q) {
    tk_printf(b,
              "%s int64_t tk_fdiv_i64(int64_t a, int64_t b) {\n"
              "    if (b == 0) return 0;\n"
              "    if (b == -1) return (int64_t)((uint64_t)0 - (uint64_t)a);\n"
              "    int64_t q = a / b, r = a %% b;\n"
              "    return q - (int64_t)((r != 0) & ((r ^ b) < 0));\n"
              "}\n",
              q);
    tk_printf(b,
              "%s int64_t tk_mod_i64(int64_t a, int64_t b) {\n"
              "    if (b == 0 || b == -1) return 0;\n"
              "    int64_t r = a %% b;\n"
              "    return r + (b & -(int64_t)((r != 0) & ((r ^ b) < 0)));\n"
              "}\n",
              q);
    tk_printf(b, "%s uint64_t tk_fdiv_u64(uint64_t a, uint64_t b) { return b ? a / b : 0; }\n", q);
    tk_printf(b, "%s uint64_t tk_mod_u64(uint64_t a, uint64_t b) { return b ? a %% b : 0; }\n", q);
}

/* NumPy's shifts (a count at or past the width shifts every bit out) and
 * wrapping integer powers (a negative exponent: 1 / a^-e truncated toward
 * zero, where the checks do not refuse it). */
static void shifts_and_powers(tk_buf *b, const char *q) {
    tk_printf(b, "%s uint32_t tk_shl32(uint32_t a, uint32_t c) { return c < 32u ? a << c : 0; }\n", q);
    tk_printf(b, "%s uint64_t tk_shl64(uint64_t a, uint64_t c) { return c < 64u ? a << c : 0; }\n", q);
    tk_printf(b, "%s uint32_t tk_shr32(uint32_t a, uint32_t c) { return c < 32u ? a >> c : 0; }\n", q);
    tk_printf(b, "%s uint64_t tk_shr64(uint64_t a, uint64_t c) { return c < 64u ? a >> c : 0; }\n", q);
    tk_printf(b, "%s int32_t tk_sar32(int32_t a, uint32_t c) { return c < 32u ? a >> c : (a < 0 ? -1 : 0); }\n", q);
    tk_printf(b, "%s int64_t tk_sar64(int64_t a, uint64_t c) { return c < 64u ? a >> c : (a < 0 ? -1 : 0); }\n", q);
    tk_printf(b,
              "%s uint64_t tk_ipow_u64(uint64_t a, uint64_t e) {\n"
              "    uint64_t r = 1;\n"
              "    while (e) { if (e & 1) r *= a; a *= a; e >>= 1; }\n"
              "    return r;\n"
              "}\n",
              q);
    tk_printf(b,
              "%s int64_t tk_ipow_i64(int64_t a, int64_t e) {\n"
              "    if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;\n"
              "    return (int64_t)tk_ipow_u64((uint64_t)a, (uint64_t)e);\n"
              "}\n",
              q);
}

/* Python's float % and // for one float type (T its name, F its literal
 * suffix, dt for the dialect's math names). */
static void py_float(tk_buf *b, const tk_prelude_style *s, tack_dtype dt) {
    const char *q = s->qual, *T = dt == TACK_F32 ? "float" : "double", *F = dt == TACK_F32 ? "f" : "",
               *sfx = dt == TACK_F32 ? "f32" : "f64";
    const char *fmod = s->math(M_FMOD, dt), *floor = s->math(M_FLOOR, dt), *copysign = s->math(M_COPYSIGN, dt);
    tk_printf(b,
              "%s %s tk_pymod_%s(%s a, %s b) {\n"
              "    %s m = %s(a, b);\n"
              "    if (m != 0) { if ((b < 0) != (m < 0)) m += b; }\n"
              "    else m = %s(0.0%s, b);\n"
              "    return m;\n"
              "}\n",
              q, T, sfx, T, T, T, fmod, copysign, F);
    tk_printf(b,
              "%s %s tk_pyfdiv_%s(%s a, %s b) {\n"
              "    if (b == 0) return a / b;\n"
              "    %s m = %s(a, b), d = (a - m) / b;\n"
              "    if (m != 0 && ((b < 0) != (m < 0))) d -= 1.0%s;\n"
              "    if (d != 0) { %s f = %s(d); if (d - f > 0.5%s) f += 1.0%s; d = f; }\n"
              "    else d = %s(0.0%s, a / b);\n"
              "    return d;\n"
              "}\n",
              q, T, sfx, T, T, T, fmod, F, T, floor, F, F, copysign, F);
}

void tk_prelude_helpers(tk_buf *b, const tk_prelude_style *s) {
    conversions(b, s);
    divisions(b, s->qual);
    if (s->after_div) tk_puts(b, s->after_div);
    tk_puts(b, s->shifts_note ? s->shifts_note
                              : "/* Shifts as NumPy does them: a count at or past the width (a negative one,\n"
                                " * read unsigned, included) shifts every bit out: 0, or -1 for a negative\n"
                                " * value shifted right. */\n");
    shifts_and_powers(b, s->qual);
    if (s->f64 == TK_PRELUDE_F64_IFDEF) tk_puts(b, "#ifdef TK_FP64\n");
    if (s->f64 != TK_PRELUDE_F64_NONE) py_float(b, s, TACK_F64);
    if (s->f64 == TK_PRELUDE_F64_IFDEF) tk_puts(b, "#endif\n");
    if (s->f32_note) tk_puts(b, s->f32_note);
    py_float(b, s, TACK_F32);
    /* the iterations of range(lo, hi, st), without overflow */
    tk_printf(b,
              "%s int64_t tk_trip(int64_t lo, int64_t hi, int64_t st) {\n"
              "    if (st > 0 && lo < hi) return (int64_t)(((uint64_t)hi - (uint64_t)lo - 1) / (uint64_t)st + 1);\n"
              "    if (st < 0 && lo > hi) return (int64_t)(((uint64_t)lo - (uint64_t)hi - 1) / ((uint64_t)0 - "
              "(uint64_t)st) + 1);\n"
              "    return 0;\n"
              "}\n",
              s->qual);
}
