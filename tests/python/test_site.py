"""The documentation site (mkdocs.yml, `make docs`) and its gallery.

Cheap, in `make test`: mkdocs.yml's nav names every page of docs/ and only
pages that exist; every example of docs/examples/ has its gallery page (with
its picture, its run line and its source included), a row in tools/gallery.py
and a card on the gallery's index; every page's Python code is run by a test
(this file runs the pages no other test runs, the home page among them); the MkDocs hook
adds the gallery's pictures and writes the run line, and warns (which the
strict build turns into a failure) when a page's example did not run.

Costly, under `make docs` and `make test-all` (TACK_TEST_ALL=1):
``test_the_site_renders`` builds the site -- the gallery's examples run, then
``mkdocs build --strict`` -- or takes the one `make docs` built
($TACK_TEST_SITE), serves it over HTTP, and has Debian's headless Chromium
screenshot three pages: each page's HTML has its title, the navigation and a
code block, the pictures it shows exist, and each screenshot shows the
theme's header bar, text, and (on the pages with a picture) the picture's own
colours. It skips, saying which, without MkDocs or Chromium.
"""

import functools
import http.server
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIG = (ROOT / "mkdocs.yml").read_text()
NOT_IN_GALLERY = {"validate.py"}  # a checker of a backend, not a picture: docs/visualization.md tells of it


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


GALLERY = _load("tack_docs_gallery", ROOT / "tools" / "gallery.py")


def nav_pages():
    """The pages mkdocs.yml's nav names, in order (the text between `nav:` and the end)."""
    nav = CONFIG.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", nav, re.M)


def test_the_nav_names_every_page_once():
    named = nav_pages()
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert len(named) > 30
    assert sorted(set(named)) == sorted(named), "a page is in the nav twice"
    assert sorted(named) == pages, (f"not in mkdocs.yml's nav: {sorted(set(pages) - set(named))}; "
                                    f"in the nav but no such page: {sorted(set(named) - set(pages))}")


def test_the_nav_reads_as_a_users_path():
    sections = re.findall(r"^  - ([^:\n]+):", CONFIG.split("\nnav:\n", 1)[1], re.M)
    order = ["Home", "Getting started", "Gallery", "The language", "Arrays", "Devices and backends",
             "Sharing arrays", "Visualization", "Beyond one machine", "Differentiation", "Algorithms",
             "Reference", "Design"]
    assert sections == order
    # the spec's chapter, "Sharing arrays with other libraries", is the repository's docs/interop.md
    assert "Sharing arrays with other libraries: interop.md" in CONFIG


def examples():
    return sorted(p.name for p in (DOCS / "examples").glob("*.py") if p.name not in NOT_IN_GALLERY)


def test_the_gallery_has_the_issues_examples():
    want = {"quickstart.py", "vtk_interop.py", "reaction_diffusion.py", "nbody.py", "image_filter.py",
            "monte_carlo.py", "heat_mpi.py", "dask_blocks.py", "particles.py", "sph.py", "raycast.py", "diffsim.py"}
    assert want <= set(examples())
    assert sorted(e.script for e in GALLERY.EXAMPLES) == examples(), "tools/gallery.py runs other examples"


@pytest.mark.parametrize("example", GALLERY.EXAMPLES, ids=lambda e: e.name)
def test_every_example_has_its_gallery_page(example):
    page = DOCS / "gallery" / f"{example.name}.md"
    assert page.exists(), f"no gallery page {page.relative_to(ROOT)} for docs/examples/{example.script}"
    text = page.read_text()
    assert re.search(rf"!\[[^\]]+\]\(images/{example.name}\.png\)", text), "no picture (with its alt text)"
    assert f"<!-- gallery-run {example.name} -->" in text, "no run line"
    assert f'--8<-- "docs/examples/{example.script}"' in text, "the source is not included"
    assert f"gallery/{example.name}.md" in nav_pages()
    assert f"]({example.name}.md)" in (DOCS / "gallery" / "index.md").read_text(), "no card on the gallery's index"
    # the example takes the options the gallery passes, a size among them
    source = (DOCS / "examples" / example.script).read_text()
    for option in (a for a in example.args if a.startswith("--")):
        assert f'"{option}"' in source, f"{example.script} has no {option}"
    if example.device:
        assert '"--device"' in source


def test_the_gallerys_command_lines():
    heat = next(e for e in GALLERY.EXAMPLES if e.name == "heat-mpi")
    line = GALLERY.shown(heat, "cpu")
    assert line.startswith("mpiexec -n 2 python docs/examples/heat_mpi.py --shape 32 48 48")
    assert "--output heat/heat.pvti --device cpu" in line
    cmd = GALLERY.command(next(e for e in GALLERY.EXAMPLES if e.name == "nbody"), "/out", "cuda:0", "python")
    assert cmd[-4:] == ["--output-dir", "/out", "--device", "cuda:0"]
    with pytest.raises(SystemExit, match="no example named nosuch"):
        GALLERY.main(["--only", "nosuch", "--output", "unused"])


