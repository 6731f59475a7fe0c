"""tack.bf16, bfloat16 storage (issue 35, item 6).

bf16 is a storage type, as f16 is: an element holds its 16 bits, a load
widens them to f32 exactly and a store rounds to nearest even (NaN stays NaN,
as the quiet NaN of its sign; past the largest bf16's halfway point,
infinity), a float64 rounded once.  The differentials below run every one of
the 65536 bit patterns through a load and two million f32 values (every
exponent and sign, each with ties, near-ties and random low bits: subnormals,
NaN payloads, infinities, overflow) through a store, in one launch each, on
the CPU, on PoCL, emulated as CUDA and as Metal, and compare the bits with
ml_dtypes (and PyTorch); debug mode (jit=False) gives the same bits on a
sample.  Every GPU dialect's compiler accepts the two kernels.  NumPy has
no bfloat16: it is ml_dtypes.bfloat16 where that is installed, and without
it bf16 arrays come and go through DLPack (PyTorch's torch.bfloat16).
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _msl  # noqa: E402
import _ocloc  # noqa: E402

OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)


def convert32(bits, widened, x, rounded, kept, cast):
    for i in range(bits.shape[0]):
        widened[i] = bits[i]              # a load: the f32 whose upper half the bits are
    for i in range(x.shape[0]):
        rounded[i] = x[i]                 # a store: to nearest even
        t = tack.zeros(2, tack.bf16)      # a local array holds bits as well
        t[0] = x[i]
        t[1] = -t[0]
        kept[i] = t[1]
        cast[i] = tack.bf16(x[i] * 3.0)   # a cast rounds as a store does; its value is an f32


def convert64(x64, rounded64, consts):
    for i in range(x64.shape[0]):
        rounded64[i] = x64[i]             # a float64 rounded once, not through f32
    consts[0] = 1.0039062509313226        # 1 + 2**-8 + 2**-30: rounded at compile time, once
    consts[1] = 1.0039062490686774        # 1 + 2**-8 - 2**-30
    consts[2] = 3.3962e38                 # past the largest bf16's halfway point: inf
    consts[3] = -4.591774876322337e-41    # -(2**-134 + 2**-160): past a subnormal tie
    consts[4] = 1.0e300


KERNELS = {"convert32": convert32, "convert64": convert64}
JIT = {k: tack.kernel(f) for k, f in KERNELS.items()}
DEBUG = {k: tack.kernel(f, jit=False) for k, f in KERNELS.items()}

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def f32_cases(step=1):
    """Every 16-bit upper half (every exponent and sign; `step` apart) with 32
    low halves each: 0, 1, 0x7fff, 0x8000 (the tie), 0x8001, 0xffff and 26 random."""
    rng = np.random.default_rng(35)
    hi = np.arange(0, 65536, step, dtype=np.uint32)
    lo = np.concatenate([np.broadcast_to(np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32), (hi.size, 6)),
                         rng.integers(0, 65536, (hi.size, 26), dtype=np.uint32)], axis=1)
    return ((hi[:, None] << 16) | lo).ravel().view(np.float32)


def exact_bf16(d):
    """The bf16 nearest the float64 d, ties to even (a Python reference, by integers)."""
    if math.isnan(d) or math.isinf(d) or d == 0:
        return d
    a = abs(d)
    m, e = math.frexp(a)                  # a = m * 2**e, m in [0.5, 1): 8 significant bits -> steps of 2**(e-8)
    q = max(e - 8, -133)                  # subnormals: steps of 2**-133
    s = math.ldexp(a, -q)
    r = math.floor(s)
    if s - r > 0.5 or (s - r == 0.5 and r % 2 == 1):
        r += 1
    v = math.ldexp(r, q)
    return math.copysign(v if v < 2.0**128 else math.inf, d)  # rounded up to 2**128: past the largest


def f64_cases():
    """Float64 values where rounding through f32 would round twice: each side of
    ties (by less than f32 can hold), ties, the overflow bound, subnormal ties."""
    rng = np.random.default_rng(6)
    base = np.concatenate([rng.integers(0x0001, 0x7F7F, 3000), rng.integers(0x0001, 0x0080, 200),
                           [0x3F80, 0x7F7F, 0x0001, 0x007F]]).astype(np.uint32)
    v = (base << 16).view(np.float32).astype(np.float64)
    ulp = np.ldexp(1.0, np.maximum(np.frexp(v)[1] - 8, -133))  # the step above v (2**128 past the largest)
    tie = v + ulp / 2
    out = [tie, tie + tie * 2.0**-40, tie - tie * 2.0**-40, -(tie + tie * 2.0**-40), v + ulp * 0.25]
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 1e-300, 3.3961e38, 3.3960e38,
                2.0**128 - 2.0**119, 2.0**128 - 2.0**119 - 2.0**80, 2.0**-134, 2.0**-134 + 2.0**-170]
    return np.concatenate(out + [np.array(specials)])


def bits_of(a):
    return np.asarray(a).view(np.uint16)


def make(step=1):
    x = f32_cases(step)
    bits = ALL_BITS[::step].copy()
    x64 = f64_cases()
    return ({"convert32": (bits.view(BF16), np.zeros(bits.size, np.float32), x, np.zeros(x.size, BF16),
                           np.zeros(x.size, BF16), np.zeros(x.size, np.float32)),
             "convert64": (x64, np.zeros(x64.size, BF16), np.zeros(5, BF16))})


def check(args):
    """The arrays after convert32 and convert64 against ml_dtypes and the Python reference."""
    bits, widened, x, rounded, kept, cast = args["convert32"]
    np.testing.assert_array_equal(widened.view(np.uint32), bits_of(bits).astype(np.uint32) << 16)
    np.testing.assert_array_equal(widened.view(np.uint32), bits.astype(np.float32).view(np.uint32))  # ml_dtypes
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16)  # ml_dtypes: to nearest even, a NaN the quiet NaN of its sign
    np.testing.assert_array_equal(bits_of(rounded), bits_of(want))
    np.testing.assert_array_equal(bits_of(kept), bits_of((-want.astype(np.float32)).astype(BF16)))
    with np.errstate(all="ignore"):
        want = (x * np.float32(3)).astype(BF16).astype(np.float32)
    np.testing.assert_array_equal(cast.view(np.uint32), want.view(np.uint32))
    x64, rounded64, consts = args["convert64"]
    ref = np.array([exact_bf16(d) for d in x64])
    np.testing.assert_array_equal(np.isnan(rounded64.astype(np.float64)), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(rounded64.astype(np.float64)[ok], ref[ok])
    np.testing.assert_array_equal(np.signbit(rounded64.astype(np.float64)[ok]), np.signbit(ref[ok]))
    assert consts.astype(np.float64).tolist() == [1.0078125, 1.0, math.inf, -(2.0**-133), math.inf]


def test_the_double_rounding_it_avoids_is_real():
    # ml_dtypes (and PyTorch) convert a float64 through f32, rounding twice; Tack rounds once, as for f16
    d = 1 + 2**-8 + 2**-30
    assert float(np.float64(d).astype(BF16)) == 1.0 and exact_bf16(d) == 1.0078125


@pytest.mark.parametrize("mode", ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not OPENCL, reason="no OpenCL device (pocl-opencl-icd)"))])
def test_every_load_and_two_million_stores_round_as_ml_dtypes(mode):
    args = make()
    for name, a in args.items():
        if mode == "cpu":
            JIT[name](*a)
        else:
            dev = [tack.array(v, device=OPENCL) for v in a]
            JIT[name](*dev)
            for v, d in zip(a, dev):
                v[...] = d.numpy()
    check(args)
    assert "tk_f2b" in JIT["convert32"].generated_source(*args["convert32"])  # the CPU's C, vectorized loops


def test_torch_rounds_the_same_where_it_is_not_nan():
    torch = pytest.importorskip("torch")
    x = f32_cases(4)
    t = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    ours = tack.zeros(x.size, tack.bf16)
    JIT["convert32"](ALL_BITS[:1].view(BF16), np.zeros(1, np.float32), x, ours, np.zeros(x.size, BF16),
                     np.zeros(x.size, np.float32))
    got = bits_of(ours.numpy())
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], t[~nan])
    assert ((got[nan] & 0x7FFF) == 0x7FC0).all()


def test_debug_mode_gives_the_same_bits():
    args = make(step=509)  # 129 bit patterns, 4128 f32 values, every f64 case
    for name, a in args.items():
        DEBUG[name](*a)
    check(args)


def casts(x, out):
    for i in range(x.shape[0]):
        y: tack.bf16 = x[i]               # an annotation: the local holds a value, an f32
        z: tack.f16 = x[i]
        out[i, 0] = tack.bf16(x[i])       # a cast: rounded, as np.float16(x) is
        out[i, 1] = np.float16(x[i]) + tack.f16(x[i]) * 3.0
        out[i, 2] = y + z
        out[i, 3] = tack.bf16(1.0039062509313226) + tack.bf16(x.shape[0]) + tack.f16(True)


def test_a_cast_rounds_compiled_and_as_python():
    """tack.bf16(x), tack.f16(x) and np.float16(x) round, where a compiled kernel
    once gave x's f32 for tack.f16(x) and debug mode the float16."""
    x = np.array([1.0001, 3.3e38, np.nan, -7e-41, 65519.0], np.float32)
    got = [np.zeros((5, 4), np.float32) for _ in range(2)]
    tack.kernel(casts)(x, got[0])
    with np.errstate(all="ignore"):
        tack.kernel(casts, jit=False)(x, got[1])
        h = x.astype(np.float16).astype(np.float32)
        want = [x.astype(BF16).astype(np.float32), h + h * np.float32(3), x + x,
                np.full(5, 1.0078125 + 5 + 1, np.float32)]
    for g in got:
        np.testing.assert_array_equal(g.view(np.uint32), np.stack(want, axis=1).view(np.uint32))


