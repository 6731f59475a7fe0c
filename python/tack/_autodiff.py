"""Reverse-mode differentiation: a kernel's adjoint, written as another kernel.

The adjoint of a kernel is generated here, in Python, as the tree of a new
Tack kernel, the way the struct rewrite (tack._structs_rewrite) makes a
struct build: the front end, every pass, every dialect and debug mode then
take it as they take any kernel, with no new C.  For a kernel

    for i in range(n):
        t = x[i] * s
        y[i] = sin(t)

the adjoint takes the kernel's parameters and, after them, one gradient per
float array (``x·grad``, ``y·grad``) and per float scalar (``s·grad``, a
one-element array), and runs the same parallel loops in reverse order, each
iteration in two sweeps:

- the forward sweep recomputes the iteration's values (nothing is stored
  between the forward kernel and its adjoint): every float expression is
  split into single-assignment temporaries (``t·1 = sin(t)``), a local about
  to be overwritten is saved first (``save·2 = t``), each ``if`` test kept
  in a local; array stores are left out, since the arrays hold them already;
- the reverse sweep walks the statements backwards: the adjoint of a local
  (``adj·t``, zero at the iteration's start) is handed to the operands of
  the expression that assigned it, the saved value put back; a store
  ``y[i] = e`` reads ``y·grad[i]``, zeroes it (the old value of ``y[i]`` no
  longer counts) and hands it on; a load ``x[k]`` adds to ``x·grad[k]``,
  which Tack makes atomic where iterations may share the element, by the
  race rules every kernel has, so an adjoint is never racy.

The derivatives of intrinsics come from the TK_DERIV rows of
intrinsics.def (tack._derivs, written by tools/gen_autodiff.py).  Types are
the compiler's: the IR of the forward call names every local's type, which
decides what is differentiated (floats) and what is not (integers, bools).

What cannot be differentiated right is refused with a CompileError at its
line, never differentiated wrong: a store into an integer array of a value
computed from floats, atomics other than add/sub, random draws, an array
read by a loop that it or a later loop overwrites (the adjoint recomputes
from the arrays as the kernel left them), and what is not supported yet:
transforms, local arrays of vectors, while/break/return and a continue other than
an early one (tack._autodiff_continue makes those else branches), values
computed outside the parallel loops from differentiated inputs.  Vectors, matrices, quaternions and complex
numbers reach the generator as their components (tack._autodiff_scalarize rewrites
the tree first), svd3/eig3/qr3 as one statement (tack._autodiff_decomp); structs
as their leaves (tack._autodiff_structs); collectives by tack._autodiff_blocks.
Serial loops whose locals are sums or the iteration's own are replayed
(``_Gen.serial``), loops that carry values replayed from their entry, and
local arrays saved element by element (tack._autodiff_local); @tack.func
calls are inlined (tack._autodiff_inline); tuple and chained assignments of names
are written one name at a time first (tack._autodiff_unpack); the nodes the adjoint is made of
are built by tack._autodiff_nodes; a
stencil's loop is written in gather form (tack._autodiff_gather).  tack._autodiff_run builds and
launches adjoints and holds the Tape (tack.Tape); docs/differentiation.md
is the user's chapter.
"""

from __future__ import annotations

import ast
import copy
import re

from . import _core
from . import _autodiff_blocks as _blocks
from . import _autodiff_decomp as _decomp
from . import _autodiff_inline as _inline
from . import _autodiff_local as _local
from ._autodiff_nodes import SEP, _as_load, _assign, _aug, _bin, _c, _cp, _loc, _neg, _nm
from ._derivs import DERIVS

_FLOATS = {"f32": "f32", "f64": "f64", "float (Python)": "f64"}
_INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "int (Python)", "bool (Python)")
_NO_DERIV = ("int", "bool", "len", "isnan", "isinf", "isfinite", "range", "ndrange", "seed_u64")


def _np():
    import numpy

    return numpy


# ------------------------------------------------------------------ the generator



def _select_of(e):
    """`a or b` as `a if a else b`, `a and b` as `b if a else a` (Python's values, and the type
    the language gives both: their operands' promoted type); more operands fold to the right."""
    first = e.values[0]
    rest = e.values[1] if len(e.values) == 2 else _loc(ast.BoolOp(op=e.op, values=e.values[1:]), e)
    if isinstance(e.op, ast.Or):
        return _loc(ast.IfExp(test=_cp(first), body=_cp(first), orelse=rest), e)
    return _loc(ast.IfExp(test=_cp(first), body=rest, orelse=_cp(first)), e)

