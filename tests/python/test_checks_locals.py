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
