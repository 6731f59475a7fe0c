"""Strided views as kernel arguments: NumPy views and strided DLPack tensors
are read and written in place on the CPU, in a build of their own (the
signature's `strided` bit), while contiguous arguments keep their code."""
import re

import numpy as np
import pytest

import tack


@tack.kernel
def update(out, x):
    for i in range(out.shape[0]):
        out[i] = 2 * x[i] + 1


@tack.kernel
def update2(out, x):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = x[i, j] * 3 + i - j


@tack.kernel
def update3(out, x):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for k in range(out.shape[2]):
                out[i, j, k] = x[i, j, k] + 100 * i + 10 * j + k


@tack.kernel
def total(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i]


@tack.kernel
def read_at(x, idx, out):
    for i in range(1):
        out[0] = x[idx]


DTYPES = [np.float32, np.float64, np.int64, np.int32, np.complex128]


def views_1d(dt):
    m = (np.arange(7 * 9) % 13).astype(dt).reshape(7, 9)
    a = (np.arange(20) % 11).astype(dt)
    return [("m[:, 0]", m, lambda b: b[:, 0]),
            ("m[:, 3]", m, lambda b: b[:, 3]),
            ("a[::2]", a, lambda b: b[::2]),
            ("a[::-1]", a, lambda b: b[::-1]),
            ("a[15:2:-3]", a, lambda b: b[15:2:-3])]


@pytest.mark.parametrize("dt", DTYPES)
def test_1d_views_are_read_and_written_in_place(dt):
    for name, base, view in views_1d(dt):
        b = base.copy()
        src = (np.arange(view(b).shape[0]) * 3 % 7).astype(dt)
        want = b.copy()
        view(want)[...] = 2 * src + 1
        update(view(b), src)
        np.testing.assert_array_equal(b, want, err_msg=name)
        # and read: the strided view as the input
        out = np.zeros(view(b).shape[0], dt)
        update(out, view(b))
        np.testing.assert_array_equal(out, 2 * view(b) + 1, err_msg=name)


@pytest.mark.parametrize("dt", [np.float32, np.int64, np.complex128])
def test_transposes_and_3d_views_with_mixed_strides(dt):
    m = (np.arange(6 * 5) % 17).astype(dt).reshape(6, 5)
    want = m.copy()
    want.T[...] = m.T * 3 + np.arange(5)[:, None] - np.arange(6)[None, :]
    update2(m.T, m.T.copy())
    np.testing.assert_array_equal(m, want)

    base = (np.arange(6 * 7 * 8) % 23).astype(dt).reshape(6, 7, 8)
    for view in (lambda b: b[::2, ::-1, 1::3], lambda b: b.transpose(2, 0, 1)[::-1],
                 lambda b: b[:, 3, None, ::-2], lambda b: np.swapaxes(b, 0, 2)[1:, ::3, :]):
        b = base.copy()
        v = view(b)
        x = (np.arange(v.size) % 5).astype(dt).reshape(v.shape)
        i, j, k = np.indices(v.shape)
        want = b.copy()
        view(want)[...] = x + 100 * i + 10 * j + k
        update3(v, x)
        np.testing.assert_array_equal(b, want)
        out = np.zeros(v.shape, dt)  # a strided input
        update3(out, v)
        np.testing.assert_array_equal(out, v + 100 * i + 10 * j + k)


def test_zero_stride_broadcast_views_are_read_and_never_written():
    x = np.broadcast_to(np.float64(1.5), (10,))
    out = np.zeros(1)
    total(x, out)
    assert out[0] == 15.0
    col = np.broadcast_to(np.arange(3.0)[:, None], (3, 4))  # zero stride on axis 1
    out2 = np.zeros((3, 4))
    update2(out2, col)
    np.testing.assert_array_equal(out2, col * 3 + np.arange(3)[:, None] - np.arange(4)[None, :])
    with pytest.raises(ValueError, match="read-only"):  # NumPy marks broadcasts read-only
        update(np.broadcast_to(np.zeros(1), (4,)), np.zeros(4))
    # A writable view whose elements share memory is refused all the same.
    w = np.lib.stride_tricks.as_strided(np.zeros(4), shape=(4,), strides=(0,), writeable=True)
    with pytest.raises(ValueError, match="'out'.*share memory"):
        update(w, np.arange(4.0))
    overlapping = np.lib.stride_tricks.as_strided(np.zeros(8), shape=(3, 3), strides=(16, 8), writeable=True)
    with pytest.raises(ValueError, match="share memory"):
        update2(overlapping, np.zeros((3, 3)))


def test_a_stride_that_is_not_a_whole_number_of_elements_is_refused():
    raw = np.zeros(40, np.uint8)
    odd = np.ndarray((3,), np.float64, raw, 0, (12,))
    with pytest.raises(ValueError, match=r"argument 'out'.*12 bytes.*8-byte elements.*copy"):
        update(odd, np.zeros(3))


def test_dlpack_strided_torch_tensors_in_place():
    torch = pytest.importorskip("torch")
    t = torch.arange(10.0)
    update(t[::2], torch.arange(5.0))
    np.testing.assert_array_equal(t.numpy(), [1, 1, 3, 3, 5, 5, 7, 7, 9, 9])
    m = torch.arange(12.0).reshape(3, 4)
    mt = m.T
    src = torch.ones(4, 3)
    update2(mt, src)
    want = 3 + np.arange(4)[:, None] - np.arange(3)[None, :]
    np.testing.assert_array_equal(m.numpy().T, want)
    out = np.zeros((4, 3))
    update2(out, torch.arange(12.0).reshape(3, 4).T)  # read through a transposed tensor
    np.testing.assert_array_equal(out, np.arange(12.0).reshape(3, 4).T * 3 + want - 3)
    # tack.from_dlpack gives the same view as a tack.Array, which a kernel writes in place too
    v = tack.from_dlpack(t[1::2])
    assert v.strided
    update(v, torch.full((5,), 10.0))
    np.testing.assert_array_equal(t.numpy(), [1, 21, 3, 21, 5, 21, 7, 21, 9, 21])


