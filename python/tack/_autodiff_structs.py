"""Adjoints of kernels on structs: a struct launch differentiated through its leaves.

A kernel taking a struct array never reaches the compiler as such: tack._structs rewrites it into
its *struct build*, a kernel whose parameters are the struct's leaves (``p·pos``, ``p·vel``,
``p·mass`` ...), and calls that with views of the records' leaves, which share their bytes.  The
adjoint follows the same road, so nothing in the adjoint generator knows structs: the launch is
expanded into the build and its leaf views, the build is differentiated like any kernel on float
arrays, and the gradients are mapped between a struct array and its leaves.

- The gradient of a struct array is a struct array of the same type and shape: its float leaves
  (numbers, vectors, matrices of f32 or f64) hold the gradients of the same leaves; the others
  (integers, bools) are not differentiated and stay zero.  ``kernel.adjoint(p, ...,
  grads={"p": gp})`` accumulates into ``gp``'s float leaves; without one, into scratch arrays.
- A tape records the struct build's launch (the struct call is made through it), so each leaf view
  has its gradient there like any array (keyed by its address: the same struct array in two
  launches shares its gradients); ``tape.gradient(p)`` assembles them into a struct array, and
  ``tape.backward(grads=[(p, seed)])`` seeds every float leaf from the struct seed's.
- A struct passed by value is a list of scalars to its build: their gradients are not returned
  (a ``grads=`` entry for one is refused), as a float scalar's are not unless asked for by name.

docs/differentiation.md ("Structs") is the user's account.
"""

from __future__ import annotations

from . import _structs

SEP = "\u00b7"


def _float_leaf(leaf):
    return leaf.scalar().numpy.kind == "f" and leaf.dt.kind != "c"


def expand(kernel, args, kwargs):
    """(the struct build of the launch, its arguments, {struct array parameter: (struct class,
    [(leaf parameter name, leaf)]) }, {struct value parameter names}); None for a launch without
    structs."""
    if not _structs.needs_build(kernel, args, kwargs):
        return None
    fn, sig, values = _structs._signature(kernel, args, kwargs)
    built, expanded = _structs.build_for(kernel, args, kwargs)
    import inspect

    names = list(inspect.signature(fn).parameters)
    arrays, by_value = {}, {}
    for name, kind in zip(names, sig):
        if kind is None:
            continue
        if kind[0] == "array":
            lay = kind[1]
            arrays[name] = (lay.cls, [(f"{name}{SEP}{leaf.name.replace('.', SEP)}", leaf) for leaf in lay.leaves])
        else:  # a struct value, or a vector, matrix or quaternion by value (tack._vector_args)
            by_value[name] = kind[1].name if kind[0] == "vec" else None
    return built, tuple(expanded), arrays, by_value


def leaf_grads(arrays, by_value, grads, who):
    """grads= of a struct launch made grads= of its build: a struct array's gradient given as its
    float leaves' views."""
    out = {}
    for p, g in grads.items():
        if p in by_value and by_value[p] is not None:
            raise TypeError(f"{who}: '{p}' is a {by_value[p]} passed by value, a constant to the adjoint: its "
                            f"gradient is not returned (pass it in a one-element {by_value[p]} array, "
                            f"tack.array([v], tack.{by_value[p]}), to differentiate it)")
        if p in by_value:
            raise TypeError(f"{who}: '{p}' is a struct passed by value: its gradient is not returned (pass the "
                            f"struct in a one-element struct array to differentiate it)")
        if p not in arrays:
            out[p] = g
            continue
        cls, leaves = arrays[p]
        for name, leaf in leaves:
            if _float_leaf(leaf):
                out[name] = leaf_view(g, cls, leaf, f"{who}: the gradient given for '{p}'")
    return out


def leaf_view(g, cls, leaf, what):
    """The view of struct array (or record array) g's leaf, sharing its bytes."""
    np = _structs._np()
    if isinstance(g, _structs.StructArray):
        if g.dtype is not cls:
            raise TypeError(f"{what} holds {g.dtype.__name__} records, not {cls.__name__}")
        return _structs._leaf_of(g, leaf)
    if isinstance(g, np.ndarray) and g.dtype == cls.dtype:
        return _structs._leaf_view(g, leaf)
    raise TypeError(f"{what} is a {type(g).__name__}: a struct array's gradient is a struct array of "
                    f"{cls.__name__} (tack.zeros(shape, {cls.__name__}) or a record array of "
                    f"{cls.__name__}.dtype)")


def struct_of(v):
    """(struct class, its leaves) of a struct array or record array of a struct's dtype, else None."""
    kind = _structs._arg_kind(v)
    if kind is None or kind[0] != "array":
        return None
    return kind[1].cls, kind[1].leaves


def gradient_of(tape, p, cls, leaves):
    """p's gradient on `tape` as a struct array of its class and device (float leaves from the tape's
    leaf gradients, the other leaves zero), or None when the tape holds none of its leaves'.

    The records are assembled on the host and copied to p's device once: on a device a leaf of a
    struct array is a strided view of its bytes, which a whole-array copy cannot write."""
    np = _structs._np()
    rec, any_ = np.zeros(p.shape, cls.dtype), False
    for leaf in leaves:
        if not _float_leaf(leaf):
            continue
        g = tape.gradient(leaf_view(p, cls, leaf, "tape.gradient"))
        if g is None:
            continue
        any_ = True
        _structs._leaf_view(rec, leaf)[...] = host(g)
    if not any_:
        return None
    device = p.device if isinstance(p, _structs.StructArray) else "cpu"
    return _structs.array_of(rec, cls, device, False)


def host(v):
    """v's values as a NumPy array: a tack.Array (a strided device view too) copied to the host."""
    return v.numpy() if isinstance(v, _structs._core.Array) else _structs._np().asarray(v)
