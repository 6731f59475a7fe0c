"""Bounds checks of indices written through locals (src/compiler/passes/checks.c).

`i = i0 + 1; A[i + 1, j, k]` is analysed as `A[i0 + 2, ...]`: its checks are
hoisted out of the loops as if the index were written inline (a 3-D stencil
ran 6-8x slower than the inline one), the negative-index wrap goes where the
index cannot be negative, and an index that is out of bounds still raises
IndexError.
"""
import numpy as np
import pytest

import tack


@tack.kernel
def stencil_locals(A, B):
    for i0 in range(A.shape[0] - 2):
        for j0 in range(A.shape[1] - 2):
            for k0 in range(A.shape[2] - 2):
                i = i0 + 1
                j = j0 + 1
                k = k0 + 1
                B[i, j, k] = (A[i + 1, j, k] + A[i - 1, j, k] + A[i, j + 1, k] + A[i, j - 1, k]
                              + A[i, j, k + 1] + A[i, j, k - 1] - 6.0 * A[i, j, k])


@tack.kernel
def stencil_too_far(A, B):
    for i0 in range(A.shape[0] - 2):
        for j0 in range(A.shape[1] - 2):
            for k0 in range(A.shape[2] - 1):  # one too many: k + 1 reaches the extent
                i = i0 + 1
                j = j0 + 1
                k = k0 + 1
                B[i, j, k0] = A[i, j, k + 1] + A[i, j - 1, k]


@tack.kernel
def shift_back(a, out):
    for i0 in range(a.shape[0]):
        i = i0 - 1
        out[i0] = a[i]  # a[-1] at i0 = 0, as in Python


@tack.kernel
def defined_after_use(a, out):
    for i0 in range(out.shape[0]):
        w = 0
        for k0 in range(out.shape[1]):
            if k0 > 0:
                out[i0, k0] = a[w]  # w of the previous k0: k0 + 4
            w = k0 + 5


def _loop_body(ir, header):
    """The lines of the IR dump inside the loop whose header starts with `header`."""
    lines = ir.splitlines()
    for n, line in enumerate(lines):
        if line.lstrip().startswith(header):
            depth = len(line) - len(line.lstrip())
            body = []
            for rest in lines[n + 1:]:
                if len(rest) - len(rest.lstrip()) <= depth:
                    break
                body.append(rest)
            return body
    raise AssertionError(f"no loop {header!r} in\n{ir}")


def _reference(A):
    B = np.zeros_like(A)
    c = A[1:-1, 1:-1, 1:-1]
    B[1:-1, 1:-1, 1:-1] = (A[2:, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1] + A[1:-1, 2:, 1:-1] + A[1:-1, :-2, 1:-1]
                           + A[1:-1, 1:-1, 2:] + A[1:-1, 1:-1, :-2] - 6.0 * c)
    return B


@pytest.mark.optimized_source
def test_stencil_checks_leave_the_inner_loop():
    A = np.random.default_rng(0).random((9, 10, 11))
    body = _loop_body(stencil_locals.ir(A, np.zeros_like(A)), "for k0")
    assert body and not [line for line in body if "check." in line], "\n".join(body)
    assert not [line for line in body if "wrap" in line], "\n".join(body)


@pytest.mark.parametrize("shape", [(3, 3, 3), (9, 10, 11), (20, 3, 17)])
def test_stencil_matches_numpy(shape):
    A = np.random.default_rng(1).random(shape)
    B = np.zeros_like(A)
    stencil_locals(A, B)
    np.testing.assert_allclose(B, _reference(A), rtol=1e-12, atol=1e-12)


def test_out_of_bounds_through_a_local_raises():
    A = np.random.default_rng(2).random((5, 6, 7))
    B = np.zeros_like(A)
    with pytest.raises(IndexError):
        stencil_too_far(A, B)


def test_negative_index_through_a_local_still_wraps():
    a = np.arange(10.0)
    out = np.zeros(10)
    shift_back(a, out)
    np.testing.assert_array_equal(out, np.roll(a, 1))
    assert "wrap" in shift_back.ir(a, out)  # kept: the index may be negative


def test_a_use_before_the_definition_is_not_the_definition():
    a = np.arange(16.0)
    out = np.zeros((3, 12))
    defined_after_use(a, out)  # w + 1 would reach 17 > 16 if read as k0 + 5: no false IndexError
    ref = np.zeros((3, 12))
    ref[:, 1:] = a[np.arange(1, 12) + 4]
    np.testing.assert_array_equal(out, ref)


# ------------------------------------------- filter taps: j + dj over dj
@tack.kernel
def convolve(img, w, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            acc = 0.0
            for di in range(w.shape[0]):
                for dj in range(w.shape[1]):
                    acc += img[i + di, j + dj] * w[di, dj]
            out[i, j] = acc


def _convolve_ref(img, w, m0, m1):
    out = np.zeros((m0, m1))
    for di in range(w.shape[0]):
        for dj in range(w.shape[1]):
            out += w[di, dj] * img[di:di + m0, dj:dj + m1]
    return out


@pytest.mark.optimized_source
def test_tap_loop_checks_leave_the_tap_loop():
    img, w, out = np.ones((12, 12)), np.ones((3, 3)), np.zeros((10, 10))
    body = _loop_body(convolve.ir(img, w, out), "for dj")
    assert body and not [line for line in body if "check." in line], "\n".join(body)


def test_tap_loop_matches_numpy_and_raises_past_the_edge():
    rng = np.random.default_rng(4)
    img, w = rng.random((20, 17)), rng.random((5, 3))
    out = np.zeros((16, 15))
    convolve(img, w, out)
    np.testing.assert_allclose(out, _convolve_ref(img, w, 16, 15), rtol=1e-12)
    with pytest.raises(IndexError, match="index 17 is out of bounds for axis 1 with size 17"):
        convolve(img, w, np.zeros((16, 16)))  # j + dj reaches 17 in the last column


def smooth_twice(a, b, c):
    n = a.shape[0]
    for t in range(1):                             # serial code: the two loops share the local i
        for i in range(1, n - 1):
            b[i] = 0.5 * (a[i - 1] + a[i + 1])
        for i in range(1, n - 1):
            a[i] = b[i] + c[i - 1]
        for i in range(n - 1, 0, -1):              # a third, assigning i in its body: keeps its wraps
            i = i - 1
            c[i] = a[i]


@pytest.mark.optimized_source
def test_loops_sharing_their_variable_lose_their_wraps():
    """Two serial loops over one variable define its local twice; each is still the variable of its
    own loop, whose body does not assign it, so `i - 1` there cannot be negative.  The wraps kept
    in such loops made a kernel's serial code 2-15x slower than the same loops as parallel loops
    on one thread (a `while` time loop around two of them, docs/language.md)."""
    a, b, c = np.arange(8.0) ** 2, np.zeros(8), np.arange(8.0)
    ir = tack.kernel(smooth_twice).ir(a, b, c)
    first, third = ir.index("for i"), ir.index("for _t")  # the third runs on a counter of its own
    assert ir.count("for i") == 2 and "wrap" not in ir[first:third] and "wrap" in ir[third:], ir
    want = [x.copy() for x in (a, b, c)]
    smooth_twice(*want)                            # the function run by Python itself
    for jit in (True, False):
        got = [x.copy() for x in (a, b, c)]
        tack.kernel(smooth_twice, jit=jit)(*got)
        assert all(g.tolist() == w.tolist() for g, w in zip(got, want))
