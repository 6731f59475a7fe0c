"""The "metal" dialect: Metal Shading Language 3, checked without a Mac.

No machine here has Apple's Metal compiler.  What the dialect emits
(dialect_msl.c) is type-checked by clang++ against tests/msl/metal_stdlib,
our own declarations of the part of Metal's standard library it uses, with
Metal's address spaces made real and `double` poisoned, plus a lint for what
that header cannot express (_msl.py).  These tests show:

  - the argument convention the Metal backend binds (buffers 0, 1, 2, then
    one per array, scalars in the words of buffer 2);
  - what Metal refuses, with messages that say what to use instead: double
    precision, 64-bit atomics, print, more than 28 arrays;
  - kernels using each part of the prelude (f16, every atomic, vectors,
    matrices, complex64, local arrays through a @tack.func, phases with a
    frame) type-check;
  - the check can fail: doctored MSL with an undeclared name, a wrong
    address space, a double, a wrong type, an `LL` constant, a pointer
    without an address space is rejected;
  - every kernel the language tests call either type-checks as MSL (with
    float64 arguments made float32 when Metal refuses them) or is refused
    with an error naming Metal.

Without clang++ the type-checking tests skip with a line saying so.  On a
Mac, `TACK_MSL_XCRUN=1 uv run pytest tests/python/test_msl.py` runs the same
checks with Apple's Metal compiler instead of clang++ and our header.
"""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tack

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _kernel_wrap  # noqa: E402
import _suite  # noqa: E402
import _msl  # noqa: E402

needs_clang = pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(),
                                 reason="clang++ is not installed (Debian: clang)")


def msl(k, *args, **kwargs):
    return k.generated_source(*args, target="metal", **kwargs)


def assert_checks(src):
    problems = _msl.check(src)
    assert problems is None, problems


