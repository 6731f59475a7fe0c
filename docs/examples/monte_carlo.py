"""Monte Carlo: pi from random points in a square, drawn inside a kernel with tack.random.

    python docs/examples/monte_carlo.py [--samples 100000000] [--batches 4096] [--device cpu] [--output-dir .]

A point drawn uniformly in the unit square falls inside the quarter disc x^2 + y^2 < 1 with
probability pi / 4, so 4 (hits / samples) estimates pi, with a standard error of
4 sqrt(p (1 - p) / samples). The samples are split into batches, one parallel iteration a
batch; sample n draws its x and y from Tack's counter-based generator as
tack.random.uniform(seed, 2n) and uniform(seed, 2n + 1): the same numbers whichever thread or
device draws them, so the result is the same everywhere and can be checked on the host.

The check: the first batches' hits equal NumPy's count over the same draws (tack.random's
functions run on NumPy arrays of counters too, bit for bit), and the estimate lies within four
standard errors of pi. With matplotlib installed the running estimate is drawn against the
number of samples, with its two-standard-error band, as monte_carlo.png.
"""

import argparse
import math
import os
import time

import numpy as np

import tack


@tack.kernel
def count_hits(seed, per_batch, hits):
    for b in range(hits.shape[0]):
        inside = 0
        for k in range(per_batch):
            n = b * per_batch + k
            x = tack.random.uniform(seed, 2 * n)
            y = tack.random.uniform(seed, 2 * n + 1)
            if x * x + y * y < 1.0:
                inside += 1
        hits[b] = inside


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100_000_000)
    ap.add_argument("--batches", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the running estimate as monte_carlo.png here (needs matplotlib)")
    args = ap.parse_args(argv)
    if args.batches < 1 or args.samples < args.batches:
        ap.error(f"--samples {args.samples} --batches {args.batches}: needs a batch and a sample per batch")
    per = args.samples // args.batches
    samples = per * args.batches
    hits = tack.zeros(args.batches, tack.i64, device=args.device)
    count_hits(args.seed, per, hits)            # compiles
    tack.synchronize()
    t0 = time.perf_counter()
    count_hits(args.seed, per, hits)
    tack.synchronize()
    seconds = time.perf_counter() - t0
    h = hits.numpy()

    # the first batches against the same draws on the host
    first = min(args.batches, max(1, 200_000 // per))
    n = np.arange(first * per, dtype=np.uint64)
    x, y = tack.random.uniform(args.seed, 2 * n), tack.random.uniform(args.seed, 2 * n + 1)
    want = (x * x + y * y < 1.0).reshape(first, per).sum(1)
    assert (h[:first] == want).all(), "the kernel's draws differ from the host's"

    estimate = 4.0 * h.sum() / samples
    p = math.pi / 4
    error = 4.0 * math.sqrt(p * (1 - p) / samples)
    print(f"{samples:,} samples in {args.batches} batches on {args.device}: {seconds * 1e3:.1f} ms "
          f"({samples / seconds / 1e6:.0f} M samples a second)")
    print(f"pi ~ {estimate:.6f} +- {error:.1e} (off by {abs(estimate - math.pi):.1e})")
    assert abs(estimate - math.pi) < 4 * error, (estimate, error)
    if args.output_dir:
        try:
            import matplotlib
        except ImportError:
            print("matplotlib is not installed: no picture")
        else:
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            count = per * np.arange(1, args.batches + 1)
            running = 4.0 * np.cumsum(h) / count
            band = 2 * 4.0 * np.sqrt(p * (1 - p) / count)
            fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
            ax.fill_between(count, math.pi - band, math.pi + band, color="#c0d4f5", label="pi +- 2 standard errors")
            ax.axhline(math.pi, color="#3b4cc0", lw=1)
            ax.plot(count, running, color="#b40426", lw=1.2, label="the running estimate")
            ax.set_xscale("log")
            ax.set_ylim(math.pi - 6 * band[min(3, len(band) - 1)], math.pi + 6 * band[min(3, len(band) - 1)])
            ax.set_xlabel("samples")
            ax.set_ylabel("4 hits / samples")
            ax.set_title(f"pi from {samples:,} random points: {estimate:.6f}")
            ax.legend(loc="upper right")
            path = os.path.join(args.output_dir, "monte_carlo.png")
            fig.savefig(path, dpi=80)
            plt.close(fig)
            print(f"wrote {path}")
    print("Monte Carlo: all checks passed")


if __name__ == "__main__":
    main()
