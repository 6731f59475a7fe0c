"""Debug mode's race detector: ``check_races=True`` for a kernel run as Python.

A compiled kernel with ``check_races=True`` runs the parallel loops the race
check warned of (and those ``tack.independent`` vouches for) with each access
to an array the loop writes recorded in shadow memory, and raises
``tack.RaceError`` at the first two iterations that touch one element, one of
them writing it (compiler/race_watch.c, runtime/races.c).  Debug mode
(``jit=False``, ``TACK_DISABLE_JIT=1``) is the same language, so it runs the
same detector: the iterations run one after another here, but the verdict
never depended on timing -- the compiled detector asks which *iterations*
met at an element, not which thread came first -- so it is the same verdict.

Which loops and accesses are watched is the compiler's answer, not a second
one: the kernel's checker (the compiler's front end, types and race check,
asked for each new signature) is made with check_races too, and its IR ends
with the loops and accesses race_watch.c instruments (``race loop`` and
``race site`` lines, `parse` below).  The kernel runs as a transformed copy
(tack._debug) whose top-level ``for`` loops go through `Detector.loop` and
whose subscripts, stores, augmented assignments and atomic calls -- in the
kernel and in the @tack.func functions it calls -- go through the detector
with a constant that says where they are written: the function, the line,
the array's name and the access as written.  The detector matches that to
the compiler's site on the same line (same array, same kind; the text when a
line has several), so each access is watched exactly when the compiled one
is, with the same kind and the same text in the message: ``a[k] += v`` that
the compiler made atomic is an atomic update here, ``if v > m[0]: m[0] = v``
(an atomic max) one atomic update, a load of an array the loop only reads is
not watched.  An access in a function is watched when the kernel's array it
reaches (the same NumPy view object the kernel holds) is one the loop
writes, as the compiled function's watched copy learns it from its caller.

Each watched array has a shadow: per element (its index, negative indices
wrapped), the element's first plain writer, two of its readers and two of its
atomic updaters, each as (iteration, site) -- the compiled shadow's five
words, claimed and looked at in the same order, so that for a run of the
compiled kernel on one thread both name the same pair.  The first conflict
raises ``tack.RaceError`` with the compiled message: the kernel, the array
and the element, both iterations by the loop's variables, each access's
file, line and text, and the loop.
"""

from __future__ import annotations

import copy
import operator
import re

from ._debug import _key

_LOOP = re.compile(r"^\s*race loop (\d+) line (\d+) vars (\S*) arrays ?(\S*)$")
_SITE = re.compile(r"^\s*race site (\d+) loop (-?\d+) (read|write|atomic) line (\d+) in (kernel|func) (\S+): (.*)$")
_KINDS = {"read": 0, "write": 1, "atomic": 2}
_VERBS = ("reads", "writes", "updates atomically")


def parse(ir):
    """The loops and sites of the IR's ``races:`` section: ({line: (index,
    vars, arrays)}, [(loop, kind, line, where, name, text)]), where is
    ("kernel" or "func", the function's name) and name the array as the
    text writes it."""
    loops, sites = {}, []
    if "\nraces:\n" not in ir:
        return loops, sites
    for line in ir.split("\nraces:\n", 1)[1].splitlines():
        m = _LOOP.match(line)
        if m:
            loops[int(m.group(2))] = (int(m.group(1)), tuple(m.group(3).split(",")),
                                      frozenset(a for a in m.group(4).split(",") if a))
            continue
        m = _SITE.match(line)
        if m:
            text = m.group(7)
            sites.append((int(m.group(2)), _KINDS[m.group(3)], int(m.group(4)), (m.group(5), m.group(6)),
                          text.split("[", 1)[0], text))
    return loops, sites


class _Loop:
    __slots__ = ("index", "line", "vars", "arrays")

    def __init__(self, index, line, vars, arrays):
        self.index, self.line, self.vars, self.arrays = index, line, vars, arrays


