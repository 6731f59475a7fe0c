"""The radix sort's pass for GPUs (python/tack/_algorithms_sort_blocks.py, issue 39) against NumPy.

The pass is written from the language's blocks, so it runs everywhere a GPU's source can be
checked without a GPU: on the CPU (the tests force it there with _algorithms_sort._TILES), in
debug mode (its kernels run as Python, each thread a generator stepped from barrier to
barrier), on PoCL (OpenCL on the CPU, where it is the pass a sort takes), and as the generated
CUDA and HIP source run by tests/python/_cuda_emulate.py, each thread a fiber with real
barriers.  Every result must be NumPy's stable sort bit for bit: sort, argsort and sort by key,
every dtype, NaNs of both signs, -0.0 beside 0.0, duplicates, and sizes at the tile's edges
(255, 256, 257, 2,047-2,049 elements) and past them.  The vendor compilers' checks of the
new kernels are in test_algorithms.py (every_source).  The default run takes a few dtypes and
a few PoCL programs; TACK_TEST_ALL=1 every dtype, on PoCL too.
"""

import os
import sys

import numpy as np
import pytest

import tack
from tack import _core
from tack import _algorithms_sort as S
from tack import _algorithms_sort_blocks as B

sys.path.insert(0, os.path.dirname(__file__))
import _cuda_emulate  # noqa: E402
from test_algorithms import data, same_bits  # noqa: E402

ALL = bool(os.environ.get("TACK_TEST_ALL"))
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
          np.float32, np.float64, np.bool_] if ALL else [np.int8, np.int64, np.uint32, np.float16, np.float32,
                                                         np.float64, np.bool_]
SIZES = [0, 1, 2, 255, 256, 257, 2047, 2048, 2049, 5000, 70_001]
OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


@pytest.fixture
def tiles(monkeypatch):
    """Every sort takes the tiles' pass, on the CPU too."""
    monkeypatch.setattr(S, "_TILES", True)


def check(x, device="cpu"):
    """sort, argsort and sort by key of x on device, each NumPy's stable sort."""
    n = x.shape[0]
    X = tack.array(x, device=device)
    order = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(tack.argsort(X).numpy(), order, err_msg=f"argsort, n={n}")
    same_bits(tack.sort(X).numpy(), x[order])
    vals = np.arange(n, dtype=np.float64) * 0.5
    k, v = tack.sort(X, tack.array(vals, device=device))
    same_bits(k.numpy(), x[order])
    same_bits(v.numpy(), vals[order])


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_the_tiles_pass_is_numpys_stable_sort_on_the_cpu(tiles, dt):
    for n in SIZES:
        check(data(dt, n))


def test_the_pass_indexes_in_bounds(tiles, monkeypatch):
    # the sort's kernels have no index checks; built with them, every size and kind of pass runs
    monkeypatch.setattr(B, "_radix_pass_blocks", B._radix_pass_blocks_kernel(False, checks=True))
    monkeypatch.setattr(B, "_radix_pass_blocks_kv", B._radix_pass_blocks_kernel(True, checks=True))
    monkeypatch.setattr(B, "_key_span_blocks", B._key_span_blocks_kernel(checks=True))
    for n in (1, 255, 2049, 5000):
        check(data(np.float32, n))


def test_the_tiles_unpadded(tiles, monkeypatch):
    # the shared tile without its padding against bank conflicts (kept for timing on a GPU)
    monkeypatch.setattr(B, "_PAD", False)
    for dt in (np.float32, np.int16):
        for n in (257, 2049, 5000):
            check(data(dt, n))
    assert all(k is not B._radix_pass_blocks for k in B._unpadded())


def test_keys_that_share_digits_and_many_chunks_of_counts(tiles):
    # no pass (all keys equal), one pass (only the top byte differs), runs of equal keys longer
    # than a tile; then 2,051 tiles: 525,056 counts in 257 chunks of 2,048, so the chunks'
    # totals are scanned in two rounds of 256
    top = (np.arange(3000, dtype=np.int64) % 7 - 3) << 56
    for x in (np.array([0.0, -0.0, -0.0, 0.0], np.float32), np.array([np.nan, -np.nan, np.nan]), top,
              np.full(5000, 7, np.uint32), np.repeat(np.arange(5, dtype=np.int16), 3000)):
        check(x)
    x = np.random.default_rng(5).integers(0, 256, 2048 * 2051 - 9).astype(np.uint8)
    np.testing.assert_array_equal(tack.argsort(x).numpy(), np.argsort(x, kind="stable"))


