"""tack.compile_kernels: several kernels compiled side by side ahead of their
first calls (python/tack/_kernels.py)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack


def _kernels():
    @tack.kernel
    def add(x, y, out):
        for i in range(out.shape[0]):
            out[i] = x[i] + y[i]

    @tack.kernel
    def scale(x, a):
        for i in range(x.shape[0]):
            x[i] *= a

    @tack.kernel
    def total(x, out):
        for i in range(x.shape[0]):
            out[0] += x[i]

    return add, scale, total


def test_compiles_every_signature_then_calls_do_not_compile():
    add, scale, total = _kernels()
    f, i = np.zeros(4), np.zeros(4, np.int32)
    secs = tack.compile_kernels([(add, (f, f, f)), (scale, (f, 2.0)), (scale, (i, 3)),
                                 (total, (f, np.zeros(1)), {}), (add, [i, i, i])], threads=2)
    assert len(secs) == 5 and all(s >= 0 for s in secs)
    # add's examples pass one array three times: each builds twice (arrays
    # that share memory, and the restrict build for separate arrays)
    assert (add.specializations, scale.specializations, total.specializations) == (4, 2, 1)
    x = np.arange(4.0)
    out = np.zeros(4)
    add(x, x, out)
    add(x, np.arange(4.0), np.zeros(4))
    scale(out, 0.5)
    t = np.zeros(1)
    total(out, t)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0] and t[0] == 6.0
    assert add.specializations == 4  # the calls found the compiled code


def test_empty_and_repeated():
    add, _, _ = _kernels()
    assert tack.compile_kernels([]) == []
    f = np.zeros(2)
    assert len(tack.compile_kernels([(add, (f, f, f))] * 3)) == 3
    assert add.specializations == 2  # shared and separate arrays
    g = np.zeros(2)
    assert len(tack.compile_kernels([(add, (f, g, np.zeros(2)))] * 2)) == 2
    assert add.specializations == 2  # separate arrays: the restrict build, already there


def test_one_failure_raises_after_the_others_compiled():
    add, scale, _ = _kernels()

    @tack.kernel
    def broken(x):
        for i in range(x.shape[0]):
            x[i] = undefined_name  # noqa: F821

    f = np.zeros(3)
    with pytest.raises(tack.CompileError, match="undefined_name"):
        tack.compile_kernels([(add, (f, f, f)), (broken, (f,)), (scale, (f, 1.0))])
    assert add.specializations == 2 and scale.specializations == 1


@pytest.mark.parametrize("calls,exc,words", [
    ([("not a kernel", ())], TypeError, "item 0: 'not a kernel' is not a @tack.kernel"),
    ([(None,)], TypeError, "item 0 must be (kernel, args)"),
    ("x", TypeError, "item 0 must be"),
])
def test_bad_items(calls, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        tack.compile_kernels(calls)


def test_bad_arguments_and_threads():
    add, _, _ = _kernels()
    with pytest.raises(TypeError, match="item 0: the arguments must be a tuple"):
        tack.compile_kernels([(add, np.zeros(3))])
    with pytest.raises(ValueError, match="threads must be a positive int, not 0"):
        tack.compile_kernels([], threads=0)
    with pytest.raises(ValueError, match="threads must be a positive int"):
        tack.compile_kernels([], threads=True)
    with pytest.raises(TypeError, match="expects 3 arguments|missing|takes"):
        tack.compile_kernels([(add, (np.zeros(3),))])

    @tack.func
    def helper(x):
        return x

    with pytest.raises(TypeError, match="is not a @tack.kernel"):
        tack.compile_kernels([(helper, (1,))])


def test_side_by_side_in_a_fresh_cache(tmp_path):
    """In a new process with an empty cache: the kernels compile, and calls then find them."""
    script = tmp_path / "many.py"
    script.write_text(textwrap.dedent('''
        import time
        import numpy as np
        import tack

        ks = []
        for p in range(4):
            src = f"""
        import tack
        @tack.kernel
        def k{p}(x):
            for i in range(x.shape[0]):
                x[i] = x[i] * {p + 2} + {p}
        """
            open(f"kmod{p}.py", "w").write(src)
            mod = __import__(f"kmod{p}")
            ks.append(getattr(mod, f"k{p}"))
        x = np.ones(8)
        t = time.perf_counter()
        secs = tack.compile_kernels([(k, (x,)) for k in ks])
        wall = time.perf_counter() - t
        for p, k in enumerate(ks):
            y = np.ones(8)
            k(y)
            assert y.tolist() == [float(p + 2 + p)] * 8
            assert k.specializations == 1
        print(f"{wall:.3f} {sum(secs):.3f}")
    '''))
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"), 
               PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    wall, total = map(float, r.stdout.split())
    assert 0 < wall <= total + 0.05
