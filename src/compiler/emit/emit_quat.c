/*
 * emit_quat.c -- quaternions and rigid transforms in the emitted source: the
 * helpers every dialect's prelude carries for them (quat.c lowers them; the
 * emitter calls the helpers by name, and this file writes them once).
 *
 * A quat is `struct { T v[4]; }` (x, y, z, w), a transform
 * `struct { T v[7]; }` (p.x, p.y, p.z, then q's x, y, z, w), as the arrays
 * hold them; the helpers are written once below as one macro in the subset
 * of C that every dialect compiles (C11, CUDA and HIP C++, OpenCL C 1.2,
 * MSL 3: no compound literals, no pointers, no recursion) and spelled per
 * dialect with its function qualifier and its math names.  The emitter
 * reaches them through the names it already forms for a value's C type:
 * tk_add_<T>, tk_sub_<T>, tk_neg_<T>, tk_dot_<T>, tk_length_<T>,
 * tk_normalize_<T> as for a vector, tk_mul_<T> -- which for a quat is the
 * Hamilton product and for a transform the composition -- and
 * tk_<operation>_<T> for each IR_MATH operation of intrinsics.def's
 * quaternion rows (emit_expr.c).
 *
 * The formulas, and what they promise (docs/language.md, "Quaternions and
 * transforms"):
 *
 *   rotation   quat_rotate(q, v) is q v q^-1 for any nonzero q, so a
 *              quaternion that drifted from unit length still rotates
 *              without scaling: v + w t + u x t with t = (2 / |q|^2) u x v.
 *              quat_to_matrix is the same rotation's matrix; a zero
 *              quaternion gives NaN (no rotation is meant), never a silent
 *              zero vector.
 *   matrix     quat_from_matrix takes the largest of the trace and the
 *              diagonal to pick which component to solve for first (the
 *              method SciPy's Rotation.from_matrix uses), normalizes, and
 *              returns the quaternion with w >= 0.
 *   axis       quat_from_axis_angle normalizes the axis; a zero axis gives
 *              the identity.
 *   slerp      quat_slerp(a, b, t) normalizes a and b, takes the shorter
 *              arc (b negated when a . b < 0, as a rotation is the same for
 *              b and -b), and measures the angle as 2 atan2(|a - b|, |a + b|),
 *              accurate for nearly equal rotations where acos(a . b) is not.
 *   inverse    quat_inverse(q) is conj(q) / |q|^2; transform_inverse(t) is
 *              (-(q^-1 p), q^-1); t * u is (t.p + q_t u.p, q_t q_u).
 *
 * OpenCL writes the f64 helpers only when the kernel enables fp64, Metal
 * never (it has no double).
 */
#include "compiler/emit/emit.h"

