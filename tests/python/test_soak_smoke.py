"""A short run of the soak test (tests/soak/soak.py, `make soak`): the whole
machinery -- 2 processes x 8 threads, all kernels checked against NumPy, bad
inputs, SIGINTs, the watchdog and the leak check -- for a few seconds, so
the soak itself cannot rot between its long runs."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_soak_runs_briefly_and_passes():
    script = os.path.join(ROOT, "tests", "soak", "soak.py")
    r = subprocess.run([sys.executable, script, "--minutes", "0.1", "--warmup", "2", "--quick"],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "soak passed" in out
    calls = int(out.split("kernel calls checked against NumPy: ")[1].split()[0])
    assert calls > 1000, out
    assert "bad inputs raised: 0 " not in out, out