@pytest.mark.skipif(not ALL, reason="bfloat16's key: make test-all")
def test_bfloat16_on_the_tiles_pass(tiles):
    import ml_dtypes

    f = data(np.float32, 5000).astype(ml_dtypes.bfloat16)
    order = np.argsort(f.astype(np.float32), kind="stable")
    np.testing.assert_array_equal(tack.argsort(f).numpy(), order)
    same_bits(tack.sort(tack.array(f)).numpy().view(np.uint16), f[order].view(np.uint16))


def test_the_pass_is_chosen_by_the_device(monkeypatch):
    # the runtime says whether a device's work runs on the host's cores (the CPU, PoCL): those
    # keep the blocked serial pass, a GPU takes the tiles'
    assert not S._tiles_on("cpu")
    for dev in OPENCL:  # PoCL here: an OpenCL device of type CPU
        assert _core._device_info(dev)[4] is True and not S._tiles_on(dev)
    monkeypatch.setattr(S, "_ON_CORES", {"cuda:0": False, "hip:0": False, "level_zero:0": False, "metal:0": False})
    for dev in ("cuda:0", "hip:0", "level_zero:0", "metal:0"):
        assert S._tiles_on(dev)
    monkeypatch.setattr(S, "_TILES", True)
    assert S._tiles_on("cpu")
    monkeypatch.setattr(S, "_TILES", False)
    assert not S._tiles_on("cuda:0")
    monkeypatch.setattr(S, "_TILES", None)
    ran = []
    monkeypatch.setattr(B._Passes, "run", lambda self, *a: ran.append(a[0]))
    monkeypatch.setattr(S._BlockedPasses, "run", lambda self, *a: ran.append("cpu"))
    span = B._key_span
    monkeypatch.setattr(B, "_key_span", lambda *a: ran.append("span") or span(*a))
    x = np.array([3, 1, 2], np.int32)
    tack.sort(x)
    tack.argsort(x)
    assert ran == ["cpu"] * 2  # one pass each: only the low byte differs
    if OPENCL:
        ran.clear()
        monkeypatch.setattr(S, "_ON_CORES", {})  # PoCL as the runtime reports it: the host's cores
        tack.sort(tack.array(x, device=OPENCL[0]))
        assert ran == ["cpu"]
        ran.clear()
        monkeypatch.setattr(S, "_ON_CORES", {OPENCL[0]: False})  # as if it were a GPU
        tack.sort(tack.array(x, device=OPENCL[0]))
        tack.argsort(tack.array(x, device=OPENCL[0]))
        assert ran == ["span", False, "span", True]


def test_debug_mode_runs_the_tiles_pass(tiles, monkeypatch):
    # the kernels run as Python (jit=False), the same language: the same results
    monkeypatch.setattr(B, "_radix_pass_blocks", B._radix_pass_blocks_kernel(False, jit=False))
    monkeypatch.setattr(B, "_radix_pass_blocks_kv", B._radix_pass_blocks_kernel(True, jit=False))
    monkeypatch.setattr(B, "_key_span_blocks", B._key_span_blocks_kernel(jit=False))
    assert isinstance(B._radix_pass_blocks, tack.PythonKernel)
    x = data(np.int8, 300)
    same_bits(tack.sort(x).numpy(), np.sort(x, kind="stable"))
    k, v = tack.sort(x, np.arange(300, dtype=np.int16))
    same_bits(v.numpy(), np.argsort(x, kind="stable").astype(np.int16))
    h = data(np.float16, 300)  # two passes: the indices made by the first, the keys unwritten by the last
    np.testing.assert_array_equal(tack.argsort(h).numpy(), np.argsort(h, kind="stable"))


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_on_opencl(tiles):
    # the pass every sort on an OpenCL GPU takes, run by PoCL (which, a CPU, is given the blocked
    # pass unless told); the default run compiles the two pass kernels for float32 keys (sort,
    # argsort); TACK_TEST_ALL every dtype and sort by key
    dev = OPENCL[0]
    for n in (0, 1, 257, 2049, 5000):
        x = data(np.float32, n)
        X = tack.array(x, device=dev)
        order = np.argsort(x, kind="stable")
        got = tack.argsort(X)
        assert got.device == dev
        np.testing.assert_array_equal(got.numpy(), order)
        same_bits(tack.sort(X).numpy(), x[order])
    if ALL:
        for dt in DTYPES:
            for n in (257, 5000):
                check(data(dt, n), dev)


