"""The device registry probes a family of devices only when asked for it: a
program that uses only the CPU never loads a GPU driver (an OpenCL driver
such as PoCL brings LLVM: tens of milliseconds and signal handlers of its
own), and tack.devices() still lists every family, in order."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tack

    @tack.kernel
    def double(x):
        for i in range(x.shape[0]):
            x[i] = 2 * x[i]

    def loaded():
        maps = open("/proc/self/maps").read()
        return sorted({name for name in ("libcuda.so", "libamdhip64", "libOpenCL.so", "libze_loader.so", "libLLVM")
                       if name in maps})

    x = np.arange(4.0)
    double(x)
    a = tack.zeros(3, device="cpu")
    cpu_only = loaded()
    names = tack.devices()
    print(json.dumps({"cpu_only": cpu_only, "devices": names, "x": x.tolist()}))
""")


def test_cpu_only_programs_load_no_gpu_driver(tmp_path):
    script = tmp_path / "cpu_only.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    import json

    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["x"] == [0.0, 2.0, 4.0, 6.0]
    assert got["cpu_only"] == [], f"a CPU-only program loaded {got['cpu_only']}"
    devices = got["devices"]
    assert devices[0] == "cpu"
    order = ["cpu", "cuda", "hip", "metal", "level_zero", "opencl"]  # device.c's families
    kinds = [d.split(":")[0] for d in devices]
    assert kinds == sorted(kinds, key=order.index), devices
