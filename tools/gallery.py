"""Run the gallery's examples at a small size and keep their pictures and run times.

The documentation site's gallery (docs/gallery/) has a page for each example of
docs/examples/: what it shows, its source (included from the file by the site's
build) and a picture of what it computed. The pictures are not committed: `make
docs` runs this script first, which runs every example below as a user would --
its own command line, a small size, ``--device`` -- with an empty kernel cache
of its own, times the whole run (start, compiles, checks, the picture: what a
reader's first run costs), and writes into the output folder (build/gallery):

    <name>.png         the example's picture (tack.vis or matplotlib, drawn by the example)
    manifest.json      {name: {"command", "seconds", "device", "picture"}}

tools/mkdocs_hooks.py adds the pictures to the site and writes each page's "Run"
line from the manifest; a page whose example has no entry fails the strict build.
An example that fails (its own checks, or no picture) fails this script, naming it.

    python tools/gallery.py [--output build/gallery] [--device cpu] [--only nbody,sph]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "docs" / "examples"


@dataclass(frozen=True)
class Example:
    name: str          # the gallery page: docs/gallery/<name>.md, the picture <name>.png
    script: str        # in docs/examples/
    args: tuple        # the small size and the picture's option; {out} is the output folder
    picture: str       # the file the example writes into {out}
    device: bool = True     # takes --device
    ranks: int = 0          # run under mpiexec -n ranks
    draw: str = ""          # a data file in {out} that `python -m tack.vis` draws as the picture


EXAMPLES = [
    Example("quickstart", "quickstart.py", ("--n", "1000000", "--output-dir", "{out}"), "quickstart.png"),
    Example("vtk-interop", "vtk_interop.py", ("--shape", "48", "40", "32", "--output", "{out}/radius.vti",
                                               "--picture", "{out}/radius.png"), "radius.png"),
    Example("reaction-diffusion", "reaction_diffusion.py", ("--n", "128", "--steps", "6000", "--output-dir", "{out}"),
            "reaction_diffusion.png"),
    Example("shallow-water", "shallow_water.py", ("--n", "192", "--steps", "150", "--output-dir", "{out}"),
            "shallow_water.png"),
    Example("nbody", "nbody.py", ("--n", "1024", "--steps", "300", "--output-dir", "{out}"), "nbody.png"),
    Example("image-filter", "image_filter.py", ("--size", "384", "--output-dir", "{out}"), "image_filter.png"),
    Example("monte-carlo", "monte_carlo.py", ("--samples", "20000000", "--batches", "2048", "--output-dir", "{out}"),
            "monte_carlo.png"),
    Example("heat-mpi", "heat_mpi.py", ("--shape", "32", "48", "48", "--steps", "60",
                                         "--output", "{out}/heat/heat.pvti"), "heat.png", ranks=2, draw="heat/heat.pvti"),
    Example("dask-blocks", "dask_blocks.py", ("--shape", "256", "192", "--chunks", "64", "--steps", "4",
                                               "--output-dir", "{out}"), "dask_blocks.png"),
    Example("particles", "particles.py", ("--n", "1000", "--steps", "40", "--output-dir", "{out}"), "particles.png"),
    Example("sph", "sph.py", ("--n", "12000", "--output-dir", "{out}"), "sph.png"),
    Example("lennard-jones", "lennard_jones.py", ("--side", "12", "--steps", "1000", "--output-dir", "{out}"),
            "lennard_jones.png"),
    Example("raycast", "raycast.py", ("--width", "320", "--height", "240", "--output-dir", "{out}"), "raycast.png"),
    Example("diffsim", "diffsim.py", ("--output", "{out}/diffsim.png"), "diffsim.png"),
    Example("cloth", "cloth.py", ("--n", "32", "--steps", "3000", "--output-dir", "{out}"), "cloth.png"),
]


def command(ex: Example, out: str, device: str, python: str) -> list[str]:
    cmd = [python, str(EXAMPLES_DIR / ex.script), *(a.replace("{out}", out) for a in ex.args)]
    if ex.device:
        cmd += ["--device", device]
    if ex.ranks:
        mpiexec = shutil.which("mpiexec", path=str(Path(python).parent)) or shutil.which("mpiexec")
        if mpiexec is None:
            raise SystemExit(f"{ex.name}: no mpiexec (uv sync --extra mpi installs MPICH's)")
        cmd = [mpiexec, "-n", str(ex.ranks), *cmd]
    return cmd


def shown(ex: Example, device: str) -> str:
    """The command line as a reader types it, from the repository's root."""
    args = [a.replace("{out}", ".").replace("./", "") for a in ex.args]
    line = f"python docs/examples/{ex.script} {' '.join(args)}"
    if ex.device:
        line += f" --device {device}"
    if ex.ranks:
        line = f"mpiexec -n {ex.ranks} {line}"
    return line


def run(ex: Example, out: Path, device: str, python: str) -> dict:
    cmd = command(ex, str(out), device, python)
    # an empty kernel cache of its own, so that the time is a first run's, compiles included,
    # whatever ran before
    cache = out / "kernel-cache" / ex.name
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, TACK_CACHE_DIR=str(cache))
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=out, env=env, timeout=600)
    if done.returncode == 0 and ex.draw:
        done = subprocess.run([python, "-m", "tack.vis", str(out / ex.draw), str(out / ex.picture)],
                              capture_output=True, text=True, cwd=out, env=env, timeout=600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{ex.name}: {' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    picture = out / ex.picture
    if not picture.is_file() or picture.stat().st_size == 0:
        raise SystemExit(f"{ex.name}: ran, but wrote no {ex.picture}:\n{done.stdout}")
    final = out / f"{ex.name}.png"
    if picture != final:
        shutil.copyfile(picture, final)
    line = shown(ex, device) + (f"; python -m tack.vis {ex.draw} {ex.picture}" if ex.draw else "")
    return {"command": line, "seconds": round(seconds, 2), "device": device if ex.device else "cpu",
            "picture": final.name, "output": done.stdout.strip().splitlines()[-3:]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=str(ROOT / "build" / "gallery"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", help="comma-separated names: run these and keep the others' entries")
    args = ap.parse_args(argv)
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if args.only and manifest_path.exists() else {}
    names = {e.name for e in EXAMPLES}
    chosen = [e for e in EXAMPLES if not args.only or e.name in args.only.split(",")]
    unknown = set(args.only.split(",")) - names if args.only else set()
    if unknown:
        raise SystemExit(f"--only {args.only}: no example named {', '.join(sorted(unknown))}")
    for ex in chosen:
        entry = run(ex, out, args.device, sys.executable)
        entry["cores"] = os.cpu_count()
        manifest[ex.name] = entry
        print(f"{ex.name:20s} {entry['seconds']:6.2f} s  {entry['picture']}", flush=True)
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
