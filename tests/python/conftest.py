import os
import tempfile

import pytest

# Kernels compiled by the tests go to one cache directory for the whole run,
# shared by pytest-xdist's workers and the processes the tests start: make
# test sets build/test-cache/kernels, kept between runs (entries are keyed by
# their source, so a changed compiler never meets a stale one); run alone,
# pytest gets a private directory of its own.
os.environ.setdefault("TACK_CACHE_DIR", tempfile.mkdtemp(prefix="tack-test-cache-"))

# Files that time what they test (a deadline, a ratio of two timings, ticks
# counted while a kernel runs, Ctrl-C delivered mid-kernel): make test runs
# them in a pass of their own after the parallel one (-m serial), so that
# they measure themselves, not a neighbour on the other core.
SERIAL = {
    "test_interrupt.py",
    "test_compile_kernels.py",
    "test_dask.py",
    "test_bench.py",
    "test_soak_smoke.py",
    "test_killed_build.py",
    "test_load_balance.py",
}


# The tests that read the language suite's one watched run (_suite.watched:
# every call compiled for each GPU dialect, run on OpenCL, checked for races and
# in single precision).  The first worker to ask makes the run, under a lock
# the workers of one test run share; the group keeps them together besides.
WATCHED_TESTS = {
    "test_language_suite_compiles_for_cuda",
    "test_language_suite_compiles_for_hip",
    "test_language_suite_type_checks_as_msl",
    "test_language_suite_gives_the_cpu_results",
    "test_intel_compiler_accepts_every_kernel",
    "test_the_language_suite_has_no_racy_compound_assignment",
    "test_the_language_suite_in_single_precision_needs_no_double",
}


# tryfirst: pytest-xdist's worker reads the xdist_group marks in a hook of its
# own that would otherwise run before this one (and find none).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if name in SERIAL:
            item.add_marker(pytest.mark.serial)
        # under pytest-xdist's --dist loadgroup each file stays on one worker,
        # so its module-scoped fixtures (a suite run, a built library) run once
        item.add_marker(pytest.mark.xdist_group("watched-suite" if item.name in WATCHED_TESTS else name))


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