def test_debug_mode_runs_tack_and_torch_arrays_in_place():
    torch = pytest.importorskip("torch")
    def scale(v, w):
        for i in range(v.shape[0]):
            v[i] = v[i] * 1.00390625      # 1 and 2: a tie, to even; 3: past it
        w[0] = w[1] / 3
        w[1] = 1.0e300

    ts = [torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16) for _ in range(2)]
    arrays = [tack.array(np.array([0.5, 1.5], BF16)) for _ in range(2)]
    tack.kernel(scale, jit=False)(ts[0], arrays[0])
    tack.kernel(scale)(ts[1], arrays[1])
    assert ts[0].tolist() == ts[1].tolist() == [1.0, 2.0, 3.015625]
    assert bits_of(arrays[0].numpy()).tolist() == bits_of(arrays[1].numpy()).tolist() == [0x3F00, 0x7F80]
    with pytest.raises(ValueError, match="strided bf16 view"):
        tack.kernel(scale, jit=False)(ts[0][::2], arrays[0])


# --------------------------------------------------------------- the GPU dialects
def sources(target):
    a = make(step=4096)
    out = {"convert32": JIT["convert32"].generated_source(*a["convert32"], target=target)}
    if target != "metal":
        out["convert64"] = JIT["convert64"].generated_source(*a["convert64"], target=target)
    return out


NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_sources_compile_with_nvrtc():
    import _gpu_batch

    for src in sources("cuda").values():
        assert "tk_f2b" in src
    assert _core._nvrtc_compile(_gpu_batch.batch_source(list(sources("cuda").values()))[0], "sm_80")


_HIPRTC = ("import json, sys\n"
           "from tack import _core\n"
           "job = json.load(sys.stdin)\n"
           "_core._hiprtc_compile(job['source'], 'gfx90a')\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    import _gpu_batch

    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    job = json.dumps({"source": _gpu_batch.batch_source(list(sources("hip").values()))[0]})
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=job, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_sources_compile_with_ocloc():
    srcs = sources("opencl")
    rc, out = _ocloc.compile(_ocloc.batch_source(list(srcs.values()))[0], "pvc")
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}
    rc, out = _ocloc.compile(srcs["convert32"], "dg2")  # no float64 there: convert32 needs none
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    src = sources("metal")["convert32"]
    assert "tk_f2b" in src and "tk_b2f" in src
    assert _msl.check(src) is None


@pytest.mark.skipif(_msl.clang() is None or not _msl.has_float16(),
                    reason="the Metal emulation needs clang++ 15 or later (_msl_emulate.py)")
def test_metal_source_runs_emulated_bit_for_bit():
    import _msl_emulate

    args = make(step=8)
    got, (failed, _) = _msl_emulate.run(JIT["convert32"], *args["convert32"])
    assert failed == 0
    args["convert32"] = tuple(g.view(a.dtype) for g, a in zip(got, args["convert32"]))
    args["convert64"] = make(step=4096)["convert64"]
    JIT["convert64"](*args["convert64"])
    check(args)


def test_cuda_source_runs_emulated_bit_for_bit():
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    args = make(step=8)
    for name, a in args.items():
        assert _cuda_emulate.run(JIT[name].generated_source(*a, target="cuda"), list(a))[0] == 0
    check(args)


# ------------------------------------------------------------ NumPy and DLPack
def test_the_dtype():
    assert (tack.bf16.name, tack.bf16.itemsize, tack.bf16.kind, tack.bf16.shape) == ("bf16", 2, "f", ())
    assert tack.dtype("bfloat16") is tack.bf16 and tack.dtype(BF16) is tack.bf16
    assert tack.bf16.numpy == np.dtype(BF16)
    assert tack.f16 is tack.dtype("float16") and tack.complex128 is tack.dtype("complex128")  # ids kept


