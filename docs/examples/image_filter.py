"""Image filtering: a Gaussian blur and Sobel edges, each a kernel over every pixel.

    python docs/examples/image_filter.py [--size 1024] [--sigma 2.0] [--device cpu] [--output-dir .]

The image is made here: a few discs and boxes of different greys on a dark ground, with noise
(no file to download). Three kernels filter it:

    blur_rows, blur_cols   the Gaussian blur, separable: a 1-D convolution along the rows, then
                           along the columns (2r + 1 taps each, r = 3 sigma; the edge pixel
                           repeats past the border)
    sobel                  the gradient's magnitude from Sobel's 3 x 3 derivative filters

The blur removes the noise; the edges of the blurred image are the shapes' outlines.

The check: each filter against the same sums in NumPy (float32, within a few units of
rounding), and the edges strongest on the outlines. With matplotlib installed the three
images are drawn side by side as image_filter.png.
"""

import argparse
import math
import os
import time

import numpy as np

import tack


@tack.kernel
def blur_rows(src, taps, dst):
    r = (taps.shape[0] - 1) // 2
    w = src.shape[1]
    for i, j in tack.ndrange(src.shape[0], w):
        s = 0.0
        for k in range(taps.shape[0]):
            jj = min(max(j + k - r, 0), w - 1)
            s += taps[k] * src[i, jj]
        dst[i, j] = s


@tack.kernel
def blur_cols(src, taps, dst):
    r = (taps.shape[0] - 1) // 2
    h = src.shape[0]
    for i, j in tack.ndrange(h, src.shape[1]):
        s = 0.0
        for k in range(taps.shape[0]):
            ii = min(max(i + k - r, 0), h - 1)
            s += taps[k] * src[ii, j]
        dst[i, j] = s


@tack.kernel
def sobel(src, dst):
    h = src.shape[0]
    w = src.shape[1]
    for i, j in tack.ndrange(h, w):
        u = max(i - 1, 0)
        d = min(i + 1, h - 1)
        left = max(j - 1, 0)
        right = min(j + 1, w - 1)
        gx = (src[u, right] + 2.0 * src[i, right] + src[d, right]) - (src[u, left] + 2.0 * src[i, left] + src[d, left])
        gy = (src[d, left] + 2.0 * src[d, j] + src[d, right]) - (src[u, left] + 2.0 * src[u, j] + src[u, right])
        dst[i, j] = tack.sqrt(gx * gx + gy * gy)


def gaussian_taps(sigma):
    r = max(1, math.ceil(3 * sigma))
    t = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    return (t / t.sum()).astype(np.float32)


def scene(size, seed=5):
    """A float32 picture: discs and boxes of four greys on a dark ground, plus noise; and a mask of
    the pixels within two of a shape's outline."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[:size, :size] / size
    img = np.full((size, size), 0.1)
    outline = np.zeros((size, size), bool)
    px = 2.0 / size
    for k, grey in enumerate((0.9, 0.6, 0.75, 0.45, 0.8)):
        cx, cy = rng.uniform(0.2, 0.8, 2)
        if k % 2 == 0:
            r = rng.uniform(0.08, 0.18)
            dist = np.hypot(x - cx, y - cy)
            img[dist < r] = grey
            outline |= np.abs(dist - r) < px
        else:
            a, b = rng.uniform(0.06, 0.15, 2)
            inside = (np.abs(x - cx) < a) & (np.abs(y - cy) < b)
            img[inside] = grey
            edge = np.maximum(np.abs(x - cx) - a, np.abs(y - cy) - b)
            outline |= np.abs(edge) < px
    img += 0.08 * rng.standard_normal((size, size))
    return img.astype(np.float32), outline


def numpy_filters(img, taps):
    r = (len(taps) - 1) // 2
    p = np.pad(img, ((0, 0), (r, r)), mode="edge")
    rows = sum(np.float32(t) * p[:, k:k + img.shape[1]] for k, t in enumerate(taps))
    p = np.pad(rows, ((r, r), (0, 0)), mode="edge")
    blurred = sum(np.float32(t) * p[k:k + img.shape[0], :] for k, t in enumerate(taps))
    p = np.pad(blurred, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return blurred, np.sqrt(gx * gx + gy * gy)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="the image's side in pixels")
    ap.add_argument("--sigma", type=float, default=2.0, help="the blur's standard deviation in pixels")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the three images as image_filter.png here (needs matplotlib)")
    args = ap.parse_args(argv)
    if args.size < 16 or not args.sigma > 0:
        ap.error(f"--size {args.size} --sigma {args.sigma}: needs 16 pixels a side and a positive sigma")
    dev = args.device
    img, outline = scene(args.size)
    taps = gaussian_taps(args.sigma)
    src, t = tack.array(img, device=dev), tack.array(taps, device=dev)
    rows, blurred, edges = (tack.zeros(img.shape, tack.f32, device=dev) for _ in range(3))

    def run():
        blur_rows(src, t, rows)
        blur_cols(rows, t, blurred)
        sobel(blurred, edges)

    run()                    # compiles
    tack.synchronize()
    t0 = time.perf_counter()
    run()
    tack.synchronize()
    seconds = time.perf_counter() - t0
    print(f"{args.size} x {args.size} image, {len(taps)} taps, on {dev}: blur and edges in {seconds * 1e3:.2f} ms")

    want_blur, want_edges = numpy_filters(img, taps)
    got_blur, got_edges = blurred.numpy(), edges.numpy()
    np.testing.assert_allclose(got_blur, want_blur, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_edges, want_edges, rtol=1e-4, atol=1e-4)
    # the blur took the noise away (flat regions vary less), and the edges sit on the outlines
    assert np.std(np.diff(got_blur, axis=1)) < 0.3 * np.std(np.diff(img, axis=1))
    on, off = got_edges[outline].mean(), got_edges[~outline].mean()
    print(f"edge strength on the outlines {on:.3f}, elsewhere {off:.3f}")
    assert on > 4 * off, (on, off)
    if args.output_dir:
        try:
            import matplotlib
        except ImportError:
            print("matplotlib is not installed: no picture")
        else:
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, axes = plt.subplots(1, 3, figsize=(12, 4.3), constrained_layout=True)
            for ax, (title, a, cmap) in zip(axes, (("the image", img, "gray"),
                                                   (f"Gaussian blur, sigma {args.sigma:g}", got_blur, "gray"),
                                                   ("Sobel edges of the blur", got_edges, "magma"))):
                ax.imshow(a, cmap=cmap)
                ax.set_title(title)
                ax.set_axis_off()
            path = os.path.join(args.output_dir, "image_filter.png")
            fig.savefig(path, dpi=80)
            plt.close(fig)
            print(f"wrote {path}")
    print("image filtering: all checks passed")


if __name__ == "__main__":
    main()