# ------------------------------------------------------------ the CUDA and HIP source, emulated
def emulated_sort(x, target, values=None, wave=64, broken=None, kernel=None):
    """x's argsort (values None) or sort by key through the generated `target` source of the
    tiles' pass, each pass run by _cuda_emulate on NumPy arrays; every byte of the keys is a
    pass.  Returns (the sorted keys, the values or indices in their order).  `broken`, a
    function of the source, is applied to it before the run; `kernel` replaces the sort's
    (a build with index checks)."""
    n = x.shape[0]
    u, mode, c = S._bits_of(tack.asarray(x))
    c = c.numpy()
    kin = x.view(u.dtype.numpy)
    vin = np.zeros(n, np.int32) if values is None else values
    nt = max(1, -(-n // B.TILE))
    # the bytes that differ between keys, from the emulated _key_span_blocks
    part = np.zeros((nt, 2), np.uint64)
    args = [kin, c, part, mode]
    assert _cuda_emulate.run(B._key_span_blocks.generated_source(*args, target=target), args, grid=2,
                             wave=wave)[0] == 0
    varying = int(part[0, 0]) ^ int(part[0, 1])
    shifts = [s for s in range(0, 8 * x.dtype.itemsize, 8) if (varying >> s) & 255]
    for j, shift in enumerate(shifts):
        kout, vout = np.zeros_like(kin), np.zeros_like(vin)
        args = [kin, vin, kout, vout, c, np.zeros(nt * B.TILE, np.int32), np.zeros(B.BLOCK * nt, np.int64),
                np.zeros((nt, B.BLOCK), np.int32), np.zeros(-(-B.BLOCK * nt // B.TILE), np.int64), mode, shift,
                1 if (j == 0 and values is None) else 0, 1]
        src = (kernel or B._radix_pass_blocks_kv).generated_source(*args, target=target)
        rec = _cuda_emulate.run(broken(src) if broken else src, args, grid=2, wave=wave)
        assert rec[0] == 0, rec
        kin, vin = kout, vout
    return kin.view(x.dtype), vin


@pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")
def test_the_cuda_and_hip_sources_sort_when_emulated():
    x = data(np.float32, 2500)  # two tiles, the second partial; four passes
    order = np.argsort(x, kind="stable")
    k, idx = emulated_sort(x, "cuda")
    same_bits(k, x[order])
    np.testing.assert_array_equal(idx, order)
    x = np.random.default_rng(3).integers(0, 200, 2100).astype(np.uint32) << 8  # one pass, the second byte's
    vals = np.arange(2100, dtype=np.int64)
    k, v = emulated_sort(x, "cuda", vals)
    np.testing.assert_array_equal(v, np.argsort(x, kind="stable"))
    h = data(np.int16, 700)
    vals = np.arange(700, dtype=np.float64) * 0.25
    for wave in (64, 32):
        k, v = emulated_sort(h, "hip", vals, wave)
        same_bits(k, np.sort(h, kind="stable"))
        same_bits(v, vals[np.argsort(h, kind="stable")])


@pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")
def test_the_emulated_comparison_fails_without_the_barriers():
    # the comparison above can fail: with the barrier after the tile's load taken out of the
    # source, threads sort the shared tile before the others wrote it.  The build with index
    # checks runs (the broken source's places can fall outside the arrays); its unbroken
    # source sorts
    x = data(np.uint16, 600)
    checked = B._radix_pass_blocks_kernel(True, checks=True)
    k, idx = emulated_sort(x, "cuda", kernel=checked)
    np.testing.assert_array_equal(idx, np.argsort(x, kind="stable"))

    def no_barrier(src):
        head, sep, body = src.partition("tk_phase0")
        return head + sep + body.replace("__syncthreads();", ";", 1)  # the one after the tile's load

    try:
        k, idx = emulated_sort(x, "cuda", broken=no_barrier, kernel=checked)
    except (_cuda_emulate.EmulationError, AssertionError):
        return
    assert not np.array_equal(idx, np.argsort(x, kind="stable"))
