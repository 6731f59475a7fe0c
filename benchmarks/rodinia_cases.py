"""The cases of the Rodinia suite that benchmarks/rodinia.py runs: for each
kernel, its inputs, its Tack port, its NumPy version and the call of its
C+OpenMP version (benchmarks/c/rodinia.c), then CASES, the table the driver
walks, and ORDER, the order of its report.

This is the half of the benchmark a reader compares with Rodinia and with the
other peers' versions of the same kernels (benchmarks/rodinia_numba.py, the C
file): one section a kernel, each with the same four parts, and nothing about
processes, rounds, clocks or tables.  The driver -- the C library's build, the
check of each result against the NumPy version, the timing, the worker
processes, the report and the command line -- is benchmarks/rodinia.py, which
imports CASES and ORDER from here; a new kernel is a section and a Case here,
and the driver does not change.  Importing this module defines the Tack
kernels (each compiles on its first call) and the cases, and runs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import tack

F32 = np.float32


def _p(a):  # a C version's array argument: the address of the array's data
    return a.ctypes.data


# ============================================================== hotspot
# The chip's constants (Rodinia's hotspot): a 0.016 m square chip 0.5 mm thick.
T_CHIP, CHIP_H, CHIP_W, AMB = 0.0005, 0.016, 0.016, 80.0
FACTOR_CHIP, SPEC_HEAT_SI, K_SI, MAX_PD, PRECISION = 0.5, 1.75e6, 100.0, 3.0e6, 0.001
HOTSPOT_ITERS = 10  # even: the result ends where it started


def _hotspot_make(n):
    r = np.random.default_rng(101)
    gw, gh = CHIP_W / n, CHIP_H / n
    cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * gw * gh
    rx, ry, rz = gw / (2 * K_SI * T_CHIP * gh), gh / (2 * K_SI * T_CHIP * gw), T_CHIP / (K_SI * gh * gw)
    step = PRECISION / (MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI))
    coef = tuple(F32(v) for v in (step / cap, 1 / rx, 1 / ry, 1 / rz, AMB))
    return {"t": (323.0 + 20.0 * r.random((n, n))).astype(F32), "tmp": np.zeros((n, n), F32),
            "power": (1e-3 * r.random((n, n))).astype(F32), "coef": coef, "iters": HOTSPOT_ITERS}


@tack.kernel
def hotspot_step(src, dst, power, ci, rxi, ryi, rzi, amb):
    rows, cols = src.shape
    for r, c in tack.ndrange(rows, cols):
        rn = max(r - 1, 0)
        rs = min(r + 1, rows - 1)
        cw = max(c - 1, 0)
        ce = min(c + 1, cols - 1)
        v = src[r, c]
        d = ci * (power[r, c] + (src[rs, c] + src[rn, c] - 2.0 * v) * ryi
                  + (src[r, ce] + src[r, cw] - 2.0 * v) * rxi + (amb - v) * rzi)
        dst[r, c] = v + d


def _hotspot_tack(inp):
    a, b = inp["t"], inp["tmp"]
    for _ in range(inp["iters"]):
        hotspot_step(a, b, inp["power"], *inp["coef"])
        a, b = b, a


def _hotspot_numpy(inp):
    t, p = inp["t"], inp["power"]
    ci, rxi, ryi, rzi, amb = inp["coef"]
    for _ in range(inp["iters"]):
        q = np.pad(t, 1, mode="edge")
        d = ci * (p + (q[2:, 1:-1] + q[:-2, 1:-1] - 2.0 * t) * ryi
                  + (q[1:-1, 2:] + q[1:-1, :-2] - 2.0 * t) * rxi + (amb - t) * rzi)
        t[...] = t + d


def _hotspot_c(lib, inp):
    n = inp["t"].shape[0]
    lib.rd_hotspot(n, n, inp["iters"], _p(inp["t"]), _p(inp["tmp"]), _p(inp["power"]), *inp["coef"])


# ============================================================== hotspot3D
HOTSPOT3D_LAYERS = 8


def _hotspot3d_make(n):
    r = np.random.default_rng(102)
    nz = HOTSPOT3D_LAYERS
    dx, dy, dz = CHIP_H / n, CHIP_W / n, T_CHIP / nz
    cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * dx * dy
    rx, ry, rz = dy / (2 * K_SI * T_CHIP * dx), dx / (2 * K_SI * T_CHIP * dy), dz / (K_SI * dx * dy)
    dt = PRECISION / (MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI))
    sdc = dt / cap
    ce = cw = sdc / rx
    cn = cs = sdc / ry
    ct = cb = sdc / rz
    cc = 1.0 - (2.0 * ce + 2.0 * cn + 3.0 * ct)
    coef = tuple(F32(v) for v in (cc, cn, cs, ce, cw, ct, cb, sdc, AMB))
    return {"t": (323.0 + 20.0 * r.random((nz, n, n))).astype(F32), "tmp": np.zeros((nz, n, n), F32),
            "power": (1e-3 * r.random((nz, n, n))).astype(F32), "coef": coef, "iters": HOTSPOT_ITERS}


@tack.kernel
def hotspot3d_step(src, dst, power, cc, cn, cs, ce, cw, ct, cb, sdc, amb):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        zb = max(z - 1, 0)
        zt = min(z + 1, nz - 1)
        yn = max(y - 1, 0)
        ys = min(y + 1, ny - 1)
        xw = max(x - 1, 0)
        xe = min(x + 1, nx - 1)
        v = src[z, y, x]
        dst[z, y, x] = (cc * v + cn * src[z, yn, x] + cs * src[z, ys, x] + ce * src[z, y, xe]
                        + cw * src[z, y, xw] + ct * src[zt, y, x] + cb * src[zb, y, x]
                        + sdc * power[z, y, x] + ct * amb)


def _hotspot3d_tack(inp):
    a, b = inp["t"], inp["tmp"]
    for _ in range(inp["iters"]):
        hotspot3d_step(a, b, inp["power"], *inp["coef"])
        a, b = b, a


def _hotspot3d_numpy(inp):
    t, p = inp["t"], inp["power"]
    cc, cn, cs, ce, cw, ct, cb, sdc, amb = inp["coef"]
    for _ in range(inp["iters"]):
        q = np.pad(t, 1, mode="edge")
        t[...] = (cc * t + cn * q[1:-1, :-2, 1:-1] + cs * q[1:-1, 2:, 1:-1] + ce * q[1:-1, 1:-1, 2:]
                  + cw * q[1:-1, 1:-1, :-2] + ct * q[2:, 1:-1, 1:-1] + cb * q[:-2, 1:-1, 1:-1]
                  + sdc * p + ct * amb)


def _hotspot3d_c(lib, inp):
    nz, ny, nx = inp["t"].shape
    lib.rd_hotspot3d(nz, ny, nx, inp["iters"], _p(inp["t"]), _p(inp["tmp"]), _p(inp["power"]),
                     *inp["coef"])


# ============================================================== srad
SRAD_ITERS = 4


def _srad_make(n):
    z = np.zeros((n, n), F32)
    return {"J": np.exp(np.random.default_rng(103).random((n, n))).astype(F32), "c": z,
            "dn": z.copy(), "ds": z.copy(), "dw": z.copy(), "de": z.copy(), "lam": F32(0.5),
            "iters": SRAD_ITERS, "sums": np.zeros(2)}


@tack.kernel
def srad_sums(J, out):
    rows, cols = J.shape
    for r, k in tack.ndrange(rows, cols):
        v = tack.f64(J[r, k])
        out[0] += v
        out[1] += v * v


@tack.kernel
def srad_coef(J, q0, c, dn, ds, dw, de):
    rows, cols = J.shape
    for r, k in tack.ndrange(rows, cols):
        rn = max(r - 1, 0)
        rs = min(r + 1, rows - 1)
        kw = max(k - 1, 0)
        ke = min(k + 1, cols - 1)
        jc = J[r, k]
        a = J[rn, k] - jc
        b = J[rs, k] - jc
        w = J[r, kw] - jc
        e = J[r, ke] - jc
        g2 = (a * a + b * b + w * w + e * e) / (jc * jc)
        lap = (a + b + w + e) / jc
        num = 0.5 * g2 - 0.0625 * (lap * lap)
        den = 1.0 + 0.25 * lap
        qs = num / (den * den)
        dd = (qs - q0) / (q0 * (1.0 + q0))
        c[r, k] = min(max(1.0 / (1.0 + dd), 0.0), 1.0)
        dn[r, k] = a
        ds[r, k] = b
        dw[r, k] = w
        de[r, k] = e


@tack.kernel
def srad_update(J, c, dn, ds, dw, de, lam):
    rows, cols = J.shape
    for r, k in tack.ndrange(rows, cols):
        rs = min(r + 1, rows - 1)
        ke = min(k + 1, cols - 1)
        cc = c[r, k]
        d = cc * dn[r, k] + c[rs, k] * ds[r, k] + cc * dw[r, k] + c[r, ke] * de[r, k]
        J[r, k] = J[r, k] + 0.25 * lam * d


def _q0(s, s2, n):
    mean = s / n
    return F32((s2 / n - mean * mean) / (mean * mean))


def _srad_tack(inp):
    J, sums = inp["J"], inp["sums"]
    for _ in range(inp["iters"]):
        sums[:] = 0.0
        srad_sums(J, sums)
        srad_coef(J, _q0(sums[0], sums[1], J.size), inp["c"], inp["dn"], inp["ds"], inp["dw"], inp["de"])
        srad_update(J, inp["c"], inp["dn"], inp["ds"], inp["dw"], inp["de"], inp["lam"])


def _srad_numpy(inp):
    J, lam = inp["J"], inp["lam"]
    for _ in range(inp["iters"]):
        J64 = J.astype(np.float64)
        q0 = _q0(J64.sum(), (J64 * J64).sum(), J.size)
        q = np.pad(J, 1, mode="edge")
        a, b, w, e = q[:-2, 1:-1] - J, q[2:, 1:-1] - J, q[1:-1, :-2] - J, q[1:-1, 2:] - J
        g2 = (a * a + b * b + w * w + e * e) / (J * J)
        lap = (a + b + w + e) / J
        num = 0.5 * g2 - 0.0625 * (lap * lap)
        den = 1.0 + 0.25 * lap
        qs = num / (den * den)
        dd = (qs - q0) / (q0 * (1.0 + q0))
        c = np.clip(1.0 / (1.0 + dd), 0.0, 1.0)
        cp = np.pad(c, 1, mode="edge")
        d = c * a + cp[2:, 1:-1] * b + c * w + cp[1:-1, 2:] * e
        J[...] = J + 0.25 * lam * d


def _srad_c(lib, inp):
    n = inp["J"].shape[0]
    lib.rd_srad(n, n, inp["iters"], inp["lam"], *[_p(inp[k]) for k in ("J", "c", "dn", "ds", "dw", "de")])


# ============================================================== pathfinder
PATH_ROWS = 100


def _path_make(n):
    return {"wall": np.random.default_rng(104).integers(0, 10, (PATH_ROWS, n), dtype=np.int32),
            "out": np.zeros(n, np.int32), "tmp": np.zeros(n, np.int32)}


@tack.kernel
def pathfinder_row(src, dst, wall, t):
    cols = src.shape[0]
    for k in range(cols):
        m = min(src[k], src[max(k - 1, 0)])
        m = min(m, src[min(k + 1, cols - 1)])
        dst[k] = wall[t, k] + m


def _path_tack(inp):
    wall, out, tmp = inp["wall"], inp["out"], inp["tmp"]
    out[:] = wall[0]
    a, b = out, tmp
    for t in range(1, wall.shape[0]):
        pathfinder_row(a, b, wall, t)
        a, b = b, a
    if a is not out:
        out[:] = a


def _path_numpy(inp):
    wall = inp["wall"]
    src = wall[0].copy()
    for t in range(1, wall.shape[0]):
        q = np.pad(src, 1, mode="edge")
        src = wall[t] + np.minimum(np.minimum(q[1:-1], q[:-2]), q[2:])
    inp["out"][:] = src


def _path_c(lib, inp):
    rows, cols = inp["wall"].shape
    lib.rd_pathfinder(rows, cols, _p(inp["wall"]), _p(inp["out"]), _p(inp["tmp"]))


# ============================================================== nw
NW_BLOCK, NW_PENALTY = 16, 10


def _nw_make(n):
    r = np.random.default_rng(105)
    table = r.integers(-4, 12, (24, 24), dtype=np.int32)
    table = np.triu(table) + np.triu(table, 1).T  # symmetric, as a substitution matrix is
    s1, s2 = r.integers(0, 24, n + 1), r.integers(0, 24, n + 1)
    ref = table[s1[:, None], s2[None, :]].astype(np.int32)
    score = np.zeros((n + 1, n + 1), np.int32)
    score[0, :] = -NW_PENALTY * np.arange(n + 1)
    score[:, 0] = -NW_PENALTY * np.arange(n + 1)
    return {"score": score, "ref": ref, "penalty": NW_PENALTY, "block": NW_BLOCK}


@tack.kernel
def nw_diag(score, ref, penalty, d, bs):
    nb = (score.shape[0] - 1) // bs
    for bi in tack.independent(range(max(0, d - nb + 1), min(d, nb - 1) + 1)):  # blocks of a diagonal
        bj = d - bi
        for i in range(bi * bs + 1, bi * bs + bs + 1):
            for j in range(bj * bs + 1, bj * bs + bs + 1):
                m = score[i - 1, j - 1] + ref[i, j]
                m = max(m, score[i - 1, j] - penalty)
                score[i, j] = max(m, score[i, j - 1] - penalty)


def _nw_tack(inp):
    nb = (inp["score"].shape[0] - 1) // inp["block"]
    for d in range(2 * nb - 1):
        nw_diag(inp["score"], inp["ref"], inp["penalty"], d, inp["block"])


def _nw_numpy(inp):
    s, ref, p = inp["score"], inp["ref"], inp["penalty"]
    n, flat, rflat, w = s.shape[0] - 1, s.reshape(-1), ref.reshape(-1), s.shape[0]
    for d in range(2, 2 * n + 1):  # anti-diagonal i + j = d, all its cells at once
        i = np.arange(max(1, d - n), min(n, d - 1) + 1)
        k = i * w + (d - i)
        m = np.maximum(flat[k - w - 1] + rflat[k], flat[k - w] - p)
        flat[k] = np.maximum(m, flat[k - 1] - p)


def _nw_c(lib, inp):
    lib.rd_nw(inp["score"].shape[0] - 1, inp["block"], _p(inp["score"]), _p(inp["ref"]), inp["penalty"])


# ============================================================== lud
def _lud_make(n):
    a = np.random.default_rng(106).random((n, n)).astype(F32)
    a[np.diag_indices(n)] += F32(n)  # diagonally dominant: no pivoting needed
    return {"a": a}


@tack.kernel
def lud_step(a, k):
    n = a.shape[0]
    for i in tack.independent(range(k + 1, n)):  # row k is read, rows below it written
        lv = a[i, k] / a[k, k]
        a[i, k] = lv
        for j in range(k + 1, n):
            a[i, j] = a[i, j] - lv * a[k, j]


def _lud_tack(inp):
    a = inp["a"]
    for k in range(a.shape[0] - 1):
        lud_step(a, k)


def _lud_numpy(inp):
    a = inp["a"]
    for k in range(a.shape[0] - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.multiply.outer(a[k + 1:, k], a[k, k + 1:])


def _lud_c(lib, inp):
    lib.rd_lud(inp["a"].shape[0], _p(inp["a"]))


# ============================================================== kmeans
KMEANS_FEATURES, KMEANS_K = 34, 5


def _kmeans_make(n):
    r = np.random.default_rng(107)
    feat = r.random((n, KMEANS_FEATURES)).astype(F32)
    return {"feat": feat, "cent": feat[r.choice(n, KMEANS_K, replace=False)].copy(),
            "member": np.zeros(n, np.int32), "sums": np.zeros((KMEANS_K, KMEANS_FEATURES), F32),
            "counts": np.zeros(KMEANS_K, np.int32)}


@tack.kernel
def kmeans_step(feat, cent, member, sums, counts):
    n, nf = feat.shape
    k = cent.shape[0]
    for i in range(n):
        best = math.inf
        bi = 0
        for c in range(k):
            d = 0.0
            for f in range(nf):
                t = feat[i, f] - cent[c, f]
                d += t * t
            if d < best:
                best = d
                bi = c
        member[i] = bi
        counts[bi] += 1
        for f in range(nf):
            sums[bi, f] += feat[i, f]


def _kmeans_tack(inp):
    inp["sums"][...] = 0
    inp["counts"][...] = 0
    kmeans_step(inp["feat"], inp["cent"], inp["member"], inp["sums"], inp["counts"])


def _kmeans_numpy(inp):
    feat, cent = inp["feat"], inp["cent"]
    dist = np.zeros((cent.shape[0], feat.shape[0]), F32)
    for c in range(cent.shape[0]):  # feature by feature: the same order of the f32 sums
        for f in range(feat.shape[1]):
            t = feat[:, f] - cent[c, f]
            dist[c] += t * t
    m = np.argmin(dist, axis=0)  # the first on ties, as the strict < of the others
    inp["member"][:] = m
    inp["counts"][:] = np.bincount(m, minlength=cent.shape[0])
    for f in range(feat.shape[1]):
        inp["sums"][:, f] = np.bincount(m, weights=feat[:, f], minlength=cent.shape[0])


def _kmeans_c(lib, inp):
    (n, nf), k = inp["feat"].shape, inp["cent"].shape[0]
    lib.rd_kmeans(n, nf, k, *[_p(inp[x]) for x in ("feat", "cent", "member", "sums", "counts")])


# ============================================================== backprop
BP_HIDDEN, BP_ETA, BP_MOMENTUM = 16, F32(0.3), F32(0.3)


def _bp_make(n):
    r = np.random.default_rng(108)
    x = r.random(n + 1).astype(F32)
    x[0] = 1.0  # the bias input
    shape = (n + 1, BP_HIDDEN + 1)
    return {"x": x, "w": ((r.random(shape) - 0.5) * 2e-3).astype(F32),
            "oldw": ((r.random(shape) - 0.5) * 1e-4).astype(F32),
            "delta": ((r.random(BP_HIDDEN + 1) - 0.5) * 0.1).astype(F32),
            "hidden": np.zeros(BP_HIDDEN + 1, F32), "eta": BP_ETA, "momentum": BP_MOMENTUM}


@tack.kernel
def bp_forward(x, w, hidden):
    n1, hw = w.shape
    for j in range(1, hw):
        s = 0.0
        for k in range(n1):
            s += w[k, j] * x[k]
        hidden[j] = 1.0 / (1.0 + math.exp(-s))


@tack.kernel
def bp_adjust(x, w, oldw, delta, eta, momentum):
    n1, hw = w.shape
    for k, j in tack.ndrange(n1, (1, hw)):
        nd = eta * delta[j] * x[k] + momentum * oldw[k, j]
        w[k, j] = w[k, j] + nd
        oldw[k, j] = nd


def _bp_tack(inp):
    bp_forward(inp["x"], inp["w"], inp["hidden"])
    bp_adjust(inp["x"], inp["w"], inp["oldw"], inp["delta"], inp["eta"], inp["momentum"])


def _bp_numpy(inp):
    x, w, oldw = inp["x"], inp["w"], inp["oldw"]
    s = (w[:, 1:].astype(np.float64) * x[:, None]).sum(0)  # the order of the sum is each peer's own
    inp["hidden"][1:] = 1.0 / (1.0 + np.exp(-s))
    nd = inp["eta"] * inp["delta"][None, 1:] * x[:, None] + inp["momentum"] * oldw[:, 1:]
    w[:, 1:] = w[:, 1:] + nd
    oldw[:, 1:] = nd


def _bp_c(lib, inp):
    n = inp["x"].shape[0] - 1
    lib.rd_backprop(n, BP_HIDDEN, *[_p(inp[k]) for k in ("x", "w", "oldw", "delta", "hidden")],
                    inp["eta"], inp["momentum"])


# ============================================================== nn
def _nn_make(n):
    r = np.random.default_rng(109)
    loc = np.stack([r.uniform(-90, 90, n), r.uniform(-180, 180, n)], 1).astype(F32)
    return {"loc": loc, "lat": F32(30.0), "lng": F32(90.0), "dist": np.zeros(n, F32)}


@tack.kernel
def nn_dist(loc, lat, lng, dist):
    for i in range(dist.shape[0]):
        a = loc[i, 0] - lat
        b = loc[i, 1] - lng
        dist[i] = math.sqrt(a * a + b * b)


def _nn_tack(inp):
    nn_dist(inp["loc"], inp["lat"], inp["lng"], inp["dist"])


def _nn_numpy(inp):
    a, b = inp["loc"][:, 0] - inp["lat"], inp["loc"][:, 1] - inp["lng"]
    inp["dist"][:] = np.sqrt(a * a + b * b)


def _nn_c(lib, inp):
    lib.rd_nn(inp["dist"].shape[0], _p(inp["loc"]), inp["lat"], inp["lng"], _p(inp["dist"]))


# ============================================================== lavaMD
LAVA_PER_BOX, LAVA_ALPHA = 100, 0.5


def _lava_make(nb):
    r = np.random.default_rng(110)
    n = nb ** 3 * LAVA_PER_BOX
    return {"nb": nb, "np": LAVA_PER_BOX, "a2": F32(2.0 * LAVA_ALPHA * LAVA_ALPHA),
            "pos": ((r.integers(1, 11, (n, 4))) / 10.0).astype(F32),
            "q": (r.integers(1, 11, n) / 10.0).astype(F32), "fv": np.zeros((n, 4), F32)}


@tack.kernel
def lavamd_boxes(nb, npb, a2, pos, q, fv):
    for bx in tack.independent(range(nb * nb * nb)):  # box bx writes its own particles
        z = bx // (nb * nb)
        y = (bx // nb) % nb
        x = bx % nb
        for i in range(bx * npb, bx * npb + npb):
            pv = pos[i, 0]
            px = pos[i, 1]
            py = pos[i, 2]
            pz = pos[i, 3]
            av = 0.0
            ax = 0.0
            ay = 0.0
            az = 0.0
            for zz in range(max(z - 1, 0), min(z + 2, nb)):
                for yy in range(max(y - 1, 0), min(y + 2, nb)):
                    for xx in range(max(x - 1, 0), min(x + 2, nb)):
                        o = ((zz * nb + yy) * nb + xx) * npb
                        for j in range(o, o + npb):
                            r2 = pv + pos[j, 0] - (px * pos[j, 1] + py * pos[j, 2] + pz * pos[j, 3])
                            vij = math.exp(-(a2 * r2))
                            fs = 2.0 * vij
                            qj = q[j]
                            av += qj * vij
                            ax += qj * (fs * (px - pos[j, 1]))
                            ay += qj * (fs * (py - pos[j, 2]))
                            az += qj * (fs * (pz - pos[j, 3]))
            fv[i, 0] = av
            fv[i, 1] = ax
            fv[i, 2] = ay
            fv[i, 3] = az


def _lava_tack(inp):
    lavamd_boxes(inp["nb"], inp["np"], inp["a2"], inp["pos"], inp["q"], inp["fv"])


def _lava_numpy(inp):
    nb, npb, a2, pos, q, fv = (inp[k] for k in ("nb", "np", "a2", "pos", "q", "fv"))
    for bx in range(nb ** 3):
        z, y, x = bx // (nb * nb), (bx // nb) % nb, bx % nb
        nbrs = [((zz * nb + yy) * nb + xx) for zz in range(max(z - 1, 0), min(z + 2, nb))
                for yy in range(max(y - 1, 0), min(y + 2, nb)) for xx in range(max(x - 1, 0), min(x + 2, nb))]
        j = (np.array(nbrs)[:, None] * npb + np.arange(npb)).ravel()
        pi, pj = pos[bx * npb:(bx + 1) * npb].astype(np.float64), pos[j].astype(np.float64)
        r2 = pi[:, :1] + pj[None, :, 0] - pi[:, 1:] @ pj[:, 1:].T
        vij = np.exp(-(float(a2) * r2)) * q[j]
        fv[bx * npb:(bx + 1) * npb, 0] = vij.sum(1)
        for c in (1, 2, 3):
            fv[bx * npb:(bx + 1) * npb, c] = (2.0 * vij * (pi[:, c:c + 1] - pj[None, :, c])).sum(1)


def _lava_c(lib, inp):
    lib.rd_lavamd(inp["nb"], inp["np"], inp["a2"], _p(inp["pos"]), _p(inp["q"]), _p(inp["fv"]))


# ============================================================== the cases
@dataclass
class Case:
    name: str
    what: str
    sizes: tuple  # the two sizes of the full run
    quick: int  # --quick and the tests
    make: Callable  # size -> inputs (arrays and scalars)
    outputs: tuple  # what is checked
    state: tuple  # the arrays a call changes: put back before every call
    tack: Callable
    numpy: Callable
    c: Callable
    rtol: float
    atol: float = 0.0  # times max |expected|
    label: Callable = str
    work: Callable = float


def _sq(n):
    return f"{n}^2"


CASES = {c.name: c for c in [
    Case("hotspot", f"2-D thermal stencil, {HOTSPOT_ITERS} steps (f32)", (512, 2048), 24,
         _hotspot_make, ("t",), ("t", "tmp"), _hotspot_tack, _hotspot_numpy, _hotspot_c,
         1e-6, label=_sq, work=lambda n: n * n),
    Case("hotspot3d", f"3-D thermal stencil, {HOTSPOT3D_LAYERS} layers, {HOTSPOT_ITERS} steps (f32)",
         (128, 512), 12, _hotspot3d_make, ("t",), ("t", "tmp"), _hotspot3d_tack, _hotspot3d_numpy,
         _hotspot3d_c, 1e-6, label=lambda n: f"{n}^2x{HOTSPOT3D_LAYERS}", work=lambda n: n * n),
    Case("srad", f"speckle-reducing diffusion, {SRAD_ITERS} steps: mean, coefficients, update (f32)",
         (512, 2048), 24, _srad_make, ("J",), ("J",), _srad_tack, _srad_numpy, _srad_c,
         1e-5, 1e-6, label=_sq, work=lambda n: n * n),
    Case("pathfinder", f"min-cost path down {PATH_ROWS} rows, one row at a time (i32)",
         (100_000, 1_000_000), 300, _path_make, ("out",), ("out", "tmp"), _path_tack, _path_numpy,
         _path_c, 0.0, label=lambda n: f"{PATH_ROWS}x{n}"),
    Case("nw", f"Needleman-Wunsch, {NW_BLOCK}x{NW_BLOCK} blocks by anti-diagonal (i32)",
         (1024, 4096), 64, _nw_make, ("score",), ("score",), _nw_tack, _nw_numpy, _nw_c, 0.0,
         label=_sq, work=lambda n: n * n),
    Case("lud", "LU decomposition, right-looking, one pivot at a time (f32)", (256, 1024), 24,
         _lud_make, ("a",), ("a",), _lud_tack, _lud_numpy, _lud_c, 1e-4, 1e-6, label=_sq,
         work=lambda n: n ** 3),
    Case("kmeans", f"one iteration: nearest of {KMEANS_K} centres, {KMEANS_FEATURES} features, cluster sums (f32)",
         (100_000, 500_000), 500, _kmeans_make, ("member", "counts", "sums"), (), _kmeans_tack,
         _kmeans_numpy, _kmeans_c, 1e-4),
    Case("backprop", f"n -> {BP_HIDDEN} layer: forward sums and weight update (f32)",
         (65_536, 1_048_576), 256, _bp_make, ("hidden", "w", "oldw"), ("w", "oldw"), _bp_tack, _bp_numpy,
         _bp_c, 1e-4, 1e-6),
    Case("nn", "distance of every record to a point (f32)", (1 << 20, 1 << 23), 1000,
         _nn_make, ("dist",), (), _nn_tack, _nn_numpy, _nn_c, 1e-6),
    Case("lavamd", f"particle potentials and forces, {LAVA_PER_BOX} a box, 27 neighbour boxes (f32, exp)",
         (3, 6), 2, _lava_make, ("fv",), (), _lava_tack, _lava_numpy, _lava_c, 2e-4, 1e-5,
         label=lambda n: f"{n}^3 boxes", work=lambda n: n ** 3),
]}
ORDER = list(CASES)
