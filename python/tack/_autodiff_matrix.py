"""The 4x4 determinant and inverse made scalars for the adjoint (tack._autodiff_scalarize).

The forward computes both from the 2x2 minors of rows 0-1 (s) and rows 2-3 (c) of the matrix
(prelude_linalg.c): the determinant as s0 c5 - s1 c4 + s2 c3 + s3 c2 - s4 c1 + s5 c0, each
entry of the inverse as three products of an entry and a minor over the determinant, the zero
matrix where that is exactly 0.  Written out here in the same operations and order, the
adjoint's recomputed values are the forward's and the scalar rules give the derivatives
(`-A^-1 dA A^-1` for the inverse, the cofactors for the determinant).  The 2x2 and 3x3 cases
are short enough to live in tack._autodiff_scalarize.
"""

from __future__ import annotations

# the 4x4 inverse's numerators as prelude_linalg.c writes them, row-major: (sign, component of a, s or c
# minor, its index) per term; the first term's sign negates its component, the others' add or subtract
_INV4 = (
    ((1, 5, "c", 5), (-1, 6, "c", 4), (1, 7, "c", 3)), ((-1, 1, "c", 5), (1, 2, "c", 4), (-1, 3, "c", 3)),
    ((1, 13, "s", 5), (-1, 14, "s", 4), (1, 15, "s", 3)), ((-1, 9, "s", 5), (1, 10, "s", 4), (-1, 11, "s", 3)),
    ((-1, 4, "c", 5), (1, 6, "c", 2), (-1, 7, "c", 1)), ((1, 0, "c", 5), (-1, 2, "c", 2), (1, 3, "c", 1)),
    ((-1, 12, "s", 5), (1, 14, "s", 2), (-1, 15, "s", 1)), ((1, 8, "s", 5), (-1, 10, "s", 2), (1, 11, "s", 1)),
    ((1, 4, "c", 4), (-1, 5, "c", 2), (1, 7, "c", 0)), ((-1, 0, "c", 4), (1, 1, "c", 2), (-1, 3, "c", 0)),
    ((1, 12, "s", 4), (-1, 13, "s", 2), (1, 15, "s", 0)), ((-1, 8, "s", 4), (1, 9, "s", 2), (-1, 11, "s", 0)),
    ((-1, 4, "c", 3), (1, 5, "c", 1), (-1, 6, "c", 0)), ((1, 0, "c", 3), (-1, 1, "c", 1), (1, 2, "c", 0)),
    ((-1, 12, "s", 3), (1, 13, "s", 1), (-1, 14, "s", 0)), ((1, 8, "s", 3), (-1, 9, "s", 1), (1, 10, "s", 0)),
)


def minors4(sc, a, t, e):
    """The 2x2 minors of rows 0 and 1 (s) and of rows 2 and 3 (c) of a 4x4 matrix's components, column
    pairs 01 02 03 12 13 23, and the determinant from them, as prelude_linalg.c computes them."""
    from ._autodiff_scalarize import Ty, _add, _mul, _sub

    pairs = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
    one = Ty("v", (1,), t.dt)

    def minor(r, i, j):
        return _sub(_mul(a[r * 4 + i], a[(r + 1) * 4 + j], e), _mul(a[(r + 1) * 4 + i], a[r * 4 + j], e), e)

    sm = sc.bind([minor(0, i, j) for i, j in pairs], Ty("v", (6,), t.dt), e)
    cm = sc.bind([minor(2, i, j) for i, j in pairs], Ty("v", (6,), t.dt), e)
    d = _sub(_mul(sm[0], cm[5], e), _mul(sm[1], cm[4], e), e)
    for k, sign in ((2, 1), (3, 1), (4, -1), (5, 1)):
        term = _mul(sm[k], cm[5 - k], e)
        d = _add(d, term, e) if sign > 0 else _sub(d, term, e)
    return sm, cm, sc.bind([d], one, e)[0]


def inverse4(sc, a, t, e):
    """The numerators of the 4x4 inverse (row-major) and the determinant they are divided by."""
    from ._autodiff_scalarize import _add, _mul, _neg, _sub

    sm, cm, d = minors4(sc, a, t, e)
    num = []
    for terms in _INV4:
        out = None
        for sign, k, which, w in terms:
            x = a[k]
            term = _mul(_neg(x, e) if sign < 0 and out is None else x, (sm if which == "s" else cm)[w], e)
            out = term if out is None else (_add(out, term, e) if sign > 0 else _sub(out, term, e))
        num.append(out)
    return num, d
