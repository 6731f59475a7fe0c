"""Matrix products found inside a parallel loop's rows (src/compiler/cpu/gemm.c).

The forms users write -- PolyBench's gemm with a prologue that scales the row,
alpha, a local sum (also with an epilogue, `alpha * s + beta * C[i, j]`), the
ijk nest, transposed operands, a subtraction -- run as packed panels and a
register-blocked kernel, which the generated source names.
Each cell's chain of operations is the loop's, so the results are the bits of
the loop as written (gemm=False, compared in this process); with fast_math the
kernel may fuse multiply-adds and the results are close, not equal.  Where the
copy cannot run (C shares memory with an operand, an index could fail, a loop
is empty) the rows run as written; strided views are never taken.  Sizes cover
edges of the 8 x 24 block, more than one k block (512, or 256 without AVX-512VL)
and more than one panel of rows (128); the larger sweep runs under make test-all.
"""

import numpy as np
import pytest

import tack
import _suite

ON = tack.config.optimize and tack.config.nests and tack.config.gemm
needs_pass = pytest.mark.skipif(not ON, reason="the pass is off (TACK_OPT=0, TACK_NESTS=0 or TACK_GEMM=0)")
MARK = "matrix product (gemm.c)"


def gemm(alpha, beta, C, A, B):  # PolyBench's: the row scaled, then alpha * A[i, k] in a local
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = beta * C[i, j]
        for k in range(A.shape[1]):
            a = alpha * A[i, k]
            for j in range(C.shape[1]):
                C[i, j] = C[i, j] + a * B[k, j]


def zeroed(C, A, B):  # the row set to a value, the ijk nest with +=, alpha inline
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = 0.0
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += 2.0 * A[i, k] * B[k, j]


def dot_bt(C, A, B):  # a local sum, B transposed (C = A @ B.T)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[j, k]
            C[i, j] = s


def epilogue(alpha, beta, C, A, B):  # a local sum, then the epilogue scales it and adds the scaled cell
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s + beta * C[i, j]


def sub_at(C, A, B):  # A transposed (C -= A.T @ B), the product's operands swapped
    for i in range(C.shape[0]):
        for k in range(A.shape[0]):
            for j in range(C.shape[1]):
                C[i, j] -= B[k, j] * A[k, i]


