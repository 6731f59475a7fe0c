"""tack.Array from Python: len, single elements (a[i], a[i, j]), and the
views that share storage -- leading-axis slices with step 1, rows, reshape
and ravel -- with NumPy's semantics where Tack can give them and a clear
error where it cannot."""

import gc
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tack

ROOT = pathlib.Path(__file__).resolve().parents[2]


def grid():
    return tack.array(np.arange(12.0).reshape(3, 4))  # f64


# ------------------------------------------------------------------ elements
def test_len_is_the_first_axis():
    assert len(grid()) == 3 and len(tack.zeros(7)) == 7 and len(tack.zeros((0, 3))) == 0
    with pytest.raises(TypeError, match="0-d"):
        len(tack.array(np.float32(1.0)))


def test_single_elements_are_numpy_scalars():
    a = grid()
    assert a[1, 2] == 6.0 and type(a[1, 2]) is np.float64
    assert a[-1, -1] == 11.0 and a[-3, 0] == 0.0
    b = tack.array(np.arange(5, dtype=np.int16))
    assert b[3] == 3 and type(b[3]) is np.int16 and b[-1] == 4
    assert type(tack.array([True, False])[1]) is np.bool_
    assert tack.array(np.float32(2.5))[()] == np.float32(2.5)
    # numpy-compatible index types
    assert a[np.int64(2), np.int8(1)] == 9.0


def test_an_element_is_a_copy():
    a = tack.zeros(3, tack.i32)
    e = a[1]
    a.fill(5)
    assert e == 0


def test_vector_elements_are_their_components():
    p = tack.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=tack.vec3)
    np.testing.assert_array_equal(p[1], [3, 4, 5])
    assert p[1].dtype == np.float32


