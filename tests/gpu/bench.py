"""GPU micro-benchmarks for `make test-gpu`: bandwidth and launch overhead,
Tack beside PyTorch and CuPy on the same GPU.

Bandwidth-bound kernels (copy, scale, saxpy, a 2-D stencil) are timed
device-to-device and reported in GB/s, as a fraction of the device's peak
(2 x memory clock x bus width, read through the driver's
cuDeviceGetAttribute) and of its measured copy bandwidth (cuMemcpyDtoD
through tack.copyto); target 85% of the copy for copy, scale and saxpy.  The
launch overhead is the time per call of a kernel over a few elements, queued
back to back, target under 5 microseconds.  The same operations run in
PyTorch and CuPy when they import (their stencil is four slices added, as a
user would write it).  Then the sort (issue 39): ``tack.sort`` of 16M
float32 by the passes of tiles in shared memory that every GPU now runs and
by the serial blocks GPUs ran before, beside ``cupy.sort`` and
``torch.sort``, in ms, each result checked once against NumPy's.  Prints
tables; with --json PATH also writes the numbers.  Exits non-zero when
Tack's part fails, or a framework that imports fails or sorts wrongly;
missing frameworks are reported and skipped.
"""

import argparse
import ctypes
import json
import sys
import time

import numpy as np

import tack

CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36  # kHz
CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37  # bits


def peak_gbps(memory_clock_khz, bus_width_bits):
    """Theoretical DRAM bandwidth in GB/s: two transfers per clock (DDR, HBM)."""
    return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8) / 1e9


