"""Rewrite the generated sections of docs/design/architecture.md from the code.

Three sections are generated, each between a pair of marker lines

    <!-- generated: NAME (tools/gen_architecture.py; make docs-gen) -->
    ...
    <!-- end generated: NAME -->

and everything outside the markers is hand-written prose, left as it is:

- ``includes``: which part of the tree includes the headers of which, read from
  the ``#include "..."`` lines of src/ (the layers as the code has them);
- ``passes``: the order of the compile, read from ``tack_compile`` in
  src/compiler/driver.c -- every compiler function it calls (or names, should
  the sequence become a table) that takes the compile, the condition it runs
  under, the file that defines it and the comment beside it;
- ``file-map``: every source file, folder by folder, with the first sentence of
  the essay it opens with (``/* name.c -- what it does. ...`` for C, the module
  docstring for Python).

``python tools/gen_architecture.py`` rewrites the page; ``--check`` writes
nothing and exits 1 when a section is stale (tests/python/test_architecture_map.py
runs the same check).  The parsing is deliberately tolerant: a file without an
opening essay, or a driver whose calls move about, still gives a map -- with the
gap named in it, so the test that compares the page with a fresh run fails.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "design" / "architecture.md"
NO_ESSAY = "(no opening essay: write one)"

# The folders of the map, in the order the page walks them, with a line each.
FOLDERS = [
    ("include", "*.h", "the public C API, installed with libtack"),
    ("src/compiler", "*", "the kernel compiler: the driver and the intrinsic table"),
    ("src/compiler/ir", "*", "the AST builder, the typed IR, its types, dump and verifier, the arena"),
    ("src/compiler/lower", "*", "kernel AST to typed IR"),
    ("src/compiler/analysis", "*", "what the compiler proves about the IR (races, stack frames)"),
    ("src/compiler/passes", "*", "the IR passes"),
    ("src/compiler/cpu", "*", "the CPU's kernel layout and its loop passes"),
    ("src/compiler/grid", "*", "the GPU grid layout every GPU dialect shares"),
    ("src/compiler/emit", "*", "the C-family emitter every dialect uses"),
    ("src/compiler/dialects", "*", "one source language per compile target"),
    ("src/runtime", "*", "devices, memory, arrays, DLPack, the thread pool, programs"),
    ("src/private", "*", "what libtack exports but does not install (for the C tests and the extension's test hooks)"),
    ("src/platform", "*", "what the core asks of the operating system: POSIX and Windows behind one header"),
    ("src/backends/common", "*", "what the backends share"),
    ("src/backends/cpu", "*", "the CPU backend"),
    ("src/backends/cuda", "*", "NVIDIA GPUs through CUDA"),
    ("src/backends/hip", "*", "AMD GPUs through HIP"),
    ("src/backends/opencl", "*", "any OpenCL device"),
    ("src/backends/level_zero", "*", "Intel GPUs through Level Zero"),
    ("src/backends/metal", "*", "Apple GPUs through Metal"),
    ("src/python", "*", "the CPython extension tack._core"),
    ("python/tack", "*.py", "the Python package"),
    ("python/tack/interop", "*.py", "tack.interop"),
    ("python/tack/vis", "*.py", "tack.vis"),
    ("tests/c", "*", "the C tests (make test-c): one program each, their harness and the fake drivers they load"),
    ("tests/python", "_*.py", "the Python tests' shared helpers and plugins"),
    ("tests/soak", "*.py", "the soak test (make soak)"),
    ("tests/wheel", "*.py", "what every platform's wheel runs once installed (pyproject.toml's [tool.cibuildwheel])"),
    ("tools", "*.py", "tools for developers"),
]
SOURCE_SUFFIXES = {".c", ".h", ".def", ".py"}

# What tack_compile calls that is not a step of the compile: the driver's own
# machinery, the verifier (named with each step instead) and errors.
NOT_STEPS = re.compile(r"^tk_(verify|error|oom|unsupported|arena_\w+|dialect_find|program_\w+|alloc|strdup|fmt)$")


# ------------------------------------------------------------------ essays
def first_sentence(text: str) -> str:
    """The first sentence of a paragraph of prose, as one line."""
    text = " ".join(text.split())
    # a sentence ends at '.', '!' or '?' before a space and a capital, a quote
    # or a backquote, or at the end of the paragraph; "e.g." and "i.e." do not
    m = re.search(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s+[A-Z`\"(]|$)", text)
    sentence = text[: m.end()] if m else text
    if sentence.endswith(":"):
        sentence = sentence[:-1].rstrip() + "."
    return sentence


def c_essay(path: Path) -> str | None:
    """The opening comment of a C file: "name.c -- what it does. More." gives
    "what it does."; None without one."""
    text = path.read_text(errors="replace")
    m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if not m:
        return None
    lines = [re.sub(r"^\s*\*? ?", "", line) for line in m.group(1).splitlines()]
    paragraph = []
    for line in lines:
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    body = " ".join(paragraph)
    m = re.match(r"\S+\s+--\s+(.*)", body)
    if m:
        body = m.group(1)
    return first_sentence(body) if body else None


def py_essay(path: Path) -> str | None:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text()))
    except SyntaxError:
        return None
    if not doc:
        return None
    return first_sentence(doc.split("\n\n")[0])


def essay(path: Path) -> str | None:
    return py_essay(path) if path.suffix == ".py" else c_essay(path)


def md_inline(text: str) -> str:
    """Prose from a comment, safe in Markdown: outside backquotes a '<' cannot
    open an HTML tag, and a '|' is escaped everywhere (table cells)."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;")
    return "".join(parts).replace("|", "\\|")


