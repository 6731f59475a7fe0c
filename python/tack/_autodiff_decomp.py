"""The adjoints of the 3x3 decompositions: tack.svd3, tack.eig3 and tack.qr3.

The decompositions are iterative (Jacobi sweeps, Householder reflections, emit/prelude_linalg.c):
differentiating their steps would replay the sweeps and differentiate rotation angles chosen
by comparisons.  Their adjoints are instead the closed forms of the derivative of the result,
written here in scalar statements and derived in docs/differentiation.md ("The decompositions").
A kernel's `U, s, V = tack.svd3(m)` reaches the adjoint generator in two steps:

- the scalarizing rewrite (tack._autodiff_scalarize) turns the statement into one assignment of
  every output component from a marker call on the input's components,
  `U·c0, ..., V·c8 = ad·svd3·f64(m·c0, ..., m·c8)` (`scalarize`);
- the generator (tack._autodiff) hands that statement to `forward`, which recomputes the
  decomposition in the forward sweep -- the real `tack.svd3` of `tack.mat33d(...)` of the
  recomputed components, so the values are the forward kernel's bits -- saves the outputs it
  overwrites, and records a "decomp" act; `reverse` takes the output components' adjoints, runs
  the closed form on the output values (which the later statements' reverse sweeps have put
  back), puts the saved outputs back and hands the input components their adjoints.

Where the derivative does not exist the closed form divides by zero: two singular values or two
eigenvalues that are equal (to within 64 eps of the largest, about 8 times the decompositions'
own error; tests/python/test_linalg.py), or a rank-deficient matrix's QR (a diagonal entry of R
within 64 eps of R's largest).  There the result depends on which basis of the repeated
subspace the algorithm happened to choose, and no formula in the seeds alone gives the
derivative: two losses with the same seeds can have different gradients (docs/differentiation.md
shows one).  So the adjoint asks whether the seeds reach the undefined part: for a repeated pair
(i, j), the entries (i, j) and (j, i) of U^T gU and V^T gV, gU and gV the seeds of U and V
(E^T gE for eig3); for a QR whose column k is degenerate, the seeds of the columns of Q and R
from k on.  Where they are all zero
the undefined terms are left out, which is exact (a loss of the singular values alone has the
gradient U diag(ds) V^T whether they repeat or not); where one is not, the adjoint raises
AssertionError at the decomposition's line -- an `assert` in the adjoint kernel, which compiled
kernels report with the kernel's file and line and debug mode raises at that line -- and, where
checks are off (`checks=False`), the input's gradient is NaN instead.  docs/design/decisions.md
("Adjoints of the decompositions") has the why.
"""

from __future__ import annotations

import ast
import math

from . import _core
from ._autodiff_nodes import SEP, _as_load, _loc, _nm

NAMES = ("svd3", "eig3", "qr3")
_PARTS = {"svd3": ("m", "v", "m"), "eig3": ("v", "m"), "qr3": ("m", "m")}  # U, s, V / w, E / Q, R
_EPS = {"f64": 2.220446049250313e-16, "f32": 1.1920928955078125e-07}
TOL = 64  # a gap or a diagonal entry within TOL eps of the scale counts as zero
_MSG = {
    "svd3": "the gradient of svd3() is undefined here: two singular values are equal (to within 64 eps of the "
            "largest) and the loss depends on their singular vectors (U or V); a loss of the singular values alone "
            "is differentiable there",
    "eig3": "the gradient of eig3() is undefined here: two eigenvalues are equal (to within 64 eps of the largest "
            "magnitude) and the loss depends on their eigenvectors; a loss of the eigenvalues alone is "
            "differentiable there",
    "qr3": "the gradient of qr3() is undefined here: the matrix is rank-deficient (a diagonal entry of R is within "
           "64 eps of R's largest entry) and the loss depends on the columns of Q or R from that one on",
}


class Decomp:
    """The marker a scalarized decomposition calls: which one, in which float type."""

    __slots__ = ("name", "dt")

    def __init__(self, name, dt):
        self.name, self.dt = name, dt

    def __repr__(self):
        return f"Decomp({self.name}, {self.dt})"


# ------------------------------------------------------------------ the rewrite (tack._autodiff_scalarize)


