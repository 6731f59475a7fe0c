"""Shifts give NumPy's answers for every integer dtype and every count:
a count at or past the width (a negative count, read unsigned, included)
shifts every bit out -- 0, or -1 for a negative value shifted right -- both
when computed at run time and when folded from constants."""

import numpy as np
import pytest

import tack

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@tack.kernel
def shifts(a, b, left, right):
    for i in range(a.shape[0]):
        left[i] = a[i] << b[i]
        right[i] = a[i] >> b[i]


@tack.kernel
def folded(out):
    out[0] = 1 << 64
    out[1] = 1 << 63
    out[2] = -8 >> 70
    out[3] = 8 >> 64
    out[4] = 1 << -1
    out[5] = -1 >> -1
    out[6] = 3 << 2


@pytest.mark.parametrize("dt", INTS, ids=lambda d: np.dtype(d).name)
def test_shift_counts_follow_numpy(dt):
    info = np.iinfo(dt)
    w = info.bits
    values = [0, 1, 3, info.max, info.min, info.max // 3]
    if info.min < 0:
        values += [-1, -7]
    counts = [0, 1, w - 1, w, w + 1, 2 * w, 31, 32, 33, 63, 64, 65, info.max]
    if info.min < 0:
        counts += [-1, -w, info.min]
    counts = [c for c in counts if info.min <= c <= info.max]
    a = np.array([v for v in values for _ in counts], dtype=dt)
    b = np.array([c for _ in values for c in counts], dtype=dt)
    left, right = np.zeros_like(a), np.zeros_like(a)
    shifts(a, b, left, right)
    np.testing.assert_array_equal(left, np.left_shift(a, b), err_msg=f"{np.dtype(dt).name} <<")
    np.testing.assert_array_equal(right, np.right_shift(a, b), err_msg=f"{np.dtype(dt).name} >>")


def test_constant_shifts_fold_to_numpys_answers():
    out = np.zeros(7, dtype=np.int64)
    folded(out)
    i = np.int64
    want = [np.left_shift(i(1), i(64)), np.left_shift(i(1), i(63)), np.right_shift(i(-8), i(70)),
            np.right_shift(i(8), i(64)), np.left_shift(i(1), i(-1)), np.right_shift(i(-1), i(-1)), 12]
    assert out.tolist() == [int(x) for x in want]