def folder_files(folder: str, pattern: str) -> list[Path]:
    base = ROOT / folder
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob(pattern) if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def unmapped_sources() -> list[str]:
    """Source files under the mapped trees that no folder of FOLDERS lists."""
    listed = {p for folder, pattern, _what in FOLDERS for p in folder_files(folder, pattern)}
    found = []
    for tree, pattern in (("src", "*"), ("include", "*.h"), ("python/tack", "*.py")):
        for p in sorted((ROOT / tree).rglob(pattern)):
            if p.is_file() and p.suffix in SOURCE_SUFFIXES and p not in listed:
                found.append(str(p.relative_to(ROOT)))
    return found


def file_map() -> str:
    out = []
    for folder, pattern, what in FOLDERS:
        files = folder_files(folder, pattern)
        if not files:
            continue
        shown = f"{folder}/" + ("" if pattern in ("*", "*.py", "*.h") else f" (`{pattern}`)")
        out.append(f"**`{shown.split(' ')[0]}`**{shown[len(shown.split(' ')[0]):]}: {what}.\n")
        for p in files:
            line = essay(p)
            out.append(f"- `{p.name}`: {md_inline(line) if line else NO_ESSAY}")
        out.append("")
    missing = unmapped_sources()
    if missing:
        out.append("**Not in a folder of the map** (add the folder to tools/gen_architecture.py):\n")
        out.extend(f"- `{m}`" for m in missing)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------- includes
def part_of(rel: str) -> str | None:
    """The part of the tree a path under src/ belongs to, for the include
    table: the top folder, and for backends the backend's own folder."""
    bits = rel.split("/")
    if bits[0] == "backends" and len(bits) > 2:
        return "backends/" + bits[1] if bits[1] == "common" else "backends/<kind>"
    return bits[0] if len(bits) > 1 else None


def include_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    src = ROOT / "src"
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".c", ".h", ".def") or not path.is_file():
            continue
        me = part_of(str(path.relative_to(src)))
        if me is None:
            continue
        seen = graph.setdefault(me, set())
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(errors="replace"), re.M):
            if (ROOT / "include" / name).exists():
                seen.add("include")
            elif (path.parent / name).exists() and "/" not in name:
                other = part_of(str((path.parent / name).relative_to(src)))
                if other and other != me:
                    seen.add(other)
            elif (src / name).exists():
                other = part_of(name)
                if other and other != me:
                    seen.add(other)
            else:
                seen.add("?" + name)
        for name in re.findall(r"^\s*#\s*include\s+<(Python\.h)>", path.read_text(errors="replace"), re.M):
            seen.add("<Python.h>")
    return graph


ORDER = ["python", "compiler", "backends/<kind>", "backends/common", "runtime", "platform"]


def includes_table() -> str:
    graph = include_graph()
    parts = [p for p in ORDER if p in graph] + sorted(p for p in graph if p not in ORDER)
    out = ["| the files of `src/...` | include headers of |", "| --- | --- |"]
    for p in parts:
        targets = sorted(graph[p], key=lambda t: (ORDER.index(t) if t in ORDER else len(ORDER), t))
        shown = ", ".join(f"`{t}`" if t.startswith("<") or t == "include" else f"`src/{t}`" for t in targets)
        out.append(f"| `src/{p}/` | {shown or 'nothing but their own'} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ passes
def defining_files() -> dict[str, Path]:
    """tk_ functions of the compiler that take the compile (tk_cc *C) first,
    and the file that defines each."""
    found = {}
    for path in sorted((ROOT / "src" / "compiler").rglob("*.c")):
        text = path.read_text(errors="replace")
        for m in re.finditer(r"^[A-Za-z_][\w \*]*?\b(tk_\w+)\s*\(\s*tk_cc\s*\*[^;{]*\)\s*\{", text, re.M):
            found.setdefault(m.group(1), path)
    return found


def function_body(text: str, name: str) -> str | None:
    """The body of the function `name` defined in `text` (None if it is not)."""
    m = re.search(r"^[A-Za-z_][\w \*]*?\b" + re.escape(name) + r"\s*\([^;{]*\)\s*\{", text, re.M)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end() : i - 1]


