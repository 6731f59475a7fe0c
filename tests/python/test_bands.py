"""The rows of a 3-D stencil's parallel loop in bands of its layers (src/compiler/cpu/bands.c).

The pass changes only the order in which a chunk runs its rows; these tests hold it to the same
bits as the plain order (tack.config.bands off), check that the launch really numbers the rows
band by band where it should (a loop told it is independent that records the order it ran in),
and that it leaves alone every loop where the order could be seen.
"""

import numpy as np
import pytest

import tack

MARK = "rows in bands (bands.c)"


def _run(fn, args, checks=True, **settings):
    args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    with tack.config.override(**settings):
        tack.kernel(fn, checks=checks)(*args)
    return args


def heat3d(src, dst, power, cc, cn, ct):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        zb = max(z - 1, 0)
        zt = min(z + 1, nz - 1)
        yn = max(y - 1, 0)
        ys = min(y + 1, ny - 1)
        xw = max(x - 1, 0)
        xe = min(x + 1, nx - 1)
        dst[z, y, x] = (cc * src[z, y, x] + cn * (src[z, yn, x] + src[z, ys, x] + src[z, y, xw] + src[z, y, xe])
                        + ct * (src[zb, y, x] + src[zt, y, x]) + power[z, y, x])


def _heat_ref(src, power, cc, cn, ct):
    p = np.pad(src, 1, mode="edge")
    return (cc * src + cn * (((p[1:-1, :-2, 1:-1] + p[1:-1, 2:, 1:-1]) + p[1:-1, 1:-1, :-2]) + p[1:-1, 1:-1, 2:])
            + ct * (p[:-2, 1:-1, 1:-1] + p[2:, 1:-1, 1:-1]) + power)


def _heat_args(nz, ny, nx, dt=np.float32):
    rng = np.random.default_rng(nz * 10007 + ny * 101 + nx)
    src = rng.random((nz, ny, nx)).astype(dt)
    power = (1e-3 * rng.random((nz, ny, nx))).astype(dt)
    return [src, np.zeros_like(src), power, dt(0.4), dt(0.1), dt(0.05)]


# (nz, ny, nx): layers past the threshold (1.5 MiB over the three f32 arrays: banded, ny 256 in bands
# of 16 at nx 700, ny 128 in bands of 8 at nx 1100; rows that chunks split); a prime ny (no band
# height divides it: one band); small layers (not banded)
@pytest.mark.parametrize("shape", [(3, 256, 700), (4, 128, 1100), (3, 263, 700), (5, 16, 64)])
@pytest.mark.parametrize("threads", [1, 2])
def test_stencil_same_bits(shape, threads):
    args = _heat_args(*shape)
    on = _run(heat3d, args, num_threads=threads)
    off = _run(heat3d, args, num_threads=threads, bands=False)
    assert np.array_equal(on[1].view(np.uint32), off[1].view(np.uint32))
    np.testing.assert_allclose(on[1], _heat_ref(args[0], args[2], *args[3:]), rtol=2e-6)


def test_stencil_f64():
    args = _heat_args(3, 128, 1024, np.float64)  # 2 MiB a layer: bands of 8 rows
    on = _run(heat3d, args)
    off = _run(heat3d, args, bands=False)
    assert np.array_equal(on[1].view(np.uint64), off[1].view(np.uint64))
    np.testing.assert_allclose(on[1], _heat_ref(args[0], args[2], *args[3:]), rtol=1e-13)


def order(src, seen, prev):
    nz, ny, nx = src.shape
    for z, y, x in tack.independent(tack.ndrange(nz, ny, nx)):
        if x == 0:
            seen[z, y] = prev[0] + src[max(z - 1, 0), y, x] * 0
            prev[0] = z * ny + y


