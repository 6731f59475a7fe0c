"""Per-chunk private histograms (src/compiler/passes/privatize.c).

`hist[keys[i]] += v` in a parallel loop on a small array counts into a zeroed
private copy per chunk, flushed atomically at the chunk's end; large arrays
and short chunks keep the per-element atomics.  Both must give what NumPy
gives.
"""

import numpy as np
import pytest

import tack

MARKER = "per-chunk private histogram"


@tack.kernel
def count(keys, hist):
    for i in range(keys.shape[0]):
        hist[keys[i]] += 1


@tack.kernel
def weigh(keys, w, hist):
    for i in range(keys.shape[0]):
        hist[keys[i]] += w[i]


@tack.kernel
def unweigh(keys, w, hist):
    for i in range(keys.shape[0]):
        hist[keys[i]] -= w[i]


@tack.kernel
def count_atomic(keys, hist):
    for i in range(keys.shape[0]):
        tack.atomic_add(hist, keys[i], 1)


@tack.kernel
def count_2d(keys, hist):
    for i in range(keys.shape[0]):
        hist[keys[i] % 3, keys[i] // 3] += 1


@tack.kernel
def count_and_read(keys, hist, out):
    for i in range(keys.shape[0]):
        hist[keys[i]] += 1
        out[i] = hist[0]


def _keys(n, bins, dtype=np.int32, seed=0):
    return np.random.default_rng(seed).integers(0, bins, n).astype(dtype)


# sizes: below the chunk threshold (4x the bins), above it, bins above the cap
CASES = [(1000, 16), (200_000, 256), (1_000_000, 256), (300_000, 16384), (300_000, 40000), (10, 3)]


@pytest.mark.parametrize("n,bins", CASES)
@pytest.mark.parametrize("hdt", [np.int32, np.int64, np.uint8])
def test_count_matches_bincount(n, bins, hdt):
    keys = _keys(n, bins, seed=n + bins)
    hist = np.zeros(bins, hdt)
    count(keys, hist)
    ref = np.bincount(keys, minlength=bins).astype(hdt)  # wraps for uint8 like the kernel
    np.testing.assert_array_equal(hist, ref)
    count(keys, hist)  # accumulates into what is there
    np.testing.assert_array_equal(hist, (ref.astype(np.int64) * 2).astype(hdt))


@pytest.mark.parametrize("n,bins", CASES)
@pytest.mark.parametrize("wdt", [np.float32, np.float64])
def test_weights_match_add_at(n, bins, wdt):
    rng = np.random.default_rng(7)
    keys = _keys(n, bins, np.int64, seed=3)
    w = rng.uniform(0.0, 1.0, n).astype(wdt)
    hist = np.zeros(bins, wdt)
    weigh(keys, w, hist)
    ref = np.zeros(bins, np.float64)
    np.add.at(ref, keys, w.astype(np.float64))
    tol = 1e-3 if wdt == np.float32 else 1e-9
    np.testing.assert_allclose(hist, ref, rtol=tol, atol=tol)
    unweigh(keys, w, hist)
    np.testing.assert_allclose(hist, 0.0, atol=tol * max(1.0, ref.max()))


@pytest.mark.parametrize("n,bins", [(100_000, 64), (100, 64)])
def test_integer_subtract_wraps(n, bins):
    keys = _keys(n, bins)
    w = np.random.default_rng(1).integers(-1000, 1000, n).astype(np.int32)
    hist = np.zeros(bins, np.int32)
    unweigh(keys, w, hist)
    ref = np.zeros(bins, np.int64)
    np.subtract.at(ref, keys, w.astype(np.int64))
    np.testing.assert_array_equal(hist, ref.astype(np.int32))


def test_tack_atomic_add_and_2d():
    keys = _keys(500_000, 12)
    hist = np.zeros(12, np.int64)
    count_atomic(keys, hist)
    np.testing.assert_array_equal(hist, np.bincount(keys, minlength=12))
    h2 = np.zeros((3, 4), np.int32)
    count_2d(keys, h2)
    ref = np.zeros((3, 4), np.int64)
    np.add.at(ref, (keys % 3, keys // 3), 1)
    np.testing.assert_array_equal(h2, ref)


def test_negative_keys_wrap():
    keys = _keys(400_000, 32) - 32  # -32 .. -1
    hist = np.zeros(32, np.int32)
    count(keys, hist)
    np.testing.assert_array_equal(hist, np.bincount(keys + 32, minlength=32))


@pytest.mark.parametrize("n", [1000, 1_000_000])
def test_out_of_bounds_key_raises_and_corrupts_nothing(n):
    keys = _keys(n, 64)
    keys[n // 3] = 64
    hist = np.full(64, 5, np.int32)
    guard = np.zeros(64 * 3, np.int32)  # the array sits in the middle of a bigger buffer
    guard[64:128] = hist
    view = guard[64:128]
    with pytest.raises(IndexError) as info:
        count(keys, view)
    assert "count" in str(info.value)
    assert (guard[:64] == 0).all() and (guard[128:] == 0).all()
    # chunks before the failing one may have flushed, never more than the true counts
    assert ((view >= 5) & (view <= 5 + np.bincount(keys[keys < 64], minlength=64))).all()


@pytest.mark.optimized_source
def test_private_version_is_emitted():
    keys = np.zeros(4, np.int32)
    w = np.zeros(4, np.float32)
    assert MARKER in count.generated_source(keys, np.zeros(8, np.int32))
    assert MARKER in unweigh.generated_source(keys, w, np.zeros(8, np.float32))
    assert MARKER in count_atomic.generated_source(keys, np.zeros(8, np.int64))
    # an array that is also read keeps its atomics
    src = count_and_read.generated_source(keys, np.zeros(8, np.int32), np.zeros(4, np.int32))
    assert MARKER not in src
    # half floats have no atomic add: a histogram of them is refused (test_shared_cells.py)
    with pytest.raises(tack.CompileError, match="not atomic on float16"):
        weigh.generated_source(keys, np.zeros(4, np.float16), np.zeros(8, np.float16))


def test_read_array_still_correct():
    keys = _keys(100_000, 8)
    hist = np.zeros(8, np.int32)
    out = np.zeros(keys.shape[0], np.int32)
    count_and_read(keys, hist, out)
    np.testing.assert_array_equal(hist, np.bincount(keys, minlength=8))


def test_many_chunks_on_seven_threads():
    """Seven threads on this machine: more chunks than cores, each with its copy."""
    rng = np.random.default_rng(2)
    with tack.config.override(num_threads=7):
        for n, bins in [(2_000_000, 256), (2_000_000, 16384), (50_000, 4096), (3_000_000, 7)]:
            keys = rng.integers(0, bins, n).astype(np.int32)
            hist = np.zeros(bins, np.int32)
            count(keys, hist)
            assert (hist == np.bincount(keys, minlength=bins)).all(), (n, bins)


def test_cuda_dialect_keeps_its_atomics():
    keys = np.zeros(4, np.int32)
    try:
        src = count.generated_source(keys, np.zeros(8, np.int32), target="cuda")
    except Exception as err:  # pragma: no cover - a build without the CUDA dialect
        pytest.skip(f"no CUDA source: {err}")
    assert MARKER not in src and "atomic" in src.lower()


@tack.kernel(checks=False)
def count_unchecked(keys, hist):
    for i in range(keys.shape[0]):
        hist[keys[i]] += 1


@pytest.mark.parametrize("kernel", [count, count_unchecked])
@pytest.mark.parametrize("bins", [1, 7, 256, 16384])
def test_private_copy_has_a_cell_for_each_negative_index(kernel, bins):
    """The private copy holds 2n cells, [-n, n) (checked) or the wrapped index (checks=False)."""
    keys = np.random.default_rng(bins).integers(-bins, bins, 200_000).astype(np.int64)
    hist = np.zeros(bins + 2, np.int32)
    kernel(keys, hist[1:-1])
    np.testing.assert_array_equal(hist[1:-1], np.bincount(keys % bins, minlength=bins))
    assert hist[0] == 0 and hist[-1] == 0


# ------------------------------------------- several histograms in one loop
@tack.kernel
def count_and_weigh(keys, w, counts, sums):
    for i in range(keys.shape[0]):
        counts[keys[i]] += 1
        sums[keys[i]] += w[i]


@tack.kernel
def five_hists(keys, h0, h1, h2, h3, h4):
    for i in range(keys.shape[0]):
        h0[keys[i]] += 1
        h1[keys[i]] += 2
        h2[keys[i]] += 3
        h3[keys[i]] += 4
        h4[keys[i]] -= 5


@pytest.mark.optimized_source
def test_count_and_weights_both_privatized():
    keys = _keys(4, 16)
    src = count_and_weigh.generated_source(keys, np.zeros(4), np.zeros(16, np.int32), np.zeros(16))
    assert src.count(MARKER) == 2
    assert "per-chunk private histogram of a2 " in src and "per-chunk private histogram of a3 " in src
    assert "hall_" in src  # a small body: also the version adding into both copies without a choice


@pytest.mark.parametrize("n,bins,sbins", [(200_000, 256, 256), (300_000, 16384, 8000), (300_000, 40, 20_000),
                                          (1000, 16, 16), (10, 3, 3)])
def test_count_and_weights_match_numpy(n, bins, sbins):
    """Both arrays privatized, one only (the other past its cap), or neither (a short chunk)."""
    keys = _keys(n, min(bins, sbins), seed=n)
    w = np.random.default_rng(n).random(n)
    counts, sums = np.zeros(bins, np.int32), np.zeros(sbins)
    count_and_weigh(keys, w, counts, sums)
    np.testing.assert_array_equal(counts, np.bincount(keys, minlength=bins))
    ref = np.zeros(sbins)
    np.add.at(ref, keys, w)
    np.testing.assert_allclose(sums, ref, rtol=1e-9)


@pytest.mark.optimized_source
def test_at_most_four_private_histograms():
    hs = [np.zeros(64, np.int64) for _ in range(5)]
    src = five_hists.generated_source(np.zeros(4, np.int64), *hs)
    assert src.count(MARKER) == 4 and "per-chunk private histogram of a5 " not in src


def test_histograms_past_the_limit_match():
    keys = _keys(100_000, 64, dtype=np.int64, seed=5)
    hs = [np.zeros(64, np.int64) for _ in range(5)]
    five_hists(keys, *hs)
    c = np.bincount(keys, minlength=64)
    for k, h in enumerate(hs[:4]):
        np.testing.assert_array_equal(h, c * (k + 1))
    np.testing.assert_array_equal(hs[4], -5 * c)


THREAD_MARKER = "per-thread private histograms"


@tack.kernel
def count_and_weigh(keys, w, counts, sums):
    for i in range(keys.shape[0]):
        counts[keys[i]] += 1
        sums[keys[i]] += w[i]


@pytest.mark.optimized_source
def test_per_thread_copies_are_emitted():
    """The entry keeps one copy per thread of the launch when they fit
    (emit_cpu.c, hist_slots), and merges them after the loop."""
    keys = np.zeros(4, np.int32)
    src = count.generated_source(keys, np.zeros(8, np.int32))
    assert THREAD_MARKER in src and "abi->slot()" in src and "abi->slots()" in src
    src = count_and_weigh.generated_source(keys, np.zeros(4), np.zeros(8, np.int32), np.zeros(8))
    assert src.count("F_.hs") == 2


@pytest.mark.parametrize("n,bins", [(2048, 256), (4095, 1024), (4096, 1024), (100_000, 256),
                                    (1_000_000, 4096), (300_000, 16384)])
def test_count_and_weigh_together_match_numpy(n, bins):
    """Around the per-thread threshold (four iterations a cell a thread) and
    past the stack budget (16384 f64 bins: the chunks' copies again)."""
    keys = _keys(n, bins, seed=n)
    w = np.random.default_rng(n).random(n)
    counts, sums = np.zeros(bins, np.int32), np.zeros(bins)
    count_and_weigh(keys, w, counts, sums)
    np.testing.assert_array_equal(counts, np.bincount(keys, minlength=bins))
    np.testing.assert_allclose(sums, np.bincount(keys, weights=w, minlength=bins), rtol=1e-12, atol=1e-9)


@tack.kernel
def count_2d(keys, hist):
    for i in range(keys.shape[0]):
        hist[keys[i] % 3, keys[i] // 3] += 1


@tack.kernel
def count_and_subtract(keys, w, counts, sums):
    for i in range(keys.shape[0]):
        counts[keys[i]] += 1
        sums[keys[i]] -= w[i]


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_per_thread_copies_with_every_thread_count(threads):
    """The slots are the pool's threads: 1, 2, 3 and 7 threads on this
    machine, negative keys (two cells an element), a 2-D histogram, integer
    wrap, two histograms in one loop; each against NumPy."""
    rng = np.random.default_rng(5)
    with tack.config.override(num_threads=threads):
        assert tack._core.device_threads("cpu") == threads
        for n, bins in [(400_000, 256), (1_500_000, 7), (70_000, 4096)]:
            keys = rng.integers(-bins, bins, n).astype(np.int64)
            hist = np.zeros(bins, np.int32)
            count(keys, hist)
            assert (hist == np.bincount(keys % bins, minlength=bins)).all(), (n, bins)
            w = rng.random(n)
            counts, sums = np.zeros(bins, np.uint8), np.zeros(bins, np.float32)
            count_and_subtract(keys, w, counts, sums)
            assert (counts == np.bincount(keys % bins, minlength=bins).astype(np.uint8)).all()
            want = -np.bincount(keys % bins, weights=w, minlength=bins)
            assert np.allclose(sums, want, rtol=1e-4, atol=1e-3), np.abs(sums - want).max()
        keys = rng.integers(0, 12, 500_000).astype(np.int32)
        h2 = np.zeros((3, 4), np.int64)
        count_2d(keys, h2)
        assert (h2 == np.bincount(keys, minlength=12).reshape(4, 3).T).all()
