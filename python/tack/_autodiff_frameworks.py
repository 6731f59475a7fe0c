"""A Tack kernel as a differentiable function of PyTorch or JAX (tack.torch_function, tack.jax_function).

A kernel writes its results into arrays it is given; a framework's function returns new values.
The wrappers here turn one into the other: the caller names the kernel's output parameters and
their shapes, the wrapper allocates them, passes the other parameters in order, and runs the
kernel forward; the framework's reverse pass runs the kernel's adjoint (tack._autodiff), seeded
with the outputs' gradients, and hands back the inputs' gradients.

PyTorch's tensors reach the kernel without a copy (a CPU tensor is a buffer the kernel borrows;
a GPU tensor goes through DLPack).  JAX's arrays are immutable and its functions traced, so the
JAX wrapper runs the kernel through ``jax.pure_callback`` on host copies (CPU only), inside a
``jax.custom_vjp``.  Float scalars are constants to both (no gradient): pass a value to
differentiate as an array.
"""

from __future__ import annotations

import inspect


def _plan(kernel, outputs):
    """(all parameter names, the output names in order, {output: shape or callable})."""
    fn = getattr(kernel, "py_func", None) or kernel.__wrapped__
    params = list(inspect.signature(fn).parameters)
    outs = dict(outputs)
    unknown = [o for o in outs if o not in params]
    if unknown or not outs:
        raise TypeError(f"{kernel.__qualname__}: outputs names its output parameters ({params}), not {unknown}")
    return params, [p for p in params if p in outs], outs


def _shape(spec, inputs):
    return tuple(spec(*inputs) if callable(spec) else spec)


def torch_function(kernel, outputs):
    """A PyTorch function running `kernel`: ``f = tack.torch_function(k, outputs={"y": shape})`` and
    ``y = f(*inputs)``, the inputs being k's other parameters in order.  A shape may be a callable of
    the inputs (``lambda x, s: x.shape``).  The outputs take the dtype and device of the first
    floating-point input tensor; one output is returned as a tensor, several as a tuple.  Its
    backward runs ``k.adjoint`` (docs/differentiation.md)."""
    import torch

    params, out_names, specs = _plan(kernel, outputs)
    in_names = [p for p in params if p not in specs]

    def assemble(inputs, outs):
        by_name = dict(zip(in_names, inputs))
        by_name.update(zip(out_names, outs))
        return [by_name[p] for p in params]

    class _Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            like = next((t for t in inputs if torch.is_tensor(t) and t.is_floating_point()), None)
            if like is None:
                raise TypeError(f"{kernel.__qualname__}: no floating-point tensor among the inputs")
            plain = [t.detach().contiguous() if torch.is_tensor(t) else t for t in inputs]
            outs = [torch.zeros(_shape(specs[o], plain), dtype=like.dtype, device=like.device) for o in out_names]
            kernel(*assemble(plain, outs))
            ctx.save_for_backward(*[t for t in plain if torch.is_tensor(t)], *outs)
            ctx.tack_plain = [None if torch.is_tensor(t) else t for t in plain]
            return outs[0] if len(outs) == 1 else tuple(outs)

        @staticmethod
        def backward(ctx, *grad_outs):
            saved = [t.detach() for t in ctx.saved_tensors]
            plain = [saved.pop(0) if t is None else t for t in ctx.tack_plain]
            outs = saved
            grads = {}
            for o, g, t in zip(out_names, grad_outs, outs):
                grads[o] = torch.zeros_like(t) if g is None else g.detach().contiguous().clone()
            result = []
            for p, t in zip(in_names, plain):
                if torch.is_tensor(t) and t.is_floating_point():
                    grads[p] = torch.zeros_like(t)
            kernel.adjoint(*assemble(plain, outs), grads=grads)
            for p, t in zip(in_names, plain):
                result.append(grads.get(p) if ctx.needs_input_grad[len(result)] else None)
            return tuple(result)

    def apply(*inputs):
        return _Function.apply(*inputs)

    apply.__name__ = apply.__qualname__ = f"{kernel.__name__}_torch"
    apply.__doc__ = f"{kernel.__qualname__} as a differentiable PyTorch function (tack.torch_function)."
    return apply


def jax_function(kernel, outputs):
    """A JAX function running `kernel` on the CPU, with a custom VJP that runs ``kernel.adjoint``:
    ``f = tack.jax_function(k, outputs={"y": shape})``, ``y = f(*inputs)`` as for
    :func:`torch_function`.  Inputs are JAX or NumPy arrays (float scalars are constants)."""
    import jax
    import numpy as np

    params, out_names, specs = _plan(kernel, outputs)
    in_names = [p for p in params if p not in specs]

    def assemble(inputs, outs):
        by_name = dict(zip(in_names, inputs))
        by_name.update(zip(out_names, outs))
        return [by_name[p] for p in params]

    def out_types(inputs):
        like = next(x for x in inputs if hasattr(x, "dtype") and np.ndim(x) > 0 and np.issubdtype(x.dtype, np.floating))
        return [jax.ShapeDtypeStruct(_shape(specs[o], inputs), like.dtype) for o in out_names]

    def host(x):  # a 0-d array (JAX traces scalars as arrays): the scalar the kernel takes
        x = np.array(x) if hasattr(x, "shape") else x
        return x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x

    def host_forward(*inputs):
        plain = [host(x) for x in inputs]
        types = out_types(plain)
        outs = [np.zeros(t.shape, t.dtype) for t in types]
        kernel(*assemble(plain, outs))
        return tuple(outs)

    import inspect

    # under jax.vmap, each element of the batch is one launch (JAX 0.4.34 and later name the rule)
    batched = {"vmap_method": "sequential"} if "vmap_method" in inspect.signature(jax.pure_callback).parameters \
        else {}

    def run(*inputs):
        return jax.pure_callback(host_forward, tuple(out_types(inputs)), *inputs, **batched)

    @jax.custom_vjp
    def f(*inputs):
        outs = run(*inputs)
        return outs[0] if len(outs) == 1 else outs

    def f_fwd(*inputs):
        outs = run(*inputs)
        return (outs[0] if len(outs) == 1 else outs), (inputs, outs)

    def f_bwd(res, g):
        inputs, outs = res
        gs = (g,) if len(out_names) == 1 else tuple(g)

        def host_backward(inputs, outs, gs):
            plain = [host(x) for x in inputs]
            out_vals = [np.array(o) for o in outs]
            grads = {o: np.array(gv, dtype=ov.dtype).copy() for o, gv, ov in zip(out_names, gs, out_vals)}
            for p, x in zip(in_names, plain):
                if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
                    grads[p] = np.zeros_like(x)
            kernel.adjoint(*assemble(plain, out_vals), grads=grads)
            return tuple(grads[p] if p in grads else
                         np.zeros(np.shape(x0), x0.dtype if hasattr(x0, "dtype") else np.result_type(x))
                         for p, x, x0 in zip(in_names, plain, inputs))

        types = tuple(jax.ShapeDtypeStruct(np.shape(x), x.dtype if hasattr(x, "dtype") else np.result_type(x))
                      for x in inputs)
        return jax.pure_callback(host_backward, types, inputs, outs, gs, **batched)

    f.defvjp(f_fwd, f_bwd)
    return f
