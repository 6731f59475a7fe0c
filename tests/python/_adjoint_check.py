"""An adjoint checked against central finite differences: the helpers the adjoint tests share.

test_autodiff_local.py (local arrays of floats, loops that carry values) and
test_autodiff_local_vec.py (local arrays of vectors, matrices and complex numbers) check every
gradient the same way: the kernel's adjoint, compiled and in debug mode (jit=False), must agree
with each other to rounding, and with central differences in f64 of the loss sum(seed * out),
element by element of each differentiated parameter.  An array of vectors is passed to the
kernel as a tack.array of its vector type made from its components ((n, 3) for vec3d), and its
gradient is read as NumPy holds it, components and all.  The other adjoint tests
(test_autodiff_blocks.py, test_autodiff_decomp.py) take their central differences from here too.
"""

import inspect

import numpy as np

import tack


def fd(f, args, which, eps=1e-6):
    """Central differences of f(*args) (a number) in args[which], element by element."""
    x = args[which]
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        down = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        up[which][idx] += eps
        down[which][idx] -= eps
        out[idx] = (f(*up) - f(*down)) / (2 * eps)
    return out


def check(kernel, args, diff, out, seed, types=None, rtol=1e-6, atol=1e-8):
    """kernel's adjoint (compiled and in debug mode, equal) against central differences of
    sum(seed * out) in each parameter named in `diff`; the compiled adjoint's gradients.  `args` are
    NumPy arrays (an array of vectors as its components, (n, 3)) and numbers; `types` gives the Tack
    dtype of each array of vectors."""
    names = list(inspect.signature(kernel.__wrapped__).parameters)
    types = types or {}

    def wrap(a):
        return [tack.array(v, types[p]) if p in types else v for p, v in zip(names, a)]

    debug = tack.kernel(kernel.__wrapped__, jit=False)
    got = []
    for k in (kernel, debug):
        grads = {p: np.zeros_like(args[names.index(p)]) for p in diff}  # components, as NumPy has them
        grads[out] = seed.copy()
        k.adjoint(*wrap(args), grads=grads)
        got.append(grads)
    for p in diff:
        np.testing.assert_allclose(got[1][p], got[0][p], rtol=1e-13, atol=1e-15, err_msg=p)
    i_out = names.index(out)

    def loss(*a):
        a = list(a)
        a[i_out] = np.zeros_like(a[i_out])
        w = wrap(a)
        kernel(*w)
        res = w[i_out].numpy() if isinstance(w[i_out], tack.Array) else w[i_out]
        return float(np.sum(seed * res))

    for p in diff:
        np.testing.assert_allclose(got[0][p], fd(loss, list(args), names.index(p)), rtol=rtol, atol=atol,
                                   err_msg=p)
    return got[0]
