"""The benchmark kernels on an OpenCL device next to the CPU backend, as information.

    uv run python benchmarks/opencl.py [--device opencl:0]

Each kernel of benchmarks/kernels.py at its two largest sizes: the CPU
backend's best time per call, then the same kernel with its arrays copied to
the OpenCL device (the time includes the launch and the wait for it, not the
copies), and the ratio.  Prints a markdown table (benchmarks/OPENCL.md keeps
the last one).  On PoCL this measures the GPU-style layout -- grid-stride
loops over work-items -- on a CPU, not a GPU.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import tack  # noqa: E402
from tack import _core  # noqa: E402
from benchmarks import kernels as K  # noqa: E402
from benchmarks.peers import tack_peer as T  # noqa: E402


def best_ms(fn, seconds=1.5):
    fn()
    best, n, end = float("inf"), 0, time.perf_counter() + seconds
    while time.perf_counter() < end or n < 3:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        n += 1
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="opencl:0")
    args = ap.parse_args()
    if args.device not in tack.devices():
        print(f"{args.device} is not available here (tack.devices() = {tack.devices()})")
        return 2
    T.setup(None)
    dev = args.device

    def moved(a):
        if isinstance(a, np.ndarray):
            return tack.array(a, device=dev)
        if isinstance(a, _core.Array):
            return tack.array(a, a.dtype, device=dev)
        return a

    print(f"| kernel | size | CPU ms | {dev} ms | {dev} / CPU |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in K.ORDER:
        spec = K.SPECS[name]
        for size in spec.sizes[-2:]:
            fn, cargs, _ = T.arguments(name, spec.make(size))
            cpu = best_ms(lambda: fn(*cargs))
            dargs = [moved(a) for a in cargs]

            def on_device():
                fn(*dargs)
                tack.synchronize(dev)

            cl = best_ms(on_device)
            print(f"| {name} | {spec.label(size)} | {cpu:.3f} | {cl:.3f} | {cl / cpu:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
