"""Python kernels launched on device="metal", run for real by the fake Metal.

With FAKE_METAL_EMULATE naming tests/msl, the fake Metal framework
(tests/c/fake_metal.c) compiles each library's MSL as C++ with clang++
against the CPU emulation of Metal's standard library (tests/msl/emulate)
and runs every thread of each dispatch in turn when the command buffer runs.
So here a Python kernel goes the whole way a Mac would take it: the metal
dialect's source, the backend's library, pipelines, buffers, argument words,
dispatch grid, command buffer and error record -- and its results are
compared with the CPU backend's.  What cannot show: races and the GPU's
scheduling (one thread runs at a time).

Checked: saxpy; a 2-D ndrange stencil; reductions (atomic sums into an
array element and a histogram, and sums private to each iteration); a
kernel of serial and parallel phases with a frame; complex64; scalars of
each kind (negative, 64-bit, bool, float), f16, a view at an offset,
strided views of a Metal array (a column, a reversed row, a transpose) read
and written in place, an empty array, more elements than threads in flight, a wrapped MTLBuffer; a
failed bounds check raising the CPU's IndexError at the synchronization
that reads the error record; an f64 kernel refused with a CompileError
naming Metal; MSL that does not compile giving the compiler's message as
Metal's; and kernels of the language suite (test_kernels.py), their
values and errors on metal against cpu.  Each test runs in a process of its
own (the fake is loaded as the Objective-C runtime).
"""

import os
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import _fake_runtime  # noqa: E402
import _kernel_wrap  # noqa: E402
import _msl  # noqa: E402
import _suite  # noqa: E402

pytestmark = [
    _fake_runtime.needs_cc("the fake Metal runtime"),
    pytest.mark.skipif(_msl.clang() is None, reason="clang++ is not installed (Debian: clang)"),
    pytest.mark.skipif(_msl.clang() is not None and not _msl.has_float16(),
                       reason="the emulation needs a clang++ with _Float16 (clang 15 or later)"),
    _fake_runtime.needs_fake_objc,
]

PRELUDE = textwrap.dedent("""
    import numpy as np
    import tack

    def on_metal(k, *args):
        \"\"\"k on Metal copies of args and on CPU copies; the arrays of each, as NumPy.\"\"\"
        m = [tack.array(a, device="metal") if isinstance(a, np.ndarray) else a for a in args]
        c = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        k(*m)
        k(*c)
        return ([a.numpy() for a in m if not isinstance(a, (int, float, complex, np.generic))],
                [a for a in c if isinstance(a, np.ndarray)])

    def same(k, *args, rtol=1e-6, atol=1e-6):
        got, want = on_metal(k, *args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
""")


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_metal.c", "libfake-metal.so", "the fake Metal runtime",
                               libs=("-lpthread", "-ldl"))


def _environment(tmp_path, fake):
    """The fake as Metal, running kernels with clang++ (its temporary files in tmp_path); tests/python importable."""
    return _fake_runtime.environment(tmp_path, ("FAKE_METAL_COUNT",), TACK_METAL_OBJC_PATH=fake, TACK_METAL_PATH=fake,
                                     FAKE_METAL_EMULATE=ROOT / "tests" / "msl", FAKE_METAL_CXX=_msl.clang(),
                                     TMPDIR=tmp_path,
                                     PYTHONPATH=os.pathsep.join([str(HERE)] + [p for p in sys.path if p]))


def run(tmp_path, fake, body, name="script.py"):
    return _fake_runtime.run_script(tmp_path, PRELUDE + textwrap.dedent(body), _environment(tmp_path, fake), name=name,
                                    timeout=600).stdout


def test_saxpy_stencil_and_complex(tmp_path, fake):
    run(tmp_path, fake, """
        @tack.kernel
        def saxpy(a, x, y, out):
            for i in range(x.shape[0]):
                out[i] = a * x[i] + y[i]

        @tack.kernel
        def stencil(a, b):
            for i, j in tack.ndrange((1, a.shape[0] - 1), (1, a.shape[1] - 1)):
                b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]

        @tack.kernel
        def complexes(z, w):
            for i in range(z.shape[0]):
                w[i] = np.sqrt(z[i]) * np.exp(z[i]) / (z[i] + 1) + abs(z[i])

        @tack.kernel
        def shift(a, c, out):
            for i in range(a.shape[0]):
                out[i] = a[i] * c + c

        rng = np.random.default_rng(1)
        n = 1000
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        got, want = on_metal(saxpy, 2.5, x, y, np.zeros(n, np.float32))
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_allclose(got[2], 2.5 * x + y, rtol=1e-6)
        same(stencil, rng.standard_normal((37, 53)).astype(np.float32), np.zeros((37, 53), np.float32))
        z = (rng.standard_normal(300) + 1j * rng.standard_normal(300)).astype(np.complex64)
        same(complexes, z, np.zeros(300, np.complex64), rtol=3e-5, atol=1e-5)
        # a Python complex is weak: with complex64 it is complex64, on Metal as on the CPU
        same(shift, z, 0.5 - 2j, np.zeros(300, np.complex64), rtol=1e-6)
        same(shift, z, np.complex64(0.5 - 2j), np.zeros(300, np.complex64), rtol=1e-6)
    """)