# Every page's Python code is run by a test: the site shows the pages the tests run.
RUN_ELSEWHERE = {"language.md": "test_language_docs.py", "errors.md": "test_language_docs.py",
                 "backends.md": "test_language_docs.py", "beyond-one-machine.md": "test_language_docs.py",
                 "algorithms.md": "test_language_docs.py", "differentiation.md": "test_language_docs.py",
                 "spatial.md": "test_language_docs.py", "numba.md": "test_language_docs.py",
                 "warp.md": "test_language_docs.py",
                 "interop.md": "test_interop_docs.py",
                 "arrays.md": "test_array_views.py", "performance.md": "test_profile.py",
                 # the docstrings' examples, which test_doctests.py runs from the package itself
                 "api/python.md": "test_doctests.py"}
RUN_HERE = ["index.md", "getting-started.md", "devices.md", "configuration.md", "security.md"]
NOT_RUN = {
    "visualization.md": "a fragment: vtk_array is the reader's own VTK array (the chapter's exchange is "
                        "docs/examples/vtk_interop.py, which test_vtk_examples.py runs)",
    "runtime-contract.md": "a SIGINT during a loop and os.fork from a thread: test_interrupt.py and "
                           "test_fork_pool.py test what they show, in child processes",
}


def python_blocks(page):
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


def test_every_pages_code_is_run_by_a_test():
    with_code = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if python_blocks(p))
    assert sorted([*RUN_ELSEWHERE, *RUN_HERE, *NOT_RUN]) == with_code
    for page, test in RUN_ELSEWHERE.items():
        said = "DocTestFinder" if page == "api/python.md" else page
        assert said in (ROOT / "tests" / "python" / test).read_text(), f"{test} does not run {page}"


@pytest.mark.parametrize("page", RUN_HERE)
def test_the_pages_code_runs(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(DOCS / page)
    assert blocks
    for k, code in enumerate(blocks):
        path = tmp_path / f"page_{k}.py"  # from a file: kernels are compiled from their source text
        path.write_text(code)
        exec(compile(code, str(path), "exec"), {"__name__": "__doc_example__"})
    if page == "index.md":
        assert capsys.readouterr().out == "[ 1.  3.  5.  7.  9. 11. 13. 15.]\n"  # what the page shows


# --------------------------------------------------------------- the hook
def hooks():
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (uv sync --group docs)")
    return _load("tack_mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")


class _Page:
    class file:
        src_uri = "gallery/nbody.md"


def test_the_hook_adds_pictures_and_run_lines(tmp_path, monkeypatch):
    mod = hooks()
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    (tmp_path / "nbody.png").write_bytes(b"\x89PNG")
    (tmp_path / "manifest.json").write_text(json.dumps({"nbody": {
        "command": "python docs/examples/nbody.py --n 8 --device cpu", "seconds": 1.234, "device": "cpu",
        "picture": "nbody.png", "cores": 2}}))
    monkeypatch.setenv("TACK_GALLERY_DIR", str(tmp_path))
    yml = tmp_path / "mkdocs.yml"  # a bare configuration: Material's import alone takes seconds
    yml.write_text(f"site_name: t\ndocs_dir: {DOCS}\nsite_dir: {tmp_path / 'site'}\nplugins: []\n")
    config = load_config(str(yml))
    config.plugins._current_plugin = None  # what a build sets while it runs the hooks (File.generated reads it)
    files = mod.on_files(Files([]), config)
    assert files.get_file_from_path("gallery/images/nbody.png").abs_src_path == str(tmp_path / "nbody.png")
    out = mod.on_page_markdown("a\n<!-- gallery-run nbody -->\nb", _Page, config, files)
    assert "on the CPU (2 cores): 1.2 s" in out and "python docs/examples/nbody.py --n 8 --device cpu" in out


def test_the_hook_warns_when_an_example_did_not_run(tmp_path, monkeypatch, caplog):
    mod = hooks()
    monkeypatch.setenv("TACK_GALLERY_DIR", str(tmp_path))  # no manifest
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.tack"):
        from mkdocs.structure.files import Files

        mod.on_files(Files([]), None)
        mod.on_page_markdown("<!-- gallery-run nbody -->", _Page, None, None)
    assert "no gallery manifest" in caplog.text
    assert "gallery/nbody.md: the gallery has no run of 'nbody'" in caplog.text


# --------------------------------------------------------------- the site in a browser
def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def build_site(tmp_path):
    """The gallery run and the strict build, as `make docs` does, into tmp_path."""
    gallery = tmp_path / "gallery"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gallery.py"), "--output", str(gallery)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    env = dict(os.environ, TACK_GALLERY_DIR=str(gallery), NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The built site's folder and the address of an HTTP server on it (Material's search needs one)."""
    site = os.environ.get("TACK_TEST_SITE")
    if not site and os.environ.get("TACK_TEST_ALL") != "1":
        pytest.skip("the site's build and screenshots: make docs and make test-all (the gallery's examples run)")
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (uv sync --group docs)")
    pytest.importorskip("PIL", reason="Pillow (matplotlib's) is not installed (uv sync --group docs)")
    if chromium() is None:
        pytest.skip("no chromium: Debian's package chromium (make sysdeps-docs installs it as root)")
    site = Path(site) if site else build_site(tmp_path_factory.mktemp("site"))
    assert (site / "index.html").exists(), f"{site} holds no built site"
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def screenshot(url, path):
    done = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", "--window-size=1280,1000", f"--screenshot={path}", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and path.exists(), done.stderr[-2000:]
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def colour_keys(pixels):
    """Each coloured pixel (not white, grey or black) as one int of its colour in steps of 16; -1 for the others."""
    q = pixels // 16
    keys = q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]
    return np.where(pixels.max(1) - pixels.min(1) > 40, keys, -1)


