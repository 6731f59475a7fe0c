"""The intrinsics of cooperating threads: tack.blocks, tack.shared, tack.barrier, and the block
and sub-group operations (block_sum ... block_scan, warp_sum ... warp_all, shuffle, shuffle_down).

They are rows of the compiler's table like every intrinsic (tack._intrinsics gives each row its
Python object); here are their Python meanings, kept apart because they have none outside a
kernel: each raises TypeError there, except ``shared``, which returns a zeroed NumPy array.
Inside a kernel the front end and the compiler give them their meaning (lower_blocks.c,
emit_blocks.c; debug mode: tack._debug); docs/language.md, "Blocks and sub-groups", is the
user's account and decisions.md, "Blocks", the why.
"""

from __future__ import annotations

from ._intrinsics import _intrinsic

__all__ = ["blocks", "barrier", "block_sum", "block_min", "block_max", "block_scan", "warp_sum", "warp_min",
           "warp_max", "shuffle", "shuffle_down", "warp_ballot", "warp_any", "warp_all", "shared"]


@_intrinsic
def blocks(n_blocks, block_size):
    """Blocks of cooperating threads: ``for b, t in tack.blocks(n_blocks, 256):``.

    At the top level of a kernel this is one parallel loop over ``n_blocks``
    blocks of ``block_size`` threads each: ``b`` is the block's index and
    ``t`` the thread's within it (``0 <= t < block_size``), and the body is
    what one thread runs.  The threads of a block share the arrays made by
    ``tack.shared`` and wait for each other at ``tack.barrier()``; the block
    size is a compile-time constant (at most 1024).  docs/language.md,
    "Blocks and sub-groups", gives the exact meaning on every device.
    Outside a kernel there are no threads to run together, so it raises
    TypeError.
    """
    raise TypeError("tack.blocks() runs the threads of a block together: it is only meaningful as the loop "
                    "of a kernel (for b, t in tack.blocks(n_blocks, block_size))")


@_intrinsic
def barrier():
    """Wait until every thread of the block has reached this barrier: what
    each wrote before it (to shared arrays or to memory) is then seen by
    all.  Only in the body of a ``tack.blocks`` loop, and never under
    control flow that depends on the thread index (a CompileError)."""
    raise TypeError("tack.barrier() is only meaningful in the body of a tack.blocks loop of a kernel")


def _block_collective(name, what):
    def f(value):
        raise TypeError(f"tack.{name}() is only meaningful in the body of a tack.blocks loop of a kernel")
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"r = tack.{name}(v): {what}, given to every thread of the block.  Only in the body of a "
                 f"``tack.blocks`` loop, as the whole value of an assignment to a name; it holds barriers, so "
                 f"every thread of the block must reach it (docs/language.md, \"Blocks and sub-groups\").")
    return _intrinsic(f)


block_sum = _block_collective("block_sum", "the sum of v over the block's threads")
block_min = _block_collective("block_min", "the least v of the block's threads")
block_max = _block_collective("block_max", "the greatest v of the block's threads")
block_scan = _block_collective("block_scan", "the inclusive prefix sum of v over threads 0 .. t of the block")


def _warp_op(name, args, what):
    ns = {}
    exec(f"def {name}({args}):\n    raise TypeError('tack.{name}() is only meaningful in the body of a "
         f"tack.blocks loop of a kernel')\n", ns)
    f = ns[name]
    f.__module__ = __name__
    f.__doc__ = (f"r = tack.{name}({args}): {what}.  Sub-groups are 32 consecutive threads of a block (the "
                 f"block size a multiple of 32); only in the body of a ``tack.blocks`` loop, as the whole value "
                 f"of an assignment to a name, reached by every thread of the block (docs/language.md, "
                 f"\"Blocks and sub-groups\").")
    return _intrinsic(f)


warp_sum = _warp_op("warp_sum", "value", "the sum of the value over the thread's sub-group")
warp_min = _warp_op("warp_min", "value", "the least value of the thread's sub-group")
warp_max = _warp_op("warp_max", "value", "the greatest value of the thread's sub-group")
shuffle = _warp_op("shuffle", "value, lane, width=32",
                   "the value of lane ``lane % width`` of the thread's group of ``width`` lanes")
shuffle_down = _warp_op("shuffle_down", "value, delta, width=32",
                        "the value of the lane ``delta`` above the thread's in its group of ``width`` lanes, "
                        "or the thread's own value where that passes the group's end")
warp_ballot = _warp_op("warp_ballot", "cond", "an int64 whose bit k is lane k's condition")
warp_any = _warp_op("warp_any", "cond", "whether the condition holds in some lane of the sub-group")
warp_all = _warp_op("warp_all", "cond", "whether the condition holds in every lane of the sub-group")


def shared(shape, dtype):
    """An array shared by the threads of a block: ``s = tack.shared((16, 16), tack.f32)``.

    Only at the top of the body of a ``tack.blocks`` loop; the shape is a
    compile-time constant and the block's shared arrays together must fit
    the target's shared memory (48 KiB on the CPU and CUDA, 64 KiB on HIP,
    32 KiB on OpenCL and Metal; a CompileError otherwise).  Its elements are
    unspecified until a thread writes them (zeros on the CPU and in debug
    mode).  Outside a kernel it returns a zeroed NumPy array.
    """
    import numpy

    from . import _core as core

    dt = dtype if isinstance(dtype, core.DType) else None
    return numpy.zeros(shape, numpy.dtype(dt.numpy) if dt is not None else dtype)
