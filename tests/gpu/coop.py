"""The figures issue 38 asks of a GPU: cooperative kernels and graphs beside their plain forms.

`make test-gpu` runs this after the bandwidth benchmarks, on the device it found, so that the
first run on a lent GPU records, in one table (and with --json in one file):

- **matmul**: the tiled 16 x 16 product of docs/language.md (tack.blocks, two shared tiles, a
  barrier a step) against the plain ndrange product (one thread an element, the k loop from
  global memory) and, where PyTorch sees the GPU, `a @ b` in float32 with TF32 off (cuBLAS
  on NVIDIA, rocBLAS on AMD), and CuPy's where it imports;
- **stencil**: the 5-point Laplacian with clamped edges, a 16 x 16 tile and its halo read into
  shared memory once, against the elementwise kernel reading its neighbours from memory;
- **block sum**: one `tack.block_sum` of 256 threads a block, compiled with the sub-group
  exchanges (`warp_shuffles`, CUDA and HIP: the last five strides as shuffles) and without
  (the shared-memory tree every target has), the same bits both ways;
- **graph**: 100 launches of a small kernel queued one by one against the same 100 captured
  once (`tack.capture`) and replayed with one `g.launch()`, each synchronized at the end.

Each Tack result is checked once against NumPy (or against the other form, to the bit, for the
two block sums). Times are the best of --rounds, each round --reps calls queued back to back
and synchronized once, so a kernel's launch cost is in its time as a user's loop pays it.

    python tests/gpu/coop.py --device cuda:0 [--json out.json] [--small]

Any device Tack has runs it (the tests run it on the CPU with --small, whose times mean
nothing: the point there is that the script works before a GPU session spends time on it).
Exit status 1 when a result is wrong, 2 when the device is not there.
"""

import argparse
import json
import os
import sys
import time

from pathlib import Path

import numpy as np

import tack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
# the language chapter's tiled product and shared-memory stencil, as the tests check them
from _blocks_examples import laplacian, matmul_plain, matmul_tiled, stencil as stencil_tiled, stencil_plain  # noqa: E402,E501

sys.path.pop(0)

BS = 256  # the block sum's block


def block_sums(x, out):
    for b, t in tack.blocks(out.shape[0], BS):
        r = tack.block_sum(x[b * BS + t])
        if t == 0:
            out[b] = r


def tiny(x):
    for i in range(x.shape[0]):
        x[i] += 1.0


def best_of(fn, sync, rounds, reps):
    """The best time of one call, over `rounds` rounds of `reps` calls queued back to back."""
    fn()
    sync()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def frameworks(a, b):
    """Whoever of PyTorch and CuPy sees a GPU: name -> (matmul callable, sync)."""
    out = {}
    try:
        import torch

        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False  # float32 as written, as Tack's
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            out["torch"] = (lambda: ta @ tb), torch.cuda.synchronize
        else:
            out["torch"] = RuntimeError("PyTorch sees no GPU")
    except Exception as e:  # noqa: BLE001 -- an optional peer: reported, never fatal
        out["torch"] = e
    try:
        import cupy

        ca, cb = cupy.asarray(a), cupy.asarray(b)
        out["cupy"] = (lambda: ca @ cb), cupy.cuda.runtime.deviceSynchronize
    except Exception as e:  # noqa: BLE001
        out["cupy"] = e
    return out


