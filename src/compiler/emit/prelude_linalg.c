/*
 * prelude_linalg.c -- the matrix and vector functions' helpers, once for every dialect.
 *
 * tack.transpose, inverse, determinant, trace, outer, diag, norm (of a
 * matrix: Frobenius) and the 3x3 decompositions svd3, eig3 and qr3 lower to
 * IR_MATH operations on vector and matrix values (lower/lower_linalg.c);
 * the emitter writes each as a call of tk_<name>_<type>, and this file
 * writes those functions, in the C subset that the C, CUDA, HIP, OpenCL C
 * and Metal dialects all accept (structs by value, fixed loops, the
 * dialect's sqrt and fabs), after the vector prelude that defines the types.
 * Each function is written from one template per matrix size, for f32 and
 * f64 (f64 under TK_FP64 on OpenCL, not at all on Metal), and only for the
 * operations the kernel calls (tk_cc.uses_linalg).
 *
 * The choices, which debug mode (python/tack/_linalg.py) computes in the
 * same operations and order:
 *
 *   - inverse is the adjugate divided by the determinant (cofactors for 2x2
 *     and 3x3, 2x2 minors of the row pairs for 4x4); a determinant of
 *     exactly 0 gives the zero matrix (NumPy raises LinAlgError; a kernel
 *     cannot, and a matrix of infinities would hide the fact);
 *   - the decompositions first check that every entry is finite (any NaN or
 *     infinity: every output is NaN) and scale the matrix by its largest
 *     magnitude, so no square overflows or underflows; a zero matrix gives
 *     identities and zeros;
 *   - eig3 (a symmetric matrix, read from its lower triangle as
 *     numpy.linalg.eigh does) is the cyclic Jacobi method: rotations that
 *     zero one off-diagonal pair at a time, until a sweep finds every pair
 *     below eps of its diagonal (or 16 sweeps); eigenvalues ascending, the
 *     eigenvectors the accumulated rotations' columns;
 *   - svd3 is the one-sided Jacobi method (Hestenes): rotations of column
 *     pairs of B = A V until every pair is orthogonal to eps of the product
 *     of their norms; sigma are the column norms, descending, U the
 *     normalized columns (completed by cross products where a sigma is below
 *     eps of the largest), V the rotations: A = U diag(sigma) V^T;
 *   - qr3 is Householder's: two reflections, then the signs made so R's
 *     diagonal is >= 0 (unique for a full-rank A), R's lower part exact 0.
 */
#include <string.h>

#include "compiler/compiler.h"

/* Write template t with $Q (the qualifier), $T (the float), $M (the matrix
 * type), $V (the vector type), $W (the 2-vector type), $S (sqrt), $A (fabs),
 * $E (the float's eps) and $R (the size) replaced. */
typedef struct la_subst {
    const char *q, *t, *m, *v, *w, *s, *a, *e, *r;
} la_subst;

static void put(tk_buf *b, const char *t, const la_subst *x) {
    for (const char *p = t; *p; p++) {
        if (*p != '$' || !p[1]) {
            char c[2] = {*p, 0};
            tk_puts(b, c);
            continue;
        }
        const char *r = NULL;
        switch (*++p) {
        case 'Q': r = x->q; break;
        case 'T': r = x->t; break;
        case 'M': r = x->m; break;
        case 'V': r = x->v; break;
        case 'S': r = x->s; break;
        case 'A': r = x->a; break;
        case 'W': r = x->w; break;
        case 'E': r = x->e; break;
        case 'R': r = x->r; break;
        default: r = "$"; p--; break;
        }
        tk_puts(b, r);
    }
}

#define LOOP2 "for (int i = 0; i < $R; i++) for (int j = 0; j < $R; j++) "

static const char TRANSPOSE[] =
    "$Q $M tk_transpose_$M($M a) { $M r; " LOOP2 "r.m[i][j] = a.m[j][i]; return r; }\n";
