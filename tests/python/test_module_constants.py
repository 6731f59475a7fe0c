"""A kernel's module constants are read again at every call.

A kernel freezes the int/float/bool values it names from outside (module
globals, attributes of modules, values of enclosing functions) into its code
(docs/language.md, "Names from outside the kernel").  When the program
changes one after a call, the next call must compute with the new value -- as
the kernel run as Python does -- by compiling for it, never silently with the
old one; a value that comes back finds its old build.
"""

import sys
import types

import numpy as np
import pytest

import tack

FEED = 0.03
STEP = 7
FLAG = True
NEG = 0.0
cfg = types.ModuleType("cfg")
cfg.FEED = 0.5

THIS = sys.modules[__name__]


@tack.kernel
def feed(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + FEED


@tack.kernel
def step(out):
    for i in range(out.shape[0]):
        out[i] = STEP


@tack.kernel
def flagged(out):
    for i in range(out.shape[0]):
        if FLAG:
            out[i] = 1.0
        else:
            out[i] = 2.0


@tack.kernel
def through_module(x):
    for i in range(x.shape[0]):
        x[i] = cfg.FEED


@tack.func
def rate():
    return FEED * 2


@tack.kernel
def through_func(x):
    for i in range(x.shape[0]):
        x[i] = rate()


@tack.func
def one():
    return 1.0


@tack.func
def two():
    return 2.0


HELPER = one


@tack.kernel
def through_helper(x):
    for i in range(x.shape[0]):
        x[i] = HELPER()


@tack.kernel
def sign_of(x):
    for i in range(x.shape[0]):
        x[i] = tack.copysign(1.0, NEG)


def run(k, dtype=np.float64, n=3):
    x = np.zeros(n, dtype)
    k(x)
    return x


def test_changed_global_float_is_used(monkeypatch):
    x = np.zeros(4)
    feed(x)
    assert x.tolist() == [0.03] * 4
    monkeypatch.setattr(THIS, "FEED", 0.04)
    x[:] = 0
    feed(x)
    assert x.tolist() == [0.04] * 4


def test_value_that_comes_back_finds_its_build(monkeypatch):
    monkeypatch.setattr(THIS, "FEED", 0.25)
    assert run(feed).tolist() == [0.25] * 3
    n = feed.specializations
    monkeypatch.setattr(THIS, "FEED", 0.5)
    assert run(feed).tolist() == [0.5] * 3
    assert feed.specializations == n + 1
    monkeypatch.setattr(THIS, "FEED", float("0.25"))  # a new object, the same value
    assert run(feed).tolist() == [0.25] * 3
    monkeypatch.setattr(THIS, "FEED", 0.5 + 0.0)
    assert run(feed).tolist() == [0.5] * 3
    assert feed.specializations == n + 1  # no compile for values seen before


def test_debug_mode_reads_the_current_value(monkeypatch):
    py = tack.kernel(feed.__wrapped__, jit=False)
    monkeypatch.setattr(THIS, "FEED", 0.125)
    assert run(py).tolist() == run(feed).tolist() == [0.125] * 3
    monkeypatch.setattr(THIS, "FEED", 0.375)
    assert run(py).tolist() == run(feed).tolist() == [0.375] * 3


def test_int_rebound_to_float_compiles_with_the_new_type(monkeypatch):
    out = np.zeros(2)
    step(out)
    assert out.tolist() == [7.0, 7.0]
    monkeypatch.setattr(THIS, "STEP", 7.5)
    step(out)
    assert out.tolist() == [7.5, 7.5]  # not 7: the value is a float now
    assert "f32" in step.ir(out) or "f64" in step.ir(out)
    out32 = np.zeros(2, np.int32)
    monkeypatch.setattr(THIS, "STEP", 3)
    step(out32)
    assert out32.tolist() == [3, 3]


def test_bool_flips(monkeypatch):
    assert run(flagged).tolist() == [1.0] * 3
    monkeypatch.setattr(THIS, "FLAG", False)
    assert run(flagged).tolist() == [2.0] * 3
    monkeypatch.setattr(THIS, "FLAG", 0)  # an int 0 is not the bool False: its own build
    assert run(flagged).tolist() == [2.0] * 3


def test_negative_zero_is_another_value(monkeypatch):
    assert run(sign_of).tolist() == [1.0] * 3
    monkeypatch.setattr(THIS, "NEG", -0.0)  # == 0.0, but another constant
    assert run(sign_of).tolist() == [-1.0] * 3


def test_rebound_to_a_non_number_raises_naming_the_global(monkeypatch):
    assert run(feed).tolist() == [FEED] * 3
    monkeypatch.setattr(THIS, "FEED", "fast")
    with pytest.raises(tack.CompileError) as e:
        run(feed)
    assert "'FEED' is a str" in e.value.msg
    with pytest.raises(tack.CompileError):  # again: never the old value
        run(feed)
    monkeypatch.setattr(THIS, "FEED", 0.75)
    assert run(feed).tolist() == [0.75] * 3


def test_deleted_global_raises(monkeypatch):
    run(feed)
    monkeypatch.delattr(THIS, "FEED")
    with pytest.raises(tack.CompileError, match="name 'FEED' is not defined"):
        run(feed)


def test_module_attribute(monkeypatch):
    assert run(through_module).tolist() == [0.5] * 3
    monkeypatch.setattr(cfg, "FEED", 0.625)
    assert run(through_module).tolist() == [0.625] * 3


def test_value_inside_a_called_func(monkeypatch):
    assert run(through_func).tolist() == [FEED * 2] * 3
    monkeypatch.setattr(THIS, "FEED", 1.5)
    assert run(through_func).tolist() == [3.0] * 3


def test_global_rebound_to_another_func(monkeypatch):
    assert run(through_helper).tolist() == [1.0] * 3
    monkeypatch.setattr(THIS, "HELPER", two)
    assert run(through_helper).tolist() == [2.0] * 3


def test_compile_ahead_then_change(monkeypatch):
    @tack.kernel
    def ahead(x):
        for i in range(x.shape[0]):
            x[i] = FEED

    x = np.zeros(3)
    ahead.compile(x)
    assert ahead.specializations == 1
    monkeypatch.setattr(THIS, "FEED", 2.25)
    ahead(x)
    assert x.tolist() == [2.25] * 3
    assert ahead.specializations == 2


def test_closure_value_changed_by_the_enclosing_function():
    def make():
        k = 2

        @tack.kernel
        def scaled(x):
            for i in range(x.shape[0]):
                x[i] = k

        def set_k(v):
            nonlocal k
            k = v

        return scaled, set_k

    scaled, set_k = make()
    assert run(scaled).tolist() == [2.0] * 3
    set_k(5)
    assert run(scaled).tolist() == [5.0] * 3


def test_unchanged_constants_compile_once():
    @tack.kernel
    def twice(x):
        for i in range(x.shape[0]):
            x[i] = FEED + STEP + cfg.FEED

    for _ in range(3):
        run(twice)
    assert twice.specializations == 1


SCALE64 = np.float64(0.1)  # a NumPy scalar, though np.float64 subclasses Python's float
SCALE32 = np.float32(0.1)
SCALE128 = np.complex128(0.1 + 0j)


def _numpy_scalar_constants(o64, o32, oc):
    for i in range(o64.shape[0]):
        o64[i] = (i + 16777217) * SCALE64  # the loop variable meets f64: f64, as NumPy's weak int does
        o32[i] = (i + 16777217) * SCALE32  # meets f32: f32
        oc[i] = (i + 16777217) * SCALE128


@pytest.mark.parametrize("jit", [True, False])
def test_numpy_scalar_constant_keeps_its_type(jit):
    # docs/language.md: a value's type depends on its dtype; a NumPy scalar is not weak.  An
    # np.float64 global was frozen as a Python float (weak), so the loop variable times it was
    # computed in the default float, f32 (1677721.625), where debug mode gave f64 (1677721.7)
    k = tack.kernel(_numpy_scalar_constants, jit=jit)
    o64, o32, oc = np.zeros(2), np.zeros(2), np.zeros(2, np.complex128)
    k(o64, o32, oc)
    i = np.arange(2) + 16777217
    assert o64.tolist() == (i * np.float64(0.1)).tolist()
    assert o32.tolist() == (i.astype(np.float32) * np.float32(0.1)).astype(np.float64).tolist()
    assert oc.tolist() == (i * np.complex128(0.1)).tolist()



HALF_SCALE = np.float16(2.5)
BF_SCALE = None  # an ml_dtypes bfloat16, set by the test


def _half_constants(out, obf):
    for i in range(out.shape[0]):
        out[i] = HALF_SCALE * 1.001 + (HALF_SCALE < 3.0)  # a storage type's value is an f32
        obf[i] = BF_SCALE * 1.001 + (BF_SCALE < 3.0)


@pytest.mark.parametrize("jit", [True, False])
def test_float16_and_bfloat16_constants_compute_in_f32(jit, monkeypatch):
    # an ml_dtypes bfloat16 constant (NumPy's kind "V") had no promotion rule in debug mode:
    # `BF_SCALE * 1.001` raised KeyError: 'V' where the compiled kernel computes in f32
    import ml_dtypes

    monkeypatch.setattr(sys.modules[__name__], "BF_SCALE", ml_dtypes.bfloat16(2.5))
    k = tack.kernel(_half_constants, jit=jit)
    out, obf = np.zeros(2), np.zeros(2)
    k(out, obf)
    want = float(np.float32(2.5) * np.float32(1.001)) + 1.0
    assert out.tolist() == [want, want] and obf.tolist() == [want, want]
