"""One module per implementation.  Each has

    NAME, LABEL            its short name and how the report calls it
    available() -> str|None    None when usable, else why not
    setup(threads)         before anything else; threads is None (all) or 1
    prepare(kernel, inp) -> (run, result)
                           run() computes the kernel on the inputs in ``inp``
                           (NumPy arrays, see benchmarks/kernels.py);
                           result() returns {output name: NumPy array}.

Outputs that accumulate (saxpy's y, the sum, the histogram) must live in the
NumPy arrays of ``inp`` themselves, so that resetting them there resets the
peer's state.
"""

import importlib

ORDER = ["tack", "c", "numba", "warp", "taichi", "numpy"]


def load(name):
    return importlib.import_module(f"benchmarks.peers.{name}_peer")