static const char TRACE[] =
    "$Q $T tk_trace_$M($M a) { $T s = a.m[0][0]; for (int i = 1; i < $R; i++) s += a.m[i][i]; return s; }\n";
static const char OUTER[] =
    "$Q $M tk_outer_$V($V a, $V b) { $M r; " LOOP2 "r.m[i][j] = a.v[i] * b.v[j]; return r; }\n";
static const char DIAG[] =
    "$Q $M tk_diag_$V($V a) { $M r; " LOOP2 "r.m[i][j] = i == j ? a.v[i] : ($T)0; return r; }\n";
static const char DIAGONAL[] =
    "$Q $V tk_diagonal_$M($M a) { $V r; for (int i = 0; i < $R; i++) r.v[i] = a.m[i][i]; return r; }\n";
static const char NORM[] =
    "$Q $T tk_norm_$M($M a) { $T s = 0; " LOOP2 "s += a.m[i][j] * a.m[i][j]; return $S(s); }\n";

static const char DET2[] = "$Q $T tk_determinant_$M($M a) { return a.m[0][0] * a.m[1][1] - a.m[0][1] * a.m[1][0]; }\n";
static const char INV2[] =
    "$Q $M tk_inverse_$M($M a) {\n"
    "    $T d = a.m[0][0] * a.m[1][1] - a.m[0][1] * a.m[1][0];\n"
    "    $M r;\n"
    "    if (d == 0) { " LOOP2 "r.m[i][j] = 0; return r; }\n"
    "    r.m[0][0] = a.m[1][1] / d; r.m[0][1] = -a.m[0][1] / d;\n"
    "    r.m[1][0] = -a.m[1][0] / d; r.m[1][1] = a.m[0][0] / d;\n"
    "    return r;\n"
    "}\n";
/* c[i][j]: the cofactor of a[i][j] */
static const char COF3[] =
    "$Q $M tk_cof3_$M($M a) { $M c;\n"
    "    c.m[0][0] = a.m[1][1] * a.m[2][2] - a.m[1][2] * a.m[2][1];\n"
    "    c.m[0][1] = a.m[1][2] * a.m[2][0] - a.m[1][0] * a.m[2][2];\n"
    "    c.m[0][2] = a.m[1][0] * a.m[2][1] - a.m[1][1] * a.m[2][0];\n"
    "    c.m[1][0] = a.m[0][2] * a.m[2][1] - a.m[0][1] * a.m[2][2];\n"
    "    c.m[1][1] = a.m[0][0] * a.m[2][2] - a.m[0][2] * a.m[2][0];\n"
    "    c.m[1][2] = a.m[0][1] * a.m[2][0] - a.m[0][0] * a.m[2][1];\n"
    "    c.m[2][0] = a.m[0][1] * a.m[1][2] - a.m[0][2] * a.m[1][1];\n"
    "    c.m[2][1] = a.m[0][2] * a.m[1][0] - a.m[0][0] * a.m[1][2];\n"
    "    c.m[2][2] = a.m[0][0] * a.m[1][1] - a.m[0][1] * a.m[1][0];\n"
    "    return c; }\n";
static const char DET3[] =
    "$Q $T tk_determinant_$M($M a) { $M c = tk_cof3_$M(a);\n"
    "    return a.m[0][0] * c.m[0][0] + a.m[0][1] * c.m[0][1] + a.m[0][2] * c.m[0][2]; }\n";
static const char INV3[] =
    "$Q $M tk_inverse_$M($M a) { $M c = tk_cof3_$M(a), r;\n"
    "    $T d = a.m[0][0] * c.m[0][0] + a.m[0][1] * c.m[0][1] + a.m[0][2] * c.m[0][2];\n"
    "    " LOOP2 "r.m[i][j] = d == 0 ? ($T)0 : c.m[j][i] / d;\n"
    "    return r; }\n";