class Detector:
    """One call's race detector: the watched loops, the sites, the shadows
    of the loop running, and the kernel's arrays by object."""

    def __init__(self, kernel_name, kernel_file, facts, views):
        loops, sites = facts
        self.kernel_name = kernel_name
        self.kernel_file = kernel_file
        self.loops = {line: _Loop(i, line, v, a) for line, (i, v, a) in loops.items()}
        self.sites = sites
        # the kernel's arrays by the identity of the view the kernel (and every
        # function it hands one to) holds: a local array is none of them
        self.roots = {}
        for name, v in views.items():
            if hasattr(v, "__array_interface__") and id(v) not in self.roots:
                self.roots[id(v)] = name
        self.keep = list(views.values())  # the ids above stay theirs while the kernel runs
        self.cur = None  # the watched loop running, or None
        self.it = 0  # the iteration's number within it
        self.vals = ()
        self.seen = {}  # iteration number -> its variables' values, for the message
        self.shadow = {}
        self._resolved = {}

    # -- loops
    def loop(self, ctx, line, iterable):
        """A top-level loop of the kernel: watched when the compiler watches
        the loop at this line, else the iterable itself."""
        L = self.loops.get(line)
        if L is None:
            return iterable
        return self._run(L, iterable)

    def _run(self, L, iterable):
        self.cur, self.it, self.shadow, self.seen, self._resolved = L, 0, {}, {}, {}
        try:
            for v in iterable:
                self.it += 1
                self.vals = v
                yield v
        finally:
            self.cur, self.shadow, self.seen = None, {}, {}

    def _text(self, it):
        """Iteration it by its variables: "i=3" or "i=1, j=2"."""
        vals = self.seen[it]
        vs = tuple(vals) if type(vals) is tuple else (vals,)
        names = self.cur.vars
        if len(names) != len(vs):  # one name for a tuple of axes
            names = (names[0] if names else "index",) * len(vs)
        return ", ".join(f"{n}={int(v)}" for n, v in zip(names, vs))

    # -- sites
    def _resolve(self, site, kind):
        """The compiler's site for this access (kind 0 read, 1 write, 2
        atomic) in the loop running, as (kind, file, line, text), or None:
        not watched.  Asked once per site, kind and loop."""
        got = self._resolved.get(id(site))  # a site is a constant of its code: one object
        if got is None:
            got = self._resolved[id(site)] = [site, False, False, False]
        if got[kind + 1] is False:
            got[kind + 1] = self._match(site, kind)
        return got[kind + 1]

    def _match(self, site, kind):
        where, file, line, name, text = site
        cands = [s for s in self.sites if s[2] == line and s[3] == where and s[4] == name and
                 (s[0] == self.cur.index if where[0] == "kernel" else s[0] < 0)]
        pick = [s for s in cands if s[1] == kind]
        if not pick and kind != 2:  # a load or store the compiler made one atomic update (a running max)
            pick = [s for s in cands if s[1] == 2]
        if not pick:
            return None
        s = next((s for s in pick if s[5] == text), pick[0])
        return (s[1], file, line, s[5] + (f" in {where[1]}()" if where[0] == "func" else ""))

    # -- accesses
    def _root(self, a):
        """The kernel's array a is, when the loop running writes it, else None."""
        root = self.roots.get(id(a))
        return root if root is not None and root in self.cur.arrays else None

    def _record(self, site, kind, a, idx):
        """Record access `kind` of a[idx] at `site`; RaceError at a conflict."""
        root = self._root(a)
        if root is None:
            return
        s = self._resolve(site, kind)
        if s is None:
            return
        el = _element(a, idx)
        if el is None:
            return  # outside the array: the access itself raises (or, with checks=False, is not recorded)
        words = self.shadow.setdefault(root, {}).get(el)
        if words is None:
            words = self.shadow[root][el] = [None] * 5
        it = self.it
        if it not in self.seen:  # its variables, should a later iteration meet it
            self.seen[it] = self.vals
        me = (it, s)
        kind = s[0]
        if kind == 1:  # a write claims word 0, then looks at the readers and the updaters
            o = words[0]
            if o is None:
                words[0] = me
            elif o[0] != it:
                self._conflict(root, a, el, me, o)
            for j in range(1, 5):
                o = words[j]
                if o is not None and o[0] != it:
                    self._conflict(root, a, el, me, o)
            return
        f, g = (1, 3) if kind == 0 else (3, 1)
        for j in (f, f + 1):  # claim a word of its kind (or find its own iteration there)
            o = words[j]
            if o is not None and o[0] == it:
                break
            if o is None:
                words[j] = me
                break
        o = words[0]
        if o is not None and o[0] != it:
            self._conflict(root, a, el, me, o)
        for j in (g, g + 1):
            o = words[j]
            if o is not None and o[0] != it:
                self._conflict(root, a, el, me, o)

    def _conflict(self, root, a, el, mine, theirs):
        from ._kernels import RaceError

        (ia, sa), (ib, sb) = theirs, mine  # run in order: theirs is the earlier iteration
        L = self.cur
        element = ", ".join(str(k) for k in el)
        over = ", ".join(f"'{v}'" for v in L.vars)
        raise RaceError(
            f"race in kernel '{self.kernel_name}': iteration {self._text(ia)} {_VERBS[sa[0]]} "
            f"{root}[{element}] ({sa[1]}:{sa[2]}: {sa[3]}) and iteration {self._text(ib)} {_VERBS[sb[0]]} it "
            f"({sb[1]}:{sb[2]}: {sb[3]}). The iterations of the parallel loop over {over} "
            f"({self.kernel_file}:{L.line}) run at once, so two that touch one element, one of them writing "
            f"it, give a result that depends on timing. Write to distinct elements, combine with += / "
            f"tack.atomic_*, or read from one array and write another")

    # -- what the transformed kernel calls
    def load(self, ctx, site, a, idx):
        if self.cur is not None and type(a) is not tuple:  # not a.shape[k]
            self._record(site, 0, a, idx)
        return ctx.load(a, idx)

    def store(self, ctx, site, a, idx, v):
        if self.cur is not None:
            self._record(site, 1, a, idx)
        ctx.store(a, idx, v)

    def aug(self, ctx, site, op, a, idx, v, line):
        if self.cur is not None and self._root(a) is not None:
            if self._resolve(site, 2) is not None:
                self._record(site, 2, a, idx)  # a[k] += v the compiler made atomic
            else:
                self._record(site, 0, a, idx)  # a load and a store of one element
                self._record(site, 1, a, idx)
        ctx.aug(op, a, idx, v, line)

    def part(self, ctx, site, a, idx, update):
        """A component of element a[idx] set (`a[i].x = s`, `a[i][k] = s`) or, with `update`, updated
        (`a[i].x += s`): recorded as the compiled kernel's store of that component is, a write of the
        element (the shadow is per element), or for an update an atomic one where the compiler made it
        atomic, else a read and a write.  The transform then sets it (ctx.store_part & co)."""
        if self.cur is None or self._root(a) is None:
            return
        if update and self._resolve(site, 2) is not None:
            self._record(site, 2, a, idx)
            return
        if update:
            self._record(site, 0, a, idx)
        self._record(site, 1, a, idx)

    def call(self, ctx, site, f, *args, **kwargs):
        if self.cur is not None and len(args) >= 2 and _key(f) in _atomics():
            self._record(site, 2, args[0], args[1])
        return ctx.call(f, *args, **kwargs)


