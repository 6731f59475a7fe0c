/*
 * types.c -- the type lattice of the kernel language.
 *
 * A value has a dtype (bool, the integers, f32/f64, vectors, matrices) and
 * may be *weak*: a Python literal or a Python scalar argument, which NumPy 2
 * (NEP 50) lets take the type of the other operand.  A weak value is carried
 * in i64, f64 or bool and converted when it meets a concrete one:
 *
 *   weak  + weak       the larger kind (bool < int < float), still weak
 *   weak  + concrete   the concrete type, except that a weak float meeting an
 *                      integer gives the default float, and a weak int
 *                      meeting a bool gives i64
 *
 * The default float is f32 unless the compile asks for f64
 * (tack_compile_options.default_float, a thread-local here for the compile
 * running on this thread).  Lowering adds the rule for weak values known
 * only at run time (lower_expr.c, lw_rule_*): a run-time integer meeting a
 * float gives the default float, as an integer element does.
 *   concrete pairs     NumPy 2's table: u8+i8 -> i16, u64+i64 -> f64,
 *                      i32+f32 -> f64, i16+f32 -> f32, ...
 *
 * Standing alone (assigned to a local only ever given weak values, printed,
 * stored) a weak value keeps its carrier; the concrete form, used by
 * float()/int() and by locals that mix weak and concrete values, is i64 for
 * ints and f32 -- the default float -- for floats.
 *
 * Locals are unified by the same promotion: the type of a local is the
 * promotion of everything assigned to it (lower.c iterates to a fixed point).
 * f16 is a storage type only: loads give f32, stores convert back.
 *
 * complex64 / complex128 rank above the floats (NumPy's kinds b < i < f < c).
 * A concrete pair with a complex side is the complex of NumPy's promotion of
 * the parts: complex64 + f64 -> complex128, complex64 + i32 -> complex128
 * (i32 + f32 is f64), complex64 + i16 -> complex64.  A Python complex is weak,
 * carried in complex128: with f16/f32/complex64 it is complex64, with f64
 * complex128, with an integer or bool the default complex -- the complex of
 * the default float, complex64 unless the kernel asks for f64 -- which is
 * also its concrete form (docs/design/decisions.md).  A
 * complex never meets a vector or matrix: that is no type (a CompileError).
 *
 * A quaternion (quat, quatd) and a rigid transform (transform, transformd)
 * are stored as vectors of 4 and 7 floats but are neither vectors nor
 * matrices here (ty_is_vector is false): their operators are their algebra's,
 * lowered by quat.c, which refuses the mixes that algebra does not define.
 */
#include <string.h>

#include "compiler/compiler.h"

/* Dtypes are the runtime's table (runtime/dtype.c); the compiler keeps none of its own. */
static const tack_dtype_info *dt_info(int dt) { return tack_dtype_get((tack_dtype)dt); }

int dt_bits(tack_dtype dt) { return dt_info(dt)->bits; }
tack_scalar_kind dt_kind(tack_dtype dt) { return dt_info(dt)->kind; }
tack_dtype dt_scalar(tack_dtype dt) { return dt_info(dt)->scalar; }
int dt_rows(tack_dtype dt) { return dt_info(dt)->rows; }
int dt_cols(tack_dtype dt) { return dt_info(dt)->cols; }
const char *dt_name(tack_dtype dt) { return (unsigned)dt < TACK_DTYPE_COUNT ? dt_info(dt)->name : "?"; }

int dt_is_half(int dt) { return dt == TACK_F16 || dt == TACK_BF16; }
const char *dt_half_load(int dt) { return dt == TACK_BF16 ? "tk_b2f" : "tk_h2f"; }
const char *dt_half_store(int dt, int from_f64) {
    if (dt == TACK_BF16) return from_f64 ? "tk_d2b" : "tk_f2b";
    return from_f64 ? "tk_d2h" : "tk_f2h";
}

tack_dtype dt_compose(tack_dtype s, int rows, int cols) {
    if (rows == 1 && cols == 1) return s;
    for (int d = TACK_VEC2; d < TACK_DTYPE_COUNT; d++)
        if (dt_info(d)->scalar == s && (dt_info(d)->rows > 1 || dt_info(d)->cols > 1) && dt_info(d)->rows == rows &&
            dt_info(d)->cols == cols && dt_info(d)->form == TACK_FORM_PLAIN) return (tack_dtype)d;
    return TACK_DTYPE_COUNT;
}

tk_type ty_value(tack_dtype dt) { return (tk_type){TY_VALUE, (uint8_t)dt, 0, 0, 0}; }
tk_type ty_weak(tack_dtype carrier) { return (tk_type){TY_VALUE, (uint8_t)carrier, 0, 1, 0}; }
tk_type ty_unknown(void) { return (tk_type){TY_UNKNOWN, 0, 0, 0, 0}; }
tk_type ty_void(void) { return (tk_type){TY_VOID, 0, 0, 0, 0}; }