/* s: the 2x2 minors of rows 0 and 1, c: of rows 2 and 3 (column pairs 01 02 03 12 13 23) */
static const char MINORS4[] =
    "    $T s[6], c[6];\n"
    "    s[0] = a.m[0][0] * a.m[1][1] - a.m[1][0] * a.m[0][1]; s[1] = a.m[0][0] * a.m[1][2] - a.m[1][0] * a.m[0][2];\n"
    "    s[2] = a.m[0][0] * a.m[1][3] - a.m[1][0] * a.m[0][3]; s[3] = a.m[0][1] * a.m[1][2] - a.m[1][1] * a.m[0][2];\n"
    "    s[4] = a.m[0][1] * a.m[1][3] - a.m[1][1] * a.m[0][3]; s[5] = a.m[0][2] * a.m[1][3] - a.m[1][2] * a.m[0][3];\n"
    "    c[5] = a.m[2][2] * a.m[3][3] - a.m[3][2] * a.m[2][3]; c[4] = a.m[2][1] * a.m[3][3] - a.m[3][1] * a.m[2][3];\n"
    "    c[3] = a.m[2][1] * a.m[3][2] - a.m[3][1] * a.m[2][2]; c[2] = a.m[2][0] * a.m[3][3] - a.m[3][0] * a.m[2][3];\n"
    "    c[1] = a.m[2][0] * a.m[3][2] - a.m[3][0] * a.m[2][2]; c[0] = a.m[2][0] * a.m[3][1] - a.m[3][0] * a.m[2][1];\n"
    "    $T d = s[0] * c[5] - s[1] * c[4] + s[2] * c[3] + s[3] * c[2] - s[4] * c[1] + s[5] * c[0];\n";
static const char DET4[] = "    return d;\n}\n";
static const char INV4[] =
    "    $M r;\n"
    "    if (d == 0) { " LOOP2 "r.m[i][j] = 0; return r; }\n"
    "    r.m[0][0] = (a.m[1][1] * c[5] - a.m[1][2] * c[4] + a.m[1][3] * c[3]) / d;\n"
    "    r.m[0][1] = (-a.m[0][1] * c[5] + a.m[0][2] * c[4] - a.m[0][3] * c[3]) / d;\n"
    "    r.m[0][2] = (a.m[3][1] * s[5] - a.m[3][2] * s[4] + a.m[3][3] * s[3]) / d;\n"
    "    r.m[0][3] = (-a.m[2][1] * s[5] + a.m[2][2] * s[4] - a.m[2][3] * s[3]) / d;\n"
    "    r.m[1][0] = (-a.m[1][0] * c[5] + a.m[1][2] * c[2] - a.m[1][3] * c[1]) / d;\n"
    "    r.m[1][1] = (a.m[0][0] * c[5] - a.m[0][2] * c[2] + a.m[0][3] * c[1]) / d;\n"
    "    r.m[1][2] = (-a.m[3][0] * s[5] + a.m[3][2] * s[2] - a.m[3][3] * s[1]) / d;\n"
    "    r.m[1][3] = (a.m[2][0] * s[5] - a.m[2][2] * s[2] + a.m[2][3] * s[1]) / d;\n"
    "    r.m[2][0] = (a.m[1][0] * c[4] - a.m[1][1] * c[2] + a.m[1][3] * c[0]) / d;\n"
    "    r.m[2][1] = (-a.m[0][0] * c[4] + a.m[0][1] * c[2] - a.m[0][3] * c[0]) / d;\n"
    "    r.m[2][2] = (a.m[3][0] * s[4] - a.m[3][1] * s[2] + a.m[3][3] * s[0]) / d;\n"
    "    r.m[2][3] = (-a.m[2][0] * s[4] + a.m[2][1] * s[2] - a.m[2][3] * s[0]) / d;\n"
    "    r.m[3][0] = (-a.m[1][0] * c[3] + a.m[1][1] * c[1] - a.m[1][2] * c[0]) / d;\n"
    "    r.m[3][1] = (a.m[0][0] * c[3] - a.m[0][1] * c[1] + a.m[0][2] * c[0]) / d;\n"
    "    r.m[3][2] = (-a.m[3][0] * s[3] + a.m[3][1] * s[1] - a.m[3][2] * s[0]) / d;\n"
    "    r.m[3][3] = (a.m[2][0] * s[3] - a.m[2][1] * s[1] + a.m[2][2] * s[0]) / d;\n"
    "    return r;\n"
    "}\n";