_ATOMICS = None


def _atomics():
    """The atomic intrinsics' objects (tack.atomic_add ...): each call of one
    is an atomic update of a[idx]."""
    global _ATOMICS
    if _ATOMICS is None:
        from . import _intrinsics as K

        _ATOMICS = frozenset(K._PYTHON[n] for n in K._PYTHON if n.startswith("atomic_"))
    return _ATOMICS


def _element(a, idx):
    """a[idx]'s element as a tuple of non-negative indices, or None when idx
    does not name one element inside a.  An array of vectors or matrices has
    its components as trailing axes here, which no index of the kernel's
    reaches (the compiler indexes every axis of an array of numbers): its
    element is named by the leading ones."""
    shape = getattr(a, "shape", None)
    if shape is None:
        return None
    idx = idx if type(idx) is tuple else (idx,)
    if len(idx) > len(shape):
        return None
    out = []
    for k, n in zip(idx, shape):
        try:
            k = operator.index(k)
        except TypeError:
            return None
        if k < 0:
            k += n
        if not 0 <= k < n:
            return None
        out.append(k)
    return tuple(out)


# ----------------------------------------------------------- the transform
def transform_class():
    """tack._debug's transform, with the accesses and top-level loops routed
    through the call's Detector (``__tack_ctx.races``): the copy of a kernel
    or @tack.func that a kernel with check_races runs."""
    import ast

    from . import _debug as D
    from ._debug_transform import parallel_loops
    from ._source import shown_file

    def races(name, *args):
        return ast.Call(func=ast.Attribute(value=D._c("races"), attr=name, ctx=ast.Load()),
                        args=[ast.Name(id=D._CTX, ctx=ast.Load())] + list(args), keywords=[])

    class RaceTransform(D._Transform):
        def __init__(self, is_kernel, line_shift, fn):
            super().__init__(is_kernel, line_shift)
            self.where = ("kernel" if is_kernel else "func", fn.__name__)
            self.file = shown_file(fn.__code__.co_filename)  # a notebook cell: its name, as compiled
            self.depth = 0

        def _site(self, node, value, index):
            """Where an access of array `value` (a name) is written: the
            function, the file, the line, the array and the access's text."""
            text = ast.unparse(ast.Subscript(value=value, slice=index, ctx=ast.Load()))
            return ast.Constant((self.where, self.file, node.lineno + self.line_shift, value.id, text))

        def visit_FunctionDef(self, node):
            loops = list(parallel_loops(node.body)) if self.is_kernel and self.depth == 0 else []
            self.depth += 1
            self.generic_visit(node)
            self.depth -= 1
            if loops:  # its top-level loops are the parallel ones (with those in top-level tuple loops)
                for st in loops:
                    st.iter = ast.copy_location(races("loop", ast.Constant(st.lineno + self.line_shift),
                                                      st.iter), st.iter)
            return node

        def visit_Subscript(self, node):
            if isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
                site = self._site(node, node.value, node.slice)
                self.generic_visit(node)
                return ast.copy_location(races("load", site, node.value, node.slice), node)
            return super().visit_Subscript(node)

        def _element_of_part(self, t):
            """The element a[i] (a subscript of a name) whose component the target t sets -- a[i].x,
            a[i].p.y, a[i][k] -- or None."""
            root = t
            if isinstance(t, ast.Attribute):
                while isinstance(root, ast.Attribute):
                    root = root.value
            elif isinstance(t, ast.Subscript):
                root = t.value
            ok = root is not t and isinstance(root, ast.Subscript) and isinstance(root.value, ast.Name)
            return root if ok else None

        def _part(self, node, t, update):
            """The detector's record of a component's write (update: its update) before the write."""
            el = self._element_of_part(t)
            if el is None:
                return []
            site = self._site(node, el.value, el.slice)
            idx = D._Transform.visit(self, copy.deepcopy(el.slice))
            return [ast.copy_location(ast.Expr(races("part", site, el.value, idx, ast.Constant(update))), node)]

        def _assign_to(self, target, value, node):
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                site = self._site(node, target.value, target.slice)
                self.generic_visit(target)
                return [ast.copy_location(ast.Expr(races("store", site, target.value, target.slice, value)), node)]
            return self._part(node, target, False) + super()._assign_to(target, value, node)

        def visit_AugAssign(self, node):
            if self._element_of_part(node.target) is not None:
                return self._part(node, node.target, True) + [super().visit_AugAssign(node)]
            t = node.target
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                site = self._site(node, t.value, t.slice)
                value = self.visit(node.value)
                self.generic_visit(t)
                return ast.copy_location(ast.Expr(races("aug", site, ast.Constant(D._AST_BIN[type(node.op)]),
                                                        t.value, t.slice, value,
                                                        ast.Constant(node.lineno + self.line_shift))), node)
            return super().visit_AugAssign(node)

        def visit_Call(self, node):
            a = node.args
            if len(a) >= 2 and isinstance(a[0], ast.Name) and not any(isinstance(x, ast.Starred) for x in a) and \
                    not (isinstance(node.func, ast.Name) and node.func.id in ("breakpoint", "print")):
                site = self._site(node, a[0], a[1])  # an atomic's array and index, should it be one
                self.generic_visit(node)
                call = races("call", site, node.func, *node.args)
                call.keywords = node.keywords
                return ast.copy_location(call, node)
            return super().visit_Call(node)

    return RaceTransform
