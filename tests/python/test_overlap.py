"""The last vector of an ndrange row overlapping the one before (emit_inner.c).

When a whole row's remainder after its last whole vector is more than half a
vector, the C code runs the row in lanes up to the remainder and then one
whole vector ending at the row's end, running some iterations a second time.
That is only right where a second run has the same effect: the written
arrays are not read in the body, the call's arrays share no memory, there
are no private sums, and the stored elements are plain scalars.  These tests
compare every row length from 1 to 41 (remainders of every size, for every
vector width) with NumPy, exactly, and check where the overlap is and is not
generated."""


import numpy as np
import pytest

import tack

MARK = "the remainder as a vector overlapping the last"


@tack.kernel
def shift_add(a, out, c):
    for i, j in tack.ndrange(out.shape[0], out.shape[1]):
        out[i, j] = a[i, j] * c + a[i, j + 1]


@tack.kernel
def box3(a, out):
    n0, n1, n2 = out.shape[0], out.shape[1], out.shape[2]
    for i, j, k in tack.ndrange(n0, n1, n2):
        out[i, j, k] = a[i + 1, j + 1, k] + a[i + 1, j + 1, k + 2] + a[i, j + 1, k + 1] + a[i + 2, j + 1, k + 1]


@tack.kernel
def accumulate(a, out):
    for i, j in tack.ndrange(out.shape[0], out.shape[1]):
        out[i, j] = out[i, j] + a[i, j + 1]


@tack.kernel
def two_outputs(a, lo, hi):
    for i, j in tack.ndrange(lo.shape[0], lo.shape[1]):
        x = a[i, j]
        lo[i, j] = min(x, a[i, j + 1])
        hi[i, j] = max(x, a[i, j + 1])


@tack.kernel
def widen(a, out):
    for i, j in tack.ndrange(out.shape[0], out.shape[1]):
        out[i, j] = a[i, j] + a[i, j + 1]


@tack.kernel
def to_complex(a, out):
    for i, j in tack.ndrange(out.shape[0], out.shape[1]):
        out[i, j] = complex(a[i, j], a[i, j + 1])


def _input(rows, cols, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((rows, cols)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -50), min(info.max, 50), size=(rows, cols)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int16, np.uint8, np.int64])
def test_every_row_length_matches_numpy(dtype):
    c = dtype(3)
    for cols in range(1, 42):
        a = _input(5, cols + 1, dtype, seed=cols)
        out = np.zeros((5, cols), dtype)
        shift_add(a, out, c)
        want = (a[:, :-1] * c + a[:, 1:]).astype(dtype)
        np.testing.assert_array_equal(out, want, err_msg=f"{np.dtype(dtype).name}, rows of {cols}")


def test_generated_where_a_second_run_is_harmless():
    a, out = np.ones((4, 39), np.float32), np.zeros((4, 38), np.float32)
    assert MARK in shift_add.generated_source(a, out, np.float32(2), target="c")
    lo, hi = np.zeros((4, 38), np.float32), np.zeros((4, 38), np.float32)
    assert MARK in two_outputs.generated_source(a, lo, hi, target="c")


def test_not_generated_where_the_body_reads_what_it_writes():
    a, out = np.ones((4, 39), np.float32), np.zeros((4, 38), np.float32)
    assert MARK not in accumulate.generated_source(a, out, target="c")
    accumulate(a, out)
    accumulate(a, out)
    np.testing.assert_array_equal(out, np.full((4, 38), 2, np.float32))


def test_not_generated_when_the_arrays_share_memory():
    buf = np.arange(4 * 40, dtype=np.float32)
    a, out = buf[: 4 * 39].reshape(4, 39), buf[1 : 1 + 4 * 38].reshape(4, 38)  # one buffer: written cells are read
    assert MARK not in widen.generated_source(a, out, target="c")
    assert MARK in widen.generated_source(np.ones((4, 39), np.float32), np.zeros((4, 38), np.float32), target="c")


def test_not_generated_for_complex_elements():
    a, out = np.ones((4, 39), np.float64), np.zeros((4, 38), np.complex128)
    assert MARK not in to_complex.generated_source(a, out, target="c")
    to_complex(a, out)
    np.testing.assert_array_equal(out, a[:, :-1] + 1j * a[:, 1:])


def _box3_check(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n + 2, n + 2, n + 2)).astype(np.float32)
    want = a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:] + a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1]
    out = np.zeros((n, n, n), np.float32)
    box3(a, out)
    np.testing.assert_array_equal(out, want)
    return a, out


@pytest.mark.parametrize("n", [3, 10, 16, 19, 40])
def test_a_3d_stencil(n):
    a, out = _box3_check(n)
    assert MARK in box3.generated_source(a, out, target="c")


def test_chunks_that_cut_rows():
    """Seven threads: chunk boundaries fall inside rows (those rows take the
    partial-row copy), the rows between them take the overlap."""
    with tack.config.override(num_threads=7):
        assert tack._core.device_threads("cpu") == 7
        for n in (9, 14, 23, 38, 61):
            _box3_check(n)


def test_the_mixed_width_body_uses_the_widest_store():
    a = _input(3, 40, np.float64)
    lo, hi = np.zeros((3, 39), np.float64), np.zeros((3, 39), np.float64)
    src = two_outputs.generated_source(a, lo, hi, target="c")
    assert "TK_VEC_BYTES / 8" in src
    two_outputs(a, lo, hi)
    np.testing.assert_array_equal(lo, np.minimum(a[:, :-1], a[:, 1:]))
    np.testing.assert_array_equal(hi, np.maximum(a[:, :-1], a[:, 1:]))


# ---- the same in a serial innermost loop (emit_stmt.c, the plain copy in lanes)

def _rows_nested(a, out, last):
    for i in range(out.shape[0]):
        k = 0
        x = a[0, 0]
        for k0 in range(out.shape[1]):
            k = k0 + 1
            x = a[i, k] * 2 + a[i, k - 1]
            out[i, k0] = x
        last[i, 0] = k
        last[i, 1] = x


rows_nested = tack.kernel(_rows_nested)
rows_nested_py = tack.kernel(_rows_nested, jit=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8])
def test_nested_rows_of_every_length_match_python(dtype):
    for cols in range(1, 42):
        a = _input(4, cols + 1, dtype, seed=cols)
        out, last = np.zeros((4, cols), dtype), np.zeros((4, 2), dtype)
        want, want_last = np.zeros((4, cols), dtype), np.zeros((4, 2), dtype)
        rows_nested(a, out, last)
        rows_nested_py(a, want, want_last)
        np.testing.assert_array_equal(out, want, err_msg=f"{np.dtype(dtype).name}, rows of {cols}")
        # the locals after the loop hold the last iteration's values (OpenMP lastprivate)
        np.testing.assert_array_equal(last, want_last, err_msg=f"{np.dtype(dtype).name}, rows of {cols}")


def test_nested_rows_generated_only_where_safe():
    a, out, last = np.ones((4, 39), np.float32), np.zeros((4, 38), np.float32), np.zeros((4, 2), np.float32)
    assert MARK in rows_nested.generated_source(a, out, last, target="c")
    shared = np.zeros(4 * 38, np.float32)  # last inside out's buffer: not restrict, no lanes
    out2, last2 = shared.reshape(4, 38), shared[:8].reshape(4, 2)
    assert MARK not in rows_nested.generated_source(a, out2, last2, target="c")
