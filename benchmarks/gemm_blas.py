"""The matrix-product kernel (src/compiler/cpu/gemm.c) against NumPy's BLAS, one and two threads.

    python -m benchmarks.gemm_blas [rounds]

PolyBench's gemm as users write it (the row scaled by beta, then alpha * A[i, k] times B's row) on
n x n operands, the loop's bits, compiled twice: with the C target's wide_vectors capability stated
off (32-byte vectors, as before the capability) and on (64-byte vectors where AVX-512VL is), and
NumPy's `A @ B`.  Each round, for 1 then 2 threads (OpenBLAS's set with threadpoolctl, Tack's with
tack.config.override(num_threads=...)): `A @ B`, Tack off, Tack on, `A @ B` again, Tack off and on
in the other order; wall-clock time, the best of the rounds (a third of them at 2048), and on one
thread also the calling thread's CPU time (where both run, and which other processes' share of
the cores does not inflate).
OPENBLAS_THREAD_TIMEOUT=4 (unless set) lets OpenBLAS's threads sleep at once after a product
instead of spinning on the second core while Tack runs (docs/performance.md).  Prints each size's
best times and the ratios Tack / BLAS, and the load average before and after.
"""

import os
import sys
import time

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402

import tack  # noqa: E402


def gemm(alpha, beta, C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = beta * C[i, j]
        for k in range(A.shape[1]):
            a = alpha * A[i, k]
            for j in range(C.shape[1]):
                C[i, j] = C[i, j] + a * B[k, j]


def best(fn, so_far):
    """so_far's (wall-clock, this thread's CPU time) bests, with one more run of fn."""
    c, t = time.thread_time(), time.perf_counter()
    fn()
    return min(so_far[0], time.perf_counter() - t), min(so_far[1], time.thread_time() - c)


def main():
    from threadpoolctl import threadpool_limits

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    print("load average before:", os.getloadavg())
    for dt in (np.float32, np.float64):
        for n in (512, 1000, 1024, 2048):
            rng = np.random.default_rng(n)
            A, B, C = (rng.random((n, n)).astype(dt) for _ in range(3))
            kernels = {}
            for wide in ("off", "on"):
                with tack.config.override(wide_vectors=wide):
                    k = tack.kernel(gemm)
                    c = C.copy()
                    k(1.5, 0.5, c, A, B)  # the compile
                    kernels[wide] = k
            t = {(w, th): (float("inf"), float("inf")) for w in ("blas", "off", "on") for th in (1, 2)}
            for r in range(max(1, rounds // 3) if n >= 2048 else rounds):
                for th in (1, 2):
                    with threadpool_limits(th), tack.config.override(num_threads=th):
                        order = ("off", "on") if r % 2 == 0 else ("on", "off")
                        t["blas", th] = best(lambda: A @ B, t["blas", th])
                        for w in order:
                            c = C.copy()
                            t[w, th] = best(lambda: kernels[w](1.5, 0.5, c, A, B), t[w, th])
                        t["blas", th] = best(lambda: A @ B, t["blas", th])
            for th, m, what in ((1, 0, "wall"), (1, 1, "CPU"), (2, 0, "wall")):
                b, off, on = (t[w, th][m] for w in ("blas", "off", "on"))
                print(f"{np.dtype(dt).name} n={n} threads={th} {what}: BLAS {b * 1e3:.2f} ms, "
                      f"32-byte {off * 1e3:.2f} ms ({off / b:.2f}x), 64-byte {on * 1e3:.2f} ms ({on / b:.2f}x), "
                      f"64/32 {on / off:.2f}", flush=True)
    print("load average after:", os.getloadavg())


if __name__ == "__main__":
    main()
