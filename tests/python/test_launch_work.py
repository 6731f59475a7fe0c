"""A parallel loop whose body has inner loops runs on the calling thread alone when the
launch counts too little work to share (src/compiler/cpu/launch_work.c), and on the pool
otherwise; a body whose inner trip counts the launch cannot know keeps the pool from two
iterations.  The decision is seen two ways: in the generated C (the launch's min_parallel)
and in a profile, which records each pool thread's part of a launch the pool ran ("worker"
events) and none for a launch its caller ran alone."""

import re

import numpy as np

import tack


@tack.kernel
def lud_rows(a, k):
    n = a.shape[0]
    for i in tack.independent(range(k + 1, n)):  # one pivot of an LU decomposition
        lv = a[i, k] / a[k, k]
        a[i, k] = lv
        for j in range(k + 1, n):
            a[i, j] = a[i, j] - lv * a[k, j]


@tack.kernel
def prefix_rows(x, out):
    for i in range(x.shape[0]):  # the inner trip count is the iteration's own
        s = 0.0
        for j in range(i + 1):
            s += x[j]
        out[i] = s


@tack.kernel
def counted_reps(out, reps):
    for i in range(out.shape[0]):  # the trip count is read from memory
        s = 0.0
        for r in range(reps[0]):
            s += 1.0
        out[i] = s


def _launch_arg(src):
    m = re.search(r"abi->parallel_for\(ctx, tk_pfor0, &F_, total_, (\w+), grain_\)", src)
    return m.group(1)


def _lud(n):
    a = np.random.default_rng(3).random((n, n)).astype(np.float32)
    a[np.diag_indices(n)] += n
    return a


def _lud_numpy(a, k):
    a = a.copy()
    a[k + 1:, k] /= a[k, k]
    a[k + 1:, k + 1:] -= np.multiply.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def _workers(fn):
    with tack.profile() as p:
        fn()
    return [e for e in p.events if e.kind == "worker"]


def test_the_launch_counts_inner_loops_with_bounds_it_knows():
    a = _lud(8)
    src = lud_rows.generated_source(a, 0)
    assert _launch_arg(src) == "mp_"
    decl = next(ln for ln in src.splitlines() if "const int64_t mp_ =" in ln)
    assert "< 524288.0 ? total_ + 1 : 2" in decl, decl
    work = next(ln for ln in src.splitlines() if "const double w_ =" in ln)
    assert "tk_trip(" in work, work
    # a piece it hands out is at least 262144 units: the grain raised to that many iterations
    assert "if ((double)grain_ * w_ < 262144.0) grain_ = (int64_t)(262144.0 / w_) + 1;" in src
    # bounds that change with the iteration, or read from memory: no estimate, the pool from 2
    x = np.zeros(8)
    assert _launch_arg(prefix_rows.generated_source(x, x)) == "2"
    assert _launch_arg(counted_reps.generated_source(x, np.ones(1, np.int64))) == "2"


def test_small_launches_run_on_the_caller_and_large_ones_on_the_pool():
    a0 = _lud(256)
    with tack.config.override(num_threads=2):
        for k, pooled in [(240, False), (250, False), (100, False), (0, True), (64, True)]:
            a = a0.copy()
            # 15 rows of 15 elements at k = 240, 155 of 155 at k = 100 (about 449,000 units,
            # under the 524288 where two threads drew level with one); 255 rows of 255 at k = 0
            workers = _workers(lambda: lud_rows(a, k))
            assert bool(workers) == pooled, (k, workers)
            np.testing.assert_allclose(a, _lud_numpy(a0, k), rtol=1e-6)
        x = np.arange(6.0)
        out = np.zeros(6)
        assert _workers(lambda: prefix_rows(x, out))  # no estimate: six iterations are shared
        np.testing.assert_array_equal(out, np.cumsum(x))


def test_debug_mode_gives_the_same_rows():
    a0 = _lud(40)
    for k in (0, 20, 38):
        a, b = a0.copy(), a0.copy()
        lud_rows(a, k)
        tack.kernel(lud_rows.__wrapped__, jit=False)(b, k)
        np.testing.assert_array_equal(a, b)


def _function(src, head):
    start = src.index(head)
    return src[start:src.index("\n}\n", start)]


def test_a_piece_of_a_parallel_loop_does_not_poll_at_its_first_loop():
    # The pool asks its stop test after every piece (pool.c), so the function
    # that runs a piece starts with a full poll budget; the entry, which runs
    # once a launch and may hold long serial loops, starts with an empty one.
    src = lud_rows.generated_source(_lud(8), 0)
    piece = _function(src, "static void tk_pfor0(")
    entry = _function(src, "void tack_entry(")
    assert "int64_t tk_bud_ = TK_BUDGET;" in piece, piece[:600]
    assert "int64_t tk_bud_ = 0;" in entry, entry[:600]
    assert "TK_POLL(" in piece  # its loops still poll, once the budget is spent