# ------------------------------------------------------------------ kernels
@tack.kernel
def saxpy(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


@tack.kernel
def convention(n, x, a, y, z, flag):
    for i in range(x.shape[0]):
        x[i] = x[i] * a + y[i % y.shape[0], 0] + n
        if flag:
            z[i] = z[i] * 2


@tack.kernel
def histogram(x, h):
    for i in range(x.shape[0]):
        h[int(x[i]) % h.shape[0]] += 1


@tack.kernel
def atomics(x, h8, h16, hu32, hf):
    for i in range(x.shape[0]):
        h8[i % 4] += 1
        h16[i % 4] -= 1
        tack.atomic_max(hu32, i % 4, i)
        tack.atomic_min(hf, 0, x[i])
        tack.atomic_max(hf, 1, x[i])
        hf[2] += x[i]


@tack.kernel
def halves(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2 + 1


@tack.kernel
def normals(a, b, out, lengths, m, mv):
    for i in range(a.shape[0]):
        n = tack.cross(a[i], b[i])
        lengths[i] = tack.length(n)
        out[i] = tack.normalize(n) * tack.dot(a[i], a[i])
        mv[i] = m[i] @ a[i]


@tack.kernel
def complexes(z, w, acc):
    for i in range(z.shape[0]):
        w[i] = np.sqrt(z[i]) * np.exp(z[i]) / (z[i] + 1) + abs(z[i])
        acc[0] += z[i]


@tack.func
def norm3(x, i):
    v = np.zeros(3, np.float32)
    for k in range(3):
        v[k] = x[i, k]
    return total(v)


@tack.func
def total(v):
    s = np.float32(0)
    for k in range(v.shape[0]):
        s += v[k]
    return s


@tack.kernel
def norms(x, out):
    for i in range(x.shape[0]):
        out[i] = norm3(x, i) + np.float32(np.hypot(x[i, 0], x[i, 1])) + np.float32(x[i, 2] % 3.0)


@tack.kernel
def phases(x, out, acc):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2
    for i in range(x.shape[0]):
        acc[0] += out[i]
    s = acc[0]
    if s > 10:
        s = s / 2
    if s < 0:
        return
    for i in range(x.shape[0]):
        out[i] = out[i] + s


@tack.kernel
def doubles(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0


@tack.kernel
def double_local(x):
    for i in range(x.shape[0]):
        t = tack.f64(0.5)
        x[i] = x[i] * t


@tack.kernel
def weak_local(x):
    for i in range(x.shape[0]):
        t = 0.5                       # a Python float that only meets f32: an f32 (weak_locals.c)
        s = 1.0 if x[i] > 0 else -1.0
        x[i] = x[i] * t * s


@tack.kernel
def prints(x):
    for i in range(x.shape[0]):
        print(x[i])


@tack.kernel
def k28(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22,
        a23, a24, a25, a26, a27):
    for i in range(a0.shape[0]):
        a0[i] = a27[i]


@tack.kernel
def k29(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22,
        a23, a24, a25, a26, a27, a28):
    for i in range(a0.shape[0]):
        a0[i] = a28[i]


F32 = np.ones(8, np.float32)


# --------------------------------------------------------- the convention
def test_the_phase_signature_binds_buffers_0_1_2_then_one_per_array():
    src = msl(convention, 3, np.ones(8, np.float32), 2.0, np.ones((4, 2), np.float32), np.ones(8, np.int32), True)
    sig = re.search(r"kernel void tk_phase0\((.*?)\) \{", src, re.S).group(1)
    params = [p.strip() for p in sig.split(",")]
    assert params == [
        "device tk_ctx *ctx [[buffer(0)]]", "device uchar *fb_ [[buffer(1)]]", "constant ulong *A [[buffer(2)]]",
        "device float *a1 [[buffer(3)]]",   # x: the first array, whatever its parameter index
        "device float *a3 [[buffer(4)]]",   # y
        "device int32_t *a4 [[buffer(5)]]",  # z
        "uint tk_tid [[thread_position_in_grid]]", "uint tk_nth [[threads_per_grid]]"]
    # the words of buffer(2): 0 the program id; n; x's extent; a (f32 bits); y's two extents; z's; flag
    assert "const tk_abi abi_ = {A[0], &fl_};" in src
    assert re.search(r"int64_t v\d+_n = \(int64_t\)\(\(int64_t\)A\[1\]\);", src), src
    assert "const int64_t a1_s0 = (int64_t)A[2];" in src
    assert re.search(r"float v\d+_a = \(float\)as_type<float>\(\(uint\)A\[3\]\);", src)
    assert "const int64_t a3_s0 = (int64_t)A[4];" in src and "const int64_t a3_s1 = (int64_t)A[5];" in src
    assert "const int64_t a4_s0 = (int64_t)A[6];" in src
    assert re.search(r"v\d+_flag = \(\(int64_t\)A\[7\]\) != 0;", src), src
    assert src.rstrip().splitlines()[-1] == "/* tack-metal: phases=p frame=0 */"
    # the thread's index starts the 32-bit unrolled loop and the 64-bit one (layout_grid.c)
    assert src.count("(uint64_t)tk_tid") == 2 and "(uint64_t)tk_nth" in src


def test_phases_and_the_frame():
    src = msl(phases, F32, F32.copy(), np.zeros(1, np.float32))
    assert re.search(r"/\* tack-metal: phases=(p|s)+ frame=\d+ \*/\s*$", src)
    assert "kernel void tk_phase1(" in src and "FB->f[" in src


@tack.kernel(fast_math=True)
def fast_sines(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * x[i] + x[i]


def test_math_is_precise_unless_fast_math():
    src = msl(norms, np.ones((4, 3), np.float32), np.ones(4, np.float32))
    assert "namespace tk_m = metal::precise;" in src and "tk_hypot(" in src
    assert "MTLMathModeSafe" in src  # what the backend must compile it with, said in the source
    assert "namespace tk_m = metal::fast;" in msl(fast_sines, F32, F32.copy())


def test_no_long_long_constants():
    src = msl(convention, 3, np.ones(8, np.float32), 2.0, np.ones((4, 2), np.float32), np.ones(8, np.int32), True)
    assert _msl.lint(src) == []
    assert "LL)" not in src and "ull" not in src


# ------------------------------------------------------------- refusals
def test_float64_array_is_refused_naming_it():
    with pytest.raises(tack.CompileError, match=r"Metal has no double precision.*array parameter 'x' is float64.*"
                                                r"float32"):
        msl(doubles, np.ones(4))


def test_complex128_array_is_refused():
    with pytest.raises(tack.CompileError, match=r"Metal has no double precision.*'z' is complex128.*complex64"):
        msl(complexes, np.ones(4, np.complex128), np.ones(4, np.complex128), np.zeros(1, np.complex128))


def test_float64_value_is_refused_naming_it():
    with pytest.raises(tack.CompileError, match=r"Metal has no double precision.*the value 't' is float64"):
        msl(double_local, F32.copy())


@tack.kernel
def weak_wide(a, x):
    for i in range(x.shape[0]):
        t = a
        x[i] = x[i] * tack.f32(int(t))   # int() of the Python float reads all of its bits


@tack.kernel
def weak_narrow(a, x):
    for i in range(x.shape[0]):
        t = a
        x[i] = x[i] * t


def test_python_float_used_as_float64_is_refused():
    with pytest.raises(tack.CompileError, match=r"the Python float 'a' is used as a float64; pass np.float32"):
        msl(weak_wide, 2.0, F32.copy())
    assert "Metal" not in str(np.float32)  # (the same kernel with np.float32 compiles:)
    msl(weak_wide, np.float32(2), F32.copy())


def test_python_floats_in_locals_that_meet_float32_compile():
    """Before the one type rule, `t = 0.5` and `t = a` made a double local, which Metal refused."""
    for src in (msl(weak_local, F32.copy()), msl(weak_narrow, 2.0, F32.copy())):
        code = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
        assert not re.search(r"\bdouble\b", code)


def test_a_python_float_meeting_only_float32_is_fine():
    src = msl(saxpy, 2.0, F32, F32, F32.copy())
    code = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    assert not re.search(r"\bdouble\b", code)


def test_64_bit_atomics_are_refused_saying_what_to_use():
    with pytest.raises(tack.CompileError, match=r"Metal has no 64-bit atomics.*int64 array 'h'.*int32"):
        msl(histogram, F32, np.zeros(4, np.int64))
    msl(histogram, F32, np.zeros(4, np.int32))  # int32 is fine


def test_print_is_refused_naming_metal():
    with pytest.raises(NotImplementedError, match=r"print\(\) is not supported on Metal"):
        msl(prints, F32)


def test_29_arrays_are_refused_28_are_fine():
    arrays = [np.ones(4, np.float32) for _ in range(29)]
    src = msl(k28, *arrays[:28])
    assert "[[buffer(30)]]" in src and "[[buffer(31)]]" not in src
    with pytest.raises(tack.CompileError, match=r"29 array parameters; Metal binds at most 28"):
        msl(k29, *arrays)


def test_the_cpu_still_runs_what_metal_refuses():
    x = np.ones(4)
    doubles(x)
    assert (x == 2).all()


# ------------------------------------------------------- type checks
KERNELS = {
    "saxpy": lambda: msl(saxpy, 2.0, F32, F32, F32.copy()),
    "convention": lambda: msl(convention, 3, F32.copy(), 2.0, np.ones((4, 2), np.float32), np.ones(8, np.int32),
                              True),
    "histogram": lambda: msl(histogram, F32, np.zeros(4, np.int32)),
    "atomics": lambda: msl(atomics, F32, np.zeros(4, np.int8), np.zeros(4, np.int16), np.zeros(4, np.uint32),
                           np.zeros(3, np.float32)),
    "halves": lambda: msl(halves, np.ones(4, np.float16), np.ones(4, np.float16)),
    "normals": lambda: msl(normals, tack.zeros(2, tack.vec3), tack.zeros(2, tack.vec3), tack.zeros(2, tack.vec3),
                           np.zeros(2, np.float32), tack.zeros(2, tack.mat33), tack.zeros(2, tack.vec3)),
    "complexes": lambda: msl(complexes, np.ones(4, np.complex64), np.ones(4, np.complex64),
                             np.zeros(1, np.complex64)),
    "norms": lambda: msl(norms, np.ones((4, 3), np.float32), np.ones(4, np.float32)),
    "phases": lambda: msl(phases, F32, F32.copy(), np.zeros(1, np.float32)),
    "k28": lambda: msl(k28, *[np.ones(4, np.float32) for _ in range(28)]),
}


@needs_clang
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_type_checks_as_msl(name):
    assert_checks(KERNELS[name]())


def test_prelude_parts_are_where_they_are_used():
    assert "tk_atomic_add_int8_t" in KERNELS["atomics"]() and "atomic_float" in KERNELS["atomics"]()
    assert "as_type<half>" in KERNELS["halves"]()
    assert "thread float *" in KERNELS["norms"]()  # a local array handed to a @tack.func


# ------------------------------------------------ the check can fail
def _doctor(old, new, src=None):
    src = src or KERNELS["saxpy"]()
    assert old in src, old
    return src.replace(old, new, 1)


@needs_clang
@pytest.mark.parametrize("why, old, new, expect", [
    ("an undeclared name", "total_ = n0_ > 0", "total_ = tk_no_such_name > 0", r"undeclared identifier"),
    ("a wrong address space", "device tk_ctx *ctx [[buffer(0)]]", "constant tk_ctx *ctx [[buffer(0)]]",
     r"address space|no matching function|cannot"),
    ("a device pointer where a thread one is expected", "const thread tk_abi *abi = &abi_;",
     "const thread tk_abi *abi = (device tk_abi *)ctx;", r"address space|cannot initialize"),
    ("a double", "const uint64_t stride_", "double d_ = 1; (void)d_; const uint64_t stride_",
     r"poisoned|double"),
    ("a wrong type", "as_type<float>((uint)A[1])", "as_type<float>(A[1])", r"different sizes"),
    ("a misspelled attribute", "[[buffer(3)]]", "[[bufer(3)]]", r"unknown attribute"),
    ("a long long constant", "total_ = 1;", "total_ = 1LL;", r"long long"),
    ("a hexadecimal float", "total_ = 1;", "total_ = (uint64_t)0x1p+0f;", r"hexadecimal float"),
    ("a pointer without its address space", "const thread tk_abi *abi", "const tk_abi *abi",
     r"without an address space"),
])
def test_the_check_rejects_wrong_msl(why, old, new, expect):
    if _msl.xcrun():
        if why == "a misspelled attribute":
            pytest.skip("Apple's compiler may only warn of an unknown attribute")
        expect = r"error|without an address space|long long|hexadecimal"  # Apple's wording differs
    good = KERNELS["saxpy"]()
    assert_checks(good)
    problems = _msl.check(_doctor(old, new, good))
    assert problems is not None, why
    assert re.search(expect, problems), (why, problems[:2000])


# ------------------------------------ many sources in one translation unit
def _in_process(fn, jobs, chunksize):
    return [fn(job) for job in jobs]


def _check_all(sources, monkeypatch):
    """_gpu_batch.compile_all over (name, source) for Metal, with nothing kept
    from an earlier run (so the batch is compiled every time) and in this process."""
    import _gpu_batch
    import _tool_cache

    monkeypatch.setattr(_tool_cache, "_DIR", None)
    return _gpu_batch.compile_all([("metal", name, "msl3", src) for name, src in sources], _in_process)


@needs_clang
def test_one_translation_unit_holds_every_kernel_apart(monkeypatch):
    """The suite's MSL is type-checked 48 sources to a translation unit: each
    in a namespace of its own, its kernels renamed apart (kernels have C
    linkage even in a namespace), the header once; the same kernels that
    check alone check together."""
    import _gpu_batch

    sources = [(name, KERNELS[name]()) for name in sorted(KERNELS)]
    program, entries = _gpu_batch.msl_batch_source([src for _, src in sources])
    assert program.count("namespace tkb") == len(sources) and all(entries)
    assert len({n for e in entries for n in e}) == sum(map(len, entries))
    results, stats = _check_all(sources, monkeypatch)
    assert results == [None] * len(sources)
    assert stats == {"metal": {"batches": 1, "batches_failed": 0}}


@needs_clang
@pytest.mark.parametrize("old, new, expect", [
    ("total_ = n0_ > 0", "total_ = tk_no_such_name > 0", "undeclared identifier 'tk_no_such_name'"),
    ("const thread tk_abi *abi", "const tk_abi *abi", "pointer without an address space"),
])
def test_a_bad_kernel_in_a_batch_is_named_with_its_own_message(monkeypatch, old, new, expect):
    """A batch with one bad source fails whole; its members are checked alone,
    so the failure names the bad kernel, with clang's (or the lint's) message
    for it alone, and the good ones pass."""
    sources = [("saxpy", KERNELS["saxpy"]()), ("the_bad_one", _doctor(old, new)), ("phases", KERNELS["phases"]())]
    results, stats = _check_all(sources, monkeypatch)
    assert stats == {"metal": {"batches": 1, "batches_failed": 1}}
    assert results[0] is None and results[2] is None
    assert results[1]["kernel"] == "the_bad_one" and expect in results[1]["error"], results[1]
    assert "tkb" not in results[1]["error"]  # its message from the source alone, not the batch


# --------------------------------------------------- the language suite
@needs_clang
def test_language_suite_type_checks_as_msl(tmp_path, record_property):
    """Every kernel the language tests call, with the arguments they call it
    with, type-checks as MSL; one that Metal refuses (f64, 64-bit atomics,
    print) raises an error naming Metal, and is checked again with its
    float64 and complex128 arguments made float32 and complex64."""
    summary = _suite.gpu_capture("metal")
    failures = summary["failures"]
    assert not failures, "\n\n".join(f"{f['kernel']}: {f['error'][:1500]}" for f in failures[:5])
    refused = sorted(set(summary.get("refused", []))) + sorted(set(summary.get("refused_in_f32", [])))
    assert all("Metal" in r for r in refused)
    checked = summary["compiled"]
    demoted = sum(1 for k in summary["kernels"] if k.endswith("[f32]"))
    print(f"\nMSL: {checked} distinct sources type-checked ({demoted} of them with float64 made float32), "
          f"{len(set(summary.get('refused', [])))} refused as called, "
          f"{len(set(summary.get('refused_in_f32', [])))} refused in float32 too")
    record_property("language_suite", f"Metal (MSL): {checked} distinct sources type-checked, {demoted} of them "
                    f"with float64 made float32")
    assert checked >= 80 and demoted >= 15, summary["kernels"]  # 105 and 26 when written


# ------------------------------------------- the MSL run on the CPU
@tack.kernel
def scatter(x, idx):
    for i in range(idx.shape[0]):
        x[idx[i]] += 1


def _rng():
    return np.random.default_rng(7)


EMULATED = {
    "saxpy": (saxpy, lambda: (2.5, _rng().standard_normal(37).astype(np.float32),
                              np.arange(37, dtype=np.float32), np.zeros(37, np.float32))),
    "convention": (convention, lambda: (3, np.arange(11, dtype=np.float32), 0.5,
                                        np.arange(8, dtype=np.float32).reshape(4, 2), np.arange(11, dtype=np.int32),
                                        True)),
    "histogram": (histogram, lambda: (_rng().integers(0, 50, 64).astype(np.float32), np.zeros(5, np.int32))),
    "atomics": (atomics, lambda: (_rng().standard_normal(23).astype(np.float32), np.zeros(4, np.int8),
                                  np.zeros(4, np.int16), np.zeros(4, np.uint32), np.zeros(3, np.float32))),
    "halves": (halves, lambda: (_rng().standard_normal(9).astype(np.float16), np.zeros(9, np.float16))),
    "complexes": (complexes, lambda: ((_rng().standard_normal(6) + 1j * _rng().standard_normal(6)).astype(np.complex64),
                                      np.zeros(6, np.complex64), np.zeros(1, np.complex64))),
    "norms": (norms, lambda: (_rng().standard_normal((7, 3)).astype(np.float32), np.zeros(7, np.float32))),
    "phases": (phases, lambda: (np.arange(9, dtype=np.float32), np.zeros(9, np.float32), np.zeros(1, np.float32))),
}


@needs_clang
@pytest.mark.parametrize("name", sorted(EMULATED))
def test_emulated_msl_gives_the_cpu_results(name):
    """The emitted MSL, compiled as C++ with a CPU stand-in for Metal's library
    and run thread after thread on a grid of 5 (_msl_emulate.py), computes what
    the CPU backend computes: the argument words, indexing, phases, frame and
    atomics are laid out as the backend will bind them."""
    import _msl_emulate

    if not _msl.has_float16():
        pytest.skip("the emulation needs a clang++ with _Float16 (clang 15 or later)")
    k, make = EMULATED[name]
    got, (failed, site) = _msl_emulate.run(k, *make())
    assert failed == 0, site
    cpu = list(make())
    k(*cpu)
    want = [a for a in cpu if isinstance(a, np.ndarray)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.astype(w.dtype), w, rtol=3e-6, atol=1e-6)


@needs_clang
def test_emulated_msl_records_a_failed_check():
    import _msl_emulate

    got, (failed, site) = _msl_emulate.run(scatter, np.zeros(4, np.int32), np.array([0, 1, 9], np.int64))
    assert failed == 1 and site > 0
    with pytest.raises(IndexError):
        scatter(np.zeros(4, np.int32), np.array([0, 1, 9], np.int64))