static const char QUAT[] =
    "#define TK_QUAT(Q, N, X, V, M, T, SQRT, SIN, COS, ATAN2) \\\n"
    "typedef struct N { T v[4]; } N; \\\n"
    "typedef struct X { T v[7]; } X; \\\n"
    "Q N tk_mk_##N(T x, T y, T z, T w) { N r; r.v[0] = x; r.v[1] = y; r.v[2] = z; r.v[3] = w; return r; } \\\n"
    "Q N tk_add_##N(N a, N b) { return tk_mk_##N(a.v[0] + b.v[0], a.v[1] + b.v[1], a.v[2] + b.v[2], a.v[3] + b.v[3]); } \\\n"
    "Q N tk_sub_##N(N a, N b) { return tk_mk_##N(a.v[0] - b.v[0], a.v[1] - b.v[1], a.v[2] - b.v[2], a.v[3] - b.v[3]); } \\\n"
    "Q N tk_neg_##N(N a) { return tk_mk_##N(-a.v[0], -a.v[1], -a.v[2], -a.v[3]); } \\\n"
    "Q N tk_quat_scale_##N(N a, T s) { return tk_mk_##N(a.v[0] * s, a.v[1] * s, a.v[2] * s, a.v[3] * s); } \\\n"
    "Q N tk_quat_divs_##N(N a, T s) { return tk_mk_##N(a.v[0] / s, a.v[1] / s, a.v[2] / s, a.v[3] / s); } \\\n"
    "Q T tk_dot_##N(N a, N b) { return a.v[0] * b.v[0] + a.v[1] * b.v[1] + a.v[2] * b.v[2] + a.v[3] * b.v[3]; } \\\n"
    "Q T tk_length_##N(N a) { return SQRT(tk_dot_##N(a, a)); } \\\n"
    "Q N tk_normalize_##N(N a) { T l = tk_length_##N(a); \\\n"
    "    return l > 0 ? tk_quat_divs_##N(a, l) : tk_mk_##N((T)0, (T)0, (T)0, (T)0); } \\\n"
    "Q N tk_mul_##N(N a, N b) { /* the Hamilton product */ \\\n"
    "    T ax = a.v[0], ay = a.v[1], az = a.v[2], aw = a.v[3], bx = b.v[0], by = b.v[1], bz = b.v[2], bw = b.v[3]; \\\n"
    "    return tk_mk_##N(aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx, \\\n"
    "                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz); } \\\n"
    "Q N tk_quat_inverse_##N(N a) { T n = tk_dot_##N(a, a); return tk_mk_##N(-a.v[0] / n, -a.v[1] / n, -a.v[2] / n, a.v[3] / n); } \\\n"
    "Q V tk_quat_rotate_##N(N q, V v) { /* q v q^-1: v + w t + u x t, t = (2 / |q|^2) u x v */ \\\n"
    "    T x = q.v[0], y = q.v[1], z = q.v[2], w = q.v[3], s = (T)2 / tk_dot_##N(q, q); \\\n"
    "    T tx = s * (y * v.v[2] - z * v.v[1]), ty = s * (z * v.v[0] - x * v.v[2]), tz = s * (x * v.v[1] - y * v.v[0]); \\\n"
    "    V r; r.v[0] = v.v[0] + w * tx + (y * tz - z * ty); r.v[1] = v.v[1] + w * ty + (z * tx - x * tz); \\\n"
    "    r.v[2] = v.v[2] + w * tz + (x * ty - y * tx); return r; } \\\n"
    "Q V tk_quat_rotate_inv_##N(N q, V v) { return tk_quat_rotate_##N(tk_mk_##N(-q.v[0], -q.v[1], -q.v[2], q.v[3]), v); } \\\n"
    "Q M tk_quat_to_matrix_##N(N q) { \\\n"
    "    T x = q.v[0], y = q.v[1], z = q.v[2], w = q.v[3], s = (T)2 / tk_dot_##N(q, q); M m; \\\n"
    "    m.m[0][0] = (T)1 - s * (y * y + z * z); m.m[0][1] = s * (x * y - z * w); m.m[0][2] = s * (x * z + y * w); \\\n"
    "    m.m[1][0] = s * (x * y + z * w); m.m[1][1] = (T)1 - s * (x * x + z * z); m.m[1][2] = s * (y * z - x * w); \\\n"
    "    m.m[2][0] = s * (x * z - y * w); m.m[2][1] = s * (y * z + x * w); m.m[2][2] = (T)1 - s * (x * x + y * y); \\\n"
    "    return m; } \\\n"
    "Q N tk_quat_from_matrix_##N(M a) { /* solve first for the largest of trace, m00, m11, m22 */ \\\n"
    "    T m00 = a.m[0][0], m01 = a.m[0][1], m02 = a.m[0][2], m10 = a.m[1][0], m11 = a.m[1][1], m12 = a.m[1][2]; \\\n"
    "    T m20 = a.m[2][0], m21 = a.m[2][1], m22 = a.m[2][2], tr = m00 + m11 + m22; N r; \\\n"
    "    if (tr >= m00 && tr >= m11 && tr >= m22) r = tk_mk_##N(m21 - m12, m02 - m20, m10 - m01, (T)1 + tr); \\\n"
    "    else if (m00 >= m11 && m00 >= m22) r = tk_mk_##N((T)1 - tr + (T)2 * m00, m10 + m01, m20 + m02, m21 - m12); \\\n"
    "    else if (m11 >= m22) r = tk_mk_##N(m01 + m10, (T)1 - tr + (T)2 * m11, m21 + m12, m02 - m20); \\\n"
    "    else r = tk_mk_##N(m02 + m20, m12 + m21, (T)1 - tr + (T)2 * m22, m10 - m01); \\\n"
    "    T l = tk_length_##N(r); \\\n"
    "    return tk_quat_divs_##N(r, r.v[3] < 0 ? -l : l); } \\\n"
    "Q N tk_quat_from_axis_angle_##N(V a, T angle) { /* the axis normalized; a zero axis: the identity */ \\\n"
    "    T l = SQRT(a.v[0] * a.v[0] + a.v[1] * a.v[1] + a.v[2] * a.v[2]); \\\n"
    "    if (l == 0) return tk_mk_##N((T)0, (T)0, (T)0, (T)1); \\\n"
    "    T h = angle * (T)0.5, s = SIN(h) / l; \\\n"
    "    return tk_mk_##N(a.v[0] * s, a.v[1] * s, a.v[2] * s, COS(h)); } \\\n"
    "Q N tk_quat_slerp_##N(N a, N b, T t) { /* the shorter arc between the normalized ends */ \\\n"
    "    a = tk_normalize_##N(a); b = tk_normalize_##N(b); \\\n"
    "    if (tk_dot_##N(a, b) < 0) b = tk_neg_##N(b); \\\n"
    "    T th = (T)2 * ATAN2(tk_length_##N(tk_sub_##N(a, b)), tk_length_##N(tk_add_##N(a, b))), sn = SIN(th), wa, wb; \\\n"
    "    if (sn == 0) { wa = (T)1 - t; wb = t; } \\\n"
    "    else { wa = SIN(((T)1 - t) * th) / sn; wb = SIN(t * th) / sn; } \\\n"
    "    return tk_add_##N(tk_quat_scale_##N(a, wa), tk_quat_scale_##N(b, wb)); } \\\n"
    "Q N tk_xq_##X(X t) { return tk_mk_##N(t.v[3], t.v[4], t.v[5], t.v[6]); } \\\n"
    "Q X tk_mk_##X(V p, N q) { X r; r.v[0] = p.v[0]; r.v[1] = p.v[1]; r.v[2] = p.v[2]; \\\n"
    "    r.v[3] = q.v[0]; r.v[4] = q.v[1]; r.v[5] = q.v[2]; r.v[6] = q.v[3]; return r; } \\\n"
    "Q V tk_transform_vector_##X(X t, V v) { return tk_quat_rotate_##N(tk_xq_##X(t), v); } \\\n"
    "Q V tk_transform_point_##X(X t, V p) { V r = tk_quat_rotate_##N(tk_xq_##X(t), p); \\\n"
    "    r.v[0] += t.v[0]; r.v[1] += t.v[1]; r.v[2] += t.v[2]; return r; } \\\n"
    "Q X tk_mul_##X(X a, X b) { /* a * b: b applied first */ \\\n"
    "    V p; p.v[0] = b.v[0]; p.v[1] = b.v[1]; p.v[2] = b.v[2]; \\\n"
    "    return tk_mk_##X(tk_transform_point_##X(a, p), tk_mul_##N(tk_xq_##X(a), tk_xq_##X(b))); } \\\n"
    "Q X tk_transform_inverse_##X(X t) { \\\n"
    "    N qi = tk_quat_inverse_##N(tk_xq_##X(t)); V p; p.v[0] = t.v[0]; p.v[1] = t.v[1]; p.v[2] = t.v[2]; \\\n"
    "    p = tk_quat_rotate_##N(qi, p); p.v[0] = -p.v[0]; p.v[1] = -p.v[1]; p.v[2] = -p.v[2]; \\\n"
    "    return tk_mk_##X(p, qi); }\n";

/* The quaternion and transform helpers (uses_quat), after the vectors' and
 * matrices' types (the dialect's PRELUDE_VEC).  with_f64: quatd and
 * transformd too (OpenCL without fp64, Metal: never). */
void tk_quat_prelude(tk_cc *C, tk_buf *b, const char *qual, int with_f64) {
    const tk_dialect *D = C->dialect;
    tk_puts(b, QUAT);
    const tack_dtype parts[2] = {TACK_F32, TACK_F64};
    for (int i = 0; i < (with_f64 ? 2 : 1); i++) {
        tack_dtype p = parts[i];
        int d = p == TACK_F64;
        tk_printf(b, "TK_QUAT(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)\n", qual, D->ctype(d ? TACK_QUATD : TACK_QUAT),
                  D->ctype(d ? TACK_TRANSFORMD : TACK_TRANSFORM), D->ctype(d ? TACK_VEC3D : TACK_VEC3),
                  D->ctype(d ? TACK_MAT33D : TACK_MAT33), D->ctype(p), D->math(M_SQRT, p), D->math(M_SIN, p),
                  D->math(M_COS, p), D->math(M_ATAN2, p));
    }
}