def run(o):
    dev = o.device
    sync = lambda: tack.synchronize(dev)  # noqa: E731
    rng = np.random.default_rng(0)
    res = {"device": dev, "rounds": o.rounds, "rows": [], "wrong": [], "skipped": {}}

    def row(name, size, times, note=""):
        res["rows"].append({"name": name, "size": size, "ms": {k: v * 1e3 for k, v in times.items()}, "note": note})

    def check(name, ok):
        if not ok:
            res["wrong"].append(name)

    # -- matmul
    for n in ([64] if o.small else [1024, 2048]):
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        ta, tb = tack.array(a, device=dev), tack.array(b, device=dev)
        c1, c2 = tack.zeros((n, n), tack.f32, device=dev), tack.zeros((n, n), tack.f32, device=dev)
        tiled, plain = tack.kernel(matmul_tiled), tack.kernel(matmul_plain)
        reps = 3 if o.small else 10
        times = {"tiled": best_of(lambda: tiled(ta, tb, c1), sync, o.rounds, reps),
                 "plain": best_of(lambda: plain(ta, tb, c2), sync, o.rounds, reps)}
        ref = a.astype(np.float64) @ b.astype(np.float64)
        for name, c in (("matmul tiled", c1), ("matmul plain", c2)):
            check(f"{name} {n}", np.allclose(c.numpy(), ref, rtol=1e-4, atol=1e-3 * n))
        for peer, got in frameworks(a, b).items():
            if isinstance(got, Exception):
                res["skipped"][peer] = f"{type(got).__name__}: {got}"
            else:
                times[peer] = best_of(got[0], got[1], o.rounds, reps)
        flops = 2.0 * n ** 3
        row("matmul f32", f"{n}^2", times, " ".join(f"{k} {flops / v / 1e12:.2f} TFLOP/s" for k, v in times.items()))
    # -- stencil
    for n in ([70] if o.small else [2048, 4096]):
        u = rng.random((n, n), dtype=np.float32)
        tu = tack.array(u, device=dev)
        o1, o2 = tack.zeros((n, n), tack.f32, device=dev), tack.zeros((n, n), tack.f32, device=dev)
        tiled, plain = tack.kernel(stencil_tiled), tack.kernel(stencil_plain)
        reps = 3 if o.small else 50
        times = {"tiled": best_of(lambda: tiled(tu, o1), sync, o.rounds, reps),
                 "plain": best_of(lambda: plain(tu, o2), sync, o.rounds, reps)}
        ref = laplacian(u.astype(np.float64))
        for name, r in (("stencil tiled", o1), ("stencil plain", o2)):
            check(f"{name} {n}", np.allclose(r.numpy(), ref, rtol=1e-5, atol=1e-5))
        gbs = " ".join(f"{k} {8.0 * n * n / v / 1e9:.0f} GB/s" for k, v in times.items())
        row("stencil f32", f"{n}^2", times, gbs)
    # -- block sums, with the sub-group exchanges and without
    n = BS * (64 if o.small else 65536)
    x = rng.random(n, dtype=np.float32)
    tx = tack.array(x, device=dev)
    outs, times = {}, {}
    for label, shuffles in (("exchanges", True), ("shared tree", False)):
        with tack.config.override(warp_shuffles=shuffles):
            k = tack.kernel(block_sums)
            outs[label] = tack.zeros(n // BS, tack.f32, device=dev)
            k(tx, outs[label])  # compiled under the setting
        times[label] = best_of(lambda k=k, out=outs[label]: k(tx, out), sync, o.rounds, 3 if o.small else 50)
    sums = {k: v.numpy() for k, v in outs.items()}
    check("block sum", np.allclose(sums["exchanges"], x.reshape(-1, BS).sum(1, dtype=np.float64), rtol=1e-5))
    check("block sum: the two forms' bits", np.array_equal(sums["exchanges"].view(np.uint32),
                                                           sums["shared tree"].view(np.uint32)))
    row("block_sum f32", f"{n} ({BS} a block)", times, " ".join(f"{k} {4.0 * n / v / 1e9:.0f} GB/s"
                                                                   for k, v in times.items()))
    # -- 100 launches, eager and as one graph
    small = tack.zeros(1024, tack.f32, device=dev)
    k = tack.kernel(tiny)
    launches = 100

    def eager():
        for _ in range(launches):
            k(small)

    s = tack.Stream(dev)
    with tack.stream(s):
        eager()  # compiled and run once outside the capture
    s.synchronize()
    with tack.capture(s) as g:
        for _ in range(launches):
            k(small)
    times = {"eager": best_of(eager, sync, o.rounds, 1), "graph": best_of(g.launch, s.synchronize, o.rounds, 1)}
    # every call so far, one each: the eager warm-up and rounds, and as many replays, each of 100
    check("graph replay", np.array_equal(small.numpy(), np.full(1024, launches * (3 + 2 * o.rounds), np.float32)))
    row(f"{launches} launches", "1024 f32", times,
        " ".join(f"{k} {t / launches * 1e6:.2f} us a launch" for k, t in times.items()))
    return res


def table(res):
    lines = [f"cooperative kernels and graphs on {res['device']} (best of {res['rounds']}, ms a call)"]
    for r in res["rows"]:
        cells = "  ".join(f"{k} {v:.4g}" for k, v in r["ms"].items())
        lines.append(f"  {r['name']:16s} {r['size']:22s} {cells}    {r['note']}")
    for peer, why in res["skipped"].items():
        lines.append(f"  ({peer} skipped: {why})")
    lines.append("wrong: " + ", ".join(res["wrong"]) if res["wrong"] else "every result checked against NumPy")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=os.environ.get("TACK_DEVICE", "cuda:0"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--small", action="store_true", help="tiny sizes: that the script works, not timings")
    ap.add_argument("--json", help="also write the figures here")
    o = ap.parse_args(argv)
    try:
        tack.zeros(1, device=o.device)
    except (ValueError, RuntimeError) as e:
        print(f"coop: device {o.device!r} is not available: {e}", file=sys.stderr)
        return 2
    res = run(o)
    print(table(res))
    if o.json:
        with open(o.json, "w") as f:
            json.dump(res, f, indent=1)
    return 1 if res["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
