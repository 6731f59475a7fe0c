"""A Dask array whose blocks are smoothed by a Tack kernel, with ghost cells from map_overlap.

The field is a 2-D Dask array cut into blocks.  ``map_overlap`` hands each block to
``smooth_block`` with a one-cell ring borrowed from its neighbours (ghost cells; at
the edges of the field the nearest value, ``boundary="nearest"``); the kernel writes
the 5-point average of every inner cell, and Dask trims the ring off again.  A few
steps chain that; the result equals NumPy's on the whole field, value for value.

It runs twice: on Dask's threaded scheduler (the kernels release the GIL, so the
blocks run at once on the threads) and on a ``dask.distributed.LocalCluster`` of two
worker processes, which get the kernel and the Tack array of weights by pickling
(docs/beyond-one-machine.md, "How arrays cross").

    uv sync --extra dask
    .venv/bin/python docs/examples/dask_blocks.py --shape 512 384 --chunks 128 --steps 4

``--device`` runs the kernel on another device (each block copied there and back);
``--output-dir`` draws the field before and after, with the blocks' edges, as
dask_blocks.png (matplotlib).
"""

import argparse
import os
import sys

import numpy as np

import tack


@tack.kernel
def smooth(block, out, weights):
    """out = weights[0] * the cell + weights[1] * the sum of its four neighbours,
    for every cell that has all four in the block (the ghost ring has not)."""
    for i, j in tack.ndrange((1, block.shape[0] - 1), (1, block.shape[1] - 1)):
        out[i, j] = weights[0] * block[i, j] + weights[1] * (block[i - 1, j] + block[i + 1, j]
                                                            + block[i, j - 1] + block[i, j + 1])


def smooth_block(block, weights, device="cpu"):
    """One block with its ghost ring in, the smoothed block (ring included) out.

    The kernel takes NumPy arrays as they are (borrowed, no copy) when they are
    C-contiguous; Dask's blocks nearly always are, and ascontiguousarray makes sure.
    On another device the block goes there and the result comes back (copies)."""
    block = np.ascontiguousarray(block)
    out = np.empty_like(block)
    out[0, :], out[-1, :], out[:, 0], out[:, -1] = block[0, :], block[-1, :], block[:, 0], block[:, -1]
    if device == "cpu":
        smooth(block, out, weights)
        return out
    there, result = tack.array(block, device=device), tack.array(out, device=device)
    smooth(there, result, weights.to(device))
    return result.numpy()


def smoothed(field, weights, steps, device="cpu"):
    """The lazy result: `steps` rounds of map_overlap over the Dask array `field`."""
    for _ in range(steps):
        field = field.map_overlap(smooth_block, depth=1, boundary="nearest", dtype=field.dtype,
                                  weights=weights, device=device)
    return field


def draw(path, before, after, chunks, steps):
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no picture")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), constrained_layout=True)
    for ax, (title, a) in zip(axes, (("the field", before), (f"after {steps} rounds, block by block", after))):
        ax.imshow(a, cmap="viridis", vmin=0, vmax=1)
        for k in range(chunks, a.shape[0], chunks):
            ax.axhline(k - 0.5, color="white", lw=0.8)
        for k in range(chunks, a.shape[1], chunks):
            ax.axvline(k - 0.5, color="white", lw=0.8)
        ax.set_title(title)
        ax.set_axis_off()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"wrote {path}")


def reference(values, weights, steps):
    """The same smoothing on the whole field with NumPy, in the same order of sums."""
    w0, w1 = (float(w) for w in weights.numpy())
    for _ in range(steps):
        p = np.pad(values, 1, mode="edge")
        values = w0 * values + w1 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
    return values


def start_values(shape, seed=7):
    return np.random.default_rng(seed).random(shape)


def main(argv=None):
    import dask
    import dask.array as da

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", type=int, nargs=2, default=(512, 384), metavar=("NY", "NX"))
    p.add_argument("--chunks", type=int, default=128, help="block edge length")
    p.add_argument("--steps", type=int, default=4, help="rounds of smoothing")
    p.add_argument("--scheduler", choices=("threads", "distributed", "both"), default="both")
    p.add_argument("--device", default="cpu", help="where the kernel runs ('cpu', 'cuda:0', ...)")
    p.add_argument("--output-dir", help="draw the field before and after as dask_blocks.png here (matplotlib)")
    args = p.parse_args(argv)

    tack.set_default_device("cpu")
    values = start_values(tuple(args.shape))
    weights = tack.array([0.5, 0.125], dtype=tack.f64)  # a Tack array the tasks share
    expected = reference(values, weights, args.steps)
    field = da.from_array(values, chunks=args.chunks)
    result = smoothed(field, weights, args.steps, args.device)
    print(f"field {args.shape[0]} x {args.shape[1]} in {field.npartitions} blocks, {args.steps} steps")

    if args.scheduler in ("threads", "both"):
        got = result.compute(scheduler="threads")
        assert np.array_equal(got, expected), np.abs(got - expected).max()
        print("threaded scheduler: equal to NumPy")

    if args.scheduler in ("distributed", "both"):
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                          host="127.0.0.1") as cluster, Client(cluster) as client:
            with dask.config.set(scheduler=client):
                got = result.compute()
            workers = len(client.scheduler_info()["workers"])
        assert np.array_equal(got, expected), np.abs(got - expected).max()
        print(f"distributed scheduler ({workers} worker processes): equal to NumPy")
    if args.output_dir:
        draw(os.path.join(args.output_dir, "dask_blocks.png"), values, got, args.chunks, args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
