"""The Numba peer of benchmarks/rodinia.py: each Rodinia kernel written with
``@numba.njit(parallel=True)`` and ``prange`` over the same outer index as the
C+OpenMP version (benchmarks/c/rodinia.c), with the same order of the
floating-point operations within an element.  Constants are float32 globals
(Numba freezes a global NumPy scalar with its type), so that f32 arithmetic
stays f32: a plain ``2.0`` is a float64 literal in Numba and would promote the
whole expression.  Imported only by the Numba worker process.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

F0, F1, F2 = np.float32(0.0), np.float32(1.0), np.float32(2.0)
F05, F025, F0625 = np.float32(0.5), np.float32(0.25), np.float32(0.0625)
FBIG = np.float32(np.inf)

jit = numba.njit(parallel=True, cache=True)


@jit
def hotspot_step(src, dst, power, ci, rxi, ryi, rzi, amb):
    rows, cols = src.shape
    for r in prange(rows):
        rn, rs = max(r - 1, 0), min(r + 1, rows - 1)
        for c in range(cols):
            cw, ce = max(c - 1, 0), min(c + 1, cols - 1)
            v = src[r, c]
            d = ci * (power[r, c] + (src[rs, c] + src[rn, c] - F2 * v) * ryi
                      + (src[r, ce] + src[r, cw] - F2 * v) * rxi + (amb - v) * rzi)
            dst[r, c] = v + d


def hotspot(inp):
    a, b = inp["t"], inp["tmp"]
    for _ in range(inp["iters"]):
        hotspot_step(a, b, inp["power"], *inp["coef"])
        a, b = b, a


@jit
def hotspot3d_step(src, dst, power, cc, cn, cs, ce, cw, ct, cb, sdc, amb):
    nz, ny, nx = src.shape
    for zy in prange(nz * ny):
        z, y = zy // ny, zy % ny
        zb, zt = max(z - 1, 0), min(z + 1, nz - 1)
        yn, ys = max(y - 1, 0), min(y + 1, ny - 1)
        for x in range(nx):
            xw, xe = max(x - 1, 0), min(x + 1, nx - 1)
            v = src[z, y, x]
            dst[z, y, x] = (cc * v + cn * src[z, yn, x] + cs * src[z, ys, x] + ce * src[z, y, xe]
                            + cw * src[z, y, xw] + ct * src[zt, y, x] + cb * src[zb, y, x]
                            + sdc * power[z, y, x] + ct * amb)


def hotspot3d(inp):
    a, b = inp["t"], inp["tmp"]
    for _ in range(inp["iters"]):
        hotspot3d_step(a, b, inp["power"], *inp["coef"])
        a, b = b, a


@jit
def srad_sums(J):
    rows, cols = J.shape
    s = 0.0
    s2 = 0.0
    for r in prange(rows):
        for k in range(cols):
            v = np.float64(J[r, k])
            s += v
            s2 += v * v
    return s, s2


@jit
def srad_coef(J, q0, c, dn, ds, dw, de):
    rows, cols = J.shape
    for r in prange(rows):
        rn, rs = max(r - 1, 0), min(r + 1, rows - 1)
        for k in range(cols):
            kw, ke = max(k - 1, 0), min(k + 1, cols - 1)
            jc = J[r, k]
            a = J[rn, k] - jc
            b = J[rs, k] - jc
            w = J[r, kw] - jc
            e = J[r, ke] - jc
            g2 = (a * a + b * b + w * w + e * e) / (jc * jc)
            lap = (a + b + w + e) / jc
            num = F05 * g2 - F0625 * (lap * lap)
            den = F1 + F025 * lap
            qs = num / (den * den)
            dd = (qs - q0) / (q0 * (F1 + q0))
            cv = F1 / (F1 + dd)
            cv = F0 if cv < F0 else (F1 if cv > F1 else cv)
            c[r, k] = cv
            dn[r, k] = a
            ds[r, k] = b
            dw[r, k] = w
            de[r, k] = e


@jit
def srad_update(J, c, dn, ds, dw, de, lam):
    rows, cols = J.shape
    for r in prange(rows):
        rs = min(r + 1, rows - 1)
        for k in range(cols):
            ke = min(k + 1, cols - 1)
            cc = c[r, k]
            d = cc * dn[r, k] + c[rs, k] * ds[r, k] + cc * dw[r, k] + c[r, ke] * de[r, k]
            J[r, k] = J[r, k] + F025 * lam * d


def srad(inp):
    J, n = inp["J"], inp["J"].size
    for _ in range(inp["iters"]):
        s, s2 = srad_sums(J)
        mean = s / n
        q0 = np.float32((s2 / n - mean * mean) / (mean * mean))
        srad_coef(J, q0, inp["c"], inp["dn"], inp["ds"], inp["dw"], inp["de"])
        srad_update(J, inp["c"], inp["dn"], inp["ds"], inp["dw"], inp["de"], inp["lam"])


@jit
def pathfinder_row(src, dst, wall, t):
    cols = src.shape[0]
    for k in prange(cols):
        m = src[k]
        left, right = src[max(k - 1, 0)], src[min(k + 1, cols - 1)]
        m = left if left < m else m
        m = right if right < m else m
        dst[k] = wall[t, k] + m


def pathfinder(inp):
    wall, out, tmp = inp["wall"], inp["out"], inp["tmp"]
    out[:] = wall[0]
    a, b = out, tmp
    for t in range(1, wall.shape[0]):
        pathfinder_row(a, b, wall, t)
        a, b = b, a
    if a is not out:
        out[:] = a


@jit
def nw_diag(score, ref, penalty, d, bs):
    nb = (score.shape[0] - 1) // bs
    lo, hi = max(0, d - nb + 1), min(d, nb - 1)
    for bi in prange(lo, hi + 1):
        bj = d - bi
        for i in range(bi * bs + 1, bi * bs + bs + 1):
            for j in range(bj * bs + 1, bj * bs + bs + 1):
                m = score[i - 1, j - 1] + ref[i, j]
                up = score[i - 1, j] - penalty
                left = score[i, j - 1] - penalty
                m = up if up > m else m
                m = left if left > m else m
                score[i, j] = m


def nw(inp):
    nb = (inp["score"].shape[0] - 1) // inp["block"]
    for d in range(2 * nb - 1):
        nw_diag(inp["score"], inp["ref"], inp["penalty"], d, inp["block"])


@jit
def lud_step(a, k):
    n = a.shape[0]
    piv = a[k, k]
    for i in prange(k + 1, n):
        lv = a[i, k] / piv
        a[i, k] = lv
        for j in range(k + 1, n):
            a[i, j] = a[i, j] - lv * a[k, j]


def lud(inp):
    a = inp["a"]
    for k in range(a.shape[0] - 1):
        lud_step(a, k)


@jit
def kmeans_step(feat, cent, member, sums, counts, chunks):
    n, nf = feat.shape
    k = cent.shape[0]
    part = np.zeros((chunks, k, nf), np.float32)
    pc = np.zeros((chunks, k), np.int32)
    step = (n + chunks - 1) // chunks
    for q in prange(chunks):
        for i in range(q * step, min(n, q * step + step)):
            best = FBIG
            bi = 0
            for c in range(k):
                d = F0
                for f in range(nf):
                    t = feat[i, f] - cent[c, f]
                    d += t * t
                if d < best:
                    best = d
                    bi = c
            member[i] = bi
            pc[q, bi] += 1
            for f in range(nf):
                part[q, bi, f] += feat[i, f]
    for q in range(chunks):
        for c in range(k):
            counts[c] += pc[q, c]
            for f in range(nf):
                sums[c, f] += part[q, c, f]


def kmeans(inp):
    inp["sums"][...] = 0
    inp["counts"][...] = 0
    kmeans_step(inp["feat"], inp["cent"], inp["member"], inp["sums"], inp["counts"],
                numba.get_num_threads())


@jit
def bp_forward(x, w, hidden):
    n1, hw = w.shape
    for j in prange(1, hw):
        s = F0
        for k in range(n1):
            s += w[k, j] * x[k]
        hidden[j] = F1 / (F1 + np.exp(-s))


@jit
def bp_adjust(x, w, oldw, delta, eta, momentum):
    n1, hw = w.shape
    for k in prange(n1):
        for j in range(1, hw):
            nd = eta * delta[j] * x[k] + momentum * oldw[k, j]
            w[k, j] = w[k, j] + nd
            oldw[k, j] = nd


def backprop(inp):
    bp_forward(inp["x"], inp["w"], inp["hidden"])
    bp_adjust(inp["x"], inp["w"], inp["oldw"], inp["delta"], inp["eta"], inp["momentum"])


@jit
def nn_dist(loc, lat, lng, dist):
    for i in prange(dist.shape[0]):
        a = loc[i, 0] - lat
        b = loc[i, 1] - lng
        dist[i] = np.sqrt(a * a + b * b)


def nn(inp):
    nn_dist(inp["loc"], inp["lat"], inp["lng"], inp["dist"])


@jit
def lavamd_boxes(nb, npb, a2, pos, q, fv):
    for bx in prange(nb * nb * nb):
        z, y, x = bx // (nb * nb), (bx // nb) % nb, bx % nb
        for i in range(bx * npb, bx * npb + npb):
            pv, px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2], pos[i, 3]
            av, ax, ay, az = F0, F0, F0, F0
            for dz in range(-1, 2):
                for dy in range(-1, 2):
                    for dx in range(-1, 2):
                        zz, yy, xx = z + dz, y + dy, x + dx
                        if zz < 0 or zz >= nb or yy < 0 or yy >= nb or xx < 0 or xx >= nb:
                            continue
                        o = ((zz * nb + yy) * nb + xx) * npb
                        for j in range(o, o + npb):
                            r2 = pv + pos[j, 0] - (px * pos[j, 1] + py * pos[j, 2] + pz * pos[j, 3])
                            vij = np.exp(-(a2 * r2))
                            fs = F2 * vij
                            qj = q[j]
                            av += qj * vij
                            ax += qj * (fs * (px - pos[j, 1]))
                            ay += qj * (fs * (py - pos[j, 2]))
                            az += qj * (fs * (pz - pos[j, 3]))
            fv[i, 0] = av
            fv[i, 1] = ax
            fv[i, 2] = ay
            fv[i, 3] = az


def lavamd(inp):
    lavamd_boxes(inp["nb"], inp["np"], inp["a2"], inp["pos"], inp["q"], inp["fv"])


RUN = {"hotspot": hotspot, "hotspot3d": hotspot3d, "srad": srad, "pathfinder": pathfinder, "nw": nw,
       "lud": lud, "kmeans": kmeans, "backprop": backprop, "nn": nn, "lavamd": lavamd}