PAGES = [("index.html", "Tack", "gallery/images/reaction-diffusion.png"),
         ("gallery/reaction-diffusion.html", "Reaction-diffusion - Tack", "gallery/images/reaction-diffusion.png"),
         ("interop.html", "Sharing arrays with other libraries - Tack", None)]


@pytest.mark.parametrize("page, title, picture", PAGES, ids=[p[0] for p in PAGES])
def test_the_site_renders(served, page, title, picture, tmp_path):
    site, base = served
    html = (site / page).read_text()
    assert re.search(rf"<title>{re.escape(title)}</title>", html), re.search(r"<title>.*?</title>", html)
    assert 'class="md-nav' in html and "Getting started" in html and "Sharing arrays" in html, "no navigation"
    assert re.search(r"<pre[^>]*>.*?<code", html, re.S), "no code block"
    assert 'class="md-search' in html, "no search"
    if picture:
        src = re.search(r'<img [^>]*src="([^"]+\.png)"', html).group(1)
        assert (site / page).parent.joinpath(src).resolve() == (site / picture).resolve()
        assert (site / picture).stat().st_size > 1000
    shots = Path(os.environ.get("TACK_TEST_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    shot = screenshot(f"{base}/{page}", shots / (page.replace("/", "-").replace(".html", ".png")))
    h, w, _ = shot.shape
    assert (h, w) == (1000, 1280)
    # the theme's header bar: Material's indigo across the top
    bar = shot[10:40, :].reshape(-1, 3)
    assert (np.abs(bar - [63, 81, 181]).max(1) < 24).mean() > 0.5, bar.mean(0)
    # not blank: a white page with dark text over much of it
    body = shot[60:, :].reshape(-1, 3)
    assert (body.max(1) < 100).mean() > 0.01 and len(np.unique(body // 16, axis=0)) > 40
    if picture:
        # the picture is drawn: its colour map's colours fill part of the window
        from PIL import Image

        drawn = np.asarray(Image.open(site / picture).convert("RGB")).reshape(-1, 3).astype(int)
        theirs = np.setdiff1d(colour_keys(drawn), [-1])
        near = np.isin(colour_keys(body), theirs)
        assert near.mean() > 0.03, f"{picture}'s colours cover {near.mean():.1%} of the screenshot"


def test_a_broken_link_fails_the_strict_build(tmp_path):
    # `make docs` builds with --strict: a link to no page, or to no heading of a page, fails it
    if os.environ.get("TACK_TEST_ALL") != "1":
        pytest.skip("two site builds (~20 s): make test-all")
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (uv sync --group docs)")
    from PIL import Image

    gallery = tmp_path / "gallery"  # a made-up manifest: the pictures need not be the examples' here
    gallery.mkdir()
    manifest = {}
    for ex in GALLERY.EXAMPLES:
        Image.new("RGB", (4, 4), (200, 30, 30)).save(gallery / f"{ex.name}.png")
        manifest[ex.name] = {"command": "python x.py", "seconds": 1.0, "device": "cpu", "picture": f"{ex.name}.png"}
    (gallery / "manifest.json").write_text(json.dumps(manifest))
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    config = tmp_path / "mkdocs.yml"
    config.write_text(CONFIG.replace("docs_dir: docs", f"docs_dir: {docs}")
                      .replace("site_dir: build/site", f"site_dir: {tmp_path / 'site'}")
                      .replace("  - tools/mkdocs_hooks.py", f"  - {ROOT / 'tools' / 'mkdocs_hooks.py'}")
                      .replace("base_path: [.]", f"base_path: [{ROOT}]"))
    env = dict(os.environ, TACK_GALLERY_DIR=str(gallery), NO_MKDOCS_2_WARNING="1")

    def build():
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
                              capture_output=True, text=True, env=env, timeout=300)

    done = build()
    assert done.returncode == 0, done.stderr[-3000:]
    with open(docs / "devices.md", "a") as f:
        f.write("\nSee [the nowhere page](nowhere.md) and [no heading](language.md#no-such-heading).\n")
    done = build()
    assert done.returncode != 0
    assert "contains a link 'nowhere.md', but the target is not found" in done.stderr
    assert "does not contain an anchor '#no-such-heading'" in done.stderr
