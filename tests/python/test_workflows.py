"""The hosted runners' workflow (.github/workflows/wheels.yml) and the wheels'
configuration (pyproject.toml, [tool.cibuildwheel]) are kept valid here,
where neither can run: check-jsonschema (the dev group) validates the workflow
against the GitHub Actions workflow schema it ships (no network), and the rest
checks that the two say what docs/platforms.md promises."""
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
CHECK = shutil.which("check-jsonschema", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                              os.environ.get("PATH", "")]))
needs_check = pytest.mark.skipif(CHECK is None, reason="needs check-jsonschema (the dev group: uv sync)")


def schema_check(*paths):
    return subprocess.run([CHECK, "--builtin-schema", "vendor.github-workflows", *map(str, paths)],
                          capture_output=True, text=True, timeout=60)


@needs_check
def test_the_workflows_are_valid_against_the_github_schema():
    assert WORKFLOWS == [WHEELS] or WHEELS in WORKFLOWS
    proc = schema_check(*WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_check
def test_the_schema_check_catches_what_a_runner_would_refuse(tmp_path):
    # the check can fail: a job with no runner and a step with neither `run` nor `uses`
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    steps:\n      - name: nothing\n")
    proc = schema_check(bad)
    assert proc.returncode != 0, proc.stdout + proc.stderr


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
