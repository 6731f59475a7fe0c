"""Vectors, matrices and complex numbers made scalars before a kernel is differentiated.

The adjoint generator (tack._autodiff) differentiates float scalars: locals, array elements,
arithmetic and the intrinsics of intrinsics.def.  A kernel written with vectors (`v = x[i]`,
`tack.dot(v, v)`, `m @ v`, `z * w`) is first rewritten here, on its tree, into the same kernel
on scalars, and the generator then differentiates that unchanged:

- a local of a vector, matrix or complex type (the compiler's type, read from the forward
  call's IR as every local's is) becomes one local per component: `v` of type vec3 is
  `v·c0, v·c1, v·c2`, a mat33 `m·c0 .. m·c8` in row-major order, a complex `z·c0` (the real
  part) and `z·c1` (the imaginary part);
- an expression of such a type becomes the list of its components' scalar expressions:
  construction (`tack.vec3(a, b, c)`, `tack.vec3(s)`, `tack.mat33(1.0)` the scaled identity,
  `complex(re, im)`), `+ - * /` componentwise and with a broadcast scalar, unary minus, `@`
  (matrix by matrix and by vector), a component assigned (`v[0] = s`), `tack.cross`,
  `tack.normalize`, `tack.transpose`, `tack.outer`, `tack.diag`, `tack.inverse` of 2x2, 3x3 and
  4x4 (the forward's adjugate over the determinant, zero where that is exactly 0), complex
  arithmetic (`z * w`, `z / w`, `z.conjugate()`, `cmath.exp`), and conditional expressions; a scalar made from one
  (`v.x`, `v[0]`, `m[i, j]`, `v[j]` of a computed j as a select over the components, `z.real`,
  `tack.dot`, `tack.length`, `tack.norm`, `tack.trace`, `tack.determinant`, `abs(z)`,
  `cmath.phase`) becomes a scalar expression of the components;
- an array whose elements are vectors, matrices or complex numbers is, to the adjoint, the
  float array of their components, one more axis (two for matrices): `x[i]` of a vec3 array
  reads `x[i, 0], x[i, 1], x[i, 2]`, a store writes each component, and the gradient lands in
  the components of an array of the same type (tack._autodiff_run makes the views); a local
  array of them is likewise the float local array of its components (tack._autodiff_local_vec),
  and `.size`, `.ndim` and `.shape` of either are the element array's.

Values used more than once (an operand of `@`, `tack.cross`, complex products) are first
put in locals of their own (`sc·N·k`), so nothing is recomputed twice and no expression grows
with the nesting.  Where a derivative is undefined, the rewrite chooses the one-sided
value Warp and PyTorch give: the length of a zero vector, and `abs` of a complex zero, have
gradient zero (the square root is taken only where its argument is positive), and
`tack.normalize` of the zero vector is the zero vector, as in the forward.  The forward
kernel is not touched: only its adjoint recomputes its values this way, so a complex
quotient computed by the textbook formula rather than Smith's method changes the
recomputed values, which only scale derivatives, by rounding.

The rules for the tack functions of these types (`tack.cross` ... `tack.determinant`, `abs(z)`)
are tack._autodiff_vecfuncs's; those for quaternions and transforms tack._autodiff_quat's.
Quaternions are four components, as a vec4 is; their own functions (the Hamilton product,
`quat_rotate` ...) are written out in tack._autodiff_quat.  @tack.func calls on any of these types
are inlined here (their locals renamed `sc·N·f·name`), since their vector locals need the same
rewrite; transforms are seven components, `p` then `q` (`t.p`, `t.q` are their slices).  The
decompositions (`U, s, V = tack.svd3(m)`, eig3, qr3) become one statement the generator hands to
tack._autodiff_decomp.  What is not rewritten is refused at its line, saying what to write.
docs/differentiation.md ("Vectors, matrices, quaternions and complex numbers") is the user's
account.
"""

from __future__ import annotations

import ast
import copy

from . import _autodiff_decomp, _autodiff_local_vec, _autodiff_quat, _autodiff_vecfuncs, _core, _intrinsics
from ._autodiff_nodes import SEP, _c, _loc, _nm

_ATTR = {"x": 0, "y": 1, "z": 2, "w": 3}


# with the math rows, element-wise on a vector or matrix (np.square ... np.around: lower_numpy.c's)
_ELEMENTWISE = ("abs", "minimum", "maximum", "square", "power", "round", "around")


class Ty:
    """A vector ('v', (n,)), matrix ('m', (r, c)), complex ('c', (2,)), quaternion ('q', (4,)) or
    transform ('x', (7,): p then q) type, its components' float type ('f32', 'f64', or an integer
    type for integer vectors)."""

    __slots__ = ("kind", "shape", "dt")

    def __init__(self, kind, shape, dt):
        self.kind, self.shape, self.dt = kind, tuple(shape), dt

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        return f"Ty({self.kind}, {self.shape}, {self.dt})"


def parse_type(text):
    """The Ty of an IR type's text ('vec3', 'mat33d', 'complex64', 'complex (Python)'), else None."""
    if text is None:
        return None
    if text.startswith("complex"):
        return Ty("c", (2,), "f32" if text == "complex64" else "f64")
    if text.startswith("vec") and len(text) >= 4 and text[3].isdigit():
        n = int(text[3])
        return Ty("v", (n,), {"": "f32", "d": "f64", "i": "i32"}.get(text[4:], None) or "f32")
    if text in ("quat", "quatd"):
        return Ty("q", (4,), "f64" if text == "quatd" else "f32")
    if text in ("transform", "transformd"):  # p (3 components) then q (4)
        return Ty("x", (7,), "f64" if text == "transformd" else "f32")
    if text.startswith("mat") and len(text) >= 5 and text[3:5].isdigit():
        return Ty("m", (int(text[3]), int(text[4])), "f64" if text[5:] == "d" else "f32")
    return None


def dtype_type(dt):
    """The Ty of a tack.DType (vec3, mat33d, complex64 ...), else None."""
    if not isinstance(dt, _core.DType):
        return None
    return parse_type(dt.name)


def _wider(a, b):
    if a == "f64" or b == "f64":
        return "f64"
    if a.startswith("f") or b.startswith("f"):
        return "f32"
    return a


def _bin(a, op, b, node):
    return _loc(ast.BinOp(left=copy.deepcopy(a), op=op, right=copy.deepcopy(b)), node)