def other_range(C, A, B):  # the prologue's j range is not the product's: not taken
    for i in range(C.shape[0]):
        for j in range(1, C.shape[1]):
            C[i, j] = 0.5 * C[i, j]
        for k in range(A.shape[1]):
            for j in range(C.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def operands(fn, n, k, m, dt, rng):
    A = rng.random((k, n) if fn is sub_at else (n, k)).astype(dt)
    B = rng.random((m, k) if fn is dot_bt else (k, m)).astype(dt)
    C = rng.random((n, m)).astype(dt)
    return [1.5, 0.75, C, A, B] if fn in (gemm, epilogue) else [C, A, B]


def chain(fn, args):
    """The loop's own chain of operations, vectorized over the cells in NumPy: each cell's
    start value, then `c = c + a * b` (or `c - a * b`) for k in ascending order, each
    operation rounded in the element's type -- the bits the kernel must give."""
    if fn is gemm:
        alpha, beta, C, A, B = args
        c = beta * C
        for k in range(A.shape[1]):
            c = c + np.outer(alpha * A[:, k], B[k])
        return c
    if fn is epilogue:
        alpha, beta, C, A, B = args
        c = np.zeros_like(C)
        for k in range(A.shape[1]):
            c = c + np.outer(A[:, k], B[k])
        return alpha * c + beta * C
    C, A, B = args
    if fn is zeroed:
        c = np.zeros_like(C)
        for k in range(A.shape[1]):
            c = c + np.outer(2.0 * A[:, k], B[k])
        return c
    if fn is dot_bt:
        c = np.zeros_like(C)
        for k in range(A.shape[1]):
            c = c + np.outer(A[:, k], B[:, k])
        return c
    c = C.copy()
    for k in range(A.shape[0]):
        c = c - np.outer(A[k], B[k])
    return c


def run(fn, args, settings=None, **kw):
    args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    with tack.config.override(**(settings or {})):
        k = tack.kernel(**kw)(fn) if kw else tack.kernel(fn)
        k(*args)
    return args


FORMS = [gemm, zeroed, dot_bt, sub_at, epilogue]
SIZES = [(1, 1, 1), (5, 3, 9), (130, 520, 50)]  # smaller than a block; edges; two panels and two k blocks (of 512)
if _suite.TEST_ALL:
    SIZES += [(8, 256, 48), (129, 257, 97), (300, 7, 500), (9, 520, 4100)]  # the last: two column blocks (4080)
# each run compiles a kernel (most of a second): make test runs the PolyBench form and the
# epilogue in f64 and the local sum in f32; make test-all every form in both, and each against
# the loop as written
CHEAP = [(gemm, np.float64), (dot_bt, np.float32), (epilogue, np.float64)]


@needs_pass
@pytest.mark.parametrize("fn", FORMS)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_forms_are_taken(fn, dt):
    args = operands(fn, 8, 8, 8, dt, np.random.default_rng(0))
    src = tack.kernel(fn).generated_source(*args)
    assert MARK in src
    assert "tk_bpack" in src  # B packed once before the loop, shared by the panels


def test_rows_past_an_operand_raise():
    """A has fewer rows than C: the whole-loop test fails (B is not packed before the loop), the
    panels in bounds take the copy, and the last one runs as written and raises, naming A."""
    rng = np.random.default_rng(6)
    A, B, C = rng.random((290, 9)), rng.random((9, 7)), rng.random((300, 7))
    with pytest.raises(IndexError, match="A"):
        tack.kernel(gemm)(1.0, 0.5, C, A, B)


@pytest.mark.parametrize("fn", FORMS)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_forms_same_bits_as_the_loop(fn, dt):
    if (fn, dt) not in CHEAP and not _suite.TEST_ALL:
        pytest.skip("every form in both types runs under make test-all")
    for n, k, m in SIZES:
        rng = np.random.default_rng(n * 7 + k * 3 + m)
        args = operands(fn, n, k, m, dt, rng)
        on = run(fn, args)
        assert np.array_equal(on[-3], chain(fn, args)), (n, k, m)
        if _suite.TEST_ALL:
            off = run(fn, args, {"gemm": False})
            assert np.array_equal(on[-3], off[-3])


def test_shared_b_packed_by_the_panels_same_bits():
    """B packed once and shared, its slivers packed by the panels themselves, on one, two and
    three threads (three on two cores: a panel often finds a sliver another is packing): nine
    panels, three k blocks, an edge sliver; every cell the loop's chain whatever the order."""
    rng = np.random.default_rng(9)
    args = operands(gemm, 1100, 1030, 50, np.float64, rng)
    want = chain(gemm, args)
    for threads in (1, 2, 3):
        on = run(gemm, args, {"num_threads": threads})
        assert np.array_equal(on[-3], want), threads


@needs_pass
@pytest.mark.skipif(not _suite.TEST_ALL, reason="a compile of its own: make test-all")
def test_fast_math_close_and_taken():
    rng = np.random.default_rng(1)
    args = operands(gemm, 70, 90, 60, np.float64, rng)
    assert MARK in tack.kernel(fast_math=True)(gemm).generated_source(*args)
    out = run(gemm, args, fast_math=True)
    assert np.allclose(out[2], 0.75 * args[2] + (1.5 * args[3]) @ args[4], rtol=1e-12, atol=1e-12)


def shape(src):
    """The vector bytes of the AVX-512VL block in a kernel's generated source (gemm.c's prelude)."""
    line = next(ln for ln in src.splitlines() if ln.startswith("#define TK_GEMM_SHAPE(W) ("))
    return int(line.split("(")[2].split("/")[0])


@needs_pass
def test_fast_math_takes_64_byte_vectors():
    """fast_math's fused block is 64 bytes wide with AVX-512VL whatever the core (gemm.c), the
    loop's bits' 32 where 512-bit operations do not run at full width; f32 at sizes that leave
    edges of a 48-column sliver and cross a k block of 512."""
    rng = np.random.default_rng(11)
    args = operands(gemm, 37, 530, 101, np.float32, rng)
    with tack.config.override(wide_vectors="off"):
        fused = tack.kernel(fast_math=True)(gemm).generated_source(*args)
        assert MARK in fused and "TK_GEMM_SHAPE(W) (64 / W), 8, 3, 512" in fused
        assert "TK_GEMM_SHAPE(W) (32 / W), 8, 3, 512" in tack.kernel(gemm).generated_source(*args)
    out = run(gemm, args, {"wide_vectors": "off"}, fast_math=True)
    want = 0.75 * args[2].astype(np.float64) + (1.5 * args[3].astype(np.float64)) @ args[4].astype(np.float64)
    assert np.allclose(out[2], want, rtol=1e-4, atol=1e-3)


@needs_pass
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_wide_vectors_width_and_the_loops_bits(dt):
    """The C target's wide_vectors capability (runtime/cpu_width.c) stated on and off: the loop's
    bits take 64-byte vectors where 512-bit operations run at full width, 32 where not, and either
    way every cell is the loop's chain -- at edges of the block's rows (37 = 4 x 8 + 5) and
    columns (101: 4 x 24 + 5 doubles, 2 x 48 + 5 floats; 8 x 12 + 5, 4 x 24 + 5 at 32 bytes) and
    over three k blocks (1030 = 2 x 512 + 6), with the row prologue (beta) and alpha."""
    rng = np.random.default_rng(12)
    args = operands(gemm, 37, 1030, 101, dt, rng)
    want = chain(gemm, args)
    for wide, bytes_ in (("on", 64), ("off", 32)):
        with tack.config.override(wide_vectors=wide):
            src = tack.kernel(gemm).generated_source(*args)
        assert MARK in src and shape(src) == bytes_, wide
        out = run(gemm, args, {"wide_vectors": wide})
        assert np.array_equal(out[2], want), wide


@needs_pass
def test_wide_vectors_auto_is_the_measurement_and_in_the_cache_key(tmp_path):
    """Left to itself (auto) the capability is measured once per process; the measurement's
    answer, which TACK_LOG=info prints, is the width the kernel gets.  Where the CPU has no
    AVX-512 nothing is measured and the answer is no.  Built under auto, off and on in a fresh
    kernel cache, two builds share a cache entry exactly when their widths agree: the width is
    part of the key."""
    import os
    import re
    import subprocess
    import sys

    code = ("import numpy as np, tack, test_gemm as t\n"
            "a = t.operands(t.gemm, 9, 9, 9, np.float64, np.random.default_rng(0))\n"
            "for w in ('auto', 'off', 'on'):\n"
            "    with tack.config.override(wide_vectors=w):\n"
            "        print('width', t.shape(tack.kernel(t.gemm).generated_source(*a)), flush=True)\n"
            "        t.run(t.gemm, a)\n")
    env = {k: v for k, v in os.environ.items() if k != "TACK_WIDE_VECTORS"}
    env.update(TACK_LOG="info", TACK_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    widths = [int(w) for w in re.findall(r"width (\d+)", r.stdout)]
    assert widths[1:] == [32, 64], r.stdout
    said = [ln for ln in r.stderr.splitlines() if "512-bit vector operations at full width" in ln]
    assert len(said) <= 1, said
    flags = set()
    if os.path.exists("/proc/cpuinfo"):  # where the system says AVX-512F/VL are there, the probe must have run
        with open("/proc/cpuinfo") as f:
            flags = set(next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), []))
    if {"avx512f", "avx512vl"} <= flags:
        assert len(said) == 1, ("the probe did not run on a CPU with AVX-512", r.stderr)
    assert widths[0] == (64 if said and ": yes (" in said[0] else 32), (said, widths)
    entries = re.findall(r"kernel 'gemm' .*?([0-9a-f]{32})\.\w+\)", r.stderr)
    assert len(entries) == 3, r.stderr
    for i in range(3):
        for j in range(i):
            assert (entries[i] == entries[j]) == (widths[i] == widths[j]), (widths, r.stderr)


