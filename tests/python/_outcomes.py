"""A pytest plugin: each test's outcome, and whether its kernels warned of a race.

Loaded with ``-p _outcomes`` into the language suite's runs in processes of
their own (_suite.py: the watched run, on eight threads, and the run without
the optimizing passes): for every test it records whether the test passed
and whether a ``tack.RaceWarning`` was raised while it ran, in the JSON file
named by TACK_OUTCOMES, by node id, and whether it is marked
``watched_differs`` (it inspects what the watched run's plugins change: the
kernel object, tack.kernel itself, what a kernel prints).  test_races.py reads both runs: every
test whose kernels compiled without a RaceWarning must pass in each.
"""

import os
import warnings

import pytest

import _kernel_wrap

_OUT = os.environ.get("TACK_OUTCOMES")
_outcomes = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    import tack

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        outcome = yield
    _outcomes[item.nodeid] = {"race": any(issubclass(w.category, tack.RaceWarning) for w in got),
                              "ok": outcome.excinfo is None,
                              "watched_differs": item.get_closest_marker("watched_differs") is not None}


_kernel_wrap.write_summary_at_exit(_OUT, _outcomes)
