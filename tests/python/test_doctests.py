"""The examples in the package's docstrings run, as written, and give what
they show (the equivalent of pytest --doctest-modules on python/tack)."""

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import tack

OPTIONAL = {"tack.vis", "tack.interop.vtk"}  # need VTK (uv sync --extra interop)


def modules():
    names = ["tack"]
    for info in pkgutil.walk_packages(tack.__path__, "tack."):
        names.append(info.name)
    return sorted(names)


def examples(name):
    try:
        mod = importlib.import_module(name)
    except ImportError:
        if name in OPTIONAL:
            pytest.skip(f"{name} needs VTK")
        raise
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(mod, name, globs={"tack": tack, "np": np}) if t.examples]


def test_the_package_has_examples():
    assert sum(len(examples(n)) for n in modules() if n not in OPTIONAL) >= 2


@pytest.mark.parametrize("name", modules())
def test_docstring_examples(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in examples(name):
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