def test_out_of_bounds_names_the_index_and_the_shape():
    a = grid()
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3 \(array shape \(3, 4\)\)"):
        a[3]
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 1 with size 4 \(array shape \(3, 4\)\)"):
        a[0, -5]
    with pytest.raises(IndexError, match="too many indices for array: array is 2-dimensional, but 3 were indexed"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices.*0-dimensional"):
        tack.array(np.float32(1.0))[0]


@pytest.mark.parametrize("key", [slice(None, None, 2), slice(None, None, -1), (slice(0, 2), 1),
                                 (slice(0, 2), slice(1, 3)), (slice(None), 0), (slice(2, 0, -1), slice(None, None, -2))])
def test_steps_columns_and_partial_slices_are_strided_views(key):
    a, want = grid(), grid().numpy()
    v = a[key]
    assert v.strided and v.shape == want[key].shape
    np.testing.assert_array_equal(v.numpy(), want[key])  # gathered into a copy
    np.testing.assert_array_equal(a.T.numpy(), want.T)
    np.testing.assert_array_equal(a.transpose(1, 0)[key].numpy(), want.T[key])
    assert v[0].shape == want[key][0].shape
    np.testing.assert_array_equal(np.asarray(v[0]), want[key][0])
    with pytest.raises(BufferError, match="strided view"):
        v.fill(1.0)
    shared = np.from_dlpack(v)  # DLPack carries the strides: the same memory, no copy
    np.testing.assert_array_equal(shared, want[key])
    assert shared.ctypes.data == v.ptr and shared.strides == want[key].strides


def test_a_kernel_run_as_python_takes_a_strided_tack_view():
    @tack.kernel(jit=False)
    def negate(x):
        for i in range(x.shape[0]):
            x[i] = -x[i]

    a = grid()
    negate(a[:, 2])
    np.testing.assert_array_equal(a.numpy()[:, 2], [-2, -6, -10])


@pytest.mark.parametrize("key, words", [
    (None, "only ints, slices"),
    (True, "a bool is not an index"),
    (1.0, "only ints, slices"),
    (np.array([0.0, 1.0]), "an array of float64 is not an index"),
    ([[0.5]], "an array of float64 is not an index"),
    (([0], None), "None (numpy.newaxis) is not an index"),
    (np.True_, "a bool is not an index"),
])
def test_indexing_that_needs_strides_or_a_copy_is_refused(key, words):
    with pytest.raises(IndexError, match=re.escape(words)) as e:
        grid()[key]
    assert ".numpy()" in str(e.value) and "kernel" in str(e.value)


ELLIPSES = [(Ellipsis, 0), (Ellipsis, slice(None, None, -1)), (Ellipsis, 1, slice(0, 2)), (1, Ellipsis, 2),
            (Ellipsis, 1, 2, 0), (slice(None, None, 2), Ellipsis, 0), (Ellipsis, [2, 0]), ([0], Ellipsis, 0)]


@pytest.mark.parametrize("dev", tack.devices())
def test_an_ellipsis_anywhere_is_numpys(dev):
    # rgb[..., 0] and img[..., ::-1], an image's channel and its BGR order, were refused ("an
    # Ellipsis must be the last index"); the Ellipsis stands for the axes the other indices leave
    ref = np.arange(60, dtype=np.uint8).reshape(4, 5, 3)
    a = tack.array(ref, device=dev)
    for key in ELLIPSES:
        got, want = a[key], ref[key]
        assert isinstance(got, tack.Array) and got.shape == want.shape, key
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(IndexError, match=re.escape("an index can only have a single ellipsis ('...')")):
        a[..., 0, ...]
    with pytest.raises(IndexError, match="too many indices for array: array is 3-dimensional, but 4 were indexed"):
        a[..., 0, 0, 0, 0]

    @tack.kernel
    def invert(x):
        for i, j in tack.ndrange(x.shape):
            x[i, j] = 255 - x[i, j]

    invert(a[..., 0])  # a view: the kernel writes the red channel in place
    want = ref.copy()
    want[..., 0] = 255 - want[..., 0]
    np.testing.assert_array_equal(a.numpy(), want)


GATHERS = [
    np.array([2, 0, -1]), [1, 1], np.array([[0, 1], [2, 0]]), np.array([2, 0], np.uint8), [],
    np.array([True, False, True]), np.arange(12.0).reshape(3, 4) % 3 == 0,
    (1, [3, 0]), (slice(0, 3, 2), [1, 3]), ([0, 2], [1, 3]), ([2, 1], Ellipsis), (np.array([False, True, True]), 2),
]


@pytest.mark.parametrize("dev", tack.devices())
def test_index_arrays_and_masks_give_numpys_copy(dev):
    # a NumPy index array or mask raised "only integer scalar arrays can be converted to a scalar
    # index", a TypeError from NumPy's __index__, where the documentation promised an IndexError
    ref = np.arange(12.0).reshape(3, 4)
    a = tack.array(ref, device=dev)
    for key in GATHERS:
        got = a[key]
        want = ref[key]
        assert isinstance(got, tack.Array) and got.device == dev and got.dtype is tack.f64, key
        assert got.shape == want.shape and got.numpy().tolist() == want.tolist(), key
        if got.size:
            got.fill(-1.0)  # a copy, as NumPy's: the array keeps its values
    assert a.numpy().tolist() == ref.tolist()
    idx = tack.array(np.array([2, 0]), device=dev)  # a Tack array of ints is an index array too
    assert a[idx].numpy().tolist() == ref[[2, 0]].tolist()
    assert a.T[[3, 0]].numpy().tolist() == ref.T[[3, 0]].tolist()  # of a strided view
    v = tack.array(np.arange(12.0, dtype=np.float32).reshape(4, 3), dtype=tack.vec3, device=dev)
    g = v[[3, 1]]  # whole vec3 elements: the components are no axis an index reaches
    assert g.dtype is tack.vec3 and g.shape == (2,) and g.numpy().tolist() == [[9, 10, 11], [3, 4, 5]]
    with pytest.raises(IndexError, match="too many indices for array: array is 1-dimensional, but 2 were"):
        v[[0], [1]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        a[[0, 3]]
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0"):
        a[np.array([True, False])]


# --------------------------------------------------------------------- views
def test_rows_and_leading_slices_are_views():
    a = grid()
    item = 8
    row = a[1]
    assert row.shape == (4,) and row.ptr == a.ptr + 4 * item
    np.testing.assert_array_equal(row.numpy(), [4, 5, 6, 7])
    s = a[1:3]
    assert s.shape == (2, 4) and s.ptr == a.ptr + 4 * item
    np.testing.assert_array_equal(s.numpy(), np.arange(4.0, 12.0).reshape(2, 4))
    assert a[-2:].shape == (2, 4) and a[-2:].ptr == s.ptr
    assert a[1:3, :].shape == (2, 4) and a[1, ...].shape == (4,) and a[...].shape == (3, 4)
    part = a[2, 1:3]
    assert part.shape == (2,) and part.ptr == a.ptr + 9 * item
    np.testing.assert_array_equal(part.numpy(), [9, 10])
    assert a[2:1].shape == (0, 4) and a[5:9].shape == (0, 4)  # empty, as in NumPy
    assert a[()].shape == (3, 4)
    z = tack.array(np.float32(3.0))
    assert z[...].shape == () and z[...].ptr == z.ptr


def test_writes_through_a_view_reach_the_base():
    @tack.kernel
    def bump(x):
        for i in range(x.shape[0]):
            x[i] += 100.0

    a = grid()
    bump(a[1])
    bump(a.ravel()[10:])
    np.testing.assert_array_equal(a.numpy(), [[0, 1, 2, 3], [104, 105, 106, 107], [8, 9, 110, 111]])
    a[0].fill(-1)
    tack.copyto(a[2:3], [7, 7, 7, 7])
    np.testing.assert_array_equal(a.numpy()[[0, 2]], [[-1] * 4, [7] * 4])


def test_reshape_and_ravel_are_views():
    a = grid()
    r = a.reshape(4, -1)
    assert r.shape == (4, 3) and r.ptr == a.ptr and r.dtype is a.dtype
    assert a.reshape((2, 2, 3)).shape == (2, 2, 3) and a.reshape([12]).shape == (12,)
    assert a.reshape(-1).shape == (12,) and a[1:3].reshape(-1).shape == (8,)
    assert tack.zeros((0, 4)).reshape(-1, 2).shape == (0, 2)
    # a NumPy array as the shape was read as one int (its __index__) and refused by NumPy
    assert a.reshape(np.array([2, 6])).shape == (2, 6) and a.reshape(np.int64(12)).shape == (12,)
    assert a.reshape(np.int64(6), np.int32(-1)).shape == (6, 2)
    f = a.ravel()
    assert f.shape == (12,) and f.ptr == a.ptr
    assert a[2].ravel().ptr == a.ptr + 8 * 8
    np.testing.assert_array_equal(a.reshape(2, 6).numpy(), np.arange(12.0).reshape(2, 6))


@pytest.mark.parametrize("shape, exc, words", [
    ((5, -1), ValueError, "cannot reshape an array of size 12 (shape (3, 4)) into shape (5, -1)"),
    ((13,), ValueError, "cannot reshape an array of size 12"),
    ((-1, -1), ValueError, "only specify one unknown dimension"),
    ((2, -3), ValueError, "invalid dimension"),
    ((2.0, 6), TypeError, "shape entries must be ints"),
    ((1,) * 9, ValueError, "at most 8"),
])
def test_bad_reshapes(shape, exc, words):
    with pytest.raises(exc, match=re.escape(words)):
        grid().reshape(*shape)


def test_views_keep_the_storage_alive():
    x = np.arange(6.0)
    a = tack.from_dlpack(x)
    v = a[2:5]
    del a, x
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), [2, 3, 4])
    b = grid()
    w = b.reshape(-1)[4:8]
    del b
    gc.collect()
    np.testing.assert_array_equal(w.numpy(), [4, 5, 6, 7])


