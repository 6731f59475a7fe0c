"""The Rodinia kernels of the benchmark (benchmarks/rodinia.py): each Tack
port, and each C+OpenMP version (benchmarks/c/rodinia.c), computes what the
NumPy version computes, at the tiny --quick sizes; the checker catches a
wrong result; the driver runs end to end and writes its table.  The C
versions, and the Numba ones where Numba is installed, are checked under
`make test-all` (their compiles take seconds; the benchmark itself checks
every peer's result before it times it)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import _suite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from benchmarks import rodinia as R  # noqa: E402


@pytest.mark.parametrize("name", R.ORDER)
def test_tack_matches_numpy(name):
    case = R.CASES[name]
    rec = R.time_case("tack", case, case.quick, reps=1)
    assert rec["status"] == "ok", rec
    assert rec["time_s"] > 0


@pytest.mark.skipif(not _suite.TEST_ALL, reason="compiles all of benchmarks/c/rodinia.c at -O3 "
                    "(the benchmark checks each C result before timing it anyway): make test-all")
def test_c_matches_numpy():
    for name in R.ORDER:
        case = R.CASES[name]
        rec = R.time_case("c", case, case.quick, reps=1)
        assert rec["status"] == "ok", rec


@pytest.mark.skipif(not _suite.TEST_ALL, reason="Numba compiles for about a minute: make test-all")
def test_numba_matches_numpy():
    pytest.importorskip("numba")
    for name in R.ORDER:
        case = R.CASES[name]
        rec = R.time_case("numba", case, case.quick, reps=1)
        assert rec["status"] == "ok", rec


def test_kernels_are_the_suites():
    """The core of Rodinia's CPU kernels, each at two sizes, and the state a call changes is put back."""
    assert {"hotspot", "hotspot3d", "srad", "pathfinder", "nw", "lud", "kmeans", "backprop", "nn"} <= set(R.ORDER)
    for case in R.CASES.values():
        assert len(case.sizes) == 2 and case.sizes[0] < case.sizes[1], case.name
    case = R.CASES["hotspot"]
    inp = R.inputs(case, case.quick)
    t0 = inp["t"].copy()
    case.tack(inp)
    assert not np.array_equal(inp["t"], t0)
    R.reset(case, inp)
    np.testing.assert_array_equal(inp["t"], t0)


def test_a_wrong_result_is_caught(monkeypatch):
    """A version that computes something else gets no time: its record says what differs."""
    case = R.CASES["nn"]

    def wrong(inp):
        case.numpy(inp)
        inp["dist"][3] += 1.0

    monkeypatch.setattr(case, "tack", wrong)
    rec = R.time_case("tack", case, case.quick, reps=1)
    assert rec["status"] == "wrong" and "time_s" not in rec
    assert rec["reason"].startswith("dist: 1 of 1000 differ, first at 3")


def test_driver_quick(tmp_path):
    md, js = tmp_path / "rodinia.md", tmp_path / "rodinia.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "rodinia.py"), "--quick",
                        "--peers", "tack,numpy", "--kernels", "nn", "--md", str(md),
                        "--json", str(js)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    text = md.read_text()
    assert "| nn | 1000 |" in text and "at least Numba's speed: 0 of 0 rows" in text
    assert "| nn | 1000 |" in r.stdout


def test_unknown_kernel_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        R.main(["--kernels", "hotspot,nope"])
    assert e.value.code == 2 and "unknown kernel 'nope'" in capsys.readouterr().err


def test_section_has_both_tables_and_the_notes():
    """make bench's section: the two-thread table, the one-thread one, the targets and the diagnosis."""
    rec = {"kernel": "nn", "size": 1000, "label": "1000", "status": "ok"}
    two = [dict(rec, peer="tack", time_s=2e-3), dict(rec, peer="numba", time_s=1e-3), dict(rec, peer="c", time_s=4e-3)]
    one = [dict(rec, peer="tack", time_s=1e-3), dict(rec, peer="numba", time_s=3e-3), dict(rec, peer="c", time_s=1e-3)]
    data = {"threads": 2, "rounds": 3, "cores": 2, "load": [1.0, 2.0], "records": two,
            "one_thread": {"rounds": 2, "load": [1.0, 1.0], "records": one}}
    text = R.section(data)
    assert "| nn | 1000 | 2.00 ms | 1.00 ms | 4.00 ms | -- | 0.50 | 2.00 | -- |" in text
    assert "### One thread" in text and "| nn | 1000 | 1.00 ms | 3.00 ms | 1.00 ms | -- | 3.00 | 1.00 | -- |" in text
    assert "at least Numba's speed: 0 of 1 rows (not: nn 1000)" in text
    assert "at least Numba's speed: 1 of 1 rows." in text
    assert "what limits Tack where it misses" in text  # benchmarks/RODINIA.md