def test_reductions_and_phases(tmp_path, fake):
    run(tmp_path, fake, """
        @tack.kernel
        def histogram(x, h):
            for i in range(x.shape[0]):
                h[x[i] % h.shape[0]] += 1

        @tack.kernel
        def row_sums(m, rows, total):
            for i in range(m.shape[0]):
                s = 0                     # private to the iteration
                for j in range(m.shape[1]):
                    s += m[i, j]
                rows[i] = s
                total[0] += s             # atomic

        @tack.kernel
        def fsum(x, acc):
            for i in range(x.shape[0]):
                acc[0] += x[i]

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

        rng = np.random.default_rng(2)
        xi = rng.integers(0, 1000, 5000).astype(np.int32)
        got, want = on_metal(histogram, xi, np.zeros(17, np.int32))
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].sum() == 5000
        m = xi.reshape(100, 50)
        got, want = on_metal(row_sums, m, np.zeros(100, np.int32), np.zeros(1, np.int32))
        np.testing.assert_array_equal(got[1], m.sum(axis=1))
        assert got[2][0] == want[2][0] == xi.sum(), (got[2], want[2])
        xf = rng.standard_normal(3000).astype(np.float32)
        same(fsum, xf, np.zeros(1, np.float32), rtol=1e-4, atol=1e-3)
        src = phases.generated_source(np.zeros(9, np.float32), np.zeros(9, np.float32), np.zeros(1, np.float32),
                                      target="metal")
        assert "phases=psp" in src or "phases=pp" in src or src.count("kernel void tk_phase") >= 2, src[-200:]
        same(phases, np.arange(900, dtype=np.float32), np.zeros(900, np.float32), np.zeros(1, np.float32),
             rtol=1e-5)
        # run twice: the frame and the error record are reused between launches
        same(phases, np.arange(9, dtype=np.float32), np.zeros(9, np.float32), np.zeros(1, np.float32))
    """)


def test_arguments_views_and_big_grids(tmp_path, fake):
    run(tmp_path, fake, """
        import ctypes, os
        @tack.kernel
        def mix(x, k, big, flag, a, h, out):
            for i in range(x.shape[0]):
                v = x[i] * a + k + (big % 1000)
                if flag:
                    v = -v
                out[i] = v
                h[i % h.shape[0]] = h[i % h.shape[0]] + np.float16(1)

        @tack.kernel
        def scale(x, a):
            for i in range(x.shape[0]):
                x[i] = x[i] * a

        rng = np.random.default_rng(4)
        x = rng.standard_normal(700).astype(np.float32)
        for flag in (True, False):
            same(mix, x, -7, 2**40 + 123, flag, 0.75, np.zeros(3, np.float16), np.zeros(700, np.float32))
        # more elements than threads in flight: the grid-stride loop covers them all
        n = 300_001
        got, want = on_metal(scale, np.arange(n, dtype=np.float32), 2.0)
        np.testing.assert_array_equal(got[0], want[0])
        # a view at an offset in its buffer, and an empty array
        m = tack.array(np.arange(100, dtype=np.float32), device="metal")
        scale(m[37:], 2.0)
        want = np.arange(100, dtype=np.float32)
        want[37:] *= 2
        np.testing.assert_array_equal(m.numpy(), want)
        scale(tack.zeros(0, np.float32, device="metal"), 2.0)
        tack.synchronize()
        # an MTLBuffer wrapped from outside: the launch finishes before the call returns
        FAKE = ctypes.CDLL(os.environ["TACK_METAL_PATH"])
        FAKE.fake_metal_new_buffer.restype = ctypes.c_void_p
        FAKE.fake_metal_new_buffer.argtypes = [ctypes.c_ulong, ctypes.c_ulong]
        FAKE.fake_metal_contents.restype = ctypes.c_void_p
        FAKE.fake_metal_contents.argtypes = [ctypes.c_void_p]
        buf = FAKE.fake_metal_new_buffer(64, 0)
        mem = (ctypes.c_float * 16).from_address(FAKE.fake_metal_contents(buf))
        mem[:] = list(range(16))
        w = tack.array_from_ptr(buf, (16,), tack.f32, writable=True, device="metal")
        scale(w, 3.0)
        assert list(mem) == [3.0 * i for i in range(16)], list(mem)
    """)