def test_views_keep_the_storage_flags():
    a = grid()
    v = a[1:]
    r = a.reshape(-1)
    assert not v.shared and not r.shared
    a.ptr  # hands the address out: the storage is shared from now on ...
    assert v.shared and r.shared and a[0].shared  # ... for views made before and after
    assert tack.from_dlpack(np.zeros(4))[1:].shared


def test_views_of_read_only_arrays_are_read_only():
    x = np.arange(4.0)
    x.flags.writeable = False
    a = tack.from_dlpack(x)
    for v in (a[1:], a.reshape(2, 2)[1], a.ravel()):
        assert not v.writable
        with pytest.raises(ValueError, match="read-only"):
            v.fill(0.0)
    assert not grid()._readonly_view()[1].writable


def test_views_export_through_dlpack_at_their_offset():
    a = grid()
    np.testing.assert_array_equal(np.from_dlpack(a[1:3]), np.arange(4.0, 12.0).reshape(2, 4))
    n = np.from_dlpack(a[2])
    n[0] = -8.0
    assert a[2, 0] == -8.0


def test_vector_arrays_slice_by_element():
    p = tack.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=tack.vec3)
    s = p[1:3]
    assert s.dtype is tack.vec3 and s.shape == (2,) and s.ptr == p.ptr + 12
    np.testing.assert_array_equal(s.numpy(), [[3, 4, 5], [6, 7, 8]])


@pytest.mark.parametrize("dev", [d for d in tack.devices() if d != "cpu"] or
                         [pytest.param("none", marks=pytest.mark.skip("no device other than the CPU"))])
def test_device_elements_are_copies_and_views_share(dev):
    a = tack.array(np.arange(10, dtype=np.float32), device=dev)
    assert a[7] == 7.0 and type(a[7]) is np.float32 and a[-1] == 9.0 and a.reshape(2, 5)[1, 0] == 5.0
    np.testing.assert_array_equal(a[:4].numpy(), [0, 1, 2, 3])  # a view at the start
    if dev.startswith("opencl"):
        v = a[5:]
        np.testing.assert_array_equal(v.numpy(), [5, 6, 7, 8, 9])
        np.testing.assert_array_equal(a.reshape(2, 5)[1].numpy(), [5, 6, 7, 8, 9])
        if v.strided:  # cl_mem buffers are handles: the buffer and an element offset the kernel adds
            assert v.ptr == a.ptr
            with pytest.raises(BufferError, match="strided view"):
                v.reshape(5)
        else:  # shared virtual memory: an address inside the allocation
            assert v.ptr == a.ptr + 5 * 4
    else:
        np.testing.assert_array_equal(a.reshape(2, 5)[1].numpy(), [5, 6, 7, 8, 9])


# ---------------------------------------------------------------------- docs
def doc_examples():
    text = (ROOT / "docs" / "arrays.md").read_text()
    for match in re.finditer(r"```python\n(.*?)```", text, re.S):
        line = text[: match.start()].count("\n") + 2
        yield pytest.param(match.group(1), id=f"arrays.md:{line}")


@pytest.mark.parametrize("code", list(doc_examples()))
def test_arrays_chapter_examples_run(code, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