def test_ml_dtypes_arrays_are_kernel_arguments_in_place_and_copy_both_ways():
    x = np.array([1.0, 1.0078125, 1.015625, -3.0], BF16)
    a = tack.array(x)
    assert a.dtype is tack.bf16 and bits_of(a.numpy()).tolist() == bits_of(x).tolist()
    assert np.asarray(a).dtype == BF16

    @tack.kernel
    def double(v):
        for i in range(v.shape[0]):
            v[i] = v[i] * 2

    double(x)  # shared: the kernel writes the NumPy array's storage
    assert x.astype(np.float32).tolist() == [2.0, 2.015625, 2.03125, -6.0]
    a.fill(1.5)
    assert a.numpy().astype(np.float32).tolist() == [1.5] * 4
    assert tack.full(3, 1.00390625, tack.bf16).numpy().astype(np.float32).tolist() == [1.0] * 3  # tie: even


def test_torch_bfloat16_both_ways_without_a_copy():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, -2.5, 3.0e38, float("nan")], dtype=torch.bfloat16)
    a = tack.from_dlpack(t)
    assert a.dtype is tack.bf16 and a.ptr == t.data_ptr()

    @tack.kernel
    def inc(v):
        for i in range(v.shape[0]):
            v[i] = v[i] + 1

    inc(a)
    assert t[:3].tolist() == [2.0, -1.5, 3.00405527047391e38] and math.isnan(t[3].item())
    b = tack.zeros(3, tack.bf16)
    inc(b)
    u = torch.from_dlpack(b)
    assert u.dtype == torch.bfloat16 and u.data_ptr() == b.ptr and u.tolist() == [1.0, 1.0, 1.0]
    inc(t)  # a kernel argument straight from PyTorch
    assert t[0].item() == 3.0


def test_without_ml_dtypes_numpy_conversions_say_how(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` fails
    a = tack.zeros(2, tack.bf16)
    for make_numpy in (lambda: tack.bf16.numpy, a.numpy, lambda: tack.array(np.zeros(2, np.uint16), dtype=tack.bf16)):
        with pytest.raises(TypeError, match=r"NumPy has no bfloat16.*ml_dtypes.*DLPack"):
            make_numpy()
    assert torch.from_dlpack(a).tolist() == [0.0, 0.0]  # DLPack still carries it


def test_refusals_name_bf16():
    def atomic(v):
        for i in range(v.shape[0]):
            tack.atomic_add(v, 0, 1.0)

    def racy(v):
        for i in range(v.shape[0]):
            v[0] += 1.0

    v = np.zeros(4, BF16)
    with pytest.raises(tack.CompileError, match="atomic operations on bf16 elements are not supported"):
        tack.kernel(atomic)(v)
    with pytest.raises(tack.CompileError, match="not atomic on bfloat16 elements"):
        tack.kernel(racy)(v)
    with pytest.raises(tack.CompileError, match="atomic operations on bf16 elements are not supported"):
        tack.kernel(atomic, jit=False)(v)


def test_vtk_gets_a_float_copy():
    pytest.importorskip("vtkmodules")
    from tack.interop import vtk

    a = tack.array(np.array([1.5, -2.0, 3.0e38], BF16))
    with pytest.raises(TypeError, match="VTK has no array type for bf16"):
        vtk.array_to_vtk(a)
    v = vtk.array_to_vtk(a, copy=True)
    assert v.GetDataTypeAsString() == "float" and [v.GetValue(i) for i in range(3)] == \
        a.numpy().astype(np.float32).tolist()


def scalars(s, h, out):
    for i in range(out.shape[0]):
        out[i] = s * 1.0001 + h * 1.0001  # f32 arithmetic: NumPy's would be bfloat16's and float16's


def test_a_bf16_or_f16_scalar_argument_is_its_f32_value():
    got = [np.zeros(2, np.float32) for _ in range(2)]
    for jit, out in zip((True, False), got):
        tack.kernel(scalars, jit=jit)(BF16(1.5), np.float16(2.5), out)
    want = np.float32(1.5) * np.float32(1.0001) + np.float32(2.5) * np.float32(1.0001)
    assert got[0].tolist() == got[1].tolist() == [want, want]


def torch_bits(a):
    torch = pytest.importorskip("torch")
    return torch.from_dlpack(a).view(torch.int16).numpy().view(np.uint16).tolist()


def test_pickles_as_its_bits_without_ml_dtypes(monkeypatch):
    import pickle

    a = tack.array(np.array([1.5, -0.0, np.nan, 3.0e38], BF16))
    data = pickle.dumps(a.T[::-1])  # a strided view too
    want = bits_of(a.numpy())[::-1].tolist()
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    b = pickle.loads(data)
    assert b.dtype is tack.bf16 and torch_bits(b) == want