def test_strided_views_of_metal_arrays_in_place(tmp_path, fake):
    run(tmp_path, fake, """
        @tack.kernel
        def update2(out, x):
            for i in range(out.shape[0]):
                for j in range(out.shape[1]):
                    out[i, j] = x[i, j] * 3 + i - j

        @tack.kernel
        def update(out, x):
            for i in range(out.shape[0]):
                out[i] = 2 * x[i] + 1

        m = (np.arange(7 * 9) % 13).astype(np.float32).reshape(7, 9)
        M = tack.array(m, device="metal")
        # a column from another column, a reversed row, a transpose: the buffer at element (0, 0)'s offset
        update(M[:, 0], M[:, 3])
        m[:, 0] = 2 * m[:, 3] + 1
        update(M[4, ::-2], M[5, ::2])
        m[4, ::-2] = 2 * m[5, ::2] + 1
        x = np.arange(63, dtype=np.float32).reshape(9, 7)
        update2(M.T, tack.array(x, device="metal"))
        m.T[...] = x * 3 + np.arange(9)[:, None] - np.arange(7)[None, :]
        tack.synchronize()
        np.testing.assert_array_equal(M.numpy(), m)
        np.testing.assert_array_equal(M[::-1, 2].numpy(), m[::-1, 2])
        print("ok")
    """)


def test_errors(tmp_path, fake):
    out = run(tmp_path, fake, """
        @tack.kernel
        def scatter(x, idx):
            for i in range(idx.shape[0]):
                x[idx[i]] += 1

        @tack.kernel
        def doubles(x):
            for i in range(x.shape[0]):
                x[i] = x[i] * 2.0

        idx = np.array([0, 1, 9], np.int64)
        try:
            scatter(np.zeros(4, np.int32), idx)
        except IndexError as e:
            cpu = str(e)
        else:
            raise SystemExit("the CPU did not check the index")
        x = tack.zeros(4, np.int32, device="metal")
        scatter(x, tack.array(idx, device="metal"))   # queued: the check fails on the device
        try:
            tack.synchronize()
        except IndexError as e:
            metal = str(e)
        else:
            raise SystemExit("Metal did not report the failed check")
        print("cpu:", cpu)
        print("metal:", metal)
        assert metal == cpu, (metal, cpu)
        # the device goes on working after a failed check
        scatter(x, tack.array(np.array([0, 3], np.int64), device="metal"))
        np.testing.assert_array_equal(x.numpy(), [2, 1, 0, 1])
        try:
            doubles(tack.zeros(4, np.float64, device="metal"))
        except tack.CompileError as e:
            assert "Metal" in str(e), e
        else:
            raise SystemExit("an f64 kernel was launched on Metal")
    """)
    assert "metal: " in out


def test_msl_that_does_not_compile_gives_the_compilers_message(tmp_path, fake):
    # the fake's compiler is clang++: a source it rejects is a CompileError with its message
    out = run(tmp_path, fake, """
        import ctypes, os
        @tack.kernel
        def saxpy(a, x, y):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]
        os.environ["FAKE_METAL_CXX"] = "false"
        try:
            saxpy(2.0, tack.ones(4, np.float32, device="metal"), tack.ones(4, np.float32, device="metal"))
        except tack.CompileError as e:
            print(e)
        else:
            raise SystemExit("compiled with a failing compiler")
    """)
    assert "does not compile for metal" in out and "MSL compiler failed" in out, out


def test_language_suite_kernels_metal_against_cpu(tmp_path, fake):
    """Kernels of tests/python/test_kernels.py: the same values, and the same
    errors (naming the same file and line), on Metal as on the CPU."""
    out = run(tmp_path, fake, """
        import test_kernels as K

        same(K.fill_indices, np.zeros(300, np.float32))
        same(K.radius_squared, np.zeros(5 * 7 * 9, np.float32), 9, 7)
        np.testing.assert_array_equal(on_metal(K.radius_squared, np.zeros(315, np.float32), 9, 7)[0][0],
                                      K.radius_expected())
        same(K.copy_kernel, np.zeros(50, np.int16), np.arange(50, dtype=np.int16))
        same(K.divide, np.arange(-20, 20, dtype=np.int32), 3)
        errors = 0
        for k, args in ((K.out_of_bounds, (np.zeros(8, np.float32), 1)),
                        (K.divide, (np.arange(8, dtype=np.int32), 0)),
                        (K.asserting, (np.array([1, 2, -3], np.float32),))):
            msgs = []
            for dev in ("cpu", "metal"):
                a = [tack.array(x, device=dev) if isinstance(x, np.ndarray) else x for x in args]
                try:
                    k(*a)
                    tack.synchronize()
                except Exception as e:
                    msgs.append((type(e).__name__, str(e)))
                else:
                    msgs.append(None)
            assert msgs[0] is not None and msgs[0] == msgs[1], (k.__name__, msgs)
            errors += 1
        print("errors", errors)
    """)
    assert "errors 3" in out, out


