"""Blocks on the CPU, fast and general (config blocks_fast, cpu/blocks_fast.c): the stretches that
run only the threads their test can pass, the block's values kept once, the one-stretch scalars and
the checks computed before a stretch must give the bits the general layout gives -- which runs every
stretch for threads 0 .. B-1 in order -- for every program, including stretches in which one thread
reads what another wrote (the sequential order's result) and a check that fails part-way."""

import importlib.util
import os
import sys

import numpy as np
import pytest

import tack

sys.path.insert(0, os.path.dirname(__file__))
import test_blocks as tb  # noqa: E402


OPTIMIZED = os.environ.get("TACK_OPT") != "0"


def build(fn, fast, args, jit=True):
    """fn compiled (and run once on copies of args) with blocks_fast on or off, checks on."""
    with tack.config.override(blocks_fast=fast):
        k = tack.kernel(fn, jit=jit, checks=True)
        k(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        return k


def run(fn, fast, args, jit=True):
    """The arrays fn leaves, from fresh copies of args."""
    k = build(fn, fast, args, jit)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    k(*got)
    return [a for a in got if isinstance(a, np.ndarray)]


def source(fn, fast, args):
    with tack.config.override(blocks_fast=fast):
        return tack.kernel(fn, checks=True).generated_source(*args)


def same_bits(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


def fast_equals_general(fn, args, *, debug=False, marks=()):
    """blocks_fast gives the general layout's bits (and debug mode's, where asked); the fast source
    shows the marks of the paths it took, the general one none of them."""
    slow = run(fn, False, args)
    fast = run(fn, True, args)
    same_bits(fast, slow)
    if debug:
        same_bits(run(fn, True, args, jit=False), slow)
    src_fast, src_slow = source(fn, True, args), source(fn, False, args)
    for m in marks:
        assert m in src_fast, m
        assert m not in src_slow, m
    return fast


NARROW = "can hold"
ONCE = "the block's values, once for every thread"
CHECKS = "no check fails: the stretch without them"
NEST = "step by step, the threads a"


# ---------------------------------------------------------------- the examples
def test_the_block_reduction_examples():
    rng = np.random.default_rng(3)
    for n in (1000, 64 * 7, 5):
        x = rng.random(n, dtype=np.float32)
        nb = (n + tb.BS - 1) // tb.BS
        out = fast_equals_general(tb.block_sum, (x, np.zeros(nb, np.float32)), marks=(NARROW, ONCE, CHECKS))
        np.testing.assert_allclose(out[1], tb.sums(x, nb), rtol=1e-5)


def test_the_collectives_and_sub_groups():
    x = np.random.default_rng(5).random(4 * tb.CB, dtype=np.float32)
    fast_equals_general(tb.collectives, (x, *(np.zeros(4, np.float32) for _ in range(3)),
                                         np.zeros(4 * tb.CB, np.float32)), debug=True, marks=(NARROW, ONCE))
    x = np.random.default_rng(11).random(128, dtype=np.float32)
    fast_equals_general(tb.warps, (x, *tb.warps_outputs(128)))


def test_integer_collectives_on_a_block_of_24():
    def k(x, out):
        for b, t in tack.blocks(3, 24):
            r = tack.block_sum(x[b * 24 + t])
            c = tack.block_scan(x[b * 24 + t])
            m = tack.block_max(x[b * 24 + t])
            out[b * 26 + t] = c
            if t == 0:
                out[b * 26 + 24] = r
                out[b * 26 + 25] = m
    x = np.random.default_rng(2).integers(-2 ** 62, 2 ** 62, 72, dtype=np.int64)
    fast_equals_general(k, (x, np.zeros(78, np.int64)), debug=True, marks=(NARROW,))


def test_the_tiled_product_scan_and_stencil():
    a, b = tb.operands()
    c = fast_equals_general(tb.matmul_tiled, (a, b, np.zeros((a.shape[0], b.shape[1]), np.float32)),
                            marks=(NEST,) if OPTIMIZED else ())[2]
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    x = np.random.default_rng(6).random(1000, dtype=np.float32)
    fast_equals_general(tb.scan, (x, np.zeros(1000, np.float32), np.zeros(8, np.float32)), marks=(CHECKS,))
    u = np.random.default_rng(7).random((37, 53), dtype=np.float32)
    fast_equals_general(tb.stencil, (u, np.zeros_like(u)))


# --------------------------------------------- a stretch's threads, narrowed
B = 40
FORMS = ["t < k", "t <= k", "t > k", "t >= k", "t == k", "k > t", "k >= t", "k < t", "k <= t", "k == t"]
BOUNDS = [-3, 0, 5, B - 1, B, B + 7, 2 ** 62]


@pytest.fixture(scope="module")
def compare_kernels(tmp_path_factory):
    """One kernel a form: a stretch that is `if <form>:` with k the kernel's argument, and one with k
    a per-thread value (k + t % 3, set before a barrier)."""
    lines = ["import tack", f"B = {B}"]
    for i, form in enumerate(FORMS):
        lines += [
            f"def k{i}(x, out, k):",
            f"    for b, t in tack.blocks(2, B):",
            f"        s = tack.shared(B, tack.f32)",
            f"        s[t] = x[b * B + t]",
            f"        kt = k + t % 3",
            f"        tack.barrier()",
            f"        if {form}:",
            f"            out[b * B + t] += s[B - 1 - t] + 1.0",
            f"        tack.barrier()",
            f"        if {form.replace('k', 'kt')}:",
            f"            out[2 * B + b * B + t] += s[t] + 1.0",
        ]
    path = tmp_path_factory.mktemp("forms") / "blocks_forms.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("blocks_forms", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("i", range(len(FORMS)))
def test_every_compare_with_t_narrows_to_the_same_threads(compare_kernels, i):
    fn = getattr(compare_kernels, f"k{i}")
    x = np.random.default_rng(i).random(2 * B, dtype=np.float32)
    op = FORMS[i].replace("k", "K")
    t = np.arange(B)
    for k in BOUNDS:
        got = fast_equals_general(fn, (x, np.zeros(4 * B, np.float32), k), marks=(NARROW,))[1]
        want = np.zeros(4 * B, np.float32)
        for b in range(2):
            hit = eval(op, {"t": t, "K": k})
            want[b * B + t[hit]] = x[b * B + B - 1 - t[hit]] + np.float32(1)
            hit = eval(op, {"t": t, "K": k + t % 3})
            want[2 * B + b * B + t[hit]] = x[b * B + t[hit]] + np.float32(1)
        np.testing.assert_array_equal(got, want, err_msg=f"{FORMS[i]} with k = {k}")


# ------------------------------------- threads that read what others wrote
def test_a_thread_reading_what_the_one_before_wrote_keeps_the_sequential_result():
    # thread t reads s[t - 1], which thread t - 1 wrote earlier in the same stretch: the stretch runs
    # threads 0, 1, ... in order, so the result is a running sum (a GPU would race here)
    def k(x, out):
        for b, t in tack.blocks(2, 64):
            s = tack.shared(64, tack.f32)
            s[t] = x[b * 64 + t]
            tack.barrier()
            if t >= 1:
                s[t] = s[t - 1] + s[t]
            tack.barrier()
            out[b * 64 + t] = s[t]
    x = np.random.default_rng(8).random(128, dtype=np.float32)
    got = fast_equals_general(k, (x, np.zeros(128, np.float32)), marks=(NARROW,))[1]
    want = x.reshape(2, 64).copy()
    for j in range(1, 64):
        want[:, j] = want[:, j - 1] + want[:, j]
    np.testing.assert_array_equal(got, want.ravel())


def test_racy_looking_stretches_keep_their_order():
    # a thread reads its neighbour above before that one writes (the old value), another reads one
    # far below (the new value), and an index read from shared memory another thread just wrote
    def k(x, out, idx):
        for b, t in tack.blocks(1, 48):
            s = tack.shared(49, tack.f32)
            q = tack.shared(48, tack.i64)
            s[t] = x[t]
            if t == 0:
                s[48] = x[48]
            tack.barrier()
            if t < 47:
                s[t] = s[t + 1] * 2.0 + s[(t + 20) % 48]
            tack.barrier()
            q[t] = idx[t]
            if t > 0:
                out[q[t - 1]] += s[t]
            tack.barrier()
            out[48 + t] = s[t]
    x = np.random.default_rng(9).random(49, dtype=np.float32)
    idx = np.random.default_rng(10).integers(0, 48, 48)
    got = fast_equals_general(k, (x, np.zeros(96, np.float32), idx), debug=True, marks=(NARROW,))[1]
    s = x.copy()
    for t in range(47):
        s[t] = s[t + 1] * np.float32(2) + s[(t + 20) % 48]
    np.testing.assert_array_equal(got[48:], s[:48])


def test_a_value_that_looks_the_blocks_is_not_when_a_thread_changes_it():
    # k is set the same way by every thread, then by thread 5 alone; m reads memory each thread has
    # just written: neither is one value for the block
    def kern(x, out):
        for b, t in tack.blocks(1, 16):
            k = 3
            tack.barrier()
            if t == 5:
                k = 7
            tack.barrier()
            x[0] = t * 1.0
            m = x[0]
            tack.barrier()
            out[t] = k + m
    got = fast_equals_general(kern, (np.zeros(1, np.float32), np.zeros(16, np.float32)))[1]
    np.testing.assert_array_equal(got, np.where(np.arange(16) == 5, 7, 3) + np.arange(16))


def test_a_value_read_before_its_stretch_sets_it_stays_the_threads():
    # q is read (from the loop's last pass) before the stretch sets it: one scalar for every thread
    # would hand thread 0 what thread 7 left
    def k(out):
        for b, t in tack.blocks(1, 8):
            for it in range(3):
                tack.barrier()
                if it > 0:
                    out[it * 8 + t] = q  # noqa: F821 -- set in the loop's previous pass
                q = t * 10 + it
    got = fast_equals_general(k, (np.zeros(24, np.int64),))[0]
    want = np.zeros(24, np.int64)
    for it in (1, 2):
        want[it * 8: it * 8 + 8] = np.arange(8) * 10 + it - 1
    np.testing.assert_array_equal(got, want)


def test_the_blocks_loop_variable_and_stride_are_kept_once():
    def k(x, out):
        for b, t in tack.blocks(3, 32):
            s = tack.shared(32, tack.f64)
            s[t] = x[b * 32 + t]
            stride = 16
            tack.barrier()
            while stride > 0:
                if t < stride:
                    s[t] = max(s[t], s[t + stride])
                tack.barrier()
                stride //= 2
            for r in range(2):
                if t == r:
                    out[b * 2 + r] = s[0] + r
                tack.barrier()
    x = np.random.default_rng(4).random(96)
    got = fast_equals_general(k, (x, np.zeros(6)), debug=True, marks=(ONCE, NARROW))[1]
    np.testing.assert_array_equal(got, np.repeat(x.reshape(3, 32).max(1), 2) + np.tile([0, 1], 3))


# ----------------------------------------------------- checks before a stretch
def test_a_check_that_fails_part_way_fails_at_the_same_thread_after_the_same_writes():
    def k(x, out, off):
        for b, t in tack.blocks(1, 64):
            out[t] = 1.0
            out[64 + t] = x[t + off]
    x = np.arange(100, dtype=np.float32)
    msgs, outs = [], []
    for fast in (False, True):
        kern = build(k, fast, (x, np.zeros(128, np.float32), 0))
        out = np.zeros(128, np.float32)
        with pytest.raises(IndexError) as ei:
            kern(x, out, 63)  # thread 37 reads x[100]
        msgs.append(str(ei.value))
        outs.append(out)
    assert msgs[0] == msgs[1] and "100" in msgs[0]
    same_bits(outs[:1], outs[1:])
    np.testing.assert_array_equal(outs[1][:38], 1.0)  # threads 0 .. 37 wrote out[t]
    np.testing.assert_array_equal(outs[1][38:64], 0.0)
    np.testing.assert_array_equal(outs[1][64:101], x[63:100])
    assert CHECKS in source(k, True, (x, np.zeros(128, np.float32), 0))


def test_negative_indices_take_the_checked_stretch():
    def k(x, out, off):
        for b, t in tack.blocks(2, 32):
            out[b * 32 + t] = x[b * 32 + t - off]
    x = np.random.default_rng(12).random(64, dtype=np.float32)
    for off in (0, 5, 64):
        got = fast_equals_general(k, (x, np.zeros(64, np.float32), off), marks=(CHECKS,))[1]
        np.testing.assert_array_equal(got, x[np.arange(64) - off])


def test_a_check_on_an_index_another_thread_just_wrote():
    # thread t reads its index from q[t - 1], which thread t - 1 writes in the same stretch: the
    # check cannot be computed before the stretch, and the bad index thread 6 reads must raise
    def k(idx, out):
        for b, t in tack.blocks(1, 16):
            q = tack.shared(16, tack.i64)
            q[t] = 0
            tack.barrier()
            if t >= 1:
                q[t] = idx[t]
                out[q[t - 1]] = t * 1.0
    idx = np.arange(16)
    fast_equals_general(k, (idx, np.zeros(16, np.float32)))
    idx[5] = 1000
    msgs, outs = [], []
    for fast in (False, True):
        kern = build(k, fast, (np.arange(16), np.zeros(16, np.float32)))
        out = np.zeros(16, np.float32)
        with pytest.raises(IndexError) as ei:
            kern(idx, out)
        msgs.append(str(ei.value))
        outs.append(out)
    assert msgs[0] == msgs[1] and "1000" in msgs[0]
    same_bits(outs[:1], outs[1:])


def test_a_shared_element_is_the_blocks_value_only_where_the_stretch_does_not_write_it():
    # r = s[0] is one value for the block after a barrier (block_sum's result), but not in a stretch
    # where thread 3 writes s[0] first: threads 0 .. 2 read the old value, the others 99
    def k(x, out):
        for b, t in tack.blocks(1, 16):
            s = tack.shared(16, tack.f32)
            s[t] = x[t]
            tack.barrier()
            r = s[0]
            tack.barrier()
            if t == 3:
                s[0] = 99.0
            q = s[0]
            tack.barrier()
            out[t] = r + 1000.0 * q
    x = np.arange(1, 17, dtype=np.float32)
    # unoptimized, s[0] keeps its wrap and check, and r stays per thread
    got = fast_equals_general(k, (x, np.zeros(16, np.float32)), debug=True, marks=(ONCE,) if OPTIMIZED else ())[1]
    np.testing.assert_array_equal(got, 1 + 1000 * np.where(np.arange(16) < 3, 1, 99).astype(np.float32))


# ------------------------------------------------------------ random kernels
def random_kernel(seed):
    """A blocks kernel made of random stretches: shared reads at other threads' indices, ifs on t
    against constants and locals, the block's values changed in stretches that do more, a while and
    a for around barriers, indices from memory, and reads that go out of bounds when `off` < 0."""
    import random
    r = random.Random(seed)
    B, NB = r.choice([8, 16, 24, 40]), r.choice([1, 2])
    N = NB * B
    idx = [f"t", f"{B - 1} - t", f"(t + {r.randint(1, B)}) % {B}", "0", f"q[t] % {B}", f"(t + u) % {B}",
           f"idx[t] % {B}", f"min(t + 1, {B})"]

    def val(d=0):
        v = r.choice(["s[I]", f"x[b * {B} + t]", f"x[b * {B} + t + off]", "v0", "v1", "t * 1.0", "u * 0.5",
                      "1.5", "w * 1.0"] + ([] if d else ["(E + E)", "(E * E)"]))
        v = v.replace("I", r.choice(idx))
        while "E" in v:
            v = v.replace("E", val(d + 1), 1)
        return v

    def cond():
        c = r.choice(["t < C", "t <= C", "t > C", "t >= C", "t == C", "C > t", "t < u", "u > t", "t % 2 == 0",
                      "v0 > 0.5", "t < w", f"t < q[0] % {B + 3}", "t >= C and t < u + 3"])
        return c.replace("C", str(r.randint(-2, B + 2)))

    def stmts(ind, depth, barriers, fixed_u=False):
        out, pad = [], " " * ind
        for _ in range(r.randint(1, 3 if depth else 6)):
            p = r.random()
            if p < 0.22:
                out.append(f"{pad}s[{r.choice(idx)}] = {val()}")
            elif p < 0.38:
                out.append(f"{pad}v{r.randint(0, 1)} = {val()}")
            elif p < 0.45:
                out.append(f"{pad}q[t] = {r.choice(['t', 'idx[t]', f'(t * 7) % {B}', 'u'])}")
            elif p < 0.55:
                out.append(f"{pad}out[b * {B} + t] += {val()}")
            elif p < 0.68 and depth < 2:
                out += [f"{pad}if {cond()}:"] + stmts(ind + 4, depth + 1, False, fixed_u)
            elif p < 0.72 and depth < 2:
                out += [f"{pad}for r{depth} in range({r.randint(0, 3)}):"] + stmts(ind + 4, depth + 1, False, fixed_u)
            elif p < 0.84:
                out.append(pad + r.choice((["u = u // 2", "u += 1", "u = w"] if not fixed_u else [])
                                          + [f"w = {r.randint(0, B)}", "w = u + 1", "w = t % 5"]))
            elif barriers and r.random() < 0.5:
                out.append(f"{pad}tack.barrier()")
            elif barriers:  # a stretch that is one if
                out += [f"{pad}tack.barrier()", f"{pad}if {cond()}:"] + stmts(ind + 4, depth + 1, False, fixed_u)
                out.append(f"{pad}tack.barrier()")
        return out or [pad + "v1 = 1.0"]

    body = stmts(8, 0, True)
    if r.random() < 0.5:
        body += ["        tack.barrier()", "        u = 8", "        while u > 0:"] + stmts(12, 1, False, True)
        body += ["            tack.barrier()", "            u = u // 2"]
    if r.random() < 0.4:
        body += ["        tack.barrier()", f"        for kk in range({r.randint(0, 3)}):"] + stmts(12, 1, False)
        body += ["            tack.barrier()"]
    head = ["import tack", "def k(x, out, idx, off):", f"    for b, t in tack.blocks({NB}, {B}):",
            f"        s = tack.shared({B + 1}, tack.f32)", f"        q = tack.shared({B}, tack.i64)",
            "        v0 = 0.0", "        v1 = 1.0", "        u = 4", "        w = 0"]
    tail = ["        tack.barrier()", f"        out[{N} + b * {B} + t] = s[t] + v0 + v1 * 2.0 + u + w"]
    return "\n".join(head + body + tail) + "\n", B, NB


@pytest.mark.parametrize("seed", range(32))
def test_random_kernels_give_the_general_layouts_bits(tmp_path, seed):
    src, B, NB = random_kernel(seed)
    path = tmp_path / f"blocks_random_{seed}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"blocks_random_{seed}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(seed)
    n = NB * B
    args = (rng.random(n, dtype=np.float32), np.zeros(2 * n, np.float32), rng.integers(0, 3 * B, B),
            int(rng.integers(-5, 1)) if seed % 3 == 0 else 0)
    got = []
    for fast in (False, True):
        with tack.config.override(blocks_fast=fast, num_threads=1):  # one thread: blocks in order
            a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
            try:
                tack.kernel(mod.k, checks=True)(*a)
                err = None
            except (IndexError, tack.CompileError) as ex:  # a varying loop around a barrier: both refuse it
                err = f"{type(ex).__name__}: {ex}"
            got.append((err, a[1]))
    assert got[0][0] == got[1][0], src
    same_bits([got[0][1]], [got[1][1]])


# ------------------------------------------------- a serial loop step by step
def test_a_loop_that_writes_no_memory_runs_step_by_step_and_one_that_does_not_in_order():
    # the first kk loop only reads (its steps may interleave between threads: a 4 x 8 nest of ty, tx);
    # the second writes the element thread t + 8 reads, so its threads keep their order
    def k(x, out):
        for b, t in tack.blocks(2, 32):
            sa = tack.shared((4, 8), tack.f32)
            sb = tack.shared((8, 8), tack.f32)
            ty = t // 8
            tx = t % 8
            sa[ty, tx] = x[b * 64 + t]
            sb[ty, tx] = x[b * 64 + 32 + t]
            sb[ty + 4, tx] = x[b * 64 + t] * 2.0
            acc = 0.0
            tack.barrier()
            for kk in range(8):
                acc += sa[ty, kk] * sb[kk, tx]
            tack.barrier()
            for kk in range(3):
                sb[ty + 1, tx] += sb[ty, tx] * 0.5
            tack.barrier()
            out[b * 32 + t] = acc + sb[ty, tx] + sb[ty + 4, tx]
    x = np.random.default_rng(13).random(128, dtype=np.float32)
    args = (x, np.zeros(64, np.float32))
    got = fast_equals_general(k, args, debug=True, marks=(NEST,) if OPTIMIZED else ())[1]
    assert source(k, True, args).count(NEST) == (1 if OPTIMIZED else 0)
    want = np.zeros(64, np.float32)
    for b in range(2):
        sa = x[b * 64:b * 64 + 32].reshape(4, 8)
        sb = np.concatenate([x[b * 64 + 32:b * 64 + 64].reshape(4, 8), sa * np.float32(2)])
        acc = np.zeros(32, np.float32)
        for t in range(32):
            for kk in range(8):
                acc[t] += sa[t // 8, kk] * sb[kk, t % 8]
        for t in range(32):
            for kk in range(3):
                sb[t // 8 + 1, t % 8] += sb[t // 8, t % 8] * np.float32(0.5)
        want[b * 32:(b + 1) * 32] = acc + sb[:4].ravel() + sb[4:].ravel()
    np.testing.assert_array_equal(got, want)


def test_no_nest_where_the_threads_index_is_not_t_div_and_mod_c():
    # tx set a second time (7 - tx), and t read in the loop itself: each thread its whole loop in turn
    def k(x, out):
        for b, t in tack.blocks(1, 32):
            sa = tack.shared((4, 8), tack.f32)
            ty = t // 8
            tx = t % 8
            sa[ty, tx] = x[t]
            tx = 7 - tx
            acc = 0.0
            acc2 = 0.0
            tack.barrier()
            for kk in range(4):
                acc += sa[kk, tx] * (kk + 1.0)
            tack.barrier()
            for kk in range(4):
                acc2 += sa[kk, ty] * t
            tack.barrier()
            out[t] = acc + acc2
    x = np.random.default_rng(14).random(32, dtype=np.float32)
    args = (x, np.zeros(32, np.float32))
    got = fast_equals_general(k, args, debug=True)[1]
    assert NEST not in source(k, True, args)
    sa = x.reshape(4, 8)
    want = np.zeros(32, np.float32)
    for t in range(32):
        acc = acc2 = np.float32(0)
        for kk in range(4):
            acc += sa[kk, 7 - t % 8] * np.float32(kk + 1)
        for kk in range(4):
            acc2 += sa[kk, t // 8] * np.float32(t)
        want[t] = acc + acc2
    np.testing.assert_array_equal(got, want)
