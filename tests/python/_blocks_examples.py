"""Kernels written with tack.blocks that more than one file runs: the tiled matrix product and
the shared-memory 5-point stencil of the language chapter ("Blocks and sub-groups"), with the
plain product and stencil (one thread an element) and NumPy's Laplacian to check them.  test_blocks.py tests them against NumPy on
the CPU, in debug mode and on PoCL; test_blocks_fast.py and test_cuda_blocks_emulated.py reuse
them through test_blocks; tests/gpu/coop.py times them on a GPU and benchmarks/blocks_cpu.py on
the CPU.  No pytest here, so that the
GPU script imports them on a machine that has only Tack and NumPy."""

import numpy as np

import tack

T = 16  # the product's tile


def matmul_tiled(a, b, c):
    n, k = a.shape
    m = b.shape[1]
    nbj = (m + T - 1) // T
    nbi = (n + T - 1) // T
    for blk, t in tack.blocks(nbi * nbj, T * T):
        sa = tack.shared((T, T), tack.f32)
        sb = tack.shared((T, T), tack.f32)
        ty = t // T
        tx = t % T
        i = (blk // nbj) * T + ty
        j = (blk % nbj) * T + tx
        acc = 0.0
        for k0 in range(0, k, T):
            sa[ty, tx] = a[i, k0 + tx] if i < n and k0 + tx < k else 0.0
            sb[ty, tx] = b[k0 + ty, j] if k0 + ty < k and j < m else 0.0
            tack.barrier()
            for kk in range(T):
                acc += sa[ty, kk] * sb[kk, tx]
            tack.barrier()
        if i < n and j < m:
            c[i, j] = acc


def matmul_plain(a, b, c):
    n, k = a.shape
    m = b.shape[1]
    for i, j in tack.ndrange(n, m):
        acc = 0.0
        for q in range(k):
            acc += a[i, q] * b[q, j]
        c[i, j] = acc


TS = 16


def stencil(u, out):
    """The 5-point Laplacian with edges clamped: each block loads its 16 x 16 tile and a halo
    of one into shared memory, then every thread reads its neighbours there."""
    n, m = u.shape
    nbj = (m + TS - 1) // TS
    for blk, t in tack.blocks(((n + TS - 1) // TS) * nbj, TS * TS):
        s = tack.shared((TS + 2, TS + 2), tack.f32)
        ty = t // TS
        tx = t % TS
        i0 = (blk // nbj) * TS
        j0 = (blk % nbj) * TS
        for q in range(t, (TS + 2) * (TS + 2), TS * TS):
            qi = min(max(i0 + q // (TS + 2) - 1, 0), n - 1)
            qj = min(max(j0 + q % (TS + 2) - 1, 0), m - 1)
            s[q // (TS + 2), q % (TS + 2)] = u[qi, qj]
        tack.barrier()
        i = i0 + ty
        j = j0 + tx
        if i < n and j < m:
            out[i, j] = s[ty, tx + 1] + s[ty + 2, tx + 1] + s[ty + 1, tx] + s[ty + 1, tx + 2] - 4.0 * s[ty + 1, tx + 1]


def stencil_plain(u, out):
    n, m = u.shape
    for i, j in tack.ndrange(n, m):
        out[i, j] = (u[max(i - 1, 0), j] + u[min(i + 1, n - 1), j] + u[i, max(j - 1, 0)] + u[i, min(j + 1, m - 1)]
                     - 4.0 * u[i, j])


def laplacian(u):
    p = np.pad(u, 1, mode="edge")
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u