def device_peak(ordinal=0):
    """(peak GB/s, memory clock kHz, bus width bits) from the driver, or None."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        if cu.cuInit(0) != 0:
            return None
        dev = ctypes.c_int(0)
        if cu.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            return None
        clk, bus = ctypes.c_int(0), ctypes.c_int(0)
        if cu.cuDeviceGetAttribute(ctypes.byref(clk), CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) != 0:
            return None
        if cu.cuDeviceGetAttribute(ctypes.byref(bus), CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) != 0:
            return None
        if clk.value <= 0 or bus.value <= 0:
            return None
        return peak_gbps(clk.value, bus.value), clk.value, bus.value
    except OSError:
        return None


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


def timed(fn, sync, reps):
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t0) / reps


def tack_section(dev, n, side):
    sync = lambda: tack.synchronize(dev)  # noqa: E731
    x = tack.array(np.random.default_rng(0).random(n, dtype=np.float32), device=dev)
    y = tack.zeros(n, tack.f32, device=dev)
    a2 = tack.zeros((side, side), tack.f32, device=dev)
    o2 = tack.zeros((side, side), tack.f32, device=dev)
    res = {"copy_engine": 2 * 4 * n / timed(lambda: tack.copyto(y, x), sync, 20) / 1e9}
    for name, fn in [("copy", lambda: copy_k(x, y)), ("scale", lambda: scale_k(x, y, 2.0)),
                     ("saxpy", lambda: saxpy_k(2.0, x, y)), ("stencil2d", lambda: stencil_k(a2, o2))]:
        res[name] = fn, sync
    small = tack.zeros(32, tack.f32, device=dev)
    res["launch"] = (lambda: tiny(small)), sync
    return res


def torch_section(n, side):
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("PyTorch is installed but sees no CUDA device")
    sync = torch.cuda.synchronize
    x = torch.rand(n, device="cuda", dtype=torch.float32)
    y = torch.zeros(n, device="cuda", dtype=torch.float32)
    a2 = torch.zeros((side, side), device="cuda", dtype=torch.float32)
    o2 = torch.zeros((side, side), device="cuda", dtype=torch.float32)
    small = torch.zeros(32, device="cuda", dtype=torch.float32)

    def stencil():
        o2[1:-1, 1:-1] = 0.25 * (a2[:-2, 1:-1] + a2[2:, 1:-1] + a2[1:-1, :-2] + a2[1:-1, 2:])

    return {"copy": (lambda: y.copy_(x), sync), "scale": (lambda: torch.mul(x, 2.0, out=y), sync),
            "saxpy": (lambda: y.add_(x, alpha=2.0), sync), "stencil2d": (stencil, sync),
            "launch": (lambda: small.add_(1.0), sync)}


def cupy_section(n, side):
    import cupy as cp

    sync = cp.cuda.Device().synchronize
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.zeros(n, dtype=cp.float32)
    a2 = cp.zeros((side, side), dtype=cp.float32)
    o2 = cp.zeros((side, side), dtype=cp.float32)
    small = cp.zeros(32, dtype=cp.float32)
    saxpy = cp.ElementwiseKernel("float32 a, float32 x", "float32 y", "y = a * x + y", "tack_bench_saxpy")

    def stencil():
        o2[1:-1, 1:-1] = 0.25 * (a2[:-2, 1:-1] + a2[2:, 1:-1] + a2[1:-1, :-2] + a2[1:-1, 2:])

    return {"copy": (lambda: cp.copyto(y, x), sync), "scale": (lambda: cp.multiply(x, 2.0, out=y), sync),
            "saxpy": (lambda: saxpy(cp.float32(2.0), x, y), sync), "stencil2d": (stencil, sync),
            "launch": (lambda: small.__iadd__(1.0), sync)}


def sort_figures(dev, n, reps, frameworks=True):
    """ms per sort of n float32 on dev: tack.sort by the tiles' passes that every GPU runs
    (tack._algorithms_sort_blocks; "tack tiles"), by the serial blocks' that GPUs ran before
    and the CPU runs ("tack blocked"), and by the tiles' without the shared tile's padding
    against bank conflicts ("tack unpadded", for comparing), and, with frameworks, cupy.sort and torch.sort
    (which returns the indices too) on their GPU where they import.  Returns {"n", "ms":
    {who: ms}, "wrong": [who, ...], "skipped": {who: why}, "failed": {who: why}}: a framework
    not installed is skipped, one that imports and fails has failed; each result is compared
    once with np.sort's bits."""
    from tack import _algorithms_sort as S
    from tack import _algorithms_sort_blocks as B

    xh = np.random.default_rng(2).random(n, dtype=np.float32)
    want = np.sort(xh)
    out = {"n": n, "ms": {}, "wrong": [], "skipped": {}, "failed": {}}
    x = tack.array(xh, device=dev)
    sync = lambda: tack.synchronize(dev)  # noqa: E731
    was = S._TILES, B._PAD
    try:
        for who, tiles, pad in (("tack tiles", True, True), ("tack blocked", False, True),
                                ("tack unpadded", True, False)):
            S._TILES, B._PAD = tiles, pad
            if not np.array_equal(tack.sort(x).numpy().view(np.uint32), want.view(np.uint32)):
                out["wrong"].append(who)
            out["ms"][who] = 1e3 * timed(lambda: tack.sort(x), sync, reps)
    finally:
        S._TILES, B._PAD = was
    if not frameworks:
        return out
    try:
        import cupy as cp

        xc = cp.asarray(xh)
        if not np.array_equal(cp.asnumpy(cp.sort(xc)), want):
            out["wrong"].append("cupy")
        out["ms"]["cupy"] = 1e3 * timed(lambda: cp.sort(xc), cp.cuda.Device().synchronize, reps)
    except ImportError as e:
        out["skipped"]["cupy"] = str(e)
    except Exception as e:  # noqa: BLE001 -- a framework that imports and fails fails the run
        out["failed"]["cupy"] = f"{type(e).__name__}: {e}"
    try:
        import torch

        xt = torch.from_numpy(xh).cuda()
        if not np.array_equal(torch.sort(xt).values.cpu().numpy(), want):
            out["wrong"].append("torch")
        out["ms"]["torch"] = 1e3 * timed(lambda: torch.sort(xt), torch.cuda.synchronize, reps)
    except ImportError as e:
        out["skipped"]["torch"] = str(e)
    except Exception as e:  # noqa: BLE001 -- as CuPy's
        out["failed"]["torch"] = f"{type(e).__name__}: {e}"
    return out


def sort_table(sort):
    """The sort's figures as a table: ms a sort, sorted elements a second, and the time over
    the tiles' passes' (below 1: faster than they are)."""
    rows = [f"sort of {sort['n']:,} float32",
            f"{'who':14s} {'ms':>9s} {'Gelem/s':>8s} {'x tiles':>9s}"]
    base = sort["ms"].get("tack tiles")
    for who, ms in sort["ms"].items():
        ratio = f"{ms / base:9.2f}" if base else f"{'-':>9s}"
        rows.append(f"{who:14s} {ms:9.3f} {sort['n'] / ms / 1e6:8.3f} {ratio}")
    for who, why in sort["skipped"].items():
        rows.append(f"{who:14s} not installed ({why})")
    for who, why in sort.get("failed", {}).items():
        rows.append(f"{who:14s} FAILED ({why})")
    return "\n".join(rows)


