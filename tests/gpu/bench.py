"""GPU micro-benchmarks for `make test-gpu`: bandwidth and launch overhead.

Bandwidth-bound kernels (copy, scale, saxpy, a 2-D stencil) are reported as
a fraction of the device-to-device copy bandwidth (cuMemcpyDtoD through
tack.copyto), target 85% or more; the launch overhead is the time per call
of a kernel over a few elements, queued back to back, target under 5
microseconds (Warp's is 7 to 15).  Prints a table; with --json PATH also
writes the numbers.
"""

import argparse
import json
import time

import numpy as np

import tack


@tack.kernel
def copy_k(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i]


@tack.kernel
def scale_k(x, y, s):
    for i in range(x.shape[0]):
        y[i] = x[i] * s


@tack.kernel
def saxpy_k(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def stencil_k(a, out):
    for i, j in tack.ndrange(a.shape[0] - 2, a.shape[1] - 2):
        out[i + 1, j + 1] = 0.25 * (a[i, j + 1] + a[i + 2, j + 1] + a[i + 1, j] + a[i + 1, j + 2])


@tack.kernel
def tiny(x):
    for i in range(x.shape[0]):
        x[i] += 1.0


def timed(fn, dev, reps):
    fn()
    tack.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    tack.synchronize(dev)
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mib", type=int, default=256, help="size of each array")
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = args.device
    n = args.mib * (1 << 20) // 4
    x = tack.array(np.random.default_rng(0).random(n, dtype=np.float32), device=dev)
    y = tack.zeros(n, tack.f32, device=dev)
    side = int(np.sqrt(n))
    a2 = tack.zeros((side, side), tack.f32, device=dev)
    o2 = tack.zeros((side, side), tack.f32, device=dev)
    nbytes = 4 * n
    res = {}
    t = timed(lambda: tack.copyto(y, x), dev, 20)
    res["memcpy_dtod_GBps"] = 2 * nbytes / t / 1e9
    base = res["memcpy_dtod_GBps"]
    for name, fn, traffic in [
        ("copy", lambda: copy_k(x, y), 2 * nbytes),
        ("scale", lambda: scale_k(x, y, 2.0), 2 * nbytes),
        ("saxpy", lambda: saxpy_k(2.0, x, y), 3 * nbytes),
        ("stencil2d", lambda: stencil_k(a2, o2), 2 * 4 * side * side),
    ]:
        t = timed(fn, dev, 20)
        res[f"{name}_GBps"] = traffic / t / 1e9
        res[f"{name}_fraction_of_copy"] = res[f"{name}_GBps"] / base
    small = tack.zeros(32, tack.f32, device=dev)
    res["launch_overhead_us"] = timed(lambda: tiny(small), dev, 20000) * 1e6
    for k, v in res.items():
        print(f"{k:32s} {v:10.3f}")
    ok_bw = all(res[f"{k}_fraction_of_copy"] >= 0.85 for k in ("copy", "scale", "saxpy"))
    ok_launch = res["launch_overhead_us"] < 5.0
    print(f"bandwidth target (85% of copy): {'met' if ok_bw else 'NOT met'}; "
          f"launch overhead target (< 5 us): {'met' if ok_launch else 'NOT met'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