tk_type ty_tuple(int si) {
    tk_type t = {TY_TUPLE, (uint8_t)(si & 255), (uint8_t)(si >> 8 & 255), 0, 0};
    return t;
}
int ty_tuple_spec(tk_type t) { return t.dt | t.ndim << 8; }

tk_type ty_multi(tack_dtype mat, int m) {
    tk_type t = {TY_MULTI, (uint8_t)mat, (uint8_t)m, 0, 0};
    return t;
}

int ty_multi_count(tk_type t) { return t.ndim == M_SVD3 ? 3 : 2; }

tk_type ty_multi_field(tk_type t, int k) {
    tack_dtype mat = (tack_dtype)t.dt, vec = dt_compose(dt_scalar(mat), dt_rows(mat), 1);
    if (t.ndim == M_SVD3) return ty_value(k == 1 ? vec : mat); /* U, sigma, V */
    if (t.ndim == M_EIG3) return ty_value(k == 0 ? vec : mat); /* eigenvalues, eigenvectors */
    return ty_value(mat);                                      /* Q, R */
}

int ty_eq(tk_type a, tk_type b) {
    return a.kind == b.kind && a.dt == b.dt && a.ndim == b.ndim && a.weak == b.weak && a.strided == b.strided;
}
int ty_is_scalar(tk_type t) { return t.kind == TY_VALUE && dt_info(t.dt)->rows == 1 && dt_info(t.dt)->cols == 1; }
int ty_is_int(tk_type t) {
    return ty_is_scalar(t) && (dt_info(t.dt)->kind == TACK_KIND_INT || dt_info(t.dt)->kind == TACK_KIND_UINT);
}
int ty_is_float(tk_type t) { return ty_is_scalar(t) && dt_info(t.dt)->kind == TACK_KIND_FLOAT; }
int ty_is_bool(tk_type t) { return ty_is_scalar(t) && t.dt == TACK_BOOL; }
int ty_is_complex(tk_type t) { return t.kind == TY_VALUE && dt_info(t.dt)->kind == TACK_KIND_COMPLEX; }
tack_dtype dt_complex_part(tack_dtype dt) { return dt == TACK_C64 ? TACK_F32 : TACK_F64; }
tack_dtype dt_complex_of(tack_dtype part) { return part == TACK_F64 ? TACK_C128 : TACK_C64; }
int ty_is_vector(tk_type t) {
    return t.kind == TY_VALUE && dt_info(t.dt)->rows > 1 && dt_info(t.dt)->cols == 1 && dt_info(t.dt)->form == TACK_FORM_PLAIN;
}
int ty_is_matrix(tk_type t) { return t.kind == TY_VALUE && dt_info(t.dt)->cols > 1; }
int ty_is_quat(tk_type t) { return t.kind == TY_VALUE && dt_info(t.dt)->form == TACK_FORM_QUAT; }
int ty_is_xform(tk_type t) { return t.kind == TY_VALUE && dt_info(t.dt)->form == TACK_FORM_TRANSFORM; }
int dt_form(tack_dtype dt) { return (unsigned)dt < TACK_DTYPE_COUNT ? (int)dt_info(dt)->form : 0; }

const char *ty_name(tk_arena *a, tk_type t) {
    switch (t.kind) {
    case TY_UNKNOWN: return "unknown";
    case TY_VOID: return "None";
    case TY_VALUE:
        if (t.weak) return t.dt == TACK_BOOL ? "bool (Python)" : t.dt == TACK_I64 ? "int (Python)"
                         : t.dt == TACK_C128 ? "complex (Python)" : "float (Python)";
        return dt_info(t.dt)->name;
    case TY_ARRAY: return tk_fmt(a, "array[%s, %d-D]", dt_info(t.dt)->name, t.ndim);
    case TY_SHAPE: return "shape";
    case TY_DTYPE: return "dtype";
    case TY_RANGE: return "range";
    case TY_TUPLE: return "tuple";
    case TY_MULTI: return "tuple";
    }
    return "?";
}

static int kind_rank(tack_dtype dt) {
    switch (dt_info(dt)->kind) {
    case TACK_KIND_BOOL: return 0;
    case TACK_KIND_INT:
    case TACK_KIND_UINT: return 1;
    case TACK_KIND_COMPLEX: return 3;
    default: return 2;
    }
}

static tack_dtype sint_of_bits(int bits) {
    return bits <= 8 ? TACK_I8 : bits <= 16 ? TACK_I16 : bits <= 32 ? TACK_I32 : TACK_I64;
}

