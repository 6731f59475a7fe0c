"""Numbers you can trust: random small kernels over every dtype, Python
scalars and literals (tests/python/_numbers_fuzz.py writes them), run
compiled, as Python (jit=False) and by a NumPy 2 oracle; the three must agree
on every output's bits (a few ulps where a math function is called), or
raise the same kind of exception.

Under `make test` a fixed sample of seeds runs (a few CPU-seconds); under
`make test-all` (TACK_TEST_ALL=1) many more, and `python
tests/python/_numbers_fuzz.py SECONDS [FIRST_SEED] [f32|f64]` runs it for as
long as asked, printing each difference it finds.  The vector kernels
(_numbers_fuzz_vec.py, `python tests/python/_numbers_fuzz_vec.py SECONDS`)
are sampled the same way.  The cases it found are
kept as tests of their own in test_numbers_agree.py.
"""

import os

import numpy as np
import pytest

import _numbers_fuzz as fuzz
import _numbers_fuzz_vec as fuzz_vec
import _suite
import tack

# a fixed sample: seeds whose kernels cover +, //, %, **, shifts, comparisons, min/max, np.fmod,
# conditionals, casts, math and += into another dtype (FUZZ_NUMBERS_CASES widens it)
CASES = int(os.environ.get("FUZZ_NUMBERS_CASES", "200" if _suite.TEST_ALL else "4"))
SEEDS = list(range(7000, 7000 + CASES))


def _findings(seed, default_float):
    found = fuzz.check(fuzz.Case(seed), default_float)
    return [f"seed {seed}: {kind}: {expr!r} into {out}: {detail}" for kind, expr, out, detail in found
            if kind in fuzz.FAILING]


@pytest.mark.parametrize("seed", SEEDS)
def test_compiled_debug_and_numpy_agree(seed):
    """default_float=f64: every type is NumPy's, so the oracle is NumPy 2 itself (with the documented
    differences written into it)."""
    found = _findings(seed, "f64")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("seed", SEEDS[: max(2, CASES // 2)])
def test_compiled_and_debug_agree_with_the_default_float(seed):
    """The default float f32, which NumPy has no mode for: compiled and debug mode alone."""
    found = _findings(seed, "f32")
    assert not found, "\n".join(found)


# vector kernels (_numbers_fuzz_vec.py): vec3, vec3d and vec3i arrays against NumPy's (n, 3) arrays
VEC_SEEDS = list(range(500, 500 + (120 if _suite.TEST_ALL else 3)))


@pytest.mark.parametrize("seed", VEC_SEEDS)
def test_vector_expressions_agree_with_numpy(seed):
    """Component-wise arithmetic, abs, np.minimum/np.maximum and math functions of vectors, with
    scalar elements and Python scalars: compiled, debug mode and NumPy on the (n, 3) arrays."""
    case = fuzz_vec.VecCase(seed)
    found = [f"seed {seed} ({case.kind}, s={case.s!r}): {kind}: {expr!r}: {detail}"
             for kind, expr, detail in fuzz_vec.check(case) if kind in fuzz_vec.FAILING]
    assert not found, "\n".join(found)


def test_the_oracle_knows_the_documented_differences():
    """A few expressions whose NumPy answer Tack changes on purpose (docs/language.md, "Differences
    from NumPy", "Atomics"), each through the oracle: if the oracle forgot one, the fuzzer would
    report every use of it as a Tack bug."""
    env = {"a0": [np.bool_(True)], "a1": [np.int8(100)], "a2": [np.float32(0.5)], "i": fuzz.W(0, True)}
    o = fuzz.Oracle(env)
    assert o.run("a0[i] + a0[i]") == 2 and o.run("a0[i] + a0[i]").dtype == np.int64  # bool + bool
    with pytest.raises(ZeroDivisionError):
        o.run("a1[i] // 0")  # integer // by zero raises
    with pytest.raises(fuzz.Refused):
        o.run("a1[i] + 300")  # a literal out of bounds: a compile error
    assert o.run("np.maximum(3, 100)").dtype == np.int64
    c = fuzz.Case(0)
    c.arrays, c.exprs, c.outs, c.aug = [np.array([-0.2]), np.zeros(1), np.zeros(1)], ["a0[i]"], [np.dtype(np.int16)], ["+"]
    # o[i] += -0.2 on an int16 1: converted first (0), then added -- NumPy would give int(0.8) = 0 too; 1 here
    with np.errstate(all="ignore"):
        fuzz.N, saved = 1, fuzz.N
        try:
            out, _ = c.oracle(0)
        finally:
            fuzz.N = saved
    assert out.tolist() == [1]


def test_a_wrong_answer_is_reported(monkeypatch):
    """The fuzzer can fail: a kernel whose compiled answer differs from the oracle's is a finding."""
    case = fuzz.Case(7000)
    case.exprs = ["a0[i] * 0"] + case.exprs[1:]
    real = fuzz.Oracle.bin

    def off_by_one(self, op, x, y):
        r = real(self, op, x, y)
        return r + 1 if op == "Mult" and not isinstance(r, fuzz.W) and r.dtype.kind in "iu" else r

    monkeypatch.setattr(fuzz.Oracle, "bin", off_by_one)
    case.arrays[0] = np.arange(fuzz.N, dtype=np.int32)
    case.outs[0] = np.dtype(np.int64)
    case.aug[0] = None
    found = fuzz.check(case, "f64")
    assert any(kind == "value" and expr == "a0[i] * 0" for kind, expr, _, _ in found), found


def test_a_wrong_vector_answer_is_reported(monkeypatch):
    """The vector fuzzer can fail: an oracle off by one in one component is a finding."""
    real = fuzz_vec.VecCase.oracle

    def off_by_one(self, j):
        w = real(self, j)
        if w is not None:
            w = w.copy()
            w[0, 1] += 1
        return w

    monkeypatch.setattr(fuzz_vec.VecCase, "oracle", off_by_one)
    case = fuzz_vec.VecCase(500)
    case.exprs, case.aug = case.exprs[:1], case.aug[:1]
    assert any(kind == "value" for kind, _, _ in fuzz_vec.check(case))
