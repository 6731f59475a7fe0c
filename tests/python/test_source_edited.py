"""A kernel is compiled from its file at the first call; when the file was
edited after the import, the source no longer is the function that runs in
Python, and the compile is refused instead of building a different kernel."""

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import tack

MODULE = textwrap.dedent("""
    import tack

    @tack.kernel
    def scale(x):
        for i in range(x.shape[0]):
            x[i] = x[i] * 2.0

    def make(k):
        @tack.kernel
        def shifted(x):
            for i in range(x.shape[0]):
                x[i] = x[i] + k
        return shifted

    class Holder:
        @staticmethod
        @tack.kernel
        def inside(x):
            for i in range(x.shape[0]):
                x[i] = -x[i]
""")


def load(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod, path


def test_unedited_kernels_compile(tmp_path):
    mod, _ = load(tmp_path, "src_ok")
    x = np.ones(3)
    mod.scale(x)
    mod.make(5.0)(x)  # a closure: its names live in cells, the check must not mind
    mod.Holder.inside(x)
    assert x.tolist() == [-7.0] * 3


@pytest.mark.parametrize("edit", [("* 2.0", "* 3.0"), ("x[i] * 2.0", "x[i] / 2.0"), ("range(x.shape[0])", "range(1)")])
def test_edited_after_import_is_refused(tmp_path, edit):
    mod, path = load(tmp_path, f"src_edit_{abs(hash(edit))}")
    path.write_text(MODULE.replace(*edit))
    with pytest.raises(tack.CompileError, match="changed after it was imported"):
        mod.scale(np.ones(3))


def test_edit_elsewhere_in_the_file_is_fine(tmp_path):
    mod, path = load(tmp_path, "src_elsewhere")
    path.write_text(MODULE + "\n\ndef unrelated():\n    return 1\n")
    x = np.ones(2)
    mod.scale(x)
    assert x.tolist() == [2.0, 2.0]


def asserting_here(x):
    for i in range(x.shape[0]):
        assert x[i] >= 0, "negative"


def test_pytest_rewritten_asserts_are_not_an_edit():
    # pytest rewrites the asserts of test modules; such a kernel still compiles.
    k = tack.kernel(asserting_here)
    k(np.ones(2))
    with pytest.raises(AssertionError, match="negative"):
        k(-np.ones(2))
