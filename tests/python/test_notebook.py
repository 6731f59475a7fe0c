"""Kernels defined in Jupyter cells, run through a real Jupyter kernel.

nbclient drives ipykernel as Jupyter does: the gallery's notebook
(docs/examples/notebook.ipynb: a kernel, an error, a figure) runs cell by
cell, then cells run after it in the same kernel edit a kernel's cell and
run it again, raise a run-time error, define kernels whose text IPython
does not keep; and the notebook runs again in a new kernel process
(Jupyter's "Restart and run all"; make test-all), which must find every
kernel in the kernel cache.  One kernel session records everything; the
tests read the record.  Needs the `notebook` dependency group (nbclient,
nbformat, ipykernel; `make env` installs it) and skips without it.  About
5 s of CPU, most of it the Jupyter kernel's start (its wall time is that
on an idle machine, 8-12 s on a loaded one).
"""

import base64
import copy
import os
import pathlib
import struct

import pytest

import _suite

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "examples" / "notebook.ipynb"
WHY = "needs the notebook dependency group (nbclient, nbformat, ipykernel): uv sync --group notebook"

nbformat = pytest.importorskip("nbformat", reason=WHY)
nbclient = pytest.importorskip("nbclient", reason=WHY)
pytest.importorskip("ipykernel", reason=WHY)
pytest.importorskip("vtkmodules", reason="the notebook's figure renders with VTK: uv sync --extra interop")

# Cells run after the notebook's own, in the same kernel, by name.
SCALE = """@tack.kernel
def scale(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] * a


x = np.ones(3, np.float32)
scale(x, 2.0)
print(x.tolist())"""
EXTRA = {
    "scale": SCALE,
    "keep": "first_scale = scale",
    "edited": SCALE.replace("x[i] * a", "x[i] + a"),
    # the kernel made before the edit, called with a new signature: compiled from its own text
    "old": "y = np.ones(3, np.float64)\nfirst_scale(y, 5.0)\nprint(y.tolist(), first_scale.specializations)",
    "unchanged": SCALE,
    "bounds": """@tack.kernel
def shift(x):
    for i in range(x.shape[0]):
        x[i + 10] = 1.0


shift(np.ones(3))""",
    "typed": """@tack.kernel
def mixed(x, flags):
    for i in range(x.shape[0]):
        x[i] = flags[i] + "1"


mixed(np.ones(3), np.zeros(3, np.int32))""",
    "exec": """ns = {"tack": tack}
exec("@tack.kernel\\ndef made(x):\\n    x[0] = 1.0\\n", ns)
ns["made"](np.ones(2))""",
    # the generated C of the notebook's kernel, which the kernel cache's key hashes: it names the
    # cell, not the file IPython made up for it (a temporary file of the kernel's process)
    "generated": """import tempfile
src = heat_step.generated_source(u, out, 0.2)
print("Cell In[" in src, tempfile.gettempdir() in src, heat_step.__wrapped__.__code__.co_filename in src)""",
    "timed": """%%time
@tack.kernel
def timed(x):
    for i in range(x.shape[0]):
        x[i] = 1.0


timed(np.ones(2))""",
}


def _cache_entries(folder):
    return {p.name for p in pathlib.Path(folder).iterdir() if p.suffix == ".so"} if os.path.isdir(folder) else set()


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    # the kernel process inherits this process's environment: make test's
    # kernel cache where it sets one (the kernels are then compiled once
    # across runs), else a fresh one
    cache = os.environ.get("TACK_CACHE_DIR") or str(tmp_path_factory.mktemp("kernels"))
    # and an IPython profile of its own (its history database is not the user's, nor shared
    # with the test runs beside it)
    settings = {"TACK_CACHE_DIR": cache, "IPYTHONDIR": str(tmp_path_factory.mktemp("ipython"))}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        own = len(nb.cells)
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                         resources={"metadata": {"path": str(ROOT)}})
        cells, where = {}, {}
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            for name, source in EXTRA.items():
                if name == "edited":  # the user edits the cell "scale" and runs it again
                    index = where["scale"]
                    cell = nb.cells[index]
                    cell.source = source
                else:
                    cell = nbformat.v4.new_code_cell(source)
                    nb.cells.append(cell)
                    index = where[name] = len(nb.cells) - 1
                client.execute_cell(cell, index)
                cells[name] = copy.deepcopy(cell)  # as it was after this run
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"notebook": nb.cells[:own], "cells": cells, "cache": cache, "ipython": settings["IPYTHONDIR"]}