@needs_pass
def test_not_taken():
    rng = np.random.default_rng(2)
    args = operands(other_range, 9, 10, 11, np.float64, rng)
    assert MARK not in tack.kernel(other_range).generated_source(*args)
    for dt in (np.float16, np.int32):  # not f32/f64: the loop (or tile.c) as before
        A, Bt, C = (rng.integers(0, 5, s).astype(dt) for s in ((9, 10), (11, 10), (9, 11)))
        assert MARK not in tack.kernel(dot_bt).generated_source(C, A, Bt)
    if _suite.TEST_ALL:
        on, off = run(other_range, args), run(other_range, args, {"gemm": False})
        assert np.array_equal(on[0], off[0])


@pytest.mark.skipif(not _suite.TEST_ALL, reason="a compile of its own: make test-all")
def test_strided_views_run_as_written():
    rng = np.random.default_rng(3)
    A, B = rng.random((12, 20)), rng.random((20, 30))
    C = np.zeros((12, 30))
    c, a, bt = C[:, ::2], A[:, ::2], B[::2, ::2].T  # views: no copies
    k = tack.kernel(dot_bt)
    k(c, a, bt)
    assert MARK not in k.generated_source(c, a, bt)
    assert np.allclose(C[:, ::2], a @ bt.T) and not C[:, 1::2].any()


@pytest.mark.skipif(not _suite.TEST_ALL, reason="a compile of its own (the test is tile.c's, M_DISJOINT): make test-all")
@pytest.mark.parametrize("fn", [gemm, epilogue])
def test_c_is_a_falls_back(fn):
    """C is A (row i reads its own row: no race): the copy's run-time test of disjoint memory
    runs the rows as written, which read the row as the prologue and the k's before left it
    (the epilogue form: as the cells before left it)."""
    rng = np.random.default_rng(4)
    C0, B = rng.random((37, 37)), rng.random((37, 37))
    c = C0.copy()
    tack.kernel(fn)(1.5, 0.75, c, c, B)
    ref = C0.copy()
    for i in range(37):
        if fn is gemm:
            ref[i] = 0.75 * ref[i]
            for k in range(37):
                ref[i] = ref[i] + (1.5 * ref[i, k]) * B[k]
            continue
        for j in range(37):
            s = 0.0
            for k in range(37):
                s += ref[i, k] * B[k, j]
            ref[i, j] = 1.5 * s + 0.75 * ref[i, j]
    assert np.array_equal(c, ref)


