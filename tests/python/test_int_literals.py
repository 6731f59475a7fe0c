"""A Python int literal that does not fit the fixed-width type it meets is a
compile error, where NumPy 2 raises OverflowError (it wrapped silently:
300 into int8 gave 44)."""

import os

import numpy as np
import pytest

import tack


@tack.kernel
def add300(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 300


@tack.kernel
def store300(a):
    for i in range(a.shape[0]):
        a[i] = 300


@tack.kernel
def store_minus_one(a):
    for i in range(a.shape[0]):
        a[i] = -1


@tack.kernel
def add256(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 256


@tack.kernel
def add127(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 127


@pytest.mark.parametrize("k", [add300, store300])
def test_literal_out_of_range_for_int8(k):
    with pytest.raises(OverflowError):
        np.int8(1) + 300  # NumPy 2's rule
    with pytest.raises(tack.CompileError, match="300 is out of bounds for i8"):
        k(np.zeros(3, np.int8))


@pytest.mark.parametrize("dt", [np.int16, np.int32, np.int64, np.uint16, np.float32])
def test_literal_in_range_for_wider_types(dt):
    a = np.zeros(3, dt)
    add300(a)
    np.testing.assert_array_equal(a, np.zeros(3, dt) + 300)


def test_literal_in_range_is_fine():
    a = np.zeros(3, np.int8)
    add127(a)
    assert a.tolist() == [127] * 3


def test_literals_out_of_range_for_uint8():
    with pytest.raises(tack.CompileError, match="256 is out of bounds for u8"):
        add256(np.zeros(3, np.uint8))
    with pytest.raises(tack.CompileError, match="-1 is out of bounds for u8"):
        store_minus_one(np.zeros(3, np.uint8))


@tack.kernel
def add_arg(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] + s


@tack.kernel
def add_arg_reassigned(a, s):
    s = s - 200
    for i in range(a.shape[0]):
        a[i] = a[i] + s


def test_python_int_argument_must_fit_like_numpy():
    a = np.zeros(3, np.int8)
    with pytest.raises(OverflowError):
        a + 300  # NumPy 2's rule for a Python int
    with pytest.raises(OverflowError, match="300 is out of bounds for i8 \\(argument 's' of kernel 'add_arg'"):
        add_arg(a, 300)
    assert a.tolist() == [0, 0, 0]  # refused before it ran
    add_arg(a, -128)
    assert a.tolist() == [-128] * 3
    with pytest.raises(OverflowError, match="-1 is out of bounds for u8"):
        add_arg(np.zeros(2, np.uint8), -1)
    b = np.zeros(2, np.int64)
    add_arg(b, 1 << 40)  # fits i64
    f = np.zeros(2, np.float32)
    add_arg(f, 300)  # meets a float: no limit
    assert f.tolist() == [300, 300]


def test_reassigned_int_parameter_is_not_the_argument():
    a = np.zeros(2, np.int8)
    add_arg_reassigned(a, 300)  # s is 100 where it meets int8
    assert a.tolist() == [100, 100]


# ---------------------------------------------- every integer type, 64-bit edges
# A literal above INT64_MAX, and an expression of literals past 64 bits, wrapped
# silently: `a[i] = 18446744073709551615` on int64 gave -1, `a[i] = 2**64` gave 0.
# Each is now NumPy's value or a CompileError, decided as NumPy decides a store.
_LITERALS = ["-1", "127", "128", "-129", "255", "256", "65536", "-32769", "2147483648", "-2147483649",
             "4294967296", "2**62", "2**63 - 1", "2**63", "-2**63", "-2**63 - 1", "-(2**63)",
             "18446744073709551615", "2**64 - 1", "2**64", "-2**64", "2**63 * 2",
             "3**40", "3**41", "(2**63) - 1 + 1"]
_INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
_counter = iter(range(10**6))


def _store_kernel(tmp_path, text):
    import importlib.util

    path = tmp_path / f"lit_{next(_counter)}.py"
    path.write_text("import tack\n\n@tack.kernel\ndef k(a):\n    for i in range(a.shape[0]):\n"
                    f"        a[i] = {text}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def _numpy_store(dt, value):
    a = np.zeros(1, dt)
    try:
        a[0] = value
    except OverflowError:
        return None
    return a[0]


def _stores_kernel(tmp_path, texts):
    """One kernel storing each of texts in its own column: a[i, j] = texts[j]."""
    import importlib.util

    path = tmp_path / f"lits_{next(_counter)}.py"
    body = "".join(f"        a[i, {j}] = {text}\n" for j, text in enumerate(texts))
    path.write_text(f"import tack\n\n@tack.kernel\ndef k(a):\n    for i in range(a.shape[0]):\n{body}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


@pytest.mark.parametrize("dt", _INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_integer_type_gets_numpys_value_or_a_compile_error(tmp_path, dt):
    """Each literal NumPy refuses for dt is a CompileError, alone in its kernel; the ones it
    stores are stored, each in a column of one kernel for dt (one build instead of one a
    literal: the language suite's runs compile every build again for each target)."""
    stored, wants = [], []
    for text in _LITERALS:
        steps_fit = text != "2**64 - 1"  # its first step, 2**64, fits no type: refused whatever the store
        want = _numpy_store(dt, eval(text)) if steps_fit else None
        if want is None:
            with pytest.raises(tack.CompileError, match="out of bounds|no 64-bit integer type holds"):
                _store_kernel(tmp_path, text)(np.zeros(2, dt))
        else:
            stored.append(text)
            wants.append(want)
    assert stored, dt
    a = np.zeros((2, len(stored)), dt)
    _stores_kernel(tmp_path, stored)(a)
    for j, text in enumerate(stored):
        assert a[:, j].tolist() == [wants[j], wants[j]], (text, dt)


def test_the_message_names_the_value_and_the_type(tmp_path):
    with pytest.raises(tack.CompileError, match="18446744073709551615 is out of bounds for i64"):
        _store_kernel(tmp_path, "18446744073709551615")(np.zeros(1, np.int64))
    with pytest.raises(tack.CompileError, match="reaches 18446744073709551616, which no 64-bit integer type holds"):
        _store_kernel(tmp_path, "2**64")(np.zeros(1, np.uint64))
    # every step of an expression must fit, not only its value: 2**64 - 1 goes through 2**64
    with pytest.raises(tack.CompileError, match="reaches 18446744073709551616.*18446744073709551615, not 2"):
        _store_kernel(tmp_path, "2**64 - 1")(np.zeros(1, np.uint64))


def test_a_big_literal_meeting_a_signed_element_is_refused(tmp_path):
    import importlib.util

    path = tmp_path / "mix.py"
    path.write_text("import tack\n\n@tack.kernel\ndef k(a):\n    for i in range(a.shape[0]):\n"
                    "        a[i] = a[i] + 9223372036854775808\n")
    spec = importlib.util.spec_from_file_location("mix", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(tack.CompileError, match="9223372036854775808 is out of bounds for i64"):
        mod.k(np.zeros(1, np.int64))
    u = np.ones(1, np.uint64)
    mod.k(u)  # u64 holds it, as in NumPy
    assert u[0] == np.uint64(2**63 + 1)


@tack.kernel
def put_arg(out, v):
    for i in range(out.shape[0]):
        out[i] = v


@tack.kernel
def put_arg_plus_one(out, v):
    for i in range(out.shape[0]):
        out[i] = v + 1


@pytest.mark.parametrize("v", [2**63, 2**63 + 12345, 2**64 - 1])
def test_python_int_argument_above_int64_meets_uint64_like_numpy(v):
    want = np.zeros(2, np.uint64)
    want[:] = v  # NumPy 2 stores it
    out = np.zeros(2, np.uint64)
    put_arg(out, v)
    assert out.tolist() == want.tolist() == [v, v]
    add_arg(out, v)  # u64 + Python int: NumPy's uint64 arithmetic, wrapping
    assert out.tolist() == (want + np.uint64(v)).tolist()
    put_arg(out, 7)  # the small-int build is still the plain one
    assert out.tolist() == [7, 7]


def test_python_int_argument_above_int64_is_refused_against_signed_types():
    with pytest.raises(OverflowError):
        np.zeros(2, np.int64) + 2**63  # NumPy 2's rule
    for dt in (np.int64, np.int32, np.int8):
        a = np.zeros(2, dt)
        with pytest.raises(OverflowError, match=r"9223372036854775808 is out of bounds for i\d+ \(argument 'v'"):
            put_arg(a, 2**63)
        assert a.tolist() == [0, 0]
    # its own arithmetic is a weak int's (int64): refused, not wrapped
    out = np.zeros(2, np.uint64)
    with pytest.raises(OverflowError, match=r"18446744073709551615 is out of bounds for i64 \(argument 'v' of "
                                            r"kernel 'put_arg_plus_one'\)"):
        put_arg_plus_one(out, 2**64 - 1)
    assert out.tolist() == [0, 0]
    with pytest.raises(OverflowError, match="does not fit in 64 bits"):
        put_arg(out, 2**64)
    with pytest.raises(OverflowError, match="-1 is out of bounds for u64"):
        put_arg(out, -1)


# ---------------------------------------------- comparisons with Python ints
# NumPy 2 compares a Python int with an integer array exactly (int8 < 200 is
# True, uint8 == -1 False).  A kernel converted the Python int to the array's
# type instead: a literal out of its range was refused as "out of bounds"
# (saying NumPy 2 raises, which it does not for comparisons), and a run-time
# int -- the loop variable, a shape -- was wrapped, so `a8[0] < out.shape[0]`
# with a shape of 300 compared 100 < 44 and gave False without an error.
_CMP_OPS = ["<", "<=", "==", "!=", ">", ">="]
_CMP_LITERALS = ["-1", "200", "70000", "-2**63", "9223372036854775808"]


def _compare_kernel(tmp_path, rights):
    """A kernel writing, for each right-hand side in turn, the 12 rows of a[i] op right and right
    op a[i]: one build per dtype for all of them (the language suite compiles every build for
    each GPU target, so eight kernels of one right each cost those checks eight times the builds)."""
    import importlib.util

    path = tmp_path / f"cmp_{next(_counter)}.py"
    body = "".join(f"        out[{12 * r + 2 * k}, i] = a[i] {op} {right}\n"
                   f"        out[{12 * r + 2 * k + 1}, i] = {right} {op} a[i]\n"
                   for r, right in enumerate(rights) for k, op in enumerate(_CMP_OPS))
    path.write_text(f"import tack\n\ndef k(a, out, n):\n    for i in range(out.shape[1]):\n{body}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def _edges(dt):
    ii = np.iinfo(dt)
    return np.array(sorted({int(ii.min), int(ii.max), 0, 100} | ({-1} if ii.min < 0 else set())), dtype=dt)


_NP_CMP = {"<": np.less, "<=": np.less_equal, "==": np.equal, "!=": np.not_equal, ">": np.greater,
           ">=": np.greater_equal}


def _numpy_answer(values, w):
    """Each comparison both ways, as NumPy 2 makes it (exactly, as Python compares ints)."""
    rows = []
    for op in _CMP_OPS:
        rows.append(_NP_CMP[op](values, w))
        rows.append(_NP_CMP[op](w, values))
        assert rows[-2].tolist() == [eval(f"{int(v)} {op} {w}") for v in values]
    return np.array(rows)


_CMP_RIGHTS = _CMP_LITERALS + ["n", "out.shape[1] + 200", "n - out.shape[1] * 100"]


# the compiled kernel of all 96 comparisons takes about 4 s to build for each dtype, uint64's
# longest, and each build is compiled again by the language suite's GPU checks and its
# unoptimized run.  Make test-all and debug mode compare every dtype with every right-hand
# side.  Under make test the compiled run takes a narrow signed and unsigned type and both
# 64-bit ones, each with the four right-hand sides that reach its edges from both sides (half
# the comparisons of the four full builds), so that every right-hand side is compiled:
# unsigned types meet -1 and a negative run-time value, int8 and uint16 a literal and a
# run-time value past their maximum, int64 2**63 and -2**63, uint64 2**63.
_CMP_COMPILED = ([(dt, tuple(_CMP_RIGHTS)) for dt in _INT_DTYPES] if os.environ.get("TACK_TEST_ALL") == "1" else [
    (np.int8, ("-1", "200", "out.shape[1] + 200", "-2**63")),
    (np.uint16, ("-1", "70000", "n - out.shape[1] * 100", "n")),
    (np.int64, ("9223372036854775808", "-2**63", "n", "70000")),
    (np.uint64, ("-1", "9223372036854775808", "n - out.shape[1] * 100", "out.shape[1] + 200"))])


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_a_python_int_compares_exactly_with_every_integer_type(tmp_path, jit):
    runs = _CMP_COMPILED if jit else [(dt, tuple(_CMP_RIGHTS)) for dt in _INT_DTYPES]
    kernels = {}  # one kernel for each list of right-hand sides, built for each of its dtypes
    for dt, rights in runs:
        if rights not in kernels:
            kernels[rights] = tack.kernel(_compare_kernel(tmp_path, rights), jit=jit)
        a = _edges(dt)
        out = np.zeros((12 * len(rights), a.size), bool)
        kernels[rights](a, out, 300)
        for r, right in enumerate(rights):
            w = eval(right, {"n": 300, "out": out})
            assert out[12 * r:12 * r + 12].tolist() == _numpy_answer(a, w).tolist(), (right, dt)


def test_make_test_compiles_every_right_hand_side():
    """The compiled run's sample (_CMP_COMPILED) still compiles each right-hand side, and takes
    signed and unsigned, narrow and 64-bit types."""
    assert {right for _, rights in _CMP_COMPILED for right in rights} == set(_CMP_RIGHTS)
    assert {np.dtype(dt).kind for dt, _ in _CMP_COMPILED} == {"i", "u"}
    assert {1, 8} <= {np.dtype(dt).itemsize for dt, _ in _CMP_COMPILED}


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_the_loop_variable_compares_exactly(jit):
    # i < a[0] with i past int8's range: i was wrapped to int8 (250 became -6)
    def below(a, out):
        for i in range(out.shape[0]):
            out[i] = i < a[0]

    a = np.array([100], np.int8)
    out = np.zeros(300, bool)
    tack.kernel(below, jit=jit)(a, out)
    assert out.tolist() == [i < 100 for i in range(300)]


@tack.kernel
def below_arg(a, k, out):
    for i in range(out.shape[0]):
        out[i] = a[i] < k


def test_a_negative_argument_against_uint64_is_still_refused():
    # a Python int argument meeting uint64 keeps its uint64 conversion (2**64 - 1
    # is accepted), so a negative one is refused when the call is made, not compared
    u = np.array([0, 5, 2**64 - 1], np.uint64)
    out = np.zeros(3, bool)
    below_arg(u, 2**64 - 1, out)
    assert out.tolist() == [True, True, False]
    with pytest.raises(OverflowError, match="-1 is out of bounds for u64"):
        below_arg(u, -1, out)
    below_arg(np.array([0, 5, 255], np.uint8), 200, out)  # an 8-bit one compares exactly
    assert out.tolist() == [True, True, False]
    below_arg(np.array([0, 5, 255], np.uint8), -1, out)
    assert out.tolist() == [False, False, False]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_min_and_max_pick_by_the_exact_comparison(jit):
    # min(u8, a shape of 300) compared 200 with 300 wrapped to 44 and gave 44;
    # Python's min picks 200, and the value picked takes the array's type
    def pick(a, out):
        for i in range(out.shape[1]):
            out[0, i] = min(a[i], out.shape[1])
            out[1, i] = max(a[i], out.shape[1] - 400)
            out[2, i] = min(out.shape[1] - 400, a[i])

    a = np.resize(np.array([200, 5, 0, 255], np.uint8), 300)
    out = np.zeros((3, 300), np.int64)
    tack.kernel(pick, jit=jit)(a, out)
    assert out[0].tolist() == [min(int(v), 300) for v in a]
    assert out[1].tolist() == a.tolist()  # max(v, -100) is v
    assert out[2].tolist() == [np.uint8(-100 % 256)] * 300  # -100 picked, then wrapped to uint8 as documented


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("sdt", [np.int8, np.int64], ids=["i8", "i64"])
def test_a_signed_integer_compares_exactly_with_uint64(sdt, jit):
    # their promoted type is float64, which made 2**62 + 1 == 2**62 True and
    # 2**63 - 1 < 2**63 False; NumPy 2 compares them exactly
    def both_ways(s, u, out):
        for i in range(out.shape[1]):
            out[0, i] = s[i] < u[i]
            out[1, i] = s[i] == u[i]
            out[2, i] = s[i] >= u[i]
            out[3, i] = u[i] <= s[i]
            out[4, i] = u[i] != s[i]
            out[5, i] = u[i] > s[i]

    ii = np.iinfo(sdt)
    s = np.array([ii.max, -1, min(2**62 + 1, ii.max), ii.min, 0, 5], sdt)
    u = np.array([2**63 if sdt == np.int64 else ii.max + 1, 2**64 - 1, 2**62, 0, 0, 5], np.uint64)
    out = np.zeros((6, s.size), bool)
    tack.kernel(both_ways, jit=jit)(s, u, out)
    S, U = [int(v) for v in s], [int(v) for v in u]
    want = [[a < b for a, b in zip(S, U)], [a == b for a, b in zip(S, U)], [a >= b for a, b in zip(S, U)],
            [b <= a for a, b in zip(S, U)], [b != a for a, b in zip(S, U)], [b > a for a, b in zip(S, U)]]
    assert out.tolist() == want


# ------------------------------------ expressions of literals the lowering did not fold
# Shifts, ~, abs, min, max, and/or of literals and True/False meeting an int were left to
# the ordinary lowering: weak ints that are not constants, as the loop variable is, so
# they took an int16 operand's type without the check a literal gets -- `(1 << 20) +
# a16[i]` gave a16[i] (2**20 wrapped to 0), `True * 100000 + a16[i]` 100000 wrapped to
# -31072 -- where NumPy 2 raises OverflowError. Found by differential fuzzing.
_UNFOLDED_OUT_OF_RANGE = [("1 << 20", 1048576), ("2**20 >> 2", 262144), ("~100000", -100001),
                          ("abs(-100000)", 100000), ("max(100000, 5)", 100000), ("min(3, -70000)", -70000),
                          ("0 or 100000", 100000), ("True and 100000", 100000), ("True * 100000", 100000),
                          ("(True + True) * 20000", 40000), ("-(1 << 15) - True", -32769),
                          ("max(True, 100000)", 100000), ("(True | False) * 100000", 100000),
                          ("(False ^ True) * 40000", 40000), ("32768 or 2**63", 32768)]


def _add_kernel(tmp_path, texts, jit=True):
    """out[k, i] = (texts[k]) + a[i], one kernel for them all."""
    import importlib.util

    path = tmp_path / f"lit_{next(_counter)}.py"
    body = "".join(f"        out[{k}, i] = ({t}) + a[i]\n" for k, t in enumerate(texts))
    path.write_text(f"import tack\n\ndef k(a, out):\n    for i in range(a.shape[0]):\n{body}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return tack.kernel(mod.k, jit=jit)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("text, value", _UNFOLDED_OUT_OF_RANGE, ids=[t for t, _ in _UNFOLDED_OUT_OF_RANGE])
def test_an_expression_of_literals_is_checked_like_its_value(tmp_path, text, value, jit):
    assert eval(text) == value
    with pytest.raises(OverflowError):
        np.zeros(1, np.int16) + value  # NumPy 2's rule
    with pytest.raises(tack.CompileError, match=f"Python integer {value} is out of bounds for i16"):
        _add_kernel(tmp_path, [text], jit)(np.zeros(2, np.int16), np.zeros((1, 2), np.int16))


# in range, each is Python's value, but a shift is NumPy's int64 shift (test_shifts.py)
_FOLDED_IN_RANGE = [("1 << 14", 16384), ("-9 >> 1", -5), ("~5", -6), ("abs(-7)", 7), ("max(3, 9, -1)", 9),
                    ("min(3, -2, 7)", -2), ("0 or 1000", 1000), ("7 and 0", 0), ("True * 30000", 30000),
                    ("-True", -1), ("1 << 64", 0), ("-1 >> 70", -1), ("5 << -1", 0), ("(1 << 63) >> 60", -8)]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_folded_expressions_of_literals_in_range(tmp_path, jit):
    a = np.array([0, 1, -5, 2], np.int16)
    out = np.zeros((len(_FOLDED_IN_RANGE), 4), np.int16)
    _add_kernel(tmp_path, [t for t, _ in _FOLDED_IN_RANGE], jit)(a, out)
    for (text, value), row in zip(_FOLDED_IN_RANGE, out):
        assert row.tolist() == (a + np.int16(value)).tolist(), text