/* The decompositions' shared steps (3x3): the first non-finite entry's NaN
 * (0 when all are finite), the largest magnitude, the identity. */
static const char COMMON3[] =
    "$Q $T tk_la_bad_$M($M a) { for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) {\n"
    "    $T x = a.m[i][j] - a.m[i][j]; if (x != 0 || x != x) return (x - x) / (x - x); } return 0; }\n"
    "$Q $T tk_la_max_$M($M a) { $T s = 0; for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) {\n"
    "    $T x = $A(a.m[i][j]); if (x > s) s = x; } return s; }\n"
    "$Q $M tk_la_eye_$M(void) { $M r; for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) r.m[i][j] = ($T)(i == j); "
    "return r; }\n"
    "$Q $M tk_la_fill_$M($T x) { $M r; for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) r.m[i][j] = x; "
    "return r; }\n"
    /* the Jacobi rotation that zeroes the off-diagonal g of [[p, g], [g, q]]: c, s */
    "$Q $W tk_la_rot_$M($T p, $T q, $T g) {\n"
    "    $T th = (q - p) / (2 * g), t = 1 / ($A(th) + $S(th * th + 1));\n"
    "    $W r;\n"
    "    if (th < 0) t = -t;\n"
    "    r.v[0] = 1 / $S(t * t + 1); r.v[1] = t * r.v[0];\n"
    "    return r;\n"
    "}\n"
    /* columns p and q of a turned by (c, s) */
    "$Q $M tk_la_cols_$M($M a, int p, int q, $T c, $T s) { for (int i = 0; i < 3; i++) {\n"
    "    $T x = a.m[i][p], y = a.m[i][q]; a.m[i][p] = c * x - s * y; a.m[i][q] = s * x + c * y; } return a; }\n";

static const char EIG3[] =
    "typedef struct tk_eig3_r_$M { $V f0; $M f1; } tk_eig3_r_$M;\n"
    "$Q tk_eig3_r_$M tk_eig3_$M($M m) {\n"
    "    tk_eig3_r_$M r; $M a, v = tk_la_eye_$M();\n"
    "    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) a.m[i][j] = i >= j ? m.m[i][j] : m.m[j][i];\n"
    "    $T bad = tk_la_bad_$M(a), sc = tk_la_max_$M(a);\n"
    "    if (bad != bad || sc == 0) {\n"
    "        for (int i = 0; i < 3; i++) r.f0.v[i] = bad;\n"
    "        r.f1 = v; if (bad != bad) r.f1 = tk_la_fill_$M(bad);\n"
    "        return r;\n"
    "    }\n"
    "    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) a.m[i][j] /= sc;\n"
    "    for (int sweep = 0; sweep < 16; sweep++) {\n"
    "        int turned = 0;\n"
    "        for (int k = 0; k < 3; k++) {\n"
    "            int p = k == 2 ? 1 : 0, q = k == 0 ? 1 : 2;\n"
    "            $T g = a.m[p][q], c, s;\n"
    "            if ($A(g) <= $E * ($A(a.m[p][p]) + $A(a.m[q][q])) || $A(g) < $E * $E) continue;\n"
    "            turned = 1;\n"
    "            $W cs = tk_la_rot_$M(a.m[p][p], a.m[q][q], g);\n"
    "            c = cs.v[0]; s = cs.v[1];\n"
    "            a = tk_la_cols_$M(a, p, q, c, s);\n"
    "            for (int j = 0; j < 3; j++) {\n"
    "                $T x = a.m[p][j], y = a.m[q][j]; a.m[p][j] = c * x - s * y; a.m[q][j] = s * x + c * y;\n"
    "            }\n"
    "            a.m[p][q] = 0; a.m[q][p] = 0;\n"
    "            v = tk_la_cols_$M(v, p, q, c, s);\n"
    "        }\n"
    "        if (!turned) break;\n"
    "    }\n"
    "    for (int k = 0; k < 3; k++) {  /* ascending: compare-exchange 01, 12, 01 */\n"
    "        int p = k == 1 ? 1 : 0, q = p + 1;\n"
    "        if (a.m[q][q] < a.m[p][p]) {\n"
    "            $T t = a.m[p][p]; a.m[p][p] = a.m[q][q]; a.m[q][q] = t;\n"
    "            for (int i = 0; i < 3; i++) { t = v.m[i][p]; v.m[i][p] = v.m[i][q]; v.m[i][q] = t; }\n"
    "        }\n"
    "    }\n"
    "    for (int i = 0; i < 3; i++) r.f0.v[i] = a.m[i][i] * sc;\n"
    "    r.f1 = v;\n"
    "    return r;\n"
    "}\n";