def test_out_of_bounds_same_error():
    """B has a row too few: an IndexError naming B, after the loop's own writes (one row, so no
    other thread's rows: its prologue and its first eight k's, as the loop as written leaves them)."""
    rng = np.random.default_rng(5)
    A, B, C = rng.random((1, 9)), rng.random((8, 7)), rng.random((1, 7))
    c = C.copy()
    with pytest.raises(IndexError, match="B"):
        tack.kernel(gemm)(1.0, 0.5, c, A, B)
    if _suite.TEST_ALL:
        c2 = C.copy()
        with tack.config.override(gemm=False), pytest.raises(IndexError):
            tack.kernel(gemm)(1.0, 0.5, c2, A, B)
        assert np.array_equal(c, c2)
    ref = 0.5 * C
    for k in range(8):
        ref = ref + np.outer(1.0 * A[:, k], B[k])
    assert np.array_equal(c, ref)


def test_off_switch():
    A = np.zeros((8, 8))
    with tack.config.override(gemm=False):
        assert MARK not in tack.kernel(dot_bt).generated_source(A, A.copy(), A.copy())


def shifted(C, A, B):  # rows from 1, stored one row up: the parallel loop's offset and `i - 1`
    for i in range(1, A.shape[0]):
        for k in range(A.shape[1]):
            for j in range(B.shape[1]):
                C[i - 1, j] += A[i, k] * B[k, j]


@pytest.mark.skipif(not _suite.TEST_ALL, reason="a compile of its own: make test-all")
def test_shifted_rows_same_bits():
    rng = np.random.default_rng(7)
    A, B, C = rng.random((140, 37)), rng.random((37, 41)), rng.random((140, 41))
    on, off = run(shifted, [C, A, B]), run(shifted, [C, A, B], {"gemm": False})
    assert np.array_equal(on[0], off[0])
    assert MARK in tack.kernel(shifted).generated_source(C, A, B)


def epi_swapped(alpha, beta, C, A, B):  # the epilogue's terms the other way round, each factor too
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s = s + A[i, k] * B[k, j]
            C[i, j] = C[i, j] * beta + s * alpha


def epi_plain(alpha, beta, C, A, B):  # C[i, j] plus the sum, unscaled
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s + C[i, j]


def epi_alpha(alpha, beta, C, A, B):  # the sum scaled, C not read; a start value other than 0
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = beta
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s


def epi_minus(alpha, beta, C, A, B):  # a difference: not taken, runs as written
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s - beta * C[i, j]


def epi_chain(fn, alpha, beta, C, A, B):
    """The loop's chain for the epilogue forms: the sum in ascending k, then the epilogue's
    operations as the loop writes them, each rounded in the element's type."""
    s = np.full_like(C, beta) if fn is epi_alpha else np.zeros_like(C)
    for k in range(A.shape[1]):
        s = s + np.outer(A[:, k], B[k])
    return {epi_swapped: lambda: C * beta + s * alpha, epi_plain: lambda: s + C, epi_alpha: lambda: alpha * s,
            epi_minus: lambda: alpha * s - beta * C}[fn]()


@needs_pass
def test_epilogue_forms_taken():
    rng = np.random.default_rng(8)
    args = [1.5, 0.75] + [rng.random((6, 6)) for _ in range(3)]
    for fn in (epi_swapped, epi_plain, epi_alpha):
        assert MARK in tack.kernel(fn).generated_source(*args), fn.__name__
    assert MARK not in tack.kernel(epi_minus).generated_source(*args)


@pytest.mark.skipif(not _suite.TEST_ALL, reason="a compile for each form: make test-all")
@pytest.mark.parametrize("fn", [epi_swapped, epi_plain, epi_alpha, epi_minus])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_epilogue_forms_same_bits(fn, dt):
    for n, k, m in [(5, 3, 9), (130, 520, 50), (9, 520, 4100)]:
        rng = np.random.default_rng(n + k + m)
        args = [dt(1.5), dt(0.75)] + [rng.random(s).astype(dt) for s in ((n, m), (n, k), (k, m))]
        on, off = run(fn, args), run(fn, args, {"gemm": False})
        assert np.array_equal(on[2], off[2]), (n, k, m)
        assert np.array_equal(on[2], epi_chain(fn, *args)), (n, k, m)
