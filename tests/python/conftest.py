import os
import tempfile

import pytest

# Kernels compiled by the tests go to one cache directory for the whole run,
# shared by pytest-xdist's workers and the processes the tests start: make
# test sets build/test-cache/kernels, kept between runs (entries are keyed by
# their source, so a changed compiler never meets a stale one); run alone,
# pytest gets a private directory of its own.
os.environ.setdefault("TACK_CACHE_DIR", tempfile.mkdtemp(prefix="tack-test-cache-"))

# Tests that time what they test (a deadline, a ratio of two timings, ticks
# counted while a kernel runs, Ctrl-C delivered mid-kernel): make test runs
# them in a pass of their own after the parallel one (-m serial), so that
# they measure themselves, not a neighbour on the other core.  An entry is a
# file (all its tests) or `file::test` (that test only, its parametrizations
# included), for a file whose other tests time nothing: those run in the
# parallel pass, where neither core idles.
SERIAL = {
    "test_interrupt.py",
    "test_compile_kernels.py",
    "test_dask.py::test_kernels_release_the_gil_so_blocks_run_at_once",
    "test_bench.py",
    "test_soak_smoke.py",
    "test_killed_build.py",
    "test_load_balance.py",
}
SERIAL_FILES = {entry.split("::")[0] for entry in SERIAL}


def is_serial(item):
    """Whether a collected test is one of SERIAL's."""
    return item.path.name in SERIAL or f"{item.path.name}::{item.originalname}" in SERIAL


def pytest_ignore_collect(collection_path, config):
    """make test's serial pass (-m serial) imports only the serial files: the
    others hold no serial test, and importing them all (NumPy peers, hypothesis
    strategies, module-level kernels) cost about 14 s of one core there while
    the other core idled."""
    if (config.getoption("markexpr", "") == "serial" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_") and collection_path.name not in SERIAL_FILES):
        return True
    return None


import _suite  # noqa: E402 (tests/python is on the path)

# The tests that read one of the suite's runs in processes of their own
# (_suite.RUNS: the watched run, the unoptimized run), by name.
BACKGROUND = {test: run for run, tests in _suite.RUNS.items() for test in tests}


def pytest_collection_modifyitems(config, items):
    """Serial files marked; the files that read the suite's background runs
    last, and those tests last in their files, so that the runs have the
    whole test run to go on beside the other tests (make test hands out whole
    files: pytest-xdist's --dist loadfile, so a module-scoped fixture, such
    as a built library, is made once)."""
    late = {item.path for item in items if item.name in BACKGROUND}
    for item in items:
        if is_serial(item):
            item.add_marker(pytest.mark.serial)
    order = {path: n for n, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (item.path in late, order[item.path], item.name in BACKGROUND))


def pytest_collection_finish(session):
    """Start, in the background, the suite's runs that the collected tests
    (after -m and -k) read: each goes on beside the other tests, and the
    first worker to get here starts it (_suite.start)."""
    runs = {BACKGROUND[item.name] for item in session.items if item.name in BACKGROUND}
    if runs:
        _suite.start(runs)


@pytest.fixture(autouse=True)
def _cpu_default():
    import tack

    tack.set_default_device("cpu")
    # a setting a test changes in-process (tack.config, set_default_float ...)
    # must not reach the next test on this worker
    before = {n: tack._core._config_get(n) for n in tack.config.names()}
    yield
    tack.set_default_device("cpu")
    for n, (value, src) in before.items():
        if tack._core._config_get(n) != (value, src):
            if src == "set":
                tack._core._config_set(n, value)
            else:
                tack.config.reset(n)


def pytest_terminal_summary(terminalreporter):
    """What the language suite's per-target runs covered (each test that reads
    a run records a line: _suite.RUNS), printed under -q too, so every CI log
    says how many kernels each target compiled."""
    lines = sorted({value for report in terminalreporter.stats.get("passed", [])
                    for key, value in getattr(report, "user_properties", ()) if key == "language_suite"})
    if lines:
        terminalreporter.write_sep("-", "the language suite, per target")
        for line in lines:
            terminalreporter.write_line(line)
