"""The radix sort's passes on a GPU: tiles of 2,048 keys sorted by their digit in a work-group's
shared memory, written out in runs (issue 39).

tack._algorithms_sort sorts by LSD radix passes of 8-bit digits, each pass a blocked count and a
blocked scatter (`_radix_pass`): a block is a serial loop over its elements, which on the CPU is
what a core does best (a few blocks a thread, each streaming through memory) but on a GPU leaves
one work-item to each 4,096 elements -- a 16M sort on about 4,096 threads, each reading memory
with a stride of 4,096 elements between neighbours.  This module is the pass every non-CPU
device runs instead (OpenCL, CUDA, HIP, Level Zero, Metal), written from the language's
cooperative blocks (tack.blocks, tack.shared, tack.barrier, tack.block_scan), so that one
kernel serves every GPU backend and runs on the CPU and in debug mode too, where the tests
compare it with NumPy.  The keys, their digits, the skipped bytes, the buffers and the order of
the passes are the CPU path's (`_radix_sort_kv` and `sort` pick the pass); only the pass differs,
and the first pass, the OR and AND of all keys that finds the bytes they share (`_key_span`
here, from blocks too).

One pass is one kernel of four blocks loops, each a launch phase:

1. Tiles.  A block of 256 threads takes a tile of TILE = 2,048 elements (8 a thread), reads
   them coalesced (element `tile * TILE + j * 256 + t`), and stores each one's digit and its
   place in the tile packed in an int32 (`digit << 16 | place`) in shared memory.  Four rounds
   of a two-bit split sort the tile by digit, stably.  In a round a thread counts the four
   values of the two bits among its 8 consecutive entries, the counts packed 16 bits each in an
   int64 (a count is at most 2,048); one `block_scan` of the packed counts gives every thread
   the entries of each value in the threads before it, and the last thread's sum the tile's
   four counts; every entry goes to its new place -- after the smaller values' entries and the
   entries of its own value before it -- in the other half of a double buffer, the places too
   kept packed, so that an entry's is a shift and a mask, without branches.  The sorted tile
   goes out to `perm` (coalesced), each digit's run in it is found by comparing neighbours, and
   the tile writes its count of each digit to `counts[digit * tiles + tile]` and the start of
   each run to `starts[tile, digit]`.  The elements past the array's end in the last tile are
   given digit 255: the split is stable, so they come after every real element and are taken
   off digit 255's count.
2. Chunks of the counts.  `counts` is digit-major (every tile's count of digit 0, then of digit
   1, ...), so its exclusive scan is where each tile's run of each digit goes: after the smaller
   digits' keys and after the earlier tiles' keys of its digit -- which makes the pass stable
   across tiles.  A block scans a chunk of TILE counts in place (8 consecutive counts a thread,
   one `block_scan`) and writes the chunk's total to `sums`.
3. The chunks' totals.  One block scans `sums` in place, 256 at a time, carrying the total.
4. Scatter.  Thread d of a tile's block keeps in shared memory where the tile's run of digit d
   goes, less the run's start in the sorted tile (`counts` + the chunk's `sums` - `starts`).
   The tile's sorted entries are read back from `perm` (coalesced) and each element's bits (and
   its value, or its index in an argsort's first pass) are read from the input and written to
   that base plus the entry's place in the sorted tile.  Consecutive threads write consecutive
   places of a digit's run, so the writes are as coalesced as the digits allow; the reads gather
   within the 2,048 elements that phase 1 has just read.

Why this design: it needs nothing the language lacks (no atomics on shared memory, no popcount,
no memory fences between blocks for a decoupled look-back); it is deterministic, so a GPU's
result is the CPU's bit for bit; and every global read and write is coalesced but the scatter's
gathers.  `perm` costs 4 bytes an element (a TILE-padded int32 array) and `counts` and `starts`
12 bytes a tile and digit (1.5 bytes an element), against re-sorting the tile in the scatter,
which would cost the splits again.  Two bits a round, their counts packed, take 4 scans where
one bit a round took 8 scans and 8 block sums: 79 barriers a tile in the CUDA source instead
of 203.  On a CPU the pass is slow -- the blocks' threads run as loops split at those barriers
-- so a device whose work runs on the host's cores (the CPU, and PoCL: the runtime's
tack_device_on_host_cores) keeps `_radix_pass` and the serial `_key_span`; the tests run this
pass on PoCL and the CPU by forcing it (docs/algorithms.md gives both's times on PoCL).  The shared tile is padded against
bank conflicts (_pad), a GPU's cost that no GPU has measured: tests/gpu/bench.py times the pass
with and without (`_PAD`).  Left out: a fused look-back scan (one pass over the keys instead of
two), and any tuning on a GPU: none has run it yet.
"""

