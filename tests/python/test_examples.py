"""The runnable examples in docs/ run and pass their own checks."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_quickstart_runs():
    out = subprocess.run([sys.executable, str(ROOT / "docs/examples/quickstart.py")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "all checks passed" in out.stdout


def test_particles_runs(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "docs/examples/particles.py"), "--output",
                          str(tmp_path / "particles.vtp")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "all checks passed" in out.stdout
    if "VTK is not installed" not in out.stdout:
        assert (tmp_path / "particles.vtp").stat().st_size > 0


@pytest.mark.skipif(os.environ.get("TACK_TEST_ALL") != "1",
                    reason="the SPH example: make test-all (three kernels and SciPy's pairs, ~2-6 s)")
def test_sph_runs():
    # the SPH step with tack.HashGrid, checked inside against SciPy's pairs (docs/examples/sph.py)
    pytest.importorskip("scipy.spatial")
    out = subprocess.run([sys.executable, str(ROOT / "docs/examples/sph.py")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "all checks passed" in out.stdout


def test_raycast_runs(tmp_path):
    # a depth image of a torus through tack.Mesh, checked inside against brute-force Moller-Trumbore
    # (docs/examples/raycast.py); small, so that it stays a few seconds
    out = subprocess.run([sys.executable, str(ROOT / "docs/examples/raycast.py"), "--width", "96", "--height",
                          "72", "--output-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "all checks passed" in out.stdout
    if "VTK is not installed" not in out.stdout:
        assert (tmp_path / "raycast.png").stat().st_size > 0
        from vtkmodules.vtkIOXML import vtkXMLImageDataReader

        reader = vtkXMLImageDataReader()
        reader.SetFileName(str(tmp_path / "raycast.vti"))
        reader.Update()
        img = reader.GetOutput()
        assert img.GetDimensions() == (96, 72, 1)
        assert img.GetPointData().GetArray("depth").GetNumberOfTuples() == 96 * 72


# The gallery's four examples written for it (docs/gallery/), run in this process at a small
# size (a second or so each); `make docs` runs them bigger, with their pictures.
def _example(script):
    import importlib.util

    name = "docs_example_" + script.removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "docs/examples" / script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


SMALL = {
    "reaction_diffusion.py": (["--n", "32", "--steps", "400"], "reaction-diffusion: all checks passed"),
    "nbody.py": (["--n", "64", "--steps", "20"], "n-body: all checks passed"),
    "shallow_water.py": (["--n", "24", "--steps", "12"], "shallow water: all checks passed"),
    "image_filter.py": (["--size", "64"], "image filtering: all checks passed"),
    "monte_carlo.py": (["--samples", "200000", "--batches", "64"], "Monte Carlo: all checks passed"),
    "lennard_jones.py": (["--side", "4", "--steps", "20"], "Lennard-Jones: all checks passed"),
    "cloth.py": (["--n", "8", "--steps", "1900"], "cloth: all checks passed"),
}


@pytest.mark.parametrize("script", sorted(SMALL))
def test_gallery_example_runs_small(script, capsys):
    argv, passed = SMALL[script]
    _example(script).main([*argv, "--device", "cpu"])
    assert passed in capsys.readouterr().out


@pytest.mark.parametrize("script, argv, says", [
    ("reaction_diffusion.py", ["--n", "8"], "--n 8 --steps 4000: the grid needs 16 points a side"),
    ("reaction_diffusion.py", ["--steps", "4"], "the check 5 steps"),
    ("nbody.py", ["--n", "1"], "--n 1 --steps 200: needs two bodies"),
    ("shallow_water.py", ["--n", "4"], "--n 4 --steps 250: needs 8 cells a side and 6 steps"),
    ("image_filter.py", ["--sigma", "0"], "--sigma 0.0: needs 16 pixels a side and a positive sigma"),
    ("image_filter.py", ["--sigma", "nan"], "--sigma nan"),
    ("monte_carlo.py", ["--samples", "10", "--batches", "64"], "--samples 10 --batches 64: needs a batch"),
    ("monte_carlo.py", ["--batches", "0"], "--batches 0"),
    ("lennard_jones.py", ["--side", "3"], "--side 3 --steps 2000: needs 4 atoms a side"),
    ("cloth.py", ["--n", "3"], "--n 3 --steps 3000: needs 4 particles a side and 100 steps"),
])
def test_gallery_example_refuses_a_bad_size(script, argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        _example(script).main(argv)
    assert e.value.code == 2
    assert says in capsys.readouterr().err


def test_gallery_example_refuses_an_unknown_device(capsys):
    with pytest.raises(Exception, match="nosuch"):
        _example("nbody.py").main(["--n", "4", "--steps", "1", "--device", "nosuch:0"])


def test_vtk_interop_sizes_its_image(capsys):
    pytest.importorskip("vtkmodules", reason="VTK is not installed (uv sync --extra interop)")
    example = _example("vtk_interop.py")
    example.main(["--shape", "2", "2", "2"])  # 8 points: the check's write lands on the last one
    assert "VTK interop: check passed" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        example.main(["--shape", "4", "0", "2"])
    assert e.value.code == 2 and "--shape 4 0 2: every axis needs a point" in capsys.readouterr().err


def _opencl():
    import tack

    if os.environ.get("TACK_TEST_ALL") != "1":
        pytest.skip("the examples on PoCL's OpenCL device: make test-all (PoCL's compiles, ~2 s a kernel)")
    if "opencl:0" not in tack.devices():
        pytest.skip("no OpenCL device (make sysdeps-test installs PoCL)")


@pytest.mark.parametrize("script", sorted(SMALL))
def test_gallery_example_runs_on_opencl(script, capsys):
    _opencl()
    argv, passed = SMALL[script]
    _example(script).main([*argv, "--device", "opencl:0"])
    assert passed in capsys.readouterr().out


def test_vtk_interop_copies_to_another_device(capsys):
    _opencl()
    pytest.importorskip("vtkmodules", reason="VTK is not installed (uv sync --extra interop)")
    example = _example("vtk_interop.py")
    image, scalars, exported, field = example.build_image((6, 5, 4), "opencl:0")
    example.check(image, scalars, exported, field, (6, 5, 4))  # VTK's array untouched, the export a copy
    assert field.device == "opencl:0" and image.GetPointData().GetScalars().GetName() == "radius_squared"