def measure(section, nbytes, side, res, who):
    traffic = {"copy": 2 * nbytes, "scale": 2 * nbytes, "saxpy": 3 * nbytes, "stencil2d": 2 * 4 * side * side}
    for name in ("copy", "scale", "saxpy", "stencil2d"):
        fn, sync = section[name]
        res[f"{who}.{name}.GBps"] = traffic[name] / timed(fn, sync, 20) / 1e9
    fn, sync = section["launch"]
    res[f"{who}.launch_us"] = timed(fn, sync, 20000 if who == "tack" else 5000) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mib", type=int, default=256, help="size of each array")
    ap.add_argument("--json")
    ap.add_argument("--sort-mi", type=int, default=16, help="float32 elements of the sort, in units of 2**20 "
                    "(0: no sort)")
    ap.add_argument("--sort-reps", type=int, default=5)
    args = ap.parse_args()
    n = args.mib * (1 << 20) // 4
    side = int(np.sqrt(n))
    nbytes = 4 * n
    res = {}
    pk = device_peak(int(args.device.partition(":")[2] or 0))
    if pk:
        res["peak.GBps"], res["peak.memory_clock_kHz"], res["peak.bus_width_bits"] = pk
        print(f"device peak: {pk[0]:.0f} GB/s (memory clock {pk[1] / 1e3:.0f} MHz x {pk[2]}-bit bus x 2)")
    else:
        print("device peak: unknown (the driver did not give the memory clock and bus width)")
    ok = True
    sections = [("tack", lambda: tack_section(args.device, n, side))]
    for who, make in (("torch", torch_section), ("cupy", cupy_section)):
        sections.append((who, lambda make=make: make(n, side)))
    for who, make in sections:
        try:
            sec = make()
            if who == "tack":
                res["tack.copy_engine.GBps"] = sec.pop("copy_engine")
            measure(sec, nbytes, side, res, who)
        except ImportError as e:
            print(f"{who}: not installed ({e}); skipped")
        except Exception as e:  # noqa: BLE001 -- a failing section fails the run
            print(f"{who}: FAILED: {type(e).__name__}: {e}")
            ok = False
    base = res.get("tack.copy_engine.GBps")
    peak = res.get("peak.GBps")
    print(f"\n{'kernel':12s} {'who':6s} {'GB/s':>9s} {'of peak':>8s} {'of copy':>8s}")
    for name in ("copy", "scale", "saxpy", "stencil2d"):
        for who in ("tack", "torch", "cupy"):
            g = res.get(f"{who}.{name}.GBps")
            if g is None:
                continue
            fp = f"{g / peak:8.1%}" if peak else f"{'-':>8s}"
            fc = f"{g / base:8.1%}" if base else f"{'-':>8s}"
            if peak:
                res[f"{who}.{name}.fraction_of_peak"] = g / peak
            if base:
                res[f"{who}.{name}.fraction_of_copy"] = g / base
            print(f"{name:12s} {who:6s} {g:9.1f} {fp} {fc}")
    if base:
        print(f"{'copy engine':12s} {'tack':6s} {base:9.1f} " + (f"{base / peak:8.1%}" if peak else ""))
    for who in ("tack", "torch", "cupy"):
        if f"{who}.launch_us" in res:
            print(f"launch overhead {who:6s} {res[f'{who}.launch_us']:7.2f} us")
    if "tack.copy.GBps" in res and base:
        ok_bw = all(res[f"tack.{k}.fraction_of_copy"] >= 0.85 for k in ("copy", "scale", "saxpy"))
        ok_launch = res["tack.launch_us"] < 5.0
        print(f"targets: bandwidth 85% of copy {'met' if ok_bw else 'NOT met'}; "
              f"launch overhead < 5 us {'met' if ok_launch else 'NOT met'}")
    else:
        ok = False
    if args.sort_mi > 0:
        try:
            sort = sort_figures(args.device, args.sort_mi << 20, args.sort_reps)
            res["sort"] = sort
            print()
            print(sort_table(sort))
            if sort["wrong"]:
                print(f"sort: WRONG RESULTS: {', '.join(sort['wrong'])}")
            ok = ok and not sort["wrong"] and not sort["failed"]
        except Exception as e:  # noqa: BLE001 -- a failing sort fails the run
            print(f"sort: FAILED: {type(e).__name__}: {e}")
            ok = False
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