def test_contiguous_and_strided_calls_are_two_builds_and_both_right():
    contiguous_before = update.generated_source(np.zeros(8), np.zeros(8))
    assert not re.search(r"\ba\d+_t\d", contiguous_before)  # no stride terms in C order's code
    a = np.zeros(16)
    update(a[::2], np.arange(8.0))
    update(a[1::2], np.arange(8.0) + 10)
    np.testing.assert_array_equal(a[::2], 2 * np.arange(8.0) + 1)
    np.testing.assert_array_equal(a[1::2], 2 * np.arange(8.0) + 21)
    c = np.zeros(8)
    update(c, np.arange(8.0))
    np.testing.assert_array_equal(c, 2 * np.arange(8.0) + 1)
    strided = update.generated_source(a[::2], np.zeros(8))
    assert re.search(r"a0\[\(v\d+_i\) \* a0_t0\]", strided)
    assert "a1_t0" not in strided  # only the strided argument gets strides
    assert update.generated_source(np.zeros(8), np.zeros(8)) == contiguous_before


def test_a_function_called_with_a_strided_array_is_specialized():
    @tack.func
    def get(x, i):
        return x[i]

    @tack.kernel
    def via(out, x):
        for i in range(out.shape[0]):
            out[i] = get(x, i) * 2

    m = np.arange(12.0).reshape(3, 4)
    out = np.zeros(3)
    via(out, m[:, 2])
    np.testing.assert_array_equal(out, m[:, 2] * 2)
    via(out, m[0, :3].copy())
    np.testing.assert_array_equal(out, m[0, :3] * 2)


def test_bounds_checks_raise_on_strided_arrays():
    m = np.arange(20.0).reshape(4, 5)
    out = np.zeros(1)
    read_at(m[:, 1], 3, out)
    assert out[0] == 16.0
    read_at(m[::-1, 1], -1, out)  # Python's negative index, through a negative stride
    assert out[0] == 1.0
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        read_at(m[:, 1], 4, out)
    with pytest.raises(IndexError, match="out of bounds"):
        read_at(m[::-1, 1], -5, out)


@tack.kernel
def shift(out, x):
    for i in range(out.shape[0] - 1):
        out[i] = x[i + 1]


def test_a_strided_output_overlapping_an_input_is_caught_by_the_alias_check():
    a = np.arange(10.0)
    with pytest.raises(ValueError, match="'out' and 'x'.*share memory"):
        shift(a[::2], a[2::2])  # the same elements, shifted by one
    with pytest.raises(ValueError, match="'out' and 'x'.*are the same array"):
        shift(a[::2], a[::2])
    m = np.arange(20.0).reshape(4, 5)  # interleaved columns share no element: allowed
    shift(m[:, 0], m[:, 1])
    np.testing.assert_array_equal(m[:3, 0], [6, 11, 16])
    b = np.arange(6.0)  # an update in place through one strided view twice runs
    update(b[::-2], b[::-2])
    np.testing.assert_array_equal(b, [0, 3, 2, 7, 4, 11])


def test_overlap_of_strided_views_is_conservative_and_exact_for_columns():
    m = np.zeros((8, 8))
    update(m[:, 0], m[:, 1])  # apart: the restrict build
    src = update.generated_source(m[:, 0], m[:, 1])
    assert "restrict a0" in src
    src = update.generated_source(m[::2, 0], m.T[0])  # m[0, 0] in both: no restrict
    assert "restrict" not in src.split("tack_entry")[1].split("{")[1]


def test_overlap_below_the_first_array_with_a_stride_that_is_no_power_of_two():
    # rows 1.. and rows ..-1 of one column of a 3-wide f64 matrix: the second begins 24 bytes below
    # the first, and 24 does not divide 2**64 (an unsigned residue of the difference said "apart")
    m = np.arange(30.0).reshape(10, 3)
    with pytest.raises(ValueError, match="'out' and 'x'.*share memory"):
        shift(m[1:, 0], m[:-1, 0])
    src = update.generated_source(m[1:, 0], m[:-1, 0])
    assert "restrict" not in src.split("tack_entry")[1].split("{")[1]


def test_fields_of_a_record_array_are_apart():
    # each field with its components is one block a record apart (strided.c merges the contiguous axes)
    rec = np.zeros(8, np.dtype([("p", "<f4", (3,)), ("v", "<f4", (3,)), ("m", "<f4")]))
    assert "restrict a0" in update.generated_source(rec["v"][:, 0], rec["p"][:, 1])
    src = shift_rows.generated_source(rec["v"], rec["p"])
    assert "restrict a0" in src
    rec["p"] = np.arange(24).reshape(8, 3)
    shift_rows(rec["v"], rec["p"])
    assert rec["v"][:7].tolist() == rec["p"][1:].tolist()


@tack.kernel
def shift_rows(out, x):
    for i in range(out.shape[0] - 1):
        for k in range(3):
            out[i, k] = x[i + 1, k]


def test_gpu_targets_index_strided_arguments_with_their_strides():
    m = np.zeros((4, 4))
    for target in ("cuda", "hip", "opencl"):  # once refused with advice to copy; test_strided_gpu.py runs them
        src = update.generated_source(m[:, 0], np.zeros(4), target=target)
        assert "a0[(v0_i) * a0_t0]" in src and "a1_t0" not in src, target