class _Gen:
    """One kernel's adjoint for one signature (which parameters are float arrays and scalars, the
    types of its locals)."""

    def __init__(self, kernel, fn, fdef, base, params, local_types):
        self.kernel = kernel
        self.fn = fn
        self.fdef = fdef
        self.base = base
        self.params = params  # name -> ("farray", dtname) | ("array", None) | ("bad", what) | ("fscalar", dt) | ("other", None)
        self.local_types = local_types  # name -> type text of the IR
        self.save_reads = set()  # the locals a save reads (unbound_saves)
        self.inject = {}
        self.n = 0
        self.env = _inline.namespace(fn)
        from . import _kernels

        self.registry = _kernels._INTRINSICS
        self.temps = set()  # the forward sweep's float temporaries
        self.consts = set()  # values computed outside the parallel loops from no differentiated input
        self.loaded = {}  # array -> [(loop number, line)]
        self.modified = {}  # array -> [(loop number, line, node)]
        self.larrays = {}  # local array -> (its shape's node, element type, axes) (tack._autodiff_local)
        self.replaying = 0  # inside a serial loop replayed from its entry (tack._autodiff_local.replay)
        self.plain_only = False  # this loop's adjoint keeps the atomic form (no gather)

    # ---- errors and names

    def error(self, msg, node):
        from ._structs import _compile_error

        shown = getattr(self, "components", None)  # a vector's component local named as the vector
        if shown:
            msg = re.sub(r"'([^'\s]+)'", lambda m: f"'{shown[m.group(1)]}'" if m.group(1) in shown else m.group(0),
                         msg)

        return _compile_error(f"{self.fn.__qualname__} cannot be differentiated: {msg}", node, self.fn, self.base)

    def fresh(self, what):
        self.n += 1
        return f"{what}{SEP}{self.n}"

    def use(self, obj, hint):
        name = f"ad{SEP}{hint}"
        self.inject[name] = obj
        self.env[name] = obj  # an injected name resolves as the object it stands for
        return name

    def resolve(self, node):
        if isinstance(node, ast.Name):
            return self.env.get(node.id, None) if node.id not in self.params and node.id not in self.local_types \
                else None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def intrinsic(self, call):
        """(the intrinsic's name, the object) a call names, or (None, obj)."""
        obj = self.resolve(call.func)
        if obj is None:
            return None, None
        if isinstance(obj, type) and issubclass(obj, _np().generic):  # np.float64(x): the cast tack.f64(x)
            try:
                obj = _core._dtype(obj)
            except (TypeError, ValueError):
                pass
        try:
            name = self.registry.get(obj)
        except TypeError:
            name = None
        if name is not None:
            name = name.split(".", 1)[1] if name.startswith("numpy.") else name
        return name, obj

    # ---- what is differentiated

    def is_float_local(self, name):
        return name in self.local_types and self.local_types[name] in _FLOATS

    def check_local(self, name, node):
        t = self.local_types.get(name)
        if _local.kind(self, name) is not None:
            _local.check(self, name, node)
            return
        if t is not None and t not in _FLOATS and t not in _INTS:
            raise self.error(f"'{name}' is a {t} value, not differentiated yet "
                             f"(write the components as float locals)", node)

    def active(self, e):
        """Whether e's value is a float that depends on a differentiated input."""
        if isinstance(e, ast.Constant):
            return False
        if isinstance(e, ast.Name):
            if e.id in self.temps:
                return True
            if e.id in self.consts:
                return False
            p = self.params.get(e.id)
            if p is not None:
                return p[0] == "fscalar"
            self.check_local(e.id, e)
            return self.is_float_local(e.id)
        if isinstance(e, ast.Subscript):
            arr = e.value
            if isinstance(arr, ast.Name) and arr.id in self.params:
                self.loaded.setdefault(arr.id, []).append((self.loop_no, e))
                kind = self.params[arr.id]
                if kind[0] == "bad":
                    raise self.error(f"'{arr.id}' is an array of {kind[1]}: only f32 and f64 arrays are "
                                     f"differentiated so far", e)
                if kind[0] in ("farray", "array"):
                    if self.active(e.slice):
                        raise self.error("an index computed from float values", e)
                    return kind[0] == "farray"
            if isinstance(arr, ast.Name) and _local.kind(self, arr.id) is not None:
                _local.index_ok(self, e, e)
                return arr.id not in self.consts and _local.is_float(self, arr.id)
            if isinstance(arr, ast.Attribute) and arr.attr == "shape":
                return False
            raise self.error(f"{ast.unparse(e)}: only elements of the kernel's array parameters are "
                             f"differentiated", e)
        if isinstance(e, ast.BinOp):
            return self.active(e.left) or self.active(e.right)
        if isinstance(e, ast.UnaryOp):
            return False if isinstance(e.op, ast.Not) else self.active(e.operand)
        if isinstance(e, ast.Compare):
            for v in [e.left] + e.comparators:
                self.active(v)  # refusals inside
            return False
        if isinstance(e, ast.BoolOp):  # `a or b` is one of its operands, a float where they are
            return any([self.active(v) for v in e.values])
        if isinstance(e, ast.IfExp):
            self.active(e.test)
            return self.active(e.body) or self.active(e.orelse)
        if isinstance(e, ast.Attribute):
            if e.attr in ("shape", "ndim", "size"):
                return False
            if isinstance(e.value, ast.Name) and self.params.get(e.value.id, ("",))[0] == "other":
                return False  # a part of a constant parameter (a complex scalar's .real)
            if isinstance(e.value, ast.Name) and (e.value.id in self.params or e.value.id in self.local_types):
                raise self.error(f"{ast.unparse(e)}: components and parts (.x, .real ...) are not differentiated "
                                 f"yet", e)
            return False
        if isinstance(e, ast.Call):
            return self.active_call(e)
        if isinstance(e, ast.Tuple):
            act = [self.active(x) for x in e.elts]
            if any(act):
                raise self.error(f"{ast.unparse(e)}: tuples of float values are not differentiated yet", e)
            return False
        raise self.error(f"{type(e).__name__} expressions are not differentiated yet", e)

    def touches_float(self, e):
        """Whether any part of e is a differentiated value (int(x[i]) included)."""
        return any(isinstance(n, (ast.Name, ast.Subscript)) and not isinstance(getattr(n, "ctx", None), ast.Store)
                   and self.active(n) for n in ast.walk(e) if not (isinstance(n, ast.Name) and
                                                                  self.resolve(n) is not None))

    def active_call(self, e):
        name, obj = self.intrinsic(e)
        args_active = [self.active(a) for a in e.args]
        if e.keywords:
            raise self.error(f"{ast.unparse(e.func)}() with keywords is not differentiated yet", e)
        if name is not None and name.startswith("atomic_"):
            raise self.error(f"the value {name}() returns is not differentiable: use tack.{name} as a statement "
                             f"of its own", e)
        if name in _NO_DERIV:
            return False
        if name is not None and (name in DERIVS or name in _blocks.SUMS) or isinstance(obj, _decomp.Decomp):
            return any(args_active)
        if isinstance(obj, _core.DType):
            if obj.name in ("f32", "f64"):
                return any(args_active)
            if any(args_active) and obj.name not in _INTS:
                raise self.error(f"{ast.unparse(e.func)}(): a cast to {obj.name} is not differentiated yet", e)
            return False
        mod = getattr(obj, "__module__", "") or ""
        if mod.startswith("tack.random") or (name or "").startswith("random"):
            raise self.error(f"{ast.unparse(e.func)}(): random draws are not differentiated (the adjoint would "
                             f"draw again): draw the numbers into an array in a kernel of their own and pass it",
                             e)
        if isinstance(obj, _core.Kernel) and obj.is_func:
            ret = self.func_returns.get(obj.__name__, set())
            if ret & set(_FLOATS) and ret - set(_FLOATS):
                raise self.error(f"{obj.__name__}() returns a float in one call and {sorted(ret - set(_FLOATS))} "
                                 f"in another: not differentiated yet", e)
            return bool(ret & set(_FLOATS))
        if name is not None and name in ("print",):
            return False
        if not any(args_active):
            if name is None and obj is None:
                raise self.error(f"{ast.unparse(e.func)}(): not an intrinsic the adjoint knows", e)
            return False
        what = name or ast.unparse(e.func)
        raise self.error(f"{what}() has no derivative (no TK_DERIV row in intrinsics.def)", e)

    # ---- the forward sweep of an expression: single-assignment temporaries

    def flat(self, e, fwd, acts):
        """Emit e's recomputation into fwd (statements) and acts (the reverse sweep's records);
        return a simple node standing for its value."""
        if not self.active(e):
            return _cp(e)
        if isinstance(e, (ast.Name, ast.Subscript)):
            return _as_load(e)
        if isinstance(e, ast.BinOp):
            a = self.flat(e.left, fwd, acts)
            b = self.flat(e.right, fwd, acts)
            if isinstance(e.op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift, ast.MatMult)):
                raise self.error(f"the operator of {ast.unparse(e)} has no derivative", e)
            t = self.fresh("t")
            self.temps.add(t)
            fwd.append(_assign(t, _loc(ast.BinOp(left=_cp(a), op=e.op, right=_cp(b)), e), e))
            acts.append(("op", t, e.op, [a, b], e))
            return _nm(t, e)
        if isinstance(e, ast.UnaryOp):
            a = self.flat(e.operand, fwd, acts)
            if isinstance(e.op, ast.UAdd):
                return a
            t = self.fresh("t")
            self.temps.add(t)
            fwd.append(_assign(t, _neg(_cp(a), e), e))
            acts.append(("op", t, e.op, [a], e))
            return _nm(t, e)
        if isinstance(e, ast.BoolOp):  # its value is one of the operands: differentiated as the select it is
            return self.flat(_select_of(e), fwd, acts)
        if isinstance(e, ast.IfExp):
            c = self.fresh("c")
            fwd.append(_assign(c, _cp(e.test), e))
            t = self.fresh("t")
            self.temps.add(t)
            branches = []
            for part in (e.body, e.orelse):
                f2, a2 = [], []
                v = self.flat(part, f2, a2)
                f2.append(_assign(t, _cp(v), e))
                a2.append(("copy", t, v, e))
                branches.append((f2, a2))
            fwd.append(_loc(ast.If(test=_nm(c, e), body=branches[0][0], orelse=branches[1][0]), e))
            acts.append(("if", c, branches[0][1], branches[1][1], e))
            return _nm(t, e)
        if isinstance(e, ast.Call):
            name, obj = self.intrinsic(e)
            if isinstance(obj, _core.Kernel) and obj.is_func:
                return self.inline(e, obj, fwd, acts)
            if isinstance(obj, _core.DType) or name == "float":
                a = self.flat(e.args[0], fwd, acts)
                t = self.fresh("t")
                self.temps.add(t)
                fwd.append(_assign(t, _loc(ast.Call(func=_cp(e.func), args=[_cp(a)], keywords=[]), e), e))
                acts.append(("copy", t, a, e))
                return _nm(t, e)
            if name in _blocks.SUMS:  # block_sum, block_scan, warp_min ...: tack._autodiff_blocks
                return _blocks.flat(self, e, name, fwd, acts)
            if name in ("min", "max") and len(e.args) > 2:  # min(a, b, c) as min(min(a, b), c)
                inner = _loc(ast.Call(func=e.func, args=e.args[:-1], keywords=[]), e)
                e = _loc(ast.Call(func=e.func, args=[inner, e.args[-1]], keywords=[]), e)
            args = [self.flat(a, fwd, acts) for a in e.args]
            ds = DERIVS[name]
            if len(ds) != len(args):
                raise self.error(f"{name}() with {len(args)} arguments is not differentiated", e)
            t = self.fresh("t")
            self.temps.add(t)
            fwd.append(_assign(t, _loc(ast.Call(func=_cp(e.func), args=[_cp(a) for a in args], keywords=[]), e),
                               e))
            acts.append(("call", t, name, args, e))
            return _nm(t, e)
        raise self.error(f"{ast.unparse(e)} is not differentiated yet", e)

    # ---- @tack.func calls: inlined, their locals renamed per call (tack._autodiff_inline)

    def inline(self, call, fobj, fwd, acts):
        return _inline.inline(self, call, fobj, fwd, acts)

    # ---- the derivative expressions

    def deriv(self, text, args, r, node):
        tree = ast.parse(text, mode="eval").body

        class Sub(ast.NodeTransformer):
            def visit_Name(s, n):
                if n.id == "r":
                    return _nm(r, node)
                if re.fullmatch(r"x\d", n.id):
                    return _cp(args[int(n.id[1])])
                import math

                obj = getattr(_tack(), n.id, None) or getattr(math, n.id)
                return _nm(self.use(obj, n.id), node)

        out = Sub().visit(tree)
        for n in ast.walk(out):
            ast.copy_location(n, node)
        return out

    # ---- handing an adjoint to a simple value

    def give(self, v, g, out, node):
        """Add the adjoint g (an expression) to simple value v's adjoint."""
        if not self.active(v):
            return
        if isinstance(v, ast.Name):
            if v.id in self.tmp_adj:
                out.append(_aug(_nm(self.tmp_adj[v.id], node), g, node))
            elif v.id in self.temps:  # a temporary: its one use gives its adjoint
                a = self.fresh("g")
                self.tmp_adj[v.id] = a
                out.append(_assign(a, g, node))
            else:
                out.append(_aug(_nm(f"adj{SEP}{v.id}", node), g, node))
                self.adj_used.add(v.id)
            return
        if isinstance(v, ast.Subscript) and _local.kind(self, v.value.id) is not None:  # a local array's element
            self.adj_used.add(v.value.id)
            tgt = _loc(ast.Subscript(value=_nm(f"adj{SEP}{v.value.id}", node), slice=_as_load(v.slice),
                                     ctx=ast.Store()), node)
            out.append(_aug(tgt, g, node))
            return
        if isinstance(v, ast.Subscript):
            tgt = _loc(ast.Subscript(value=_nm(f"{v.value.id}{SEP}grad", node), slice=_as_load(v.slice),
                                     ctx=ast.Store()), node)
            st = _aug(tgt, g, node)
            # for the gather form (tack._autodiff_gather); None keeps the atomic form.  With local arrays
            # or replayed loops (plain_only) only the iteration's own element is taken (a plain add)
            off = self.offsets(v.slice)
            st.ad_site = (v.value.id, None if self.plain_only and (off is None or any(off)) else off)
            out.append(st)
            return
        raise self.error("internal: a value with no adjoint", node)

    def reverse(self, acts, out):
        """The reverse sweep of acts (in reverse order) into out."""
        for act in reversed(acts):
            kind, node = act[0], act[-1]
            if kind == "op":
                _, t, op, args, _n = act
                g = self.tmp_adj.get(t)
                if g is None:
                    continue
                G = _nm(g, node)
                if isinstance(op, ast.USub):
                    self.give(args[0], _neg(G, node), out, node)
                    continue
                a, b = args
                if isinstance(op, ast.Add):
                    self.give(a, G, out, node)
                    self.give(b, _cp(G), out, node)
                elif isinstance(op, ast.Sub):
                    self.give(a, G, out, node)
                    self.give(b, _neg(_cp(G), node), out, node)
                elif isinstance(op, ast.Mult):
                    self.give(a, _bin(G, ast.Mult(), _cp(b), node), out, node)
                    self.give(b, _bin(_cp(G), ast.Mult(), _cp(a), node), out, node)
                elif isinstance(op, ast.Div):
                    self.give(a, _bin(G, ast.Div(), _cp(b), node), out, node)
                    self.give(b, _neg(_bin(_bin(_cp(G), ast.Mult(), _nm(t, node), node), ast.Div(), _cp(b), node),
                                      node), out, node)
                elif isinstance(op, ast.Pow):
                    da, db = DERIVS["pow"]
                    self.give(a, _bin(G, ast.Mult(), self.deriv(da, args, t, node), node), out, node)
                    if self.active(b):
                        self.give(b, _bin(_cp(G), ast.Mult(), self.deriv(db, args, t, node), node), out, node)
                elif isinstance(op, ast.Mod):  # Python's: a - floor(a / b) * b
                    self.give(a, G, out, node)
                    if self.active(b):
                        q = self.deriv("floor(x0 / x1)", args, t, node)
                        self.give(b, _neg(_bin(_cp(G), ast.Mult(), q, node), node), out, node)
                elif isinstance(op, ast.FloorDiv):
                    pass  # piecewise constant
                else:
                    raise self.error(f"the operator of {ast.unparse(node)} has no derivative", node)
            elif kind == "call":
                _, t, name, args, _n = act
                g = self.tmp_adj.get(t)
                if g is None:
                    continue
                for k, (a, d) in enumerate(zip(args, DERIVS[name])):
                    if self.active(a) and d != "0.0":
                        self.give(a, _bin(_nm(g, node), ast.Mult(), self.deriv(d, args, t, node), node), out,
                                  node)
            elif kind == "copy":
                _, t, v, _n = act
                g = self.tmp_adj.get(t)
                if g is not None:
                    self.give(v, _nm(g, node), out, node)
            elif kind == "if":
                _, c, then_acts, else_acts, _n = act
                b1, b2 = [], []
                self.reverse(then_acts, b1)
                self.reverse(else_acts, b2)
                out.append(_loc(ast.If(test=_nm(c, node), body=b1 or [_loc(ast.Pass(), node)],
                                       orelse=b2), node))
            elif kind == "local":  # v = value (a float local)
                _, name, v, save, _n = act
                g = self.fresh("g")
                adj = f"adj{SEP}{name}"
                self.adj_used.add(name)
                out.append(_assign(g, _nm(adj, node), node))
                out.append(_assign(adj, self.zero(name, node), node))
                if save is not None:
                    out.append(_assign(name, _nm(save, node), node))
                self.give(v, _nm(g, node), out, node)
            elif kind == "sum":  # v += value in a serial loop: the sum's adjoint, unchanged
                _, name, v, sign, _n = act
                self.adj_used.add(name)
                g = _nm(f"adj{SEP}{name}", node)
                self.give(v, g if sign > 0 else _neg(g, node), out, node)
            elif kind == "serial":  # the loop again: each iteration recomputed, then its adjoint
                _, loop_node, f1, a1, own, _n = act
                body = copy.deepcopy(f1)
                for name in own:
                    self.adj_used.add(name)
                    body.append(_assign(f"adj{SEP}{name}", self.zero(name, node), node))
                self.reverse(a1, body)
                loop = copy.copy(loop_node)
                loop.body = body or [_loc(ast.Pass(), node)]
                out.append(loop)
            elif kind == "restore":  # a non-float local overwritten: put its value back
                _, name, save, _n = act
                out.append(_assign(name, _nm(save, node), node))
            elif kind == "store":  # arr[idx] = value
                _, arr, idx, v, _n = act
                if self.params[arr][0] != "farray":
                    continue
                g = self.fresh("g")
                cell = _loc(ast.Subscript(value=_nm(f"{arr}{SEP}grad", node), slice=_cp(idx), ctx=ast.Load()), node)
                out.append(_assign(g, cell, node))
                st = _cp(cell)
                st.ctx = ast.Store()
                out.append(_loc(ast.Assign(targets=[st], value=_c(0.0, node)), node))
                self.give(v, _nm(g, node), out, node)
            elif kind in ("decomp", "collective"):  # svd3 ... by closed forms, block_sum ... by collectives
                (_decomp if kind == "decomp" else _blocks).reverse(self, act, out)
            elif _local.reverse(self, act, out):  # local arrays, replayed loops
                pass
            elif kind == "accum":  # arr[idx] += value (or -=, atomic_add, atomic_sub)
                _, arr, idx, v, sign, _n = act
                if self.params[arr][0] != "farray":
                    continue
                cell = _loc(ast.Subscript(value=_nm(f"{arr}{SEP}grad", node), slice=_cp(idx), ctx=ast.Load()), node)
                self.give(v, cell if sign > 0 else _neg(cell, node), out, node)

    def unbound_saves(self, s, assigned):
        """A save reads the value the local had (``save·2 = t``), which an iteration that skipped the
        local's assignment does not have: such a read would raise UnboundLocalError in the adjoint
        (src/compiler/lower/unbound.c) where the forward read nothing.  The iteration's own locals
        that saves read start at zero instead; the forward's reads of them are its own, and the
        forward kernel raised there first."""
        out = []
        for name in sorted(self.save_reads):
            if name in self.top_names or name in self.params or name in self.larrays or name not in self.local_types:
                continue
            t = self.local_types[name]
            if t in _FLOATS:
                value = self.zero(name, s)
            elif t in ("int (Python)", "bool (Python)"):
                value = _c(t == "int (Python)" and 0 or False, s)
            elif hasattr(_core, t):
                value = _loc(ast.Call(func=_nm(self.use(getattr(_core, t), t), s), args=[_c(0, s)], keywords=[]), s)
            else:
                continue
            out.append(_assign(name, value, s))
        return out

    def zero(self, name, node):
        if name in self.larrays:
            return _local.zeros(self, name, node)
        t = self.local_types[name] if name in self.local_types else self.params[name][1]
        if t == "float (Python)":  # a weak float: the widest float array's type, else the default float
            wide = [k[1] for k in self.params.values() if k[0] == "farray"]
            t = "f64" if "f64" in wide else "f32" if wide else self.kernel.default_float.name
        t = _FLOATS[t]
        return _loc(ast.Call(func=_nm(self.use(getattr(_core, t), t), node), args=[_c(0.0, node)], keywords=[]),
                    node)

    # ---- statements of a parallel loop's body

    def body(self, stmts, fwd, acts, assigned):
        for s in stmts:
            self.stmt(s, fwd, acts, assigned)

    def stmt(self, s, fwd, acts, assigned):
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return
            if isinstance(s.value, ast.Call):
                name, obj = self.intrinsic(s.value)
                if name in ("atomic_add", "atomic_sub"):
                    arr, idx, val = s.value.args
                    self.store_target(arr, s)
                    self.accum(arr.id, idx, val, 1 if name == "atomic_add" else -1, fwd, acts, s)
                    return
                if name is not None and name.startswith("atomic_"):
                    raise self.error(f"tack.{name} is not differentiable (only atomic_add and atomic_sub are)", s)
                if name == "print":
                    return
                if isinstance(obj, _core.Kernel) and obj.is_func:
                    self.inline(s.value, obj, fwd, acts)
                    return
            raise self.error(f"the statement {ast.unparse(s)} is not differentiated yet", s)
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Assert):  # a check, no value: the forward sweep makes it again
            self.active(s.test)  # the refusals inside
            fwd.append(_cp(s))
            return
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if len(targets) != 1 or s.value is None:
                raise self.error("chained assignments are not differentiated yet", s)
            tgt = targets[0]
            if isinstance(tgt, ast.Name) and _local.kind(self, tgt.id) is not None:
                _local.create(self, tgt.id, s.value, fwd, acts, assigned, s)
                return
            if isinstance(tgt, ast.Name):
                self.local(tgt.id, s.value, fwd, acts, assigned, s)
                return
            if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) and \
                    _local.kind(self, tgt.value.id) is not None:
                _local.store(self, tgt, s.value, fwd, acts, s)
                return
            if isinstance(tgt, ast.Subscript):
                self.store_target(tgt.value, s)
                arr = tgt.value.id
                kind = self.params[arr][0]
                if self.active(tgt.slice):
                    raise self.error("an index computed from float values", s)
                if kind == "bad":
                    raise self.error(f"'{arr}' is an array of {self.params[arr][1]}: only f32 and f64 arrays are "
                                     f"differentiated so far", s)
                if kind != "farray" and self.touches_float(s.value):
                    raise self.error(f"'{arr}' is an integer array: an integer output is not differentiable "
                                     f"(store it in a float array, or compute it from integers only)", s)
                v = self.flat(s.value, fwd, acts)
                self.modified.setdefault(arr, []).append((self.loop_no, s))
                acts.append(("store", arr, _as_load(tgt.slice), v, s))
                return
            if isinstance(tgt, ast.Tuple) and _decomp.marker(self, s.value) is not None:  # U, s, V = svd3(m)
                _decomp.forward(self, s, fwd, acts, assigned)
                return
            if isinstance(tgt, ast.Tuple) and isinstance(s.value, ast.Call):  # q, r = f(x): a func's values
                _name, obj = self.intrinsic(s.value)
                if isinstance(obj, _core.Kernel) and obj.is_func and "tuple" in self.func_returns.get(obj.__name__, ()):
                    outs = self.inline(s.value, obj, fwd, acts)  # every value computed, then assigned in order
                    if not isinstance(outs, list) or len(outs) != len(tgt.elts):
                        raise self.error(f"{obj.__name__}() returns its values by more than one return: not "
                                         f"differentiated yet", s)
                    for t, v in zip(tgt.elts, outs):
                        self.stmt(_loc(ast.Assign(targets=[_cp(t)], value=v), s), fwd, acts, assigned)
                    return
            if isinstance(tgt, ast.Tuple) and not self.active(s.value):
                for e in tgt.elts:
                    if not isinstance(e, ast.Name):
                        raise self.error("unpacking into elements is not differentiated yet", s)
                    self.save(e.id, fwd, acts, assigned, s)
                fwd.append(_cp(s))
                return
            raise self.error(f"the assignment {ast.unparse(s)} is not differentiated yet", s)
        if isinstance(s, ast.AugAssign):
            tgt = s.target
            if isinstance(tgt, ast.Name) and tgt.id in self.accums:  # a serial loop's sum: s += e
                v = self.flat(s.value, fwd, acts)
                fwd.append(_loc(ast.AugAssign(target=_nm(tgt.id, s, True), op=s.op, value=_cp(v)), s))
                if self.is_float_local(tgt.id):
                    acts.append(("sum", tgt.id, v, 1 if isinstance(s.op, ast.Add) else -1, s))
                return
            if isinstance(tgt, ast.Name):
                value = _loc(ast.BinOp(left=_nm(tgt.id, s), op=s.op, right=s.value), s)
                self.local(tgt.id, value, fwd, acts, assigned, s)
                return
            if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) and \
                    _local.kind(self, tgt.value.id) is not None:  # t[k] += e: t[k] = t[k] + e
                value = _loc(ast.BinOp(left=_as_load(tgt), op=s.op, right=s.value), s)
                _local.store(self, tgt, value, fwd, acts, s)
                return
            if isinstance(tgt, ast.Subscript):
                self.store_target(tgt.value, s)
                if not isinstance(s.op, (ast.Add, ast.Sub)):
                    raise self.error(f"'{ast.unparse(tgt)} {type(s.op).__name__}=' overwrites a value the adjoint "
                                     f"needs: only += and -= of array elements are differentiated (write "
                                     f"the product into another array)", s)
                self.accum(tgt.value.id, tgt.slice, s.value, 1 if isinstance(s.op, ast.Add) else -1, fwd, acts, s)
                return
        if isinstance(s, ast.If):
            self.active(s.test)
            c = self.fresh("c")
            fwd.append(_assign(c, _cp(s.test), s))
            f1, a1, f2, a2 = [], [], [], []
            s1, s2 = set(assigned), set(assigned)
            self.body(s.body, f1, a1, s1)
            self.body(s.orelse, f2, a2, s2)
            assigned |= s1 | s2
            fwd.append(_loc(ast.If(test=_nm(c, s), body=f1 or [_loc(ast.Pass(), s)], orelse=f2), s))
            acts.append(("if", c, a1, a2, s))
            return
        if isinstance(s, ast.For):
            self.serial(s, fwd, acts, assigned)
            return
        if isinstance(s, ast.While):
            raise self.error("while loops are not differentiated yet (write a for loop over a range)", s)
        what = {ast.Return: "return", ast.Break: "break", ast.Continue: "continue"}.get(type(s), type(s).__name__)
        raise self.error(f"'{what}' is not differentiated yet", s)

    # ---- serial loops inside a parallel loop: replayed, in the reverse sweep, iteration by iteration

    def serial(self, s, fwd, acts, assigned):
        """A serial loop.  When its locals are sums (changed only by `v += e` / `v -= e`, read by
        nothing else in the loop) or the iteration's own (assigned before they are read in every
        iteration and not used after the loop), and it writes no array element other than by += and
        -= into array parameters, the iterations' adjoints are independent: the reverse sweep runs the
        loop again, recomputing each iteration's values and taking its adjoint, in any order, and
        saves nothing.  Any other loop carries values between iterations and is replayed from its
        entry, iteration by iteration, backwards (tack._autodiff_local.replay)."""
        if s.orelse:
            raise self.error("a for loop's else is not differentiated yet", s)
        if not isinstance(s.target, ast.Name):
            raise self.error("a serial loop over several variables is not differentiated yet", s)
        stores = {}  # local -> kinds of assignment
        carried = bool(_local.modified(self, s))
        for n in ast.walk(s):
            if n is s:
                continue
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                stores.setdefault(n.target.id, set()).add(
                    "sum" if isinstance(n.op, (ast.Add, ast.Sub)) else "other")
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    for m in ast.walk(t):
                        if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store):
                            stores.setdefault(m.id, set()).add("set")
                    if isinstance(t, ast.Subscript):
                        carried = True  # a store: the reverse must meet the iterations last first
            elif isinstance(n, ast.For) and isinstance(n.target, ast.Name):
                stores.setdefault(n.target.id, set()).add("loop")
        sums = {v for v, k in stores.items() if k == {"sum"}}
        sum_targets = {id(n.target) for n in ast.walk(s) if isinstance(n, ast.AugAssign)}
        for n in ast.walk(s):  # a sum read in the loop (by its own += or anything else) carries its value
            if isinstance(n, ast.Name) and n.id in sums and isinstance(n.ctx, ast.Load) and id(n) not in sum_targets:
                carried = True
        own = set(stores) - sums - {s.target.id}
        outside = self.reads_outside(s)
        for v in sorted(own):
            if "loop" in stores[v]:
                continue
            if v in assigned or v in outside or _local.first_use(s.body, v) != "set" or _local.kind(self, v):
                carried = True
        if carried:
            _local.replay(self, s, fwd, acts, assigned, stores)
            return
        for v in sorted(sums & assigned):  # the sums' values before the loop, put back after its adjoint
            sv = self.fresh("save")
            fwd.append(_assign(sv, _nm(v, s), s))
            acts.append(("restore", v, sv, s))
        self.accums = self.accums | sums
        f1, a1 = [], []
        inner = set(assigned) | {s.target.id}
        self.body(s.body, f1, a1, inner)
        self.accums = self.accums - sums
        assigned |= set(stores)
        loop = copy.copy(s)
        loop.body = f1 or [_loc(ast.Pass(), s)]
        fwd.append(loop)
        acts.append(("serial", s, f1, a1, sorted(v for v in own if self.is_float_local(v)), s))

    def reads_outside(self, s):
        counts = {}
        for n in ast.walk(_loc(ast.Module(body=self.par_body, type_ignores=[]), None)):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] -= 1
        return {k for k, c in counts.items() if c > 0}

    def store_target(self, arr, s):
        if not (isinstance(arr, ast.Name) and arr.id in self.params and
                self.params[arr.id][0] in ("farray", "array", "bad")):
            raise self.error(f"{ast.unparse(s)}: only the kernel's array parameters are written in a "
                             f"differentiated kernel", s)

    def accum(self, arr, idx, value, sign, fwd, acts, s):
        kind = self.params[arr][0]
        if kind == "bad":
            raise self.error(f"'{arr}' is an array of {self.params[arr][1]}: only f32 and f64 arrays are "
                             f"differentiated so far", s)
        if kind != "farray" and self.touches_float(value):
            raise self.error(f"'{arr}' is an integer array: an integer output is not differentiable", s)
        if self.active(idx):
            raise self.error("an index computed from float values", s)
        v = self.flat(value, fwd, acts)
        self.modified.setdefault(arr, []).append((self.loop_no, s))
        acts.append(("accum", arr, _as_load(idx), v, sign, s))

    def save(self, name, fwd, acts, assigned, s):
        if name in self.consts:
            raise self.error(f"'{name}' is assigned outside the parallel loops and again in one: not differentiated "
                             f"yet (give the loop's value a name of its own)", s)
        if name in self.params:
            raise self.error(f"assigning the parameter '{name}' is not differentiated yet: give the value a "
                             f"name of its own", s)
        if name in assigned:
            sv = self.fresh("save")
            self.save_reads.add(name)
            fwd.append(_assign(sv, _nm(name, s), s))
            if not self.is_float_local(name):
                acts.append(("restore", name, sv, s))
            assigned.add(name)
            return sv
        assigned.add(name)
        return None

    def local(self, name, value, fwd, acts, assigned, s):
        self.check_local(name, s)
        if name not in self.local_types and self.touches_float(value):
            raise self.error(f"the type of '{name}' is unknown to the adjoint (a @tack.func's local no call "
                             f"typed): not differentiated", s)
        if not self.is_float_local(name) and self.active(value):
            raise self.error(f"'{name}' is {self.local_types.get(name)}: a float value made integer is not "
                             f"differentiable", s)
        v = self.flat(value, fwd, acts)
        sv = self.save(name, fwd, acts, assigned, s)
        fwd.append(_loc(ast.Assign(targets=[_nm(name, s, True)], value=_cp(v)), s))
        if self.is_float_local(name):
            acts.append(("local", name, v, sv, s))

    # ---- the kernel

    def build(self):
        fdef = self.fdef
        top, loops = [], []
        self.loop_no = 0
        for s in fdef.body:
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue
            if isinstance(s, ast.For):
                if s.orelse:
                    raise self.error("a for loop's else is not differentiated yet", s)
                self.loop_no += 1
                loops.append(self.loop(s))  # a list: the loop's adjoint, or its gather and own passes
                continue
            if isinstance(s, ast.Pass):
                continue
            if isinstance(s, ast.Assert):  # a check of the arguments: made again before the loops' adjoints
                self.active(s.test)
                top.append(_cp(s))
                continue
            if isinstance(s, (ast.Assign, ast.AugAssign)) and _local.top_store(self, s):
                top.append(_cp(s))  # an element of a local array made here, from constants: a constant
                continue
            if isinstance(s, (ast.Assign, ast.AnnAssign)) and not self.active(s.value):
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                if any(n in self.top_names for n in names) or not all(
                        isinstance(n, (ast.Name, ast.Tuple)) for n in targets):
                    raise self.error("a value assigned twice outside the parallel loops is not differentiated yet",
                                     s)
                self.top_names.update(names)
                self.consts.update(names)  # no differentiated input reaches them: constants to the adjoint
                top.append(_cp(s))
                continue
            raise self.error("outside the parallel loops, a differentiated kernel may only compute values no "
                             "differentiated input reaches (sizes, constants) so far: move this into the parallel "
                             "loop", s)
        # an array read by a loop that it or a later loop overwrites: its values are gone when the
        # adjoint recomputes
        for arr, reads in self.loaded.items():
            for loop_no, rnode in reads:
                for mloop, mnode in self.modified.get(arr, ()):
                    if mloop >= loop_no:
                        raise self.error(f"'{arr}' is read (line {rnode.lineno + self.base}) and overwritten "
                                         f"(here) by the same or a later loop, and the adjoint recomputes from the "
                                         f"values the kernel leaves: write the new values to another array", mnode)
        new = copy.copy(fdef)
        new.args = copy.copy(fdef.args)
        grads = [p for p, k in self.params.items() if k[0] in ("farray", "fscalar")]
        new.args.args = list(fdef.args.args) + [_loc(ast.arg(arg=f"{p}{SEP}grad"), fdef) for p in grads]
        new.args.defaults = []
        new.args.kw_defaults = []
        new.body = top + [lp for passes in reversed(loops) for lp in passes] or [_loc(ast.Pass(), fdef)]
        new.decorator_list = []
        new.returns = None
        new.name = fdef.name
        ast.fix_missing_locations(new)
        return new, grads

    def loop(self, s):
        tgt = s.target
        names = [tgt] if isinstance(tgt, ast.Name) else list(tgt.elts) if isinstance(tgt, ast.Tuple) else []
        self.loop_vars = [n.id for n in names] if names and all(isinstance(n, ast.Name) for n in names) else None
        self.par_body = s.body
        self.plain_only = False
        self.accums = set()
        self.tmp_adj = {}
        self.adj_used = set()
        self.save_reads = set()
        fwd, acts, rev = [], [], []
        assigned = set(self.top_names)
        self.body(s.body, fwd, acts, assigned)
        fwd[:0] = self.unbound_saves(s, assigned)
        self.reverse(acts, rev)
        init = []
        for name in sorted(self.adj_used):
            init.append(_assign(f"adj{SEP}{name}", self.zero(name, s), s))
        flush = []
        for name in sorted(self.adj_used):
            if name in self.params:  # a float scalar: its gradient, one element
                cell = _loc(ast.Subscript(value=_nm(f"{name}{SEP}grad", s), slice=_c(0, s), ctx=ast.Store()), s)
                flush.append(_aug(cell, _nm(f"adj{SEP}{name}", s), s))
        out = copy.copy(s)
        out.body = fwd + init + rev + flush or [_loc(ast.Pass(), s)]
        from ._autodiff_gather import gather_passes

        return gather_passes(self, s, out, fwd, init, rev, flush)

    def offsets(self, idx):
        """The constant offsets of an index from the parallel loop's variables, in order, or None."""
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        vs = self.loop_vars
        if vs is None or len(elts) != len(vs):
            return None
        out = []
        for e, v in zip(elts, vs):
            if isinstance(e, ast.Name) and e.id == v:
                out.append(0)
            elif (isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)) and isinstance(e.left, ast.Name)
                  and e.left.id == v and isinstance(e.right, ast.Constant) and type(e.right.value) is int):
                out.append(e.right.value if isinstance(e.op, ast.Add) else -e.right.value)
            else:
                return None
        return tuple(out)


def _tack():
    import tack

    return tack