static const char SVD3[] =
    "typedef struct tk_svd3_r_$M { $M f0; $V f1; $M f2; } tk_svd3_r_$M;\n"
    "$Q tk_svd3_r_$M tk_svd3_$M($M m) {\n"
    "    tk_svd3_r_$M r; $M b = m, v = tk_la_eye_$M(), u = v; $T s[3];\n"
    "    $T bad = tk_la_bad_$M(m), sc = tk_la_max_$M(m);\n"
    "    if (bad != bad || sc == 0) {\n"
    "        for (int i = 0; i < 3; i++) r.f1.v[i] = bad;\n"
    "        if (bad != bad) v = tk_la_fill_$M(bad);\n"
    "        r.f0 = v; r.f2 = v;\n"
    "        return r;\n"
    "    }\n"
    "    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) b.m[i][j] /= sc;\n"
    "    for (int sweep = 0; sweep < 16; sweep++) {\n"
    "        int turned = 0;\n"
    "        for (int k = 0; k < 3; k++) {\n"
    "            int p = k == 2 ? 1 : 0, q = k == 0 ? 1 : 2;\n"
    "            $T al = 0, be = 0, g = 0, c, sn;\n"
    "            for (int i = 0; i < 3; i++) {\n"
    "                al += b.m[i][p] * b.m[i][p]; be += b.m[i][q] * b.m[i][q]; g += b.m[i][p] * b.m[i][q];\n"
    "            }\n"
    "            if ($A(g) <= $E * $S(al * be) || $A(g) < $E * $E * $E) continue;\n"
    "            turned = 1;\n"
    "            $W cs = tk_la_rot_$M(al, be, g);\n"
    "            c = cs.v[0]; sn = cs.v[1];\n"
    "            b = tk_la_cols_$M(b, p, q, c, sn);\n"
    "            v = tk_la_cols_$M(v, p, q, c, sn);\n"
    "        }\n"
    "        if (!turned) break;\n"
    "    }\n"
    "    for (int j = 0; j < 3; j++) s[j] = $S(b.m[0][j] * b.m[0][j] + b.m[1][j] * b.m[1][j] + b.m[2][j] * b.m[2][j]);\n"
    "    for (int k = 0; k < 3; k++) {  /* descending: compare-exchange 01, 12, 01 */\n"
    "        int p = k == 1 ? 1 : 0, q = p + 1;\n"
    "        if (s[p] < s[q]) {\n"
    "            $T t = s[p]; s[p] = s[q]; s[q] = t;\n"
    "            for (int i = 0; i < 3; i++) {\n"
    "                t = b.m[i][p]; b.m[i][p] = b.m[i][q]; b.m[i][q] = t;\n"
    "                t = v.m[i][p]; v.m[i][p] = v.m[i][q]; v.m[i][q] = t;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    for (int j = 0; j < 3; j++)\n"
    "        if (j == 0 || s[j] > $E * s[0]) for (int i = 0; i < 3; i++) u.m[i][j] = b.m[i][j] / s[j];\n"
    "    if (!(s[1] > $E * s[0])) {  /* a unit vector orthogonal to u0: the axis u0 is least along, made so */\n"
    "        int k = 0;\n"
    "        for (int i = 1; i < 3; i++) if ($A(u.m[i][0]) < $A(u.m[k][0])) k = i;\n"
    "        $T w[3], n = 0;\n"
    "        for (int i = 0; i < 3; i++) { w[i] = (i == k) - u.m[k][0] * u.m[i][0]; n += w[i] * w[i]; }\n"
    "        n = $S(n);\n"
    "        for (int i = 0; i < 3; i++) u.m[i][1] = w[i] / n;\n"
    "    }\n"
    "    if (!(s[2] > $E * s[0])) {\n"
    "        u.m[0][2] = u.m[1][0] * u.m[2][1] - u.m[2][0] * u.m[1][1];\n"
    "        u.m[1][2] = u.m[2][0] * u.m[0][1] - u.m[0][0] * u.m[2][1];\n"
    "        u.m[2][2] = u.m[0][0] * u.m[1][1] - u.m[1][0] * u.m[0][1];\n"
    "    }\n"
    "    for (int i = 0; i < 3; i++) r.f1.v[i] = s[i] * sc;\n"
    "    r.f0 = u; r.f2 = v;\n"
    "    return r;\n"
    "}\n";