import numpy as np

from ._algorithms_sort import _key, _key_consts
from ._array import empty as _empty
from ._core import i32, i64, u64
from ._kernels import func, kernel
from ._kernels_blocks import barrier, block_scan, block_sum, blocks, shared

BLOCK = 256  # threads a block; also the number of digits, so thread d of a block handles digit d
PER = 8  # elements a thread
TILE = BLOCK * PER  # elements a tile (< 65,536: the place in the tile takes the low 16 bits)


@func
def _pad(q, on):
    # where entry q of a tile sits in shared memory: with `on` (a constant of the kernel), a
    # word skipped every 32, so that the 32 threads of a warp reading their 8 consecutive
    # entries each (q = 8t + j) meet 32 banks, not 4 (and the coalesced pattern q = 256j + t
    # still meets 32)
    return q + ((q >> 5) if on else 0)


def _radix_pass_blocks_kernel(values, jit=None, checks=False, pad=True):
    """The pass of the module docstring; `values` as in `_radix_pass_kernel`
    (a Python bool, constant in the kernel): whether vin's values, or with
    iota != 0 the elements' indices, move beside the keys, and with keys_out
    == 0 the keys stay unwritten (an argsort's last pass).  `pad` (also a
    constant) spaces the shared tile's entries against bank conflicts (_pad;
    off, for comparing on a GPU).  `jit` and `checks` are tack.kernel's: the sort's kernels have no index checks (the
    indices are made here, in bounds by construction), and the tests run
    them as Python (jit=False) and with the checks, which show that they
    are."""

    @kernel(checks=checks, jit=jit)
    def _radix_pass_blocks(kin, vin, kout, vout, c, perm, counts, starts, sums, mode, shift, iota, keys_out):
        n = kin.shape[0]
        nt = starts.shape[0]
        # 1. each tile sorted by digit in shared memory; its counts and runs' starts written out
        for b, t in blocks(nt, BLOCK):
            s = shared((2, TILE + TILE // 32), i32)  # a word of padding every 32 (_pad)
            st = shared(BLOCK, i32)
            en = shared(BLOCK, i32)
            four = shared(1, i64)  # the tile's four counts of a round
            top, ones, inf, mag, sh = _key_consts(c)
            lo = b * TILE
            st[t] = 0
            en[t] = 0
            for j in range(PER):
                p = j * BLOCK + t
                d = i32(255)  # past the end: after every real element (the split is stable)
                if lo + p < n:
                    d = i32((_key(kin[lo + p], mode, top, ones, inf, mag, sh) >> shift) & 255)
                s[0, _pad(p, pad)] = (d << 16) | p
            barrier()
            for rnd in range(4):  # two bits of the digit a round
                src = rnd % 2
                dst = 1 - src
                sh2 = 16 + 2 * rnd
                # the thread's counts of the four values of the two bits, 16 bits each (a count
                # is at most TILE = 2,048), so that one scan gives all four
                z = i64(0)
                for j in range(PER):
                    z += i64(1) << (16 * ((s[src, _pad(t * PER + j, pad)] >> sh2) & 3))
                r = block_scan(z)
                if t == BLOCK - 1:
                    four[0] = r
                barrier()
                a = four[0]
                # where this thread's first entry of each value goes, packed the same way: after
                # the smaller values' entries and this value's entries in the threads before it
                o = r - z + ((a << 16) + (a << 32) + (a << 48))
                for j in range(PER):
                    v = s[src, _pad(t * PER + j, pad)]
                    f = 16 * ((v >> sh2) & 3)
                    s[dst, _pad((o >> f) & 65535, pad)] = v
                    o += i64(1) << f
                barrier()
            for j in range(PER):
                p = j * BLOCK + t
                v = s[0, _pad(p, pad)]
                d = v >> 16
                if p > 0:
                    if (s[0, _pad(p - 1, pad)] >> 16) != d:
                        st[d] = p
                if p == TILE - 1:
                    en[d] = p + 1
                elif (s[0, _pad(p + 1, pad)] >> 16) != d:
                    en[d] = p + 1
                perm[lo + p] = v
            barrier()
            k = i64(en[t] - st[t])
            if t == BLOCK - 1:
                k -= i64(TILE) - min(i64(TILE), n - lo)  # the places past the array's end
            counts[t * nt + b] = k
            starts[b, t] = st[t]
        # 2. the counts (digit-major: all tiles' counts of digit 0, then of digit 1, ...) scanned,
        # exclusive and in place, which gives each tile's run of each digit its place in the output:
        # after the smaller digits' keys and the earlier tiles' keys of its digit.  Chunks of TILE
        # counts (PER consecutive ones a thread) are scanned in their block, the chunk's total
        # (the last thread's inclusive sum) going to sums
        nf = counts.shape[0]
        nc = sums.shape[0]
        for g, t in blocks(nc, BLOCK):
            lo = g * TILE + t * PER
            z = i64(0)
            for j in range(PER):
                if lo + j < nf:
                    z += counts[lo + j]
            r = block_scan(z)
            acc = r - z
            for j in range(PER):
                if lo + j < nf:
                    k = counts[lo + j]
                    counts[lo + j] = acc
                    acc += k
            if t == BLOCK - 1:
                sums[g] = r
        # 3. the chunks' totals scanned, exclusive and in place, in one block; the scatter adds a
        # chunk's to its counts
        for g, t in blocks(1, BLOCK):
            carry = i64(0)
            for c0 in range(0, nc, BLOCK):
                i = c0 + t
                v = i64(0)
                if i < nc:
                    v = sums[i]
                r = block_scan(v)
                if i < nc:
                    sums[i] = carry + r - v
                tot = block_sum(v)
                carry += tot
        # 4. each tile's elements written to their places, run by run: thread d keeps where the
        # tile's run of digit d goes, less the run's start in the sorted tile
        for b, t in blocks(nt, BLOCK):
            base = shared(BLOCK, i64)
            f = t * nt + b
            base[t] = counts[f] + sums[f // TILE] - i64(starts[b, t])
            barrier()
            lo = b * TILE
            for j in range(PER):
                p = j * BLOCK + t
                v = perm[lo + p]
                i = lo + i64(v & 65535)
                if i < n:
                    q = base[v >> 16] + p
                    if values:
                        if keys_out != 0:
                            kout[q] = kin[i]
                        if iota != 0:
                            vout[q] = i
                        else:
                            vout[q] = vin[i]
                    else:
                        kout[q] = kin[i]
    return _radix_pass_blocks


def _key_span_blocks_kernel(jit=None, checks=False):
    """The first pass of a sort on a GPU, `_key_span`'s result from blocks: part[b] the OR and
    the AND of tile b's keys (as u64), part[0] then the whole array's.  A block reads its tile
    coalesced, each thread folding its 8 keys, and folds the threads' in a tree in shared
    memory; one block then folds the tiles'.  (`_key_span` gives a GPU's work-item 4,096
    consecutive keys, which neighbouring work-items read 16 KB apart.)"""

    @kernel(checks=checks, jit=jit)
    def _key_span_blocks(x, c, part, mode):
        n = x.shape[0]
        nt = part.shape[0]
        for b, t in blocks(nt, BLOCK):
            so = shared(BLOCK, u64)
            sa = shared(BLOCK, u64)
            top, ones, inf, mag, sh = _key_consts(c)
            o = u64(0)
            a = ~u64(0)
            for j in range(PER):
                i = b * TILE + j * BLOCK + t
                if i < n:
                    k = u64(_key(x[i], mode, top, ones, inf, mag, sh))
                    o = o | k
                    a = a & k
            so[t] = o
            sa[t] = a
            barrier()
            stride = BLOCK // 2
            while stride > 0:
                if t < stride:
                    so[t] = so[t] | so[t + stride]
                    sa[t] = sa[t] & sa[t + stride]
                barrier()
                stride //= 2
            if t == 0:
                part[b, 0] = so[0]
                part[b, 1] = sa[0]
        for g, t in blocks(1, BLOCK):
            so = shared(BLOCK, u64)
            sa = shared(BLOCK, u64)
            o = u64(0)
            a = ~u64(0)
            for i in range(t, nt, BLOCK):
                o = o | part[i, 0]
                a = a & part[i, 1]
            so[t] = o
            sa[t] = a
            barrier()
            stride = BLOCK // 2
            while stride > 0:
                if t < stride:
                    so[t] = so[t] | so[t + stride]
                    sa[t] = sa[t] & sa[t + stride]
                barrier()
                stride //= 2
            if t == 0:
                part[0, 0] = so[0]
                part[0, 1] = sa[0]
    return _key_span_blocks


def _key_span(u, c, mode):
    """(OR, AND) of the keys of u's n >= 1 elements, as Python ints, by _key_span_blocks."""
    part = _empty((max(1, -(-u.shape[0] // TILE)), 2), np.uint64, device=u.device)
    _key_span_blocks(u, c, part, mode)
    return tuple(int(v) for v in part[0].numpy())  # one copy from a GPU


_key_span_blocks = _key_span_blocks_kernel()
_radix_pass_blocks = _radix_pass_blocks_kernel(False)  # sort: the elements' bits, nothing beside them
_radix_pass_blocks_kv = _radix_pass_blocks_kernel(True)  # argsort and sort by key


# whether the passes space the shared tile's entries (_pad): the default; tests/gpu/bench.py
# times both on a GPU, where the bank conflicts are, and the tests run both
_PAD = True
_UNPADDED = []


def _unpadded():
    if not _UNPADDED:
        _UNPADDED.extend(_radix_pass_blocks_kernel(v, pad=False) for v in (False, True))
    return tuple(_UNPADDED)


class _Passes:
    """The arrays the passes of one sort of n elements on `device` share
    (the tiles' sorted entries, the counts and the runs' starts, the
    chunks' totals), and the pass that uses them: `run` takes the arguments
    of `_radix_pass` without its blocking (counts, totals, bs), `values`
    first.  `kernels` replaces the pair (without values, with them)."""

    def __init__(self, n, device, kernels=None):
        nt = max(1, -(-n // TILE))
        self.perm = _empty(nt * TILE, np.int32, device=device)
        self.counts = _empty(BLOCK * nt, np.int64, device=device)
        self.starts = _empty((nt, BLOCK), np.int32, device=device)
        self.sums = _empty(-(-BLOCK * nt // TILE), np.int64, device=device)
        self.kernels = kernels or ((_radix_pass_blocks, _radix_pass_blocks_kv) if _PAD else _unpadded())

    def run(self, values, kin, vin, kout, vout, c, mode, shift, iota, keys_out):
        self.kernels[1 if values else 0](kin, vin, kout, vout, c, self.perm, self.counts, self.starts, self.sums,
                                         mode, shift, iota, keys_out)