def scalarize(sc, tgt, call, s):
    """`a, b[, c] = tack.<decomposition>(m)` as one assignment of the outputs' components from a
    marker call on m's components (statements m's components need go to sc.pre)."""
    from ._autodiff_scalarize import Ty

    name = sc.gen.intrinsic(call)[0]
    parts = _PARTS[name]
    if call.keywords or len(call.args) != 1:
        raise sc.error(f"{ast.unparse(call.func)}() takes one matrix", call)
    if len(tgt.elts) != len(parts) or not all(isinstance(e, (ast.Name, ast.Subscript)) for e in tgt.elts):
        raise sc.error(f"{ast.unparse(call.func)}() is differentiated unpacked into {len(parts)} names or array "
                       f"elements", s)
    ty = sc.ty(call.args[0])
    if ty is None or ty.kind != "m" or ty.shape != (3, 3) or ty.dt not in _EPS:
        raise sc.error(f"{ast.unparse(call.func)}() of a 3x3 f32 or f64 matrix is differentiated, not of "
                       f"{ty or 'a number'}", call)
    ins = sc.bind(sc.comps(call.args[0])[1], ty, s)
    outs, stores = [], []
    names = [e.id if isinstance(e, ast.Name) else None for e in tgt.elts]
    for k, (e, kind) in enumerate(zip(tgt.elts, parts)):
        pty = Ty(kind, (3, 3) if kind == "m" else (3,), ty.dt)
        if isinstance(e, ast.Subscript):  # out[i], R = tack.qr3(m): a local of its own, then stored
            sc.n += 1
            local = f"sc{SEP}{sc.n}{SEP}{name}"
            sc.types[local] = pty
            outs += sc.comp_names(local)
            stores.append(_loc(ast.Assign(targets=[e], value=_nm(local, s)), s))
            continue
        if e.id in sc.gen.params:
            raise sc.error(f"assigning the parameter '{e.id}' is not differentiated yet: give the value a name of "
                           f"its own", s)
        if e.id in names[k + 1:] or e.id not in sc.types:  # a name given twice keeps the last (Python's order)
            outs += sc.fresh(pty, s)
        else:
            if (sc.types[e.id].kind, sc.types[e.id].shape) != (pty.kind, pty.shape):
                raise sc.error(f"'{e.id}' is {sc.types[e.id]} elsewhere: not differentiated yet", s)
            outs += sc.comp_names(e.id)
    marker = sc.gen.use(Decomp(name, ty.dt), f"{name}{SEP}{ty.dt}")
    new = ast.Assign(targets=[_loc(ast.Tuple(elts=[_nm(n, s, True) for n in outs], ctx=ast.Store()), s)],
                     value=_loc(ast.Call(func=_nm(marker, s), args=ins, keywords=[]), s))
    return [_loc(new, s)] + [st for store in stores for st in sc.stmt_pre(store)]


# ------------------------------------------------------------------ the generator (tack._autodiff)