def _add(a, b, node):
    return _bin(a, ast.Add(), b, node)


def _sub(a, b, node):
    return _bin(a, ast.Sub(), b, node)


def _mul(a, b, node):
    return _bin(a, ast.Mult(), b, node)


def _div(a, b, node):
    return _bin(a, ast.Div(), b, node)


def _neg(a, node):
    return _loc(ast.UnaryOp(op=ast.USub(), operand=copy.deepcopy(a)), node)


def _sum(terms, node):
    out = terms[0]
    for t in terms[1:]:
        out = _add(out, t, node)
    return out


def _simple(e):
    return isinstance(e, (ast.Name, ast.Constant)) or (
        isinstance(e, ast.Subscript) and all(isinstance(n, (ast.Name, ast.Constant, ast.Subscript, ast.Tuple,
                                                            ast.BinOp, ast.Load, ast.operator, ast.UnaryOp,
                                                            ast.unaryop))
                                             for n in ast.walk(e)))


class Scalarizer:
    """One kernel's tree rewritten on scalars, for the adjoint generator `gen` (its types, its
    resolution of names, its errors).  `arrays`: {parameter: Ty} of the vector, matrix and complex
    array parameters, whose arguments the adjoint takes as float arrays of their components."""

    def __init__(self, gen, arrays):
        self.gen = gen
        self.arrays = dict(arrays)  # and the local arrays of vectors met (arr_ty; tack._autodiff_local_vec)
        self.arr_nd = {}  # a local array of vectors -> its number of axes as the kernel sees it
        self.types = {}  # local name -> Ty, for the locals rewritten
        for name, t in list(gen.local_types.items()):
            ty = parse_type(t)
            if ty is not None and name not in gen.params:
                self.types[name] = ty
        self.alias = {}  # local -> its components' expressions (a struct passed by value's vector)
        self.n = 0
        self.pre = None  # the statements the current statement needs first

    def error(self, msg, node):
        return self.gen.error(msg, node)

    def arr_ty(self, name):
        """The element Ty of an array of vectors, matrices or complex numbers (a parameter, or a local
        array, which becomes the float array of its components: tack._autodiff_local_vec), else None."""
        if name in self.arrays:
            return self.arrays[name]
        ty = _autodiff_local_vec.element_type(self.gen, name)
        if ty is not None:
            self.arrays[name] = ty
        return ty

    def array_ndim(self, name):
        """The number of axes of an array of vectors as the kernel sees it, where known."""
        if name in self.arr_nd:
            return self.arr_nd[name]
        return getattr(self.gen, "array_ndims", {}).get(name)

    def fresh(self, ty, node):
        """A new local per component: their names."""
        self.n += 1
        names = [f"sc{SEP}{self.n}{SEP}{k}" for k in range(ty.size)]
        for nm in names:
            self.gen.local_types[nm] = "f64" if ty.dt == "f64" else ty.dt
        return names

    def comp_names(self, name):
        ty = self.types[name]
        out = [f"{name}{SEP}c{k}" for k in range(ty.size)]  # not name·k: the generator's own temporaries
        # are t·N, g·N ..., and a vector local named t or g would meet them
        shown = self.gen.__dict__.setdefault("components", {})  # for errors: v·0 is shown as v
        for nm in out:
            self.gen.local_types.setdefault(nm, "f64" if ty.dt == "f64" else ty.dt)
            shown[nm] = name.split(SEP)[-1] if name.startswith(f"sc{SEP}") else name
        return out

    def bind(self, comps, ty, node):
        """comps held in fresh locals (statements into self.pre), unless each is already simple."""
        if all(_simple(c) for c in comps):
            return comps
        names = self.fresh(ty, node)
        for nm, c in zip(names, comps):
            self.pre.append(_loc(ast.Assign(targets=[_nm(nm, node, True)], value=c), node))
        return [_nm(nm, node) for nm in names]

    # ---- types

    def ty(self, e):
        """The Ty of expression e, or None for a scalar (or anything not rewritten)."""
        g = self.gen
        if isinstance(e, ast.Name):
            if e.id in self.alias:
                return self.alias[e.id][0]
            if e.id in self.types:
                return self.types[e.id]
            p = g.params.get(e.id)
            if p is not None and p[0] == "other" and p[1] in ("complex", "complex64", "complex128"):
                return Ty("c", (2,), "f64")
            return None
        if isinstance(e, ast.Constant):
            return Ty("c", (2,), "f64") if isinstance(e.value, complex) else None
        if isinstance(e, ast.Subscript):
            if isinstance(e.value, ast.Name) and self.arr_ty(e.value.id) is not None:
                nd = self.array_ndim(e.value.id)
                if nd is not None and (len(e.slice.elts) if isinstance(e.slice, ast.Tuple) else 1) > nd:
                    return None  # a component, made scalar already (an inlined function's return value)
                return self.arrays[e.value.id]
            return None  # a component of a vector, or an element of a scalar array
        if isinstance(e, ast.Attribute):
            t = self.ty(e.value)
            if t is not None and t.kind == "x" and e.attr in ("p", "q"):
                return Ty("v", (3,), t.dt) if e.attr == "p" else Ty("q", (4,), t.dt)
            return None
        if isinstance(e, ast.BinOp):
            a, b = self.ty(e.left), self.ty(e.right)
            if a is None and b is None:
                return None
            if isinstance(e.op, ast.MatMult) and a is not None and b is not None:
                if a.kind == "m" and b.kind == "m":
                    return Ty("m", (a.shape[0], b.shape[1]), _wider(a.dt, b.dt))
                if a.kind == "m" and b.kind == "v":
                    return Ty("v", (a.shape[0],), _wider(a.dt, b.dt))
                if a.kind == "v" and b.kind == "m":
                    return Ty("v", (b.shape[1],), _wider(a.dt, b.dt))
                if a.kind == "v" and b.kind == "v":  # v @ w: the dot product, a number
                    return None
            if a is not None and b is not None:
                return Ty(a.kind, a.shape, _wider(a.dt, b.dt))
            return a or b
        if isinstance(e, ast.UnaryOp):
            return None if isinstance(e.op, ast.Not) else self.ty(e.operand)
        if isinstance(e, ast.IfExp):
            return self.ty(e.body) or self.ty(e.orelse)
        if isinstance(e, ast.Call):
            return self.call_ty(e)
        return None

    def call_ty(self, e):
        g = self.gen
        if isinstance(e.func, ast.Attribute) and e.func.attr == "conjugate" and not e.args:
            return self.ty(e.func.value)
        name, obj = g.intrinsic(e)
        if isinstance(obj, _core.DType):
            return dtype_type(obj)
        if isinstance(obj, _core.Kernel) and getattr(obj, "is_func", False):
            rets = g.func_returns.get(obj.__name__, set())
            tys = [parse_type(r) for r in rets]
            if any(t is not None for t in tys):
                if len(rets) > 1:
                    raise self.error(f"{obj.__name__}() returns {sorted(rets)} in different calls: not "
                                     f"differentiated yet", e)
                return tys[0]
            return None
        if name == "complex" or obj is complex:
            return Ty("c", (2,), "f64")
        if name == "identity" and len(e.args) == 1:
            return dtype_type(self.gen.resolve(e.args[0]))
        if name in _autodiff_quat.SUPPORTED:
            return _autodiff_quat.call_type(self, name, e, [self.ty(a) for a in e.args])
        if (name or "").startswith(("quat", "transform")):
            raise self.error(f"{ast.unparse(e.func)}(): {_refused_quat(name)}", e)
        if name in _ELEMENTWISE or name in _intrinsics._MATH:  # element-wise on a float vector or matrix (elementwise)
            tys = [self.ty(a) for a in e.args]
            vt = [t for t in tys if t is not None]
            if vt and all(t.kind in ("v", "m") and t.shape == vt[0].shape and t.dt in ("f32", "f64") for t in vt):
                return Ty(vt[0].kind, vt[0].shape, "f64" if any(t.dt == "f64" for t in vt) else vt[0].dt)
        if name in _autodiff_decomp.NAMES:  # differentiated unpacked (stmt): U, s, V = tack.svd3(m)
            raise self.error(f"{ast.unparse(e.func)}() is differentiated only unpacked into names or array elements", e)
        return _autodiff_vecfuncs.result_type(self, name, e)

    # ---- expressions

    def comps(self, e):
        """(Ty, [component expressions]) of a vector, matrix or complex expression e."""
        ty = self.ty(e)
        if ty is None:
            return None, None
        if isinstance(e, ast.Name):
            if e.id in self.alias:
                return self.alias[e.id][0], [copy.deepcopy(c) for c in self.alias[e.id][1]]
            if e.id in self.types:
                return ty, [_nm(n, e) for n in self.comp_names(e.id)]
            return ty, [_loc(ast.Attribute(value=_nm(e.id, e), attr=a, ctx=ast.Load()), e) for a in ("real", "imag")]
        if isinstance(e, ast.Constant):
            return ty, [_c(e.value.real, e), _c(e.value.imag, e)]
        if isinstance(e, ast.Subscript):
            idx = self.scal(e.slice)
            elts = list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]
            out = []
            for k in range(ty.size):
                sub = [k] if ty.kind != "m" else [k // ty.shape[1], k % ty.shape[1]]
                out.append(_loc(ast.Subscript(value=_nm(e.value.id, e),
                                              slice=_loc(ast.Tuple(elts=[copy.deepcopy(x) for x in elts] +
                                                                   [_c(s, e) for s in sub], ctx=ast.Load()), e),
                                              ctx=ast.Load()), e))
            return ty, out
        if isinstance(e, ast.Attribute):  # t.p, t.q of a transform
            _t, cs = self.comps(e.value)
            return ty, cs[:3] if e.attr == "p" else cs[3:]
        if isinstance(e, ast.UnaryOp):
            t, cs = self.comps(e.operand)
            if isinstance(e.op, ast.UAdd):
                return t, cs
            if isinstance(e.op, ast.USub):
                return t, [_neg(c, e) for c in cs]
            raise self.error(f"{ast.unparse(e)}: not differentiated", e)
        if isinstance(e, ast.BinOp):
            return self.binop(e, ty)
        if isinstance(e, ast.IfExp):
            test = self.scal(e.test)
            names = self.fresh(ty, e)
            saved = self.pre
            branches = []
            for part in (e.body, e.orelse):
                self.pre = []
                pt, pc = self.comps(part) if self.ty(part) is not None else (None, [self.scal(part)] * ty.size)
                if pt is not None and pt.size != ty.size:
                    raise self.error(f"{ast.unparse(e)}: branches of different shapes", e)
                self.pre += [_loc(ast.Assign(targets=[_nm(n, e, True)], value=c), e) for n, c in zip(names, pc)]
                branches.append(self.pre)
            self.pre = saved
            self.pre.append(_loc(ast.If(test=test, body=branches[0], orelse=branches[1]), e))
            return ty, [_nm(n, e) for n in names]
        if isinstance(e, ast.Call):
            return self.call(e, ty)
        raise self.error(f"{ast.unparse(e)}: this {ty.kind} expression is not differentiated yet", e)

    def operand(self, e, ty, node):
        """Components of an operand of a componentwise operation: a broadcast scalar, or its own."""
        t = self.ty(e)
        if t is None:
            s = self.scal(e)
            if not _simple(s):
                nm = self.fresh(Ty("v", (1,), ty.dt), node)[0]
                self.pre.append(_loc(ast.Assign(targets=[_nm(nm, node, True)], value=s), node))
                s = _nm(nm, node)
            return None, [s] * ty.size
        return self.comps(e)

    def binop(self, e, ty):
        op = e.op
        a_t, b_t = self.ty(e.left), self.ty(e.right)
        if isinstance(op, ast.MatMult):
            if a_t is None or b_t is None or a_t.kind == "c" or b_t.kind == "c":
                raise self.error(f"{ast.unparse(e)}: @ of these operands is not differentiated", e)
            a = self.bind(self.comps(e.left)[1], a_t, e)
            b = self.bind(self.comps(e.right)[1], b_t, e)
            ar, ac = (a_t.shape if a_t.kind == "m" else (1, a_t.shape[0]))
            br, bc = (b_t.shape if b_t.kind == "m" else (b_t.shape[0], 1))
            if ac != br:
                raise self.error(f"{ast.unparse(e)}: shapes do not match", e)
            out = []
            for r in range(ar):
                for c in range(bc):
                    out.append(_sum([_mul(a[r * ac + k], b[k * bc + c], e) for k in range(ac)], e))
            return ty, out
        if ty.kind == "q" and isinstance(op, ast.Mult) and a_t is not None and b_t is not None:
            if a_t.kind != "q" or b_t.kind != "q":
                raise self.error(f"{ast.unparse(e)}: a quaternion times a vector is not a rotation (write "
                                 f"tack.quat_rotate(q, v))", e)
            a = self.bind(self.comps(e.left)[1], a_t, e)
            b = self.bind(self.comps(e.right)[1], b_t, e)
            return ty, _autodiff_quat.product(self, e, a, b)
        if ty.kind == "x" or (a_t is not None and a_t.kind == "x") or (b_t is not None and b_t.kind == "x"):
            if not (isinstance(op, ast.Mult) and a_t is not None and b_t is not None and a_t.kind == b_t.kind == "x"):
                raise self.error(f"{ast.unparse(e)}: of transforms only t * u (composition) is differentiated", e)
            a = self.bind(self.comps(e.left)[1], a_t, e)
            b = self.bind(self.comps(e.right)[1], b_t, e)
            return ty, _autodiff_quat.compose(self, e, ty, a, b)
        if ty.kind == "c" and ((a_t is not None and a_t.kind != "c") or (b_t is not None and b_t.kind != "c")):
            raise self.error(f"{ast.unparse(e)}: complex numbers meet a vector or a matrix", e)
        if ty.kind == "c" and isinstance(op, (ast.Mult, ast.Div)) and a_t is not None and b_t is not None:
            a = self.bind(self.comps(e.left)[1], a_t, e)
            b = self.bind(self.comps(e.right)[1], b_t, e)
            (p, q), (r, s) = a, b
            if isinstance(op, ast.Mult):
                return ty, [_sub(_mul(p, r, e), _mul(q, s, e), e), _add(_mul(p, s, e), _mul(q, r, e), e)]
            den = self.bind([_add(_mul(r, r, e), _mul(s, s, e), e)], Ty("v", (1,), ty.dt), e)[0]
            return ty, [_div(_add(_mul(p, r, e), _mul(q, s, e), e), den, e),
                        _div(_sub(_mul(q, r, e), _mul(p, s, e), e), den, e)]
        if ty.kind == "c" and isinstance(op, ast.Div) and a_t is None:  # real / complex
            b = self.bind(self.comps(e.right)[1], b_t, e)
            s_ = self.bind([self.scal(e.left)], Ty("v", (1,), ty.dt), e)[0]
            den = self.bind([_add(_mul(b[0], b[0], e), _mul(b[1], b[1], e), e)], Ty("v", (1,), ty.dt), e)[0]
            return ty, [_div(_mul(s_, b[0], e), den, e), _div(_neg(_mul(s_, b[1], e), e), den, e)]
        if ty.kind == "c" and isinstance(op, (ast.Add, ast.Sub)) and (a_t is None or b_t is None):
            # a real meets a complex: it adds to the real part only
            if a_t is None:
                b = self.comps(e.right)[1]
                s_ = self.scal(e.left)
                if isinstance(op, ast.Add):
                    return ty, [_add(s_, b[0], e), b[1]]
                return ty, [_sub(s_, b[0], e), _neg(b[1], e)]
            a = self.comps(e.left)[1]
            return ty, [_bin(a[0], op, self.scal(e.right), e), a[1]]
        if ty.kind == "c" and not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            raise self.error(f"{ast.unparse(e)}: this operator on complex numbers is not differentiated", e)
        if isinstance(op, ast.Mult) and a_t is not None and b_t is not None and (a_t.kind == "m" or b_t.kind == "m"):
            raise self.error(f"{ast.unparse(e)}: use @ to multiply matrices", e)
        if not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            raise self.error(f"{ast.unparse(e)}: this operator on vectors is not differentiated", e)
        _t, a = self.operand(e.left, ty, e)
        _t, b = self.operand(e.right, ty, e)
        if len(a) != len(b):
            raise self.error(f"{ast.unparse(e)}: operands of different shapes", e)
        return ty, [_bin(x, op, y, e) for x, y in zip(a, b)]

    def call(self, e, ty):
        g = self.gen
        if isinstance(e.func, ast.Attribute) and e.func.attr == "conjugate" and not e.args:
            t, cs = self.comps(e.func.value)
            return t, [cs[0], _neg(cs[1], e)]
        if e.keywords:
            raise self.error(f"{ast.unparse(e.func)}() with keywords is not differentiated yet", e)
        name, obj = g.intrinsic(e)
        if isinstance(obj, _core.Kernel) and getattr(obj, "is_func", False):
            return self.comps(self.inline(e, obj))
        if isinstance(obj, _core.DType) or name == "complex" or obj is complex:
            return ty, self.construct(e, ty)
        if name in _autodiff_quat.SUPPORTED:
            return ty, _autodiff_quat.call(self, name, e, ty)
        out = _autodiff_vecfuncs.vector(self, name, e, ty)
        if out is not None:
            return out
        if ty is not None and ty.kind in ("v", "m") and (name in _ELEMENTWISE or name in _intrinsics._MATH):
            return ty, self.elementwise(e, ty)
        if (name or "").startswith(("quat", "transform")):
            raise self.error(f"{ast.unparse(e.func)}(): {_refused_quat(name)}", e)
        raise self.error(f"{ast.unparse(e.func)}() of a vector, matrix or complex value is not differentiated "
                         f"yet (write it with components)", e)

    def elementwise(self, e, ty):
        """abs or a math row of a vector or matrix (tack.sqrt(v), tack.clamp(v, 0.0, 1.0)): the scalar call
        on each component, as the compiler lowers it, the scalar arguments broadcast (held in locals of
        their own, so they are computed once); the generator differentiates each scalar call."""
        args = []
        for a in e.args:
            t = self.ty(a)
            if t is None:
                args.append(self.bind([self.scal(a)], Ty("v", (1,), ty.dt), e)[0])
            else:
                args.append(self.comps(a)[1])
        return [_loc(ast.Call(func=copy.deepcopy(e.func), keywords=[],
                              args=[copy.deepcopy(a[k]) if isinstance(a, list) else copy.deepcopy(a) for a in args]), e)
                for k in range(ty.size)]

    def construct(self, e, ty):
        args = e.args
        if len(args) == 1 and self.ty(args[0]) is not None:  # a conversion: vec3d(v), complex64(z)
            t, cs = self.comps(args[0])
            if t.size == ty.size:
                return cs
            raise self.error(f"{ast.unparse(e)}: a conversion between shapes is not differentiated", e)
        vals = []
        for a in args:
            t = self.ty(a)
            if t is None:
                vals.append(self.scal(a))
            else:
                vals.extend(self.comps(a)[1])  # a matrix from row vectors
        if ty.kind == "c":
            return [vals[0], vals[1] if len(vals) > 1 else _c(0.0, e)] if len(vals) in (1, 2) else self.bad(e)
        if len(vals) == ty.size:
            return vals
        if len(vals) == 0:
            return [_c(0.0, e)] * ty.size
        if len(vals) == 1:
            if ty.kind == "m":  # the scaled identity
                s = self.bind(vals, Ty("v", (1,), ty.dt), e)[0]
                return [copy.deepcopy(s) if i == j else _c(0.0, e) for i in range(ty.shape[0])
                        for j in range(ty.shape[1])]
            s = self.bind(vals, Ty("v", (1,), ty.dt), e)[0]
            return [copy.deepcopy(s) for _ in range(ty.size)]
        return self.bad(e)

    def bad(self, e):
        raise self.error(f"{ast.unparse(e)}: this construction is not differentiated yet (give every component)", e)

    def fn(self, name, args, node):
        """A call of the tack intrinsic `name`."""
        import tack

        func = _nm(self.gen.use(getattr(tack, name), name), node)
        return _loc(ast.Call(func=func, args=[copy.deepcopy(a) for a in args], keywords=[]), node)

    def scal(self, e):
        """Scalar expression e with its vector parts made components."""
        if e is None:
            return None
        ty = self.ty(e)
        if ty is not None:
            raise self.error(f"{ast.unparse(e)}: a {_tyname(ty)} value where the adjoint expects a number: "
                             f"not differentiated yet", e)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "shape" and \
                isinstance(e.value.value, ast.Name) and self.arr_ty(e.value.value.id) is not None:
            return _autodiff_local_vec.shape_axis(self, e, self.arrays[e.value.value.id])
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and self.arr_ty(e.value.id) is not None:
            out = _autodiff_local_vec.attribute(self, e, self.arrays[e.value.id])
            if out is not None:
                return out
        if isinstance(e, ast.Attribute):
            t = self.ty(e.value)
            if t is not None:
                _t, cs = self.comps(e.value)
                if t.kind == "c" and e.attr in ("real", "imag"):
                    return cs[0 if e.attr == "real" else 1]
                if t.kind in ("v", "q") and e.attr in _ATTR and _ATTR[e.attr] < t.size:
                    return cs[_ATTR[e.attr]]
                raise self.error(f"{ast.unparse(e)}: not differentiated yet", e)
        if isinstance(e, ast.Subscript):
            t = self.ty(e.value)
            if t is not None:
                idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
                if t.kind == "m" and len(idx) == 2 and not all(_autodiff_vecfuncs.const_int(k) for k in idx):
                    return _autodiff_vecfuncs.entry_select(self, e, t, idx)  # m[i, j] with an index computed
                ks = []
                for k in idx:
                    if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and isinstance(
                            k.operand, ast.Constant):
                        k = _c(-k.operand.value, k)
                    if not (isinstance(k, ast.Constant) and type(k.value) is int):
                        if t.kind in ("v", "q") and len(idx) == 1:
                            return self.select(e, t, k)
                        raise self.error(f"{ast.unparse(e)}: a component chosen by a computed index is not "
                                         f"differentiated (write v.x, v[0] ... or branch on the index)", e)
                    ks.append(k.value)
                _t, cs = self.comps(e.value)
                shape = t.shape
                if len(ks) != len(shape):
                    if t.kind == "m" and len(ks) == 1:  # m[i]: row i, a vector value (lower_expr.c)
                        raise self.error(f"{ast.unparse(e)}: a matrix's row is not differentiated yet (index its "
                                         f"entries, m[i, 0], m[i, 1] ...)", e)
                    raise self.error(f"{ast.unparse(e)}: index one component", e)
                flat = 0
                for k, d in zip(ks, shape):
                    flat = flat * d + (k % d)
                return cs[flat]
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):  # v @ w, as tack.dot(v, w)
            a_t, b_t = self.ty(e.left), self.ty(e.right)
            if a_t is not None and b_t is not None and a_t.kind == b_t.kind == "v":
                return _sum([_mul(x, y, e) for x, y in zip(self.comps(e.left)[1], self.comps(e.right)[1])], e)
        if isinstance(e, ast.Call):
            out = self.scalar_call(e)
            if out is not None:
                return out
        new = copy.copy(e)
        for field, value in ast.iter_fields(e):
            if isinstance(value, ast.expr):
                setattr(new, field, self.scal(value))
            elif isinstance(value, list):
                setattr(new, field, [self.scal(v) if isinstance(v, ast.expr) else copy.deepcopy(v) for v in value])
            elif isinstance(value, ast.AST):
                setattr(new, field, copy.deepcopy(value))
        return new

    def index(self, k, t, node):
        """A computed component index k of a t value, in an integer local of its own: the index where it
        is in range, a negative one counting from the end (-n <= k < n, as the forward checks and wraps),
        -1 where it is not."""
        j = self.scal(k)
        self.n += 1
        name = f"sc{SEP}{self.n}{SEP}j"
        self.gen.local_types[name] = "i64"
        self.pre.append(_loc(ast.Assign(targets=[_nm(name, node, True)], value=j), node))
        neg = _loc(ast.Compare(left=_nm(name, node), ops=[ast.Lt()], comparators=[_c(0, node)]), node)
        self.pre.append(_loc(ast.Assign(targets=[_nm(name, node, True)], value=_loc(ast.IfExp(
            test=neg, body=_loc(ast.BinOp(left=_nm(name, node), op=ast.Add(), right=_c(t.size, node)), node),
            orelse=_nm(name, node)), node)), node))
        ok = _loc(ast.BoolOp(op=ast.And(), values=[
            _loc(ast.Compare(left=_nm(name, node), ops=[ast.GtE()], comparators=[_c(0, node)]), node),
            _loc(ast.Compare(left=_nm(name, node), ops=[ast.Lt()], comparators=[_c(t.size, node)]), node)]), node)
        self.pre.append(_loc(ast.Assign(targets=[_nm(name, node, True)],
                                        value=_loc(ast.IfExp(test=ok, body=_nm(name, node), orelse=_c(-1, node)),
                                                   node)), node))
        return _nm(name, node)

    def nan(self, node):
        return _nm(self.gen.use(float("nan"), "nan"), node)

    def select(self, e, t, k):
        """v[j] with j computed: a select over the components (`v0 if j == 0 else v1 if ...`), so the
        gradient reaches the component chosen; an index out of range, which the forward refuses with
        IndexError, gives NaN here rather than a component."""
        _t, cs = self.comps(e.value)
        j = self.index(k, t, e)
        out = self.nan(e)
        for i in reversed(range(t.size)):
            test = _loc(ast.Compare(left=copy.deepcopy(j), ops=[ast.Eq()], comparators=[_c(i, e)]), e)
            out = _loc(ast.IfExp(test=test, body=cs[i], orelse=out), e)
        return out

    def computed_store(self, tgt, value, node, op=None):
        """v[j] = s (or op=) with j computed: every component set to a select (`s if j == k else v·k`);
        an index out of range (refused by the forward) makes every component NaN."""
        t = self.types[tgt.value.id]
        names = self.comp_names(tgt.value.id)
        s = self.scal(value)
        j = self.index(tgt.slice, t, node)
        if op is not None:
            cur = self.select(_loc(ast.Subscript(value=_nm(tgt.value.id, tgt), slice=copy.deepcopy(j),
                                                 ctx=ast.Load()), tgt), t, j)
            s = _loc(ast.BinOp(left=cur, op=copy.deepcopy(op), right=s), node)
        s = self.bind([s], Ty("v", (1,), t.dt), node)[0]
        bad = _loc(ast.Compare(left=copy.deepcopy(j), ops=[ast.Lt()], comparators=[_c(0, node)]), node)
        out = []
        for i, nm in enumerate(names):
            test = _loc(ast.Compare(left=copy.deepcopy(j), ops=[ast.Eq()], comparators=[_c(i, node)]), node)
            keep = _loc(ast.IfExp(test=copy.deepcopy(bad), body=self.nan(node), orelse=_nm(nm, node)), node)
            out.append(_loc(ast.Assign(targets=[_nm(nm, node, True)],
                                       value=_loc(ast.IfExp(test=test, body=copy.deepcopy(s), orelse=keep), node)),
                            node))
        return out

    def scalar_call(self, e):
        """A number computed from vector values (tack.dot, tack.length, abs(z) ...), or None."""
        name, obj = self.gen.intrinsic(e)
        if isinstance(obj, _core.Kernel) and getattr(obj, "is_func", False) and self.func_has_vectors(obj):
            out = self.inline(e, obj)
            return self.scal(out) if out is not None else _c(0.0, e)
        types = [self.ty(a) for a in e.args]
        if not any(t is not None for t in types):
            return None
        t0 = types[0]
        out = _autodiff_vecfuncs.scalar(self, name, e, t0)
        if out is not None:
            return out
        if isinstance(obj, _core.Kernel) and getattr(obj, "is_func", False):
            raise self.error(f"{obj.__name__}(): a @tack.func taking a vector, matrix or complex value is not "
                             f"differentiated yet (pass its components)", e)
        if (name or "").startswith(("quat", "transform")):
            raise self.error(f"{ast.unparse(e.func)}(): {_refused_quat(name)}", e)
        raise self.error(f"{ast.unparse(e.func)}() of a {_tyname(t0 or next(t for t in types if t))} value is not "
                         f"differentiated yet", e)

    # ---- @tack.func calls on vectors: inlined here, their vector locals made components

    def func_has_vectors(self, fobj):
        types = self.gen.func_types.get(fobj.__name__, {})
        rets = self.gen.func_returns.get(fobj.__name__, set())
        return any(parse_type(t) is not None or _autodiff_local_vec.type_has_vectors(t)
                   for ts in types.values() for t in ts) or any(parse_type(r) is not None for r in rets)

    def inline(self, call, fobj):
        """The call's body, scalarized, into self.pre (its parameters and locals renamed sc·N·f·name);
        the expression of its return value (a local of the caller's tree), or None."""
        from ._autodiff_inline import func_parts, relocator

        fn, fdef, params, body, ret, locals_, env = func_parts(self, call, fobj)
        self.n += 1
        tag = f"sc{SEP}{self.n}{SEP}{fn.__name__}"
        types = self.gen.func_types.get(fn.__name__, {})
        gp = self.gen.params
        rename, assign = {}, []
        for p, a in zip(params, call.args):
            if isinstance(a, ast.Name) and (a.id in gp and gp[a.id][0] in ("farray", "array", "bad") or
                                            a.id not in gp and _autodiff_local_vec.is_local_array(self.gen, a.id)):
                rename[p] = a.id  # an array: the kernel's own parameter, or the caller's local array
                continue
            rename[p] = f"{tag}{SEP}{p}"
            assign.append((rename[p], p, a))
        for name in locals_ - set(params):
            rename[name] = f"{tag}{SEP}{name}"
        for name in locals_:
            new = rename.get(name, "")
            if not new.startswith(tag):
                continue
            ts = types.get(name, set())
            vts = {t for t in ts if parse_type(t) is not None}
            if vts:
                if len(ts) > 1:
                    raise self.error(f"{fn.__name__}(): its local '{name}' is {sorted(ts)} in different calls: "
                                     f"not differentiated yet", call)
                self.types[new] = parse_type(next(iter(vts)))
            elif ts:
                floats = {t for t in ts if t in ("f32", "f64", "float (Python)")}
                self.gen.local_types[new] = "f64" if len(floats) > 1 else sorted(ts)[0]
        gen = self.gen

        relocated = relocator(gen, fn, rename, env, call)

        for new, p, a in assign:
            st = _loc(ast.Assign(targets=[_nm(new, call, True)], value=a), call)
            if new not in self.types and new not in self.gen.local_types and self.ty(a) is None:
                self.gen.local_types[new] = "i64"  # a parameter no call typed (an unused one)
            self.pre.extend(self.stmt_pre(st))
        self.pre.extend(self.stmts([relocated(st) for st in body]))
        out = None
        if isinstance(ret, ast.Tuple) and any(self.ty(relocated(e)) is not None for e in ret.elts):
            raise self.error(f"{fn.__name__}() returns several values, a vector, matrix or complex number among "
                             f"them: not differentiated yet (return them from functions of their own)", call)
        if ret is not None:
            rt = self.ty(relocated(ret))
            if rt is not None:  # the return value in a local of its own, so the caller reads components
                self.n += 1
                name = f"sc{SEP}{self.n}{SEP}{fn.__name__}{SEP}ret"
                self.types[name] = rt
                self.pre.extend(self.stmt_pre(_loc(ast.Assign(targets=[_nm(name, call, True)],
                                                              value=relocated(ret)), call)))
                out = _nm(name, call)
            else:
                out = self.scal(relocated(ret))
        self.depth -= 1
        return out

    def stmt_pre(self, s):
        """Statement s scalarized, with what it needs first."""
        saved, self.pre = self.pre, []
        new = self.stmt(s, False)
        out = self.pre + new
        self.pre = saved
        return out

    # ---- statements

    def stmts(self, body, top=False):
        out = []
        for s in body:
            saved, self.pre = self.pre, []
            new = self.stmt(s, top)
            out.extend(self.pre)
            out.extend(new)
            self.pre = saved
        return out

    def assign_local(self, name, value, node, op=None):
        ty = self.types[name]
        names = self.comp_names(name)
        vt = self.ty(value)
        if vt is None:  # a number given to every component
            _t, cs = self.operand(value, ty, node)
        else:
            _t, cs = self.comps(value)
            if len(cs) != len(names):
                raise self.error(f"{ast.unparse(node)}: shapes differ", node)
        if op is not None:
            return [_loc(ast.AugAssign(target=_nm(n, node, True), op=copy.deepcopy(op), value=c), node)
                    for n, c in zip(names, cs)]
        reads = {m.id for c in cs for m in ast.walk(c) if isinstance(m, ast.Name)}
        if reads & set(names) and len(names) > 1:  # v = cross(v, w): the new components first
            tmp = self.fresh(ty, node)
            for t, c in zip(tmp, cs):
                self.pre.append(_loc(ast.Assign(targets=[_nm(t, node, True)], value=c), node))
            cs = [_nm(t, node) for t in tmp]
        return [_loc(ast.Assign(targets=[_nm(n, node, True)], value=c), node) for n, c in zip(names, cs)]

    def store(self, tgt, value, node, op=None):
        """arr[idx] = value (or op=) for a vector, matrix or complex array."""
        ty = self.arrays[tgt.value.id]
        vt = self.ty(value)
        if vt is None:
            _t, cs = self.operand(value, ty, node)
        else:
            _t, cs = self.comps(value)
        if ty.kind == "c" and vt is None and op is None:
            cs = [cs[0], _c(0.0, node)]
        if ty.kind == "c" and op is not None and not isinstance(op, (ast.Add, ast.Sub)):
            raise self.error(f"{ast.unparse(node)}: only += and -= of complex elements are differentiated", node)
        if ty.kind == "c" and vt is None and op is not None:
            cs = [cs[0], _c(0.0, node)]
        cs, slice_ = _autodiff_local_vec.held(self, tgt, cs, ty, node)
        _t, cells = self.comps(_loc(ast.Subscript(value=tgt.value, slice=slice_, ctx=ast.Load()), tgt))
        out = []
        for cell, c in zip(cells, cs):
            cell.ctx = ast.Store()
            if op is None:
                out.append(_loc(ast.Assign(targets=[cell], value=c), node))
            else:
                out.append(_loc(ast.AugAssign(target=cell, op=copy.deepcopy(op), value=c), node))
        return out

    def computed_target(self, tgt):
        """Whether tgt is `v[j]` of a vector or quaternion local, j not a constant."""
        if not (isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) and tgt.value.id in self.types
                and self.types[tgt.value.id].kind in ("v", "q") and not isinstance(tgt.slice, ast.Tuple)):
            return False
        k = tgt.slice
        if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and isinstance(k.operand, ast.Constant):
            return False
        return not (isinstance(k, ast.Constant) and type(k.value) is int)

    def component_target(self, tgt):
        """The component local `v.x = ...` or `v[1] = ...` assigns, or None."""
        if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id in self.types:
            t = self.types[tgt.value.id]
            if t.kind == "v" and tgt.attr in _ATTR and _ATTR[tgt.attr] < t.size:
                return self.comp_names(tgt.value.id)[_ATTR[tgt.attr]]
            if t.kind == "c" and tgt.attr in ("real", "imag"):
                return self.comp_names(tgt.value.id)[tgt.attr == "imag"]
        if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) and tgt.value.id in self.types:
            idx = tgt.slice.elts if isinstance(tgt.slice, ast.Tuple) else [tgt.slice]
            if self.types[tgt.value.id].kind == "m" and not all(_autodiff_vecfuncs.const_int(k) for k in idx):
                raise self.error(f"{ast.unparse(tgt)}: a matrix entry set at a computed index is not "
                                 f"differentiated (a computed index is read, not written; branch on the index)", tgt)
            load = _loc(ast.Subscript(value=_nm(tgt.value.id, tgt), slice=tgt.slice, ctx=ast.Load()), tgt)
            out = self.scal(load)
            return out.id
        return None

    def stmt(self, s, top):
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if s.value is None or len(targets) != 1:
                return [s]
            tgt = targets[0]
            if isinstance(tgt, ast.Tuple) and isinstance(s.value, ast.Call) and self.gen.intrinsic(s.value)[0] in \
                    _autodiff_decomp.NAMES:  # U, s, V = tack.svd3(m): tack._autodiff_decomp
                return _autodiff_decomp.scalarize(self, tgt, s.value, s)
            if isinstance(tgt, ast.Name) and tgt.id in self.types:
                if top and isinstance(s.value, ast.Call) and self.gen.intrinsic(s.value)[1] is not None and all(
                        isinstance(a, (ast.Name, ast.Constant)) for a in s.value.args) and _assigned_once(
                        self.gen.fdef, tgt.id):
                    # a vector built once from parameters outside the loops (a struct passed by value): its
                    # components are those parameters
                    ty, cs = self.comps(s.value)
                    self.alias[tgt.id] = (ty, cs)
                    return []
                return self.assign_local(tgt.id, s.value, s)
            if isinstance(tgt, ast.Name) and tgt.id not in self.gen.params and self.arr_ty(tgt.id) is not None:
                return _autodiff_local_vec.create(self, tgt.id, s.value, s)
            if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) and \
                    self.arr_ty(tgt.value.id) is not None:
                return self.store(tgt, s.value, s)
            if self.computed_target(tgt):
                return self.computed_store(tgt, s.value, s)
            comp = self.component_target(tgt)
            if comp is not None:
                return [_loc(ast.Assign(targets=[_nm(comp, tgt, True)], value=self.scal(s.value)), s)]
            new = copy.copy(s)
            new.value = self.scal(s.value)
            if isinstance(s, ast.Assign):
                new.targets = [self.scal(t) for t in s.targets]
            else:
                new.target = self.scal(s.target)
            return [new]
        if isinstance(s, ast.AugAssign):
            tgt = s.target
            if isinstance(tgt, ast.Name) and tgt.id in self.types:
                ty = self.types[tgt.id]
                if ty.kind == "c" and isinstance(s.op, (ast.Mult, ast.Div)) or isinstance(s.op, ast.MatMult):
                    value = _loc(ast.BinOp(left=_nm(tgt.id, s), op=s.op, right=s.value), s)
                    return self.assign_local(tgt.id, value, s)
                if ty.kind == "c" and self.ty(s.value) is None:  # z += real: the real part only
                    name = self.comp_names(tgt.id)[0]
                    return [_loc(ast.AugAssign(target=_nm(name, s, True), op=s.op, value=self.scal(s.value)), s)]
                return self.assign_local(tgt.id, s.value, s, op=s.op)
            if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) and \
                    self.arr_ty(tgt.value.id) is not None:
                if tgt.value.id not in self.gen.params and not isinstance(s.op, (ast.Add, ast.Sub)):
                    return self.store(tgt, _autodiff_local_vec.updated(tgt, s), s)  # a[k] *= w: a[k] = a[k] * w
                return self.store(tgt, s.value, s, op=s.op)
            if self.computed_target(tgt):
                return self.computed_store(tgt, s.value, s, op=s.op)
            comp = self.component_target(tgt)
            if comp is not None:
                return [_loc(ast.AugAssign(target=_nm(comp, tgt, True), op=s.op, value=self.scal(s.value)), s)]
            new = copy.copy(s)
            new.value = self.scal(s.value)
            new.target = self.scal(s.target)
            return [new]
        if isinstance(s, ast.If):
            new = copy.copy(s)
            new.test = self.scal(s.test)
            new.body = self.stmts(s.body) or [_loc(ast.Pass(), s)]
            new.orelse = self.stmts(s.orelse)
            return [new]
        if isinstance(s, ast.For):
            new = copy.copy(s)
            new.iter = self.scal(s.iter)
            new.body = self.stmts(s.body) or [_loc(ast.Pass(), s)]
            new.orelse = self.stmts(s.orelse)
            return [new]
        if isinstance(s, ast.While):
            new = copy.copy(s)
            new.body = self.stmts(s.body) or [_loc(ast.Pass(), s)]
            return [new]
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call) and self.gen.intrinsic(s.value)[0] == "print":
                return []  # printing is left out of the adjoint (as the generator does)
            call = s.value if isinstance(s.value, ast.Call) else None
            name = self.gen.intrinsic(call)[0] if call is not None else None
            if name in ("atomic_add", "atomic_sub") and len(call.args) == 3 and not call.keywords and \
                    isinstance(call.args[0], ast.Name) and call.args[0].id in self.gen.params and \
                    getattr(self.arr_ty(call.args[0].id), "kind", None) in ("v", "m"):
                # tack.atomic_add(f, j, v) on a vector or matrix array, a statement: f[j] += v, one
                # atomic per component as the compiled kernel's (its adjoint a gather of f.grad[j])
                arr, idx, val = call.args
                tgt = _loc(ast.Subscript(value=_nm(arr.id, arr), slice=copy.deepcopy(idx), ctx=ast.Store()), arr)
                op = ast.Add() if name == "atomic_add" else ast.Sub()
                return self.stmts([_loc(ast.AugAssign(target=tgt, op=op, value=val), s)])
            obj = self.gen.intrinsic(call)[1] if call is not None else None
            if isinstance(obj, _core.Kernel) and getattr(obj, "is_func", False) and self.func_has_vectors(obj):
                self.inline(s.value, obj)
                return []
            new = copy.copy(s)
            new.value = self.scal(s.value)
            return [new]
        if isinstance(s, ast.Return) and s.value is not None:
            new = copy.copy(s)
            new.value = self.scal(s.value)
            return [new]
        return [s]

    def run(self, fdef):
        new = copy.copy(fdef)
        new.body = self.stmts(fdef.body, top=True)
        left = _names(new)
        for name in self.types:  # the vector locals are gone: what still names one is refused by the generator
            if name not in left:
                self.gen.local_types.pop(name, None)
        ast.fix_missing_locations(new)
        return new


