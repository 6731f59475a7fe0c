"""Every Python example in docs/language.md, errors.md, backends.md,
beyond-one-machine.md, algorithms.md, differentiation.md, spatial.md, numba.md and warp.md runs
as written.

Each example is a file run as a program of its own (`python example.py`: a
file, not exec(), since kernels are compiled from their source text).  The
programs are forked from one process per test worker that has already
imported NumPy and Tack (and run nothing else): the 79 examples, each run
again by the language suite's unoptimized run, had each paid a start-up of
their own (importing the two is 0.4 s of CPU alone), and the file took 59 to
61 s of user CPU with its kernels cached, against 27 to 29 s forked (two
paired runs, load average 10).  The child of the fork is a
fresh program for the example all the same: its own __main__, sys.argv and
sys.path[0], its own Tack state (no kernel has run in the parent), its exit
status and stderr read as a subprocess's would be."""

import importlib.util
import os
import pathlib
import re
import select
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHAPTERS = ["language.md", "errors.md", "backends.md", "beyond-one-machine.md", "algorithms.md",
            "differentiation.md", "spatial.md", "numba.md", "warp.md"]
# What a chapter's examples import beyond Tack's own needs (the mpi and dask extras).
NEEDS = {"beyond-one-machine.md": ("mpi4py", "dask")}
TIMEOUT = 300


def examples():
    for chapter in CHAPTERS:
        path = ROOT / "docs" / chapter
        if not path.exists():
            continue
        text = path.read_text()
        for n, match in enumerate(re.finditer(r"```python\n(.*?)```", text, re.S)):
            line = text[: match.start()].count("\n") + 2
            missing = [m for m in NEEDS.get(chapter, ()) if importlib.util.find_spec(m) is None]
            marks = pytest.mark.skip(reason=f"{', '.join(missing)} not installed") if missing else ()
            yield pytest.param(match.group(1), id=f"{chapter}:{line}", marks=marks)


# The forking process: it reads a script's path and where its stdout and
# stderr go, a line each, forks, and writes back the child's exit status.
# The child runs the script as `python script` would (runpy, as __main__),
# exits through SystemExit so that atexit handlers run, as at a program's end.
FORKER = r'''
import os, runpy, sys, traceback
import numpy, tack
for line in sys.stdin:
    script, out, err = line.rstrip("\n").split("\0")
    pid = os.fork()
    if pid == 0:
        for fd, name in ((1, out), (2, err)):
            f = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        sys.stdin.close()
        os.close(0)
        sys.argv = [script]
        sys.path[0] = os.path.dirname(script)
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit:
            raise
        except BaseException:
            traceback.print_exc()
            raise SystemExit(1)
        raise SystemExit(0)
    sys.stdout.write(f"{os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}\n")
    sys.stdout.flush()
'''


class Forker:
    """The forking process of this worker, started at its first example."""

    def __init__(self):
        # a process group of its own, so that an example past its time is ended with it
        self.proc = subprocess.Popen([sys.executable, "-c", FORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=os.getcwd(), start_new_session=True)

    def run(self, script, out, err):
        self.proc.stdin.write(f"{script}\0{out}\0{err}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        if not ready:
            self.close()
            raise AssertionError(f"{script} ran past {TIMEOUT} s")
        line = self.proc.stdout.readline()
        assert line, f"the forking process ended (status {self.proc.wait()})"
        return int(line)

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


@pytest.fixture(scope="module")
def forker():
    f = Forker()
    yield f
    f.proc.stdin.close()
    f.proc.wait()


@pytest.mark.parametrize("code", list(examples()))
def test_doc_example_runs(code, tmp_path, forker):
    script = tmp_path / "example.py"
    script.write_text(code)
    rc = forker.run(script, tmp_path / "stdout", tmp_path / "stderr")
    assert rc == 0, (tmp_path / "stderr").read_text()
