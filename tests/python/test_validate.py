"""docs/examples/validate.py: the per-backend numerical checks and their report."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

import tack

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs/examples/validate.py"


def load_validate():
    spec = importlib.util.spec_from_file_location("tack_validate_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args, timeout=600):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.fixture
def kernels():
    reason = load_validate().kernels_available()
    if reason:
        pytest.skip(f"needs the kernel compiler: {reason}")


def test_cpu_checks_pass(kernels):
    out = run("--arch", "cpu", "--timeout", "60")
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 failed" in out.stdout
    assert "language/saxpy_f32" in out.stdout and "interop/" in out.stdout
    assert "vtk/" not in out.stdout  # only with --vtk


def test_opencl_checks_pass(kernels):
    import tack

    if not any(str(d).startswith("opencl") for d in tack.devices()):
        pytest.skip("no OpenCL device: install ocl-icd-libopencl1 and pocl-opencl-icd (make test does, as root)")
    out = run("--arch", "opencl", "--timeout", "120")
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 failed" in out.stdout and "language/out_of_bounds_raises_index_error" in out.stdout


def test_cpu_checks_with_vtk_pass(kernels):
    pytest.importorskip("vtkmodules", reason="VTK is not installed (uv sync --extra interop)")
    out = run("--arch", "cpu", "--vtk", "--timeout", "60")
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("vtk_arrays_share_both_ways", "vtk_every_numeric_type", "vtk_dataset_round_trip",
                 "vtk_image_kernel"):
        assert f"vtk/{name}" in out.stdout
        line = next(l for l in out.stdout.splitlines() if f"vtk/{name}" in l)
        assert "PASS" in line, line


@pytest.mark.parametrize("arch", ["cuda", "hip", "level_zero"])
def test_missing_backend_is_a_clean_message(arch):
    names = [str(d) for d in tack.devices()]
    if any(n == arch or n.startswith(arch + ":") for n in names):
        pytest.skip(f"this machine has {arch}")
    out = run("--arch", arch, timeout=120)
    assert out.returncode == 2
    assert f"the {arch} backend is not available on this machine" in out.stdout
    assert "Traceback" not in out.stderr


def test_metal_without_a_mac_checks_the_compile_side(kernels):
    """--arch metal where there is no Metal: the checks run on the CPU, each
    kernel is emitted as MSL (type-checked with clang++ in a checkout that has
    it), refusals are listed, and the run says that running needs a Mac."""
    names = [str(d) for d in tack.devices()]
    if any(n == "metal" or n.startswith("metal:") for n in names):
        pytest.skip("this machine has Metal")
    out = run("--arch", "metal", "--timeout", "60")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no Metal device here" in out.stdout and "Nothing ran on Metal: that needs a Mac." in out.stdout
    assert " 0 failed the check" in out.stdout
    assert "language/saxpy_f32" in out.stdout and "Metal has no double precision" in out.stdout
    line = next(l for l in out.stdout.splitlines() if l.startswith("language/saxpy_f32"))
    assert "MSL" in line and "1 kernel(s)" in line, line
    assert "Traceback" not in out.stderr


def test_unknown_arch_is_refused():
    out = run("--arch", "vulkan", timeout=120)
    assert out.returncode == 2
    assert "invalid choice" in out.stderr


def test_a_failing_check_fails_the_run(capsys):
    v = load_validate()
    v.check.items.clear()

    @v.check("interop", needs_kernels=False)
    def wrong_on_purpose():
        return v.equal([1, 2], [1, 3])

    @v.check("interop", needs_kernels=False)
    def right():
        return v.equal([1, 2], [1, 2])

    @v.check("interop", needs_kernels=False)
    def not_here():
        raise v.Skip("does not apply")

    assert v.main(["--arch", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "interop/wrong_on_purpose" in out and "FAIL  AssertionError: values:" in out
    assert "PASS  (exact)" in out and "SKIP  does not apply" in out
    assert "1 passed, 1 failed, 1 skipped" in out
    v.check.items.clear()

    @v.check("interop", needs_kernels=False)
    def only_right():
        return "fine"

    assert v.main(["--arch", "cpu"]) == 0


def test_close_reports_where_values_differ():
    v = load_validate()
    with pytest.raises(AssertionError, match=r"1 of 3 differ; at \(2,\)"):
        v.close([1.0, 2.0, 3.5], [1.0, 2.0, 3.0])
    with pytest.raises(AssertionError, match="shape"):
        v.close([1.0], [1.0, 2.0])
