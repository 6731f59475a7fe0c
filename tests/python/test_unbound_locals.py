"""A local read before any statement assigned it raises UnboundLocalError,
compiled and in debug mode alike (src/compiler/lower/unbound.c).

Before: a local assigned only under an `if` read 0 in the compiled kernel
(each parallel iteration's locals were zeroed) but the previous iteration's
value in debug mode, for scalars and local arrays alike: two silent answers,
neither Python's.  Reads proven assigned get no check (the generated source
holds none); reads in a serial loop that an earlier trip assigned are
Python's and run.
"""

import numpy as np
import pytest

import tack

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
MODES = ["jit", "debug",
         pytest.param("opencl", marks=pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)"))]


def both(fn):
    return {"jit": tack.kernel(fn), "debug": tack.kernel(jit=False)(fn)}


def call(mode, kernels, *args):
    """Run in `mode`; NumPy arrays among args are updated in place."""
    if mode != "opencl":
        return kernels["debug" if mode == "debug" else "jit"](*args)
    dev = [tack.array(a, device=OPENCL[0]) if isinstance(a, np.ndarray) else a for a in args]
    try:
        kernels["jit"](*dev)
    finally:
        for a, d in zip(args, dev):
            if isinstance(a, np.ndarray):
                a[...] = d.numpy()


def only_if(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i] * 2.0
        out[i] = t


def both_branches(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i] * 2.0
        else:
            t = -1.0
        out[i] = t


def same_condition(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i] * 2.0
        if x[i] > 0:
            out[i] = t


def earlier_trip(x, out):
    for i in range(x.shape[0]):
        s = 0.0
        for k in range(3):
            if k == 0:
                t = x[i]
            s += t * k
        out[i] = s


def loop_var_after(x, n, out):
    for i in range(x.shape[0]):
        for k in range(n):
            pass
        out[i] = k


def while_break(x, out):
    for i in range(x.shape[0]):
        j = 0
        while True:
            v = x[i] + j
            j += 1
            if j > 2:
                break
        out[i] = v


def after_continue(x, out):
    for i in range(x.shape[0]):
        if x[i] < 0:
            out[i] = 0.0
            continue
        else:
            t = x[i] + 1.0
        out[i] = t


def short_circuit(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        if x[i] > 0 and t > 1.5:
            out[i] = 1.0


def vector_local(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            v = tack.vec3(x[i], 0.0, 0.0)
        v[1] = 2.0
        out[i] = v[0] + v[1]


def local_array(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            a = np.zeros(2)
            a[0] = x[i]
        out[i] = a[0]


@tack.func
def half_if(v):
    if v > 0.0:
        r = v
    return r


def through_func(x, out):
    for i in range(x.shape[0]):
        out[i] = half_if(x[i])


def frame_local(x, c, out):
    if c > 0:
        s = 2.0
    for i in range(x.shape[0]):
        out[i] = x[i] * s


KERNELS = {f.__name__: both(f) for f in (only_if, both_branches, same_condition, earlier_trip, loop_var_after,
                                         while_break, after_continue, short_circuit, vector_local, local_array,
                                         through_func, frame_local)}
X = np.array([1.0, -1.0, 2.0, -3.0])
POS = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["only_if", "vector_local", "local_array", "through_func"])
def test_a_local_assigned_only_under_if_raises_in_an_iteration_that_skipped_it(mode, name):
    out = np.zeros(4)
    with pytest.raises(UnboundLocalError):
        call(mode, KERNELS[name], X, out)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["only_if", "vector_local", "local_array", "through_func", "short_circuit"])
def test_the_same_kernels_run_where_every_iteration_assigns(mode, name):
    want = np.zeros(3)
    call("debug", KERNELS[name], POS, want)
    out = np.zeros(3)
    call(mode, KERNELS[name], POS, out)
    np.testing.assert_array_equal(out, want)
    assert out.any()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, want", [
    ("both_branches", [2.0, -1.0, 4.0, -1.0]),
    ("same_condition", [2.0, 0.0, 4.0, 0.0]),
    ("earlier_trip", [3.0, -3.0, 6.0, -9.0]),
    ("while_break", [3.0, 1.0, 4.0, -1.0]),
    ("after_continue", [2.0, 0.0, 3.0, 0.0]),
    ("short_circuit", [0.0, 0.0, 1.0, 0.0]),
])
def test_reads_every_path_assigns_or_an_earlier_trip_assigned_run(mode, name, want):
    out = np.zeros(4)
    call(mode, KERNELS[name], X, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("mode", MODES)
def test_a_serial_loop_variable_after_an_empty_loop_is_unbound(mode):
    out = np.zeros(4)
    call(mode, KERNELS["loop_var_after"], X, 3, out)
    np.testing.assert_array_equal(out, [2.0] * 4)
    with pytest.raises(UnboundLocalError):
        call(mode, KERNELS["loop_var_after"], X, 0, out)


@pytest.mark.parametrize("mode", MODES)
def test_a_frame_local_assigned_only_under_if(mode):
    out = np.zeros(4)
    call(mode, KERNELS["frame_local"], X, 1, out)
    np.testing.assert_array_equal(out, X * 2.0)
    with pytest.raises(UnboundLocalError):
        call(mode, KERNELS["frame_local"], X, 0, out)


def test_the_message_names_the_local_and_the_line():
    with pytest.raises(UnboundLocalError, match=r"local variable 't' is read before it is assigned \(kernel "
                                                r"only_if, .*test_unbound_locals.py:\d+\)"):
        KERNELS["only_if"]["jit"](X, np.zeros(4))


def test_reads_proven_assigned_have_no_check():
    src_ok = KERNELS["both_branches"]["jit"].generated_source(X, np.zeros(4))
    src_maybe = KERNELS["only_if"]["jit"].generated_source(X, np.zeros(4))
    assert src_maybe.count("abi->fail(ctx") == src_ok.count("abi->fail(ctx") + 1


def test_checks_off_keeps_the_unbound_check():
    k = tack.kernel(checks=False)(only_if)
    with pytest.raises(UnboundLocalError):
        k(X, np.zeros(4))