def _tyname(t):
    return {"v": "vector", "m": "matrix", "c": "complex", "q": "quaternion", "x": "transform"}[t.kind]


def _refused_quat(name):
    if name.startswith("transform"):
        return ("transforms are not differentiated yet (write the rotation as a quaternion or a matrix and the "
                "translation as a vector)")
    return (f"{name} is not differentiated yet (differentiated: {', '.join(_autodiff_quat.SUPPORTED)}, the Hamilton "
            f"product, dot, length, normalize)")


def _names(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _assigned_once(fdef, name):
    n = 0
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            n += 1
    return n == 1


def needs(gen, fdef, arrays):
    """Whether the kernel has anything to rewrite: arrays or locals of these types, complex constants,
    calls making such values."""
    if arrays:
        return True
    names = _names(fdef)
    if any((parse_type(t) is not None or _autodiff_local_vec.type_has_vectors(t)) and n in names
           for n, t in gen.local_types.items()):
        return True
    for n in ast.walk(fdef):
        if isinstance(n, ast.Constant) and isinstance(n.value, complex):
            return True
        if isinstance(n, ast.Call):
            name, obj = gen.intrinsic(n)
            if dtype_type(obj) is not None or obj is complex or name == "complex":
                return True
            if isinstance(obj, _core.Kernel) and getattr(obj, "is_func", False) and Scalarizer(
                    gen, arrays).func_has_vectors(obj):
                return True
    return False


def scalarize(gen, fdef, arrays):
    """fdef rewritten on scalars (gen.local_types gains the component locals)."""
    return Scalarizer(gen, arrays).run(fdef)