static const char QR3[] =
    "typedef struct tk_qr3_r_$M { $M f0; $M f1; } tk_qr3_r_$M;\n"
    "$Q tk_qr3_r_$M tk_qr3_$M($M m) {\n"
    "    tk_qr3_r_$M r; $M q = tk_la_eye_$M(), a = m;\n"
    "    $T bad = tk_la_bad_$M(m), sc = tk_la_max_$M(m);\n"
    "    if (bad != bad || sc == 0) {\n"
    "        r.f0 = q; if (bad != bad) r.f0 = tk_la_fill_$M(bad);\n"
    "        r.f1 = tk_la_fill_$M(bad);\n"
    "        return r;\n"
    "    }\n"
    "    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) a.m[i][j] /= sc;\n"
    "    for (int k = 0; k < 2; k++) {  /* the reflection I - 2 w w^T / (w^T w) that zeroes column k below k */\n"
    "        $T w[3], nx = 0, nw = 0;\n"
    "        for (int i = k; i < 3; i++) nx += a.m[i][k] * a.m[i][k];\n"
    "        nx = $S(nx);\n"
    "        if (nx == 0) continue;\n"
    "        for (int i = 0; i < 3; i++) w[i] = i < k ? 0 : a.m[i][k];\n"
    "        w[k] += a.m[k][k] > 0 ? nx : -nx;\n"
    "        for (int i = k; i < 3; i++) nw += w[i] * w[i];\n"
    "        for (int j = 0; j < 3; j++) {\n"
    "            $T d = 0;\n"
    "            for (int i = k; i < 3; i++) d += w[i] * a.m[i][j];\n"
    "            d = 2 * d / nw;\n"
    "            for (int i = k; i < 3; i++) a.m[i][j] -= d * w[i];\n"
    "        }\n"
    "        for (int i = 0; i < 3; i++) {\n"
    "            $T d = 0;\n"
    "            for (int j = k; j < 3; j++) d += q.m[i][j] * w[j];\n"
    "            d = 2 * d / nw;\n"
    "            for (int j = k; j < 3; j++) q.m[i][j] -= d * w[j];\n"
    "        }\n"
    "    }\n"
    "    for (int k = 0; k < 3; k++) {\n"
    "        for (int j = 0; j < 3; j++) a.m[k][j] = j < k ? ($T)0 : a.m[k][j] * sc;\n"
    "        if (a.m[k][k] < 0) for (int i = 0; i < 3; i++) { a.m[k][i] = -a.m[k][i]; q.m[i][k] = -q.m[i][k]; }\n"
    "    }\n"
    "    r.f0 = q; r.f1 = a;\n"
    "    return r;\n"
    "}\n";

