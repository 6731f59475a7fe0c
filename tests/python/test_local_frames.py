"""The local arrays of one iteration must fit a thread's stack.

Each local array is capped (16 KiB on the CPU, 4 KiB on a GPU), but their
number was not: 600 arrays of 2048 doubles in one iteration (9.4 MiB) crashed
the process with a segmentation fault.  The total live at once -- a kernel's
own arrays, the largest parallel loop's, and the largest chain of
@tack.func frames it calls -- is now capped per target (1 MiB on the CPU,
64 KiB on a GPU) with a CompileError naming the total (frames.c).
"""

import importlib.util

import numpy as np
import pytest

import tack

_n = iter(range(10**6))


def _module(tmp_path, text):
    path = tmp_path / f"frames_{next(_n)}.py"
    path.write_text("import numpy as np\nimport tack\n\n" + text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _arrays(count, indent, shape="2048", first=0):
    lines = []
    for j in range(first, first + count):
        lines.append(f"{indent}a{j} = np.zeros({shape})")
        lines.append(f"{indent}a{j}[0] = {j}.0")
    return "\n".join(lines) + "\n"


def test_600_arrays_in_one_iteration_are_a_compile_error_not_a_crash(tmp_path):
    mod = _module(tmp_path, "@tack.kernel\ndef k(out):\n    for i in range(out.shape[0]):\n"
                  + _arrays(600, "        ") + "        out[i] = a599[0]\n")
    out = np.zeros(4)
    with pytest.raises(tack.CompileError, match=r"take 9830400 bytes.*at most 1048576 fit a CPU thread's stack"):
        mod.k(out)
    assert out.tolist() == [0.0] * 4


def test_a_chain_of_func_frames_counts_together(tmp_path):
    text = ("@tack.func\ndef g(x):\n" + _arrays(40, "    ") + "    return x + a39[0]\n\n"
            "@tack.func\ndef f(x):\n" + _arrays(30, "    ", first=40) + "    return g(x) + a69[0]\n\n"
            "@tack.kernel\ndef k(out):\n    for i in range(out.shape[0]):\n        out[i] = f(1.0)\n")
    mod = _module(tmp_path, text)
    with pytest.raises(tack.CompileError, match=r"take 1146880 bytes .*the calls through f\(\) 491520, then "
                                                r"g\(\) 655360"):
        mod.k(np.zeros(2))


def test_under_the_bound_it_runs_and_loops_do_not_add_up(tmp_path):
    one = _module(tmp_path, "@tack.kernel\ndef k(out):\n    for i in range(out.shape[0]):\n"
                  + _arrays(60, "        ") + "        out[i] = a59[0]\n")
    out = np.zeros(3)
    one.k(out)
    assert out.tolist() == [59.0] * 3
    # two parallel loops of 40 arrays each: never live at once (each loop's iterations run apart)
    two = _module(tmp_path, "@tack.kernel\ndef k(out):\n    for i in range(out.shape[0]):\n"
                  + _arrays(40, "        ") + "        out[i] = a39[0]\n"
                  "    for i in range(out.shape[0]):\n" + _arrays(40, "        ", first=40)
                  + "        out[i] = out[i] + a79[0]\n")
    two.k(out)
    assert out.tolist() == [118.0] * 3


def test_gpu_threads_get_their_own_bound(tmp_path):
    mod = _module(tmp_path, "@tack.kernel\ndef k(out):\n    for i in range(out.shape[0]):\n"
                  + _arrays(17, "        ", shape="512") + "        out[i] = a16[0]\n")
    out = np.zeros(2)
    with pytest.raises(tack.CompileError, match=r"take 69632 bytes.*at most 65536 fit a GPU thread's private"):
        mod.k.generated_source(out, target="opencl")
    mod.k(out)  # 68 KiB is fine on the CPU
    assert out.tolist() == [16.0, 16.0]
