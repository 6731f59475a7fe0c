"""Tack beside its peers on the CPU: the same kernels, inputs and machine, in one run.

``python benchmarks/run.py`` (or ``make bench``) runs everything and writes
docs/benchmarks.md and docs/benchmarks.png.  The pieces:

- ``kernels``  what is measured: each kernel's inputs, sizes, reference result and tolerance
- ``peers/``   one module per implementation (tack, numba, warp, taichi, numpy, c)
- ``c/``       the hand-written C + OpenMP reference and the bandwidth probe
- ``timing``   best-of-N timing with an adaptive inner loop
- ``worker``   one peer in one process: prepare, check, time, print JSON
- ``latency``  launch overhead, compile time, warm first call, import time
- ``report``   the markdown table, the targets and the plot
"""