def compile_body(text: str, name: str = "tack_compile", depth: int = 0) -> str:
    """tack_compile's body, with the body of each function of driver.c it
    calls spliced in where it is called (should the driver split the pipeline
    into helpers, their steps still count, in order)."""
    body = function_body(text, name) or ""
    if depth > 2:
        return body
    out = []
    for line in body.splitlines():
        out.append(line)
        for callee in re.findall(r"\b(\w+)\s*\(", re.sub(r"/\*.*?\*/", "", line)):
            if callee != name and not callee.startswith(("tk_", "tack_")) and function_body(text, callee):
                out.extend(compile_body(text, callee, depth + 1).splitlines())
    return "\n".join(out)


def strip_comments_keep(line: str) -> tuple[str, str]:
    comments = re.findall(r"/\*(.*?)\*/", line)
    return re.sub(r"/\*.*?\*/", "", line), " ".join(c.strip() for c in comments)


def pass_steps() -> list[dict]:
    driver = ROOT / "src" / "compiler" / "driver.c"
    if not driver.exists():
        return []
    body = compile_body(driver.read_text(errors="replace"))
    funcs = defining_files()
    steps: list[dict] = []
    conds: list[str | None] = []  # the condition of each open brace, None for a plain one
    for raw in body.splitlines():
        code, comment = strip_comments_keep(raw)
        code = code.split("//")[0]
        opens_if = re.match(r"\s*if\s*\((.*)\)\s*\{\s*$", code)
        single_if = re.match(r"\s*if\s*\((.*?)\)\s*(\w.*)$", code)
        for name in re.findall(r"\b(tk_\w+)\b", code):
            if name not in funcs or NOT_STEPS.match(name):
                continue
            when = [c for c in conds if c]
            if single_if and not opens_if:
                cond = " ".join(single_if.group(1).split())
                if name in single_if.group(2):
                    when.append(cond)
                elif name in cond:  # `if (x && tk_step(C)) ...`: it runs when what precedes it holds
                    before = re.sub(r"\s*(&&|\|\|)\s*$", "", cond[: cond.index(name)]).strip()
                    if before:
                        when.append(before)
            what = comment or "(" + (essay(funcs[name]) or NO_ESSAY).rstrip(".") + ")"
            steps.append({"name": name, "file": funcs[name], "when": " and ".join(when), "what": what,
                          "verified": None})
        verify = re.search(r'\btk_verify\s*\(\s*C\s*,\s*"([^"]*)"', code)
        if verify and steps:
            steps[-1]["verified"] = verify.group(1)
        for ch in code:
            if ch == "{":
                conds.append(" ".join(opens_if.group(1).split()) if opens_if else None)
            elif ch == "}" and conds:
                conds.pop()
    return steps


def passes_table() -> str:
    steps = pass_steps()
    if not steps:
        return "(no step found in tack_compile, src/compiler/driver.c: fix tools/gen_architecture.py)\n"
    out = ["| # | step | defined in | runs when | what it does | verified as |", "| --- | --- | --- | --- | --- | --- |"]
    for n, s in enumerate(steps, 1):
        rel = s["file"].relative_to(ROOT / "src")
        when = f"`{s['when']}`".replace("|", "\\|") if s["when"] else "always"
        out.append(f"| {n} | `{s['name']}` | `{rel}` | {when} | {md_inline(s['what']) or ''} | "
                   f"{s['verified'] or ''} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------- the page
SECTIONS = {"includes": includes_table, "passes": passes_table, "file-map": file_map}


def begin(name):
    return f"<!-- generated: {name} (tools/gen_architecture.py; make docs-gen) -->"


def end(name):
    return f"<!-- end generated: {name} -->"


def render(text: str) -> str:
    for name, make in SECTIONS.items():
        pattern = re.compile(re.escape(begin(name)) + r"\n.*?" + re.escape(end(name)), re.S)
        if not pattern.search(text):
            raise SystemExit(f"{PAGE.relative_to(ROOT)} has no '{begin(name)}' ... '{end(name)}' section")
        text = pattern.sub(lambda _m: begin(name) + "\n\n" + make() + "\n" + end(name), text, count=1)
    return text


def main(argv: list[str]) -> int:
    text = PAGE.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run make docs-gen", file=sys.stderr)
            return 1
        return 0
    if new != text:
        PAGE.write_text(new)
        print(f"rewrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
