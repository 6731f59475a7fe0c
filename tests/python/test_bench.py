"""A quick smoke test of the benchmark harness (benchmarks/): every peer that
is installed computes every benchmark kernel at a tiny size, and its result
must equal Tack's (which must equal the NumPy reference).  Peers that are not
installed (Numba, Warp, Taichi are the ``bench`` extra) are skipped with the
reason.  Then the driver runs end to end in --quick mode on the peers that are
always there and writes its report."""

import contextlib
import ctypes
import ctypes.util
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from benchmarks import kernels as K  # noqa: E402
from benchmarks import report, worker  # noqa: E402
from benchmarks.peers import ORDER, load  # noqa: E402


def _tiny(spec):
    return spec.quick[0]


def _denormals_kept():
    return np.spacing(np.float32(0)) > 0 and (np.array([1e-39], np.float32) * np.float32(1.5))[0] != 0


@contextlib.contextmanager
def _kept_fp_environment():
    """The calling thread's floating-point environment, put back afterwards.

    A peer run in this process may change it and leave it so: Taichi turns on
    flush-to-zero (and denormals-are-zero) in the thread that runs its
    kernels, after which NumPy and every kernel that thread runs flush
    denormals, and later tests that need them (test_vector_math's ulps sweep)
    fail far from the cause.  The benchmark itself runs each peer in a
    process of its own; here the C library's fegetenv/fesetenv keep the
    environment around the peer's run."""
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    env = ctypes.create_string_buffer(256)  # larger than any fenv_t
    if libm.fegetenv(env) != 0:
        raise OSError("fegetenv failed")
    try:
        yield
    finally:
        libm.fesetenv(env)


@pytest.fixture(scope="module")
def tack_results(tmp_path_factory):
    """Tack's outputs at the tiny sizes, each checked against the reference."""
    tk = load("tack")
    assert tk.available() is None, tk.available()  # Tack itself is always there
    tk.setup(None)
    out = str(tmp_path_factory.mktemp("tack-results"))
    for name in K.ORDER:
        spec = K.SPECS[name]
        rec = worker.run_case(tk, spec, _tiny(spec), save=out, repeat=1, budget=0.0)
        assert rec["status"] == "ok", rec
        assert rec["checked_against"] == "reference"
    return out


@pytest.mark.parametrize("peer", [p for p in ORDER if p != "tack"])
def test_peer_matches_tack(peer, tack_results):
    mod = load(peer)
    why = mod.available()
    if why:
        pytest.skip(why)
    assert _denormals_kept()
    with _kept_fp_environment():
        mod.setup(None)
        for name in K.ORDER:
            spec = K.SPECS[name]
            rec = worker.run_case(mod, spec, _tiny(spec), against=tack_results, repeat=1, budget=0.0)
            if spec.peers and peer not in spec.peers:  # a kernel not written for every peer
                assert rec["status"] == "skipped" and "time_s" not in rec, rec
                continue
            assert rec["status"] == "ok", rec
            assert rec["checked_against"] == "tack"
            assert rec["time_s"] > 0
    assert _denormals_kept(), f"running the {peer} peer left flush-to-zero on in this process"


def test_a_wrong_result_is_caught(tack_results):
    """A peer whose result differs from Tack's does not get a time."""

    class Wrong:
        NAME = "wrong"

        @staticmethod
        def prepare(kernel, inp):
            def run():
                inp["values"][:] = 1.0
            return run, None

    spec = K.SPECS["radius_squared"]
    rec = worker.run_case(Wrong, spec, _tiny(spec), against=tack_results, repeat=1, budget=0.0)
    assert rec["status"] == "wrong" and "time_s" not in rec
    assert "differs from Tack's result" in rec["reason"]


def test_driver_quick(tmp_path):
    assert load("tack").available() is None, load("tack").available()
    md = tmp_path / "bench.md"
    js = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--quick",
                        "--peers", "tack,c,numpy", "--kernels", "saxpy,sum", "--no-scaling",
                        "--no-latency", "--md", str(md), "--json", str(js)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    text = md.read_text()
    assert "| saxpy | 1K |" in text and "## Targets" in text
    assert "| saxpy | 1K |" in r.stdout  # the same table, printed


def test_round_two_kernels_have_their_peers():
    """The kernels of issue 21 run beside Numba's parallel=True and C+OpenMP."""
    for name in ("stencil_local", "conv2d", "matmul_acc", "hist2", "transcendental"):
        assert {"tack", "c", "numba"} <= set(K.SPECS[name].peers), name
        assert len(K.SPECS[name].sizes) >= 3


def test_load_balance_kernel_has_its_peers():
    """The imbalanced kernel (iteration i costs i) runs beside Numba and C+OpenMP (guided)."""
    spec = K.SPECS["triangle"]
    assert {"tack", "c", "numba", "numpy"} <= set(spec.peers) and len(spec.sizes) >= 3
    assert "triangle" in K.ORDER


def test_report_handles_missing_peers():
    data = {"quick": True, "versions": {"cpu": "x", "cores": 2}, "records": [
        {"peer": "tack", "kernel": "saxpy", "size": 1024, "label": "1K", "status": "ok", "time_s": 1e-6},
        {"peer": "numba", "status": "unavailable", "reason": "numba not importable"},
        {"peer": "c", "kernel": "saxpy", "size": 1024, "label": "1K", "status": "wrong", "reason": "bad"},
    ], "scaling": [], "bandwidth": None, "launch": [], "startup": {}}
    text = report.markdown(data)
    assert "Not run: Numba: numba not importable" in text
    assert "wrong [1]" in text
    assert any(ok is None for _, _, ok in report.targets(data))


def test_the_page_holds_every_hand_written_section():
    """docs/benchmarks.md is written whole by `make bench` from the tables and the hand-written
    sections report.NOTES names: a section added to the page alone would be lost at the next
    run (the GPU runs of 2026-12-04, the matrix products, the primitives and the spatial
    queries were, until they moved into benchmarks/*.md). Each must be on the page as it is in
    its file, and every section the page has after the tables must come from one."""
    page = open(os.path.join(ROOT, "docs", "benchmarks.md")).read()
    tail = report.notes()
    assert tail.strip() and tail.strip() in page
    after = page[page.index("## Findings"):]
    headings = [line for line in after.splitlines() if line.startswith("## ")]
    assert headings and all(h in tail for h in headings), [h for h in headings if h not in tail]
