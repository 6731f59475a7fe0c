"""OpenCL launch grids sized from the loop's work (opencl_launch.c, gpu_launch.c's
gpu_phase_grid): a parallel loop launches ceil(extent / L) work-groups of L, a
blocks loop one a block, at least one and at most compute units x 8, which a
loop whose extent the arguments do not give still gets.  Whatever the count,
every iteration and every block runs once: the results on PoCL equal the CPU
backend's at the sizes around a work-group and the cap, for plain, ndrange,
blocks and several-phase kernels.  The group counts themselves are checked in
tests/c/test_opencl.c, where a hand-written kernel reports get_num_groups."""

import numpy as np
import pytest

import tack
from tack import _core

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
pytestmark = pytest.mark.skipif(
    not OPENCL, reason="no OpenCL device: install ocl-icd-libopencl1 and pocl-opencl-icd (make test does, as root)")
DEV = OPENCL[0] if OPENCL else None
L = 256  # a parallel loop's work-group on PoCL: min(256, the device's and the kernel's limits)
CAP = 8 * _core.device_threads(DEV) if DEV else 16  # compute units x 8 groups
SIZES = [0, 1, L - 1, L, L + 1, 3 * L * CAP + 7]  # the last: three times what the cap's groups cover


def on(x):
    return tack.array(x, device=DEV)


@tack.kernel
def affine(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0 + 1.0


@tack.kernel
def first_n(y, n: int):
    for i in range(n):
        y[i] += float(i)


@tack.kernel
def product(y, k: int):
    for i in range(y.shape[0] * k):  # each element k times: every iteration counts
        tack.atomic_add(y, i % y.shape[0], 1)


@tack.kernel
def unknown(y, m):
    for i in range(m[0]):  # the extent is on the device: the full grid
        y[i] = 7.0


@pytest.mark.parametrize("n", SIZES)
def test_plain_loops_equal_the_cpu(n):
    x = np.random.default_rng(n).random(n).astype(np.float32)
    want = np.zeros(n, np.float32)
    affine(x, want)
    got = tack.zeros(n, tack.f32, device=DEV)
    affine(on(x), got)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(got.numpy(), x * np.float32(2) + np.float32(1))
    # an extent from a scalar argument, shorter than the array
    want = np.ones(n + 3, np.float64)
    first_n(want, n)
    got = on(np.ones(n + 3, np.float64))
    first_n(got, n)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("n", [0, 1, L - 1, L + 1, L * CAP + 1])
def test_an_extent_that_is_a_product(n):
    want = np.zeros(n, np.int32)
    product(want, 3)
    got = tack.zeros(n, tack.i32, device=DEV)
    product(got, 3)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(got.numpy(), np.full(n, 3, np.int32))


@pytest.mark.parametrize("m", [0, 1, L + 1, 3 * L * CAP + 7])
def test_an_extent_read_on_the_device_gets_the_cap(m):
    want = np.zeros(m + 1, np.float32)
    unknown(want, np.array([m], np.int64))
    got = tack.zeros(m + 1, tack.f32, device=DEV)
    unknown(got, on(np.array([m], np.int64)))
    np.testing.assert_array_equal(got.numpy(), want)


@tack.kernel
def coords(a):
    for i, j in tack.ndrange(a.shape[0], a.shape[1]):
        a[i, j] = i * 1000 + j


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (1, 1), (3, 85), (16, 16), (257, 1), (1, L + 1), (97, 3 * CAP * 29)])
def test_ndrange_loops_equal_the_cpu(shape):
    want = np.full(shape, -1, np.int64)
    coords(want)
    got = on(np.full(shape, -1, np.int64))
    coords(got)
    np.testing.assert_array_equal(got.numpy(), want)


B = 32


def block_sums(x, out):
    n = x.shape[0]
    for b, t in tack.blocks(out.shape[0], B):
        s = tack.shared(B, tack.f64)
        i = b * B + t
        s[t] = x[i] if i < n else 0.0
        tack.barrier()
        if t == 0:
            acc = 0.0
            for k in range(B):
                acc += s[k]
            out[b] = acc


@pytest.mark.parametrize("nb", [1, 2, 3, CAP, CAP + 1, 5 * CAP + 3])
def test_blocks_loops_equal_the_cpu(nb):
    x = np.random.default_rng(nb).random(nb * B - 5)
    k = tack.kernel(block_sums)
    want = np.zeros(nb)
    k(x, want)
    got = tack.zeros(nb, tack.f64, device=DEV)
    k(on(x), got)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(got.numpy(), np.add.reduceat(x, np.arange(0, len(x), B)), rtol=1e-12)


def phases(x, y, out, nb):
    n = x.shape[0]
    for i in range(n):  # a parallel phase sized from x
        y[i] = x[i] + 1.0
    out[0] = 0.0
    j = 0
    while j < n:  # serial: it reads y, which the first loop wrote
        out[0] += y[j]
        j += 1
    for b, t in tack.blocks(nb, B):  # blocks, as many as nb says
        if b * B + t < n:
            y[b * B + t] += x[b * B + t]
    for i in range(n // 2):  # another parallel phase, half the extent
        y[i] -= out[0]


@pytest.mark.parametrize("n", [0, 1, L - 1, L + 1, 3 * L * CAP + 7])
def test_several_phases_equal_the_cpu(n):
    x = np.random.default_rng(n + 1).random(n)
    nb = (n + B - 1) // B
    k = tack.kernel(phases)
    want_y, want_out = np.zeros(n), np.zeros(1)
    k(x, want_y, want_out, nb)
    y, out = tack.zeros(n, tack.f64, device=DEV), tack.zeros(1, tack.f64, device=DEV)
    k(on(x), y, out, nb)
    assert "phases=psbp" in k.generated_source(x, want_y, want_out, nb, target="opencl")
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12)
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-12)


def test_the_opencl_source_says_each_loops_extent():
    """What the launcher reads: the OpenCL dialect writes layout_grid.c's postfix, a product's '*' included."""
    x = np.zeros(4, np.float32)
    assert "/* tack-grid-work: 0:s0.0, */" in affine.generated_source(x, x, target="opencl")
    assert "/* tack-grid-work: 0:s0.0,i1,*, */" in product.generated_source(np.zeros(4, np.int32), 3, target="opencl")
    assert "tack-grid-work" not in unknown.generated_source(x, np.zeros(1, np.int64), target="opencl")
    src = tack.kernel(phases).generated_source(np.zeros(4), np.zeros(4), np.zeros(1), 1, target="opencl")
    assert "/* tack-grid-work: 0:s0.0, 2:i3, 3:s0.0,#2,/, */" in src, src[-300:]
