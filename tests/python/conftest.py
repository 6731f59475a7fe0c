import os
import tempfile

import pytest

# Kernels compiled by the tests go to a private cache directory.
os.environ.setdefault("TACK_CACHE_DIR", tempfile.mkdtemp(prefix="tack-test-cache-"))


@pytest.fixture(autouse=True)
def _cpu_default():
    import tack

    tack.set_default_device("cpu")
    yield
    tack.set_default_device("cpu")