def marker(gen, value):
    """The Decomp a statement's value calls, else None."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        obj = gen.env.get(value.func.id)
        if isinstance(obj, Decomp):
            return obj
    return None


def forward(gen, s, fwd, acts, assigned):
    """The forward sweep of `outs = marker(ins)`: the decomposition recomputed, its outputs saved
    where they overwrite values, a "decomp" act recorded."""
    dec = marker(gen, s.value)
    ins = [gen.flat(a, fwd, acts) for a in s.value.args]
    outs = [e.id for e in s.targets[0].elts]
    saves = [gen.save(n, fwd, acts, assigned, s) for n in outs]
    tag = gen.fresh("dec")
    parts = [f"{tag}{SEP}{k}" for k in range(len(_PARTS[dec.name]))]
    mt = gen.use(getattr(_core, "mat33d" if dec.dt == "f64" else "mat33"), "mat33d" if dec.dt == "f64" else "mat33")
    fn = gen.use(getattr(_tack(), dec.name), dec.name)
    mat = _loc(ast.Call(func=_nm(mt, s), args=[_as_load(a) for a in ins], keywords=[]), s)
    fwd.append(_loc(ast.Assign(targets=[_loc(ast.Tuple(elts=[_nm(p, s, True) for p in parts], ctx=ast.Store()), s)],
                               value=_loc(ast.Call(func=_nm(fn, s), args=[mat], keywords=[]), s)), s))
    k = 0
    for p, kind in zip(parts, _PARTS[dec.name]):
        for c in range(9 if kind == "m" else 3):
            idx = ast.Tuple(elts=[ast.Constant(c // 3), ast.Constant(c % 3)], ctx=ast.Load()) if kind == "m" \
                else ast.Constant(c)
            cell = ast.Subscript(value=_nm(p, s), slice=idx, ctx=ast.Load())
            fwd.append(_loc(ast.Assign(targets=[_nm(outs[k], s, True)], value=cell), s))
            k += 1
    acts.append(("decomp", dec, ins, outs, saves, s))


def reverse(gen, act, out):
    """The reverse sweep of a "decomp" act into out."""
    _, dec, ins, outs, saves, node = act
    tag = gen.fresh("dk")
    seeds = []
    for name in outs:  # the outputs' adjoints, read and spent
        g = f"{tag}{SEP}g{len(seeds)}"
        gen.adj_used.add(name)
        out.append(_stmt(f"{g} = adj{SEP}{name}", node))
        out.append(_loc(ast.Assign(targets=[_nm(f"adj{SEP}{name}", node, True)], value=gen.zero(name, node)), node))
        seeds.append(g)
    v = {"tol": repr(TOL * _EPS[dec.dt]), "nan": gen.use(math.nan, "nan"), "tag": tag}
    lines, grads = _FORMS[dec.name](outs, seeds, v)
    for line in lines:
        out.append(_stmt(line, node))
    out.append(_loc(ast.Assert(test=_expr(f"not {tag}{SEP}bad", node), msg=_loc(ast.Constant(_MSG[dec.name]), node)),
                    node))
    for name, sv in zip(outs, saves):  # the outputs' earlier values back
        if sv is not None:
            out.append(_stmt(f"{name} = {sv}", node))
    for a, g in zip(ins, grads):
        if g is not None:
            gen.give(a, _expr(f"{v['nan']} if {tag}{SEP}bad else {g}", node), out, node)


def _tack():
    import tack

    return tack


def _fix(tree, node):
    for n in ast.walk(tree):
        if hasattr(n, "lineno") or isinstance(n, (ast.expr, ast.stmt)):
            ast.copy_location(n, node)
    return tree


def _stmt(text, node):
    return _fix(ast.parse(text).body[0], node)


def _expr(text, node):
    return _fix(ast.parse(text, mode="eval").body, node)


# ------------------------------------------------------------------ the closed forms, as scalar statements
#
# Each takes the output components' names (row-major matrices), their seeds' names and v (tol: TOL eps,
# nan: the NaN constant's name, tag: the prefix of the statements' own names); it returns the statements'
# texts and the names of the nine input gradients (None where the input does not reach the outputs).
# Each sets `tag·bad` where the seeds reach an undefined term.


def _names(v):
    def n(s):
        return f"{v['tag']}{SEP}{s}"

    return n


def _matmul_t(n, out, a, b, ta=False, tb=False):
    """out = op(a) @ op(b) for 3x3 name lists a, b (op: transpose where ta / tb)."""
    lines = []
    for r in range(3):
        for c in range(3):
            terms = [f"{a[k * 3 + r] if ta else a[r * 3 + k]} * {b[c * 3 + k] if tb else b[k * 3 + c]}"
                     for k in range(3)]
            lines.append(f"{n(out)}{r}{c} = {' + '.join(terms)}")
    return lines


def _mat(n, name):
    return [f"{n(name)}{r}{c}" for r in range(3) for c in range(3)]


def _svd(outs, seeds, v):
    """A = U diag(s) V^T: dA = U (diag(ds) + M) V^T, M_ij = p + q, M_ji = p - q for i < j, where
    a = (U^T dU)_ij - (U^T dU)_ji, b likewise of V, p = (a + b) / (2 (s_j - s_i)), q = (a - b) / (2 (s_i + s_j))."""
    n = _names(v)
    U, s, V = outs[:9], outs[9:12], outs[12:]
    gU, gs, gV = seeds[:9], seeds[9:12], seeds[12:]
    lines = _matmul_t(n, "J", U, gU, ta=True) + _matmul_t(n, "K", V, gV, ta=True)
    lines.append(f"{n('tol')} = {v['tol']} * max(abs({s[0]}), max(abs({s[1]}), abs({s[2]})))")
    M = [[None] * 3 for _ in range(3)]
    bad = []
    for i, j in ((0, 1), (0, 2), (1, 2)):
        d, J, K = n(f"d{i}{j}"), n("J"), n("K")
        lines += [f"{d} = abs({s[i]} - {s[j]}) <= {n('tol')}",
                  f"{n('a')}{i}{j} = {J}{i}{j} - {J}{j}{i}",
                  f"{n('b')}{i}{j} = {K}{i}{j} - {K}{j}{i}",
                  f"{n('p')}{i}{j} = 0.0 if {d} else ({n('a')}{i}{j} + {n('b')}{i}{j}) / (2.0 * ({s[j]} - {s[i]}))",
                  f"{n('q')}{i}{j} = 0.0 if {d} else ({n('a')}{i}{j} - {n('b')}{i}{j}) / (2.0 * ({s[i]} + {s[j]}))"]
        M[i][j] = f"{n('p')}{i}{j} + {n('q')}{i}{j}"
        M[j][i] = f"{n('p')}{i}{j} - {n('q')}{i}{j}"
        bad.append(f"{d} and ({J}{i}{j} != 0.0 or {J}{j}{i} != 0.0 or {K}{i}{j} != 0.0 or {K}{j}{i} != 0.0)")
    lines += _sandwich(n, M, gs, bad, U, V, "G")
    return lines, _mat(n, "G")


def _sandwich(n, M, diag, bad, left, right, out):
    """The lines of M (its off-diagonal entries given, `diag` on its diagonal), of `bad` (any of its
    tests true) and of out = left M right^T: how an SVD's and an eigendecomposition's seeds reach
    their matrix."""
    for i in range(3):
        M[i][i] = diag[i]
    lines = [f"{n('M')}{r}{c} = {M[r][c]}" for r in range(3) for c in range(3)]
    lines.append(f"{n('bad')} = ({') or ('.join(bad)})")
    return lines + _matmul_t(n, "T", left, _mat(n, "M")) + _matmul_t(n, out, _mat(n, "T"), right, tb=True)


def _eig(outs, seeds, v):
    """A = E diag(w) E^T, A symmetric, read from its lower triangle: with S = E (diag(dw) + M) E^T,
    M_ij = M_ji = ((E^T dE)_ij - (E^T dE)_ji) / (2 (w_j - w_i)), dA_rr = S_rr, dA_rc = S_rc + S_cr
    below the diagonal and 0 above (the forward does not read it)."""
    n = _names(v)
    w, E = outs[:3], outs[3:]
    gw, gE = seeds[:3], seeds[3:]
    lines = _matmul_t(n, "J", E, gE, ta=True)
    lines.append(f"{n('tol')} = {v['tol']} * max(abs({w[0]}), abs({w[2]}))")
    M = [[None] * 3 for _ in range(3)]
    bad = []
    for i, j in ((0, 1), (0, 2), (1, 2)):
        d, J = n(f"d{i}{j}"), n("J")
        lines += [f"{d} = abs({w[j]} - {w[i]}) <= {n('tol')}",
                  f"{n('m')}{i}{j} = 0.0 if {d} else ({J}{i}{j} - {J}{j}{i}) / (2.0 * ({w[j]} - {w[i]}))"]
        M[i][j] = M[j][i] = f"{n('m')}{i}{j}"
        bad.append(f"{d} and ({J}{i}{j} != 0.0 or {J}{j}{i} != 0.0)")
    lines += _sandwich(n, M, gw, bad, E, E, "S")
    grads = []
    for r in range(3):
        for c in range(3):
            grads.append(f"{n('S')}{r}{c}" if r == c else f"({n('S')}{r}{c} + {n('S')}{c}{r})" if r > c else None)
    return lines, grads


def _qr(outs, seeds, v):
    """A = Q R, R upper triangular with a diagonal >= 0: with P = dR R^T (dR's upper triangle),
    N = Q^T dQ - P and B = P + tril(N - N^T, -1), dA solves dA R^T = Q B, column 2 first."""
    n = _names(v)
    Q, R = outs[:9], outs[9:]
    gQ = seeds[:9]
    gR = [seeds[9 + k] if k // 3 <= k % 3 else "0.0" for k in range(9)]  # R's lower entries are constants
    lines = _matmul_t(n, "P", gR, R, tb=True) + _matmul_t(n, "N", Q, gQ, ta=True)
    for r in range(3):
        for c in range(3):
            low = f" + ({n('N')}{r}{c} - {n('P')}{r}{c}) - ({n('N')}{c}{r} - {n('P')}{c}{r})" if r > c else ""
            lines.append(f"{n('B')}{r}{c} = {n('P')}{r}{c}{low}")
    lines += _matmul_t(n, "Y", Q, _mat(n, "B"))
    upper = [R[k] for k in range(9) if k // 3 <= k % 3]
    scale = f"abs({upper[0]})"
    for x in upper[1:]:
        scale = f"max({scale}, abs({x}))"
    lines.append(f"{n('tol')} = {v['tol']} * {scale}")
    bad = []
    for k in range(3):  # column k is dead where a diagonal entry up to k is (numerically) zero
        prev = f"{n('dead')}{k - 1} or " if k else ""
        lines.append(f"{n('dead')}{k} = {prev}{R[k * 4]} <= {n('tol')}")
        cols = [gQ[r * 3 + k] for r in range(3)] + [gR[r * 3 + k] for r in range(k + 1)]
        bad.append(f"{n('dead')}{k} and ({' or '.join(f'{c} != 0.0' for c in cols)})")
    lines.append(f"{n('bad')} = ({') or ('.join(bad)})")
    for k in (2, 1, 0):  # dA R^T = Y: dA[:, k] = (Y[:, k] - sum_{l > k} dA[:, l] R[k, l]) / R[k, k]
        for r in range(3):
            rest = "".join(f" - {n('G')}{r}{l} * {R[k * 3 + l]}" for l in range(k + 1, 3))
            lines.append(f"{n('G')}{r}{k} = 0.0 if {n('dead')}{k} else ({n('Y')}{r}{k}{rest}) / {R[k * 4]}")
    return lines, _mat(n, "G")


_FORMS = {"svd3": _svd, "eig3": _eig, "qr3": _qr}