static int used(const tk_cc *C, int m) { return (C->uses_linalg >> (m - M_TRANSPOSE)) & 1; }

static void one_float(const tk_cc *C, tk_buf *b, const tk_prelude_style *s, tack_dtype f) {
    int d = f == TACK_F64;
    static const char *const MAT[2][3] = {{"tk_mat22", "tk_mat33", "tk_mat44"}, {"tk_mat22d", "tk_mat33d", "tk_mat44d"}};
    static const char *const VEC[2][3] = {{"tk_vec2", "tk_vec3", "tk_vec4"}, {"tk_vec2d", "tk_vec3d", "tk_vec4d"}};
    for (int n = 2; n <= 4; n++) {
        static const char *const SIZE[] = {"2", "3", "4"};
        la_subst x = {s->qual, d ? "double" : "float", MAT[d][n - 2], VEC[d][n - 2], VEC[d][0], s->math(M_SQRT, f),
                      s->math(M_FABS, f), d ? "2.220446049250313e-16" : "1.1920929e-07f", SIZE[n - 2]};
        if (used(C, M_TRANSPOSE)) put(b, TRANSPOSE, &x);
        if (used(C, M_TRACE)) put(b, TRACE, &x);
        if (used(C, M_OUTER)) put(b, OUTER, &x);
        if (used(C, M_DIAG)) put(b, DIAG, &x);
        if (used(C, M_DIAGONAL)) put(b, DIAGONAL, &x);
        if (used(C, M_NORM)) put(b, NORM, &x);
        if (n == 3 && (used(C, M_DETERMINANT) || used(C, M_INVERSE))) put(b, COF3, &x);
        if (used(C, M_DETERMINANT) && n == 4) { /* the minors, then det */
            put(b, "$Q $T tk_determinant_$M($M a) {\n", &x);
            put(b, MINORS4, &x);
            put(b, DET4, &x);
        } else if (used(C, M_DETERMINANT)) {
            put(b, n == 2 ? DET2 : DET3, &x);
        }
        if (used(C, M_INVERSE) && n == 4) {
            put(b, "$Q $M tk_inverse_$M($M a) {\n", &x);
            put(b, MINORS4, &x);
            put(b, INV4, &x);
        } else if (used(C, M_INVERSE)) {
            put(b, n == 2 ? INV2 : INV3, &x);
        }
        if (n == 3 && (used(C, M_SVD3) || used(C, M_EIG3) || used(C, M_QR3))) {
            put(b, COMMON3, &x);
            if (used(C, M_EIG3)) put(b, EIG3, &x);
            if (used(C, M_SVD3)) put(b, SVD3, &x);
            if (used(C, M_QR3)) put(b, QR3, &x);
        }
    }
}

void tk_prelude_linalg(const tk_cc *C, tk_buf *b, const tk_prelude_style *s) {
    if (!C->uses_linalg) return;
    one_float(C, b, s, TACK_F32);
    if (s->f64 == TK_PRELUDE_F64_NONE) return;
    if (s->f64 == TK_PRELUDE_F64_IFDEF) tk_puts(b, "#ifdef TK_FP64\n");
    one_float(C, b, s, TACK_F64);
    if (s->f64 == TK_PRELUDE_F64_IFDEF) tk_puts(b, "#endif\n");
}