def test_local_arrays_suite_metal_against_cpu(tmp_path, fake):
    """Every call that the language suite's local-array files make (_suite.LOCAL_ARRAYS:
    local arrays, @tack.func, frames), run on Metal and on the CPU by the _metal_differential
    plugin: the same arrays after, or the same error.  Under make test the calls whose Metal
    source is in one half of the sources, chosen by its digest (_suite.HALVES["metal_emulated"]:
    the same ones every run); under make test-all every call."""
    files = _suite.paths(_suite.LOCAL_ARRAYS)
    # the CPU's kernels in this test run's cache (conftest.py), where the language suite's own runs
    # of these files put them: the fake Metal keeps nothing there (its emulation builds in tmp_path)
    env = dict(_environment(tmp_path, fake), TACK_CACHE_DIR=os.environ["TACK_CACHE_DIR"])
    res = _kernel_wrap.run_plugin("_metal_differential", files, "TACK_METAL_DIFF",
                                  tmp_path / "diff.json", 900, cwd=tmp_path, env=env,
                                  TACK_SUITE_SAMPLE="0" if _suite.TEST_ALL else "1")
    assert not res["differ"], "\n\n".join(res["differ"][:5])
    print(f"\nmetal against cpu: {res['agree']} calls agree ({res['demoted']} of them in single precision), "
          f"{res['refused']} refused naming Metal, {res['skipped']} skipped, {res['sampled_out']} in the other half")
    # every call either compared or left to the other half; 29 and 19 when written
    assert res["agree"] + res["sampled_out"] >= 25 and res["demoted"] >= 10, res
    if _suite.TEST_ALL:
        assert res["agree"] >= 25 and res["sampled_out"] == 0, res
    else:  # a sample, not a sliver: 55 compared and 13 left out when written (calls share sources)
        assert res["agree"] >= 8 and res["sampled_out"] >= 8, res


@pytest.mark.skipif(not _suite.TEST_ALL, reason="kernels compiled by clang++ for the emulation: under make test-all")
def test_streams_events_and_graphs_compute_the_right_values(tmp_path, fake):
    """Kernels run for real (the emulation) on two Metal streams and in a replayed graph: a kernel on
    one stream reads what a kernel on another wrote, copies on a stream see its kernels' writes, and
    each replay runs the captured launches in order (tests/python/test_metal_fake.py checks the
    order of command buffers; this checks the values)."""
    out = run(tmp_path, fake, """
        @tack.kernel
        def axpb(x, y, a, b):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + b

        n = 777
        x = tack.array(np.arange(n, dtype=np.float32), device="metal")
        y = tack.zeros(n, tack.f32, device="metal")
        z = tack.zeros(n, tack.f32, device="metal")
        s1, s2 = tack.Stream("metal"), tack.Stream("metal")
        axpb(x, y, 2.0, 1.0, stream=s1)      # y = 2x + 1 on s1
        axpb(y, z, 3.0, 0.0, stream=s2)      # z = 3y on s2: ordered after s1 by Tack
        with tack.stream(s2):
            got = z.numpy()
        np.testing.assert_array_equal(got, 3 * (2 * np.arange(n, dtype=np.float32) + 1))

        # an explicit event between two streams on arrays Tack would not order (a user's choice)
        e = s1.record()
        s2.wait(e)
        s2.synchronize()

        # a graph replayed three times: x -> 2x + 1 each time, in order
        with tack.capture(s1) as g:
            axpb(x, y, 2.0, 1.0)
            axpb(y, x, 1.0, 0.0)
        g.launch()
        g.launch(stream=s2)
        g.launch()
        want = np.arange(n, dtype=np.float32)
        for _ in range(3):
            want = 2 * want + 1
        np.testing.assert_array_equal(x.numpy(), want)
        print("ok")
    """)
    assert "ok" in out, out
