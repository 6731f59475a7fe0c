"""MkDocs hooks of Tack's documentation site (mkdocs.yml names this file).

The gallery's pictures and run times are made by running the examples
(tools/gallery.py, the first step of `make docs`), not committed.  These hooks
bring them into the build:

* ``on_files`` adds each picture of the manifest (build/gallery/manifest.json,
  or $TACK_GALLERY_DIR's) to the site as ``gallery/images/<name>.png``, so the
  pages' ``![...](images/<name>.png)`` resolve;
* ``on_page_markdown`` replaces a page's ``<!-- gallery-run NAME -->`` with the
  run: the command line, the device and the seconds it took.

A page that names an example the manifest lacks, or a missing manifest, is a
warning, which ``mkdocs build --strict`` turns into a failed build: the site
never shows a gallery page without its picture.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.plugins.tack")
ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!-- gallery-run ([\w-]+) -->")


def _gallery_dir() -> Path:
    return Path(os.environ.get("TACK_GALLERY_DIR") or ROOT / "build" / "gallery")


def _manifest() -> dict:
    path = _gallery_dir() / "manifest.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def on_files(files, config):
    manifest = _manifest()
    if not manifest:
        log.warning(f"no gallery manifest in {_gallery_dir()}: run python tools/gallery.py first (make docs does)")
    for name, entry in manifest.items():
        files.append(File.generated(config, f"gallery/images/{name}.png",
                                    abs_src_path=str(_gallery_dir() / entry["picture"])))
    return files


def on_page_markdown(markdown, page, config, files):
    manifest = _manifest()

    def run_line(match):
        name = match.group(1)
        entry = manifest.get(name)
        if entry is None:
            log.warning(f"{page.file.src_uri}: the gallery has no run of '{name}' (tools/gallery.py)")
            return ""
        cores = entry.get("cores")
        where = "the CPU" if entry["device"] == "cpu" else f"`{entry['device']}`"
        return (f"**Run** by `make docs` on {where}{f' ({cores} cores)' if cores else ''}: "
                f"{entry['seconds']:.1f} s from start to picture, "
                f"compiles and checks included, with\n\n```sh\n{entry['command']}\n```\n")

    return MARK.sub(run_line, markdown)