def _text(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def _error(cell):
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert len(errors) == 1, f"expected one error from the cell, got {cell.outputs}"
    return errors[0]


def _code(cells):
    return [c for c in cells if c.cell_type == "code"]


def test_the_gallery_notebook_runs(record):
    code = _code(record["notebook"])
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    heat = next(c for c in code if "def heat_step" in c.source)
    assert _text(heat).startswith("heat "), heat.outputs
    for cell in code:  # only the cell tagged to raise does
        if "raises-exception" not in cell.metadata.get("tags", []):
            assert not [o for o in cell.outputs if o.output_type == "error"], (cell.source, cell.outputs)


def test_a_compile_error_names_the_cell_and_line(record):
    cell = next(c for c in _code(record["notebook"]) if "raises-exception" in c.metadata.get("tags", []))
    err = _error(cell)
    assert err.ename == "CompileError"
    # the undefined name is on the cell's line 5
    assert err.evalue == f"name 'ambient' is not defined (Cell In[{cell.execution_count}], line 5)"
    assert any("^" in line for line in err.traceback)  # the caret under the name, as IPython shows it


def test_a_compile_error_from_the_type_checker_names_the_cell(record):
    cell = record["cells"]["typed"]
    err = _error(cell)
    assert err.ename == "CompileError"
    assert err.evalue.endswith(f"(Cell In[{cell.execution_count}], line 4)"), err.evalue


def test_a_figure_shows_inline(record):
    cell = _code(record["notebook"])[-1]
    assert "render_slice" in cell.source
    pictures = [o for o in cell.outputs if "image/png" in o.get("data", {})]
    assert len(pictures) == 1, cell.outputs
    png = base64.b64decode(pictures[0].data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (420, 360)  # IHDR: the size asked for


def test_an_edited_cell_compiles_its_new_text(record):
    cells = record["cells"]
    assert _text(cells["scale"]) == "[2.0, 2.0, 2.0]\n"
    assert _text(cells["edited"]) == "[3.0, 3.0, 3.0]\n"  # x + a, not x * a: compiled anew
    assert _text(cells["old"]) == "[5.0, 5.0, 5.0] 2\n"  # the kernel made before the edit is as it was
    assert _text(cells["unchanged"]) == "[2.0, 2.0, 2.0]\n"  # the first text again: x * a


def test_a_run_time_error_names_the_cell(record):
    cell = record["cells"]["bounds"]
    err = _error(cell)
    assert err.ename == "IndexError"
    assert f"kernel shift, Cell In[{cell.execution_count}]:4)" in err.evalue, err.evalue


def test_a_kernel_without_source_is_refused_clearly(record):
    err = _error(record["cells"]["exec"])
    assert err.ename == "TypeError"
    assert "cannot compile 'made': its source code is not available" in err.evalue
    err = _error(record["cells"]["timed"])
    assert err.ename == "TypeError"
    assert "cannot compile 'timed'" in err.evalue and "%%time" in err.evalue, err.evalue


def test_the_generated_source_names_the_cell_not_the_process(record):
    assert _text(record["cells"]["generated"]) == "True False False\n", record["cells"]["generated"].outputs


@pytest.mark.skipif(not _suite.TEST_ALL, reason="a second Jupyter kernel process (~3 s): make test-all")
def test_a_restarted_notebook_finds_its_kernels_in_the_cache(record, monkeypatch):
    # "Restart and run all": a new kernel process runs the notebook's kernel cells again and
    # compiles nothing (the kernel cache is the one the fixture's session filled)
    monkeypatch.setenv("TACK_CACHE_DIR", record["cache"])
    monkeypatch.setenv("IPYTHONDIR", record["ipython"])
    before = _cache_entries(record["cache"])
    again = nbformat.read(NOTEBOOK, as_version=4)
    again.cells = [c for c in again.cells if c.cell_type == "code" and "tack.vis" not in c.source]
    nbclient.NotebookClient(again, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    assert _text(next(c for c in again.cells if "def heat_step" in c.source)).startswith("heat ")
    assert _cache_entries(record["cache"]) - before == set()