def _banded_order(nz, ny, bh):
    rows = [(z, q * bh + t) for q in range(ny // bh) for z in range(nz) for t in range(bh)]
    want = np.zeros((nz, ny), np.int64)
    last = -1
    for z, y in rows:
        want[z, y] = last
        last = z * ny + y
    return want


def test_rows_run_band_by_band():
    """One thread, a loop whose rows record which row ran before them (without checks: the
    checks of prev[0] under the `if` would stay in the loop and keep it unbanded): band by band, 16 rows a
    band (8 bytes a point of each of the three arrays, 1.5 MiB a layer: bands of 192 KiB / 24 /
    512 rows at most), and row after row with the pass off."""
    nz, ny, nx = 3, 128, 512
    src = np.ones((nz, ny, nx), np.int64)
    args = [src, np.zeros((nz, ny), np.int64), np.full(1, -1, np.int64)]
    assert MARK in tack.kernel(order, checks=False).generated_source(*args)
    assert MARK not in tack.kernel(order).generated_source(*args)
    on = _run(order, args, checks=False, num_threads=1)
    assert np.array_equal(on[1], _banded_order(nz, ny, 16))
    off = _run(order, args, checks=False, num_threads=1, bands=False)
    assert np.array_equal(off[1], _banded_order(nz, ny, ny))
    # layers under the threshold: one band, the plain order
    small = [np.ones((nz, 32, 64), np.int64), np.zeros((nz, 32), np.int64), np.full(1, -1, np.int64)]
    assert np.array_equal(_run(order, small, checks=False, num_threads=1)[1], _banded_order(nz, 32, 32))


def copy3d(src, dst):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        dst[z, y, x] = 2.0 * src[z, y, x]


def summed(src, dst, out):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        dst[z, y, x] = src[max(z - 1, 0), y, x]
        out[0] += src[z, y, x]


def gathered(src, dst, idx):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        dst[z, y, x] = src[idx[z], y, x]


def atomic(src, dst, count):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        dst[z, y, x] = src[max(z - 1, 0), y, x]
        tack.atomic_add(count, 0, 1)


def heat2d(src, dst):
    ny, nx = src.shape
    for y, x in tack.ndrange(ny, nx):
        dst[y, x] = src[max(y - 1, 0), x] + src[min(y + 1, ny - 1), x]


def test_which_loops_are_banded():
    a, b = np.zeros((3, 8, 8), np.float32), np.zeros((3, 8, 8), np.float32)
    assert MARK in tack.kernel(heat3d).generated_source(*_heat_args(3, 8, 8))
    with tack.config.override(bands=False):
        assert MARK not in tack.kernel(heat3d).generated_source(*_heat_args(3, 8, 8))
    assert MARK not in tack.kernel(copy3d).generated_source(a, b)  # no neighbouring layer read
    assert MARK not in tack.kernel(summed).generated_source(a, b, np.zeros(1, np.float32))  # a sum's order is its bits
    assert MARK not in tack.kernel(gathered).generated_source(a, b, np.zeros(3, np.int64))  # a check stays
    assert MARK not in tack.kernel(atomic).generated_source(a, b, np.zeros(1, np.int64))
    assert MARK not in tack.kernel(heat2d).generated_source(a[0], b[0])
    with tack.config.override(optimize=False):
        assert MARK not in tack.kernel(heat3d).generated_source(*_heat_args(3, 8, 8))


def heat3d_off_edge(src, dst):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        zt = min(z + 1, nz)  # one past the last layer: the clamps' flag fails, the loop runs as written
        dst[z, y, x] = src[z, y, x] + src[zt, y, x]


@pytest.mark.parametrize("threads", [1, 2])
def test_an_index_error_after_the_same_writes(threads):
    """The launch bands only under periodic.c's flag; where it fails, the rows run in their own
    order with their checks, and the IndexError comes after the same writes as with the pass off."""
    src = np.random.default_rng(5).random((3, 256, 1100)).astype(np.float32)  # 2 MiB a layer
    got = []
    for settings in ({}, {"bands": False}):
        dst = np.zeros_like(src)
        with tack.config.override(num_threads=threads, **settings), pytest.raises(IndexError) as e:
            tack.kernel(heat3d_off_edge)(src, dst)
        got.append((str(e.value), dst))
    assert got[0][0] == got[1][0]
    if threads == 1:
        assert np.array_equal(got[0][1], got[1][1])
    assert MARK in tack.kernel(heat3d_off_edge).generated_source(src, np.zeros_like(src))