static tack_dtype numpy_promote(tack_dtype a, tack_dtype b) {
    if (a == b) return a;
    const tack_dtype_info *x = dt_info(a), *y = dt_info(b);
    if (x->kind == TACK_KIND_COMPLEX || y->kind == TACK_KIND_COMPLEX) {
        tack_dtype pa = x->kind == TACK_KIND_COMPLEX ? dt_complex_part(a) : a;
        tack_dtype pb = y->kind == TACK_KIND_COMPLEX ? dt_complex_part(b) : b;
        if (x->kind == TACK_KIND_BOOL) pa = pb;
        if (y->kind == TACK_KIND_BOOL) pb = pa;
        return dt_complex_of(numpy_promote(pa, pb));
    }
    if (x->kind == TACK_KIND_BOOL) return b;
    if (y->kind == TACK_KIND_BOOL) return a;
    if (x->kind == TACK_KIND_FLOAT && y->kind == TACK_KIND_FLOAT) return x->bits >= y->bits ? a : b;
    if (x->kind == TACK_KIND_FLOAT || y->kind == TACK_KIND_FLOAT) {
        const tack_dtype_info *f = x->kind == TACK_KIND_FLOAT ? x : y;
        const tack_dtype_info *i = x->kind == TACK_KIND_FLOAT ? y : x;
        if (f->bits >= 64) return TACK_F64;
        if (f->bits == 32) return i->bits <= 16 ? TACK_F32 : TACK_F64;
        return i->bits <= 8 ? TACK_F32 : i->bits <= 16 ? TACK_F32 : TACK_F64; /* f16: computed in f32 */
    }
    if (x->kind == y->kind) return x->bits >= y->bits ? a : b;
    const tack_dtype_info *s = x->kind == TACK_KIND_INT ? x : y;
    const tack_dtype_info *u = x->kind == TACK_KIND_INT ? y : x;
    if (s->bits > u->bits) return s == x ? a : b;
    if (u->bits < 64) return sint_of_bits(u->bits * 2);
    return TACK_F64;
}

/* The default float of the compile running on this thread (f32 unless the
 * kernel asks for f64: tack_compile_options.default_float). */
static _Thread_local tack_dtype default_float = TACK_F32;
void ty_set_default_float(tack_dtype dt) { default_float = dt == TACK_F64 ? TACK_F64 : TACK_F32; }
tack_dtype ty_default_float(void) { return default_float; }

tk_type ty_concrete(tk_type t) {
    if (t.kind != TY_VALUE || !t.weak) return t;
    if (t.dt == TACK_F64) return ty_value(default_float);
    if (t.dt == TACK_C128) return ty_value(dt_complex_of(default_float)); /* the default complex */
    return ty_value((tack_dtype)t.dt);
}

tk_type ty_floatify(tk_type t) {
    if (t.kind != TY_VALUE) return t;
    if (ty_is_float(t) || ty_is_complex(t)) return t;
    if (t.weak) return ty_weak(TACK_F64);
    if (ty_is_scalar(t)) return ty_value(default_float);
    return t;
}

tk_type ty_promote(tk_type a, tk_type b) {
    if (a.kind == TY_UNKNOWN || b.kind == TY_UNKNOWN) return ty_unknown();
    if (a.kind != TY_VALUE || b.kind != TY_VALUE) return ty_unknown();
    int av = !ty_is_scalar(a), bv = !ty_is_scalar(b);
    if ((av && ty_is_complex(b)) || (bv && ty_is_complex(a))) return ty_unknown();
    if (av || bv) {
        if (av && bv) return a.dt == b.dt ? a : ty_unknown();
        return av ? a : b; /* scalar meets vector/matrix: the scalar converts */
    }
    if (a.weak && b.weak) {
        return kind_rank(a.dt) >= kind_rank(b.dt) ? a : b;
    }
    if (a.weak || b.weak) {
        tk_type w = a.weak ? a : b, c = a.weak ? b : a;
        int wr = kind_rank(w.dt), cr = kind_rank(c.dt);
        if (wr <= cr) return c;
        if (wr == 3) { /* a Python complex: complex64 with f16/f32, complex128 with f64, the default
                        * complex (of the default float) with an integer or bool */
            if (cr == 2) return ty_value(dt_bits((tack_dtype)c.dt) <= 32 ? TACK_C64 : TACK_C128);
            return ty_value(dt_complex_of(default_float));
        }
        if (wr == 1) return ty_value(TACK_I64);  /* weak int meets bool */
        return ty_value(default_float);          /* weak float meets int/bool: default float */
    }
    tack_dtype ad = dt_is_half(a.dt) ? TACK_F32 : (tack_dtype)a.dt;
    tack_dtype bd = dt_is_half(b.dt) ? TACK_F32 : (tack_dtype)b.dt;
    return ty_value(numpy_promote(ad, bd));
}
