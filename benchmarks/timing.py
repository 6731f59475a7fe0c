"""Best-of-N timing.

A sample is the mean time of ``number`` back-to-back calls, where ``number``
is chosen (from one calibration call) so that a sample lasts at least
``min_sample`` seconds: tiny kernels are timed over many calls, so the
clock's resolution does not matter, large ones one call at a time.  The
result is the fastest of up to ``repeat`` samples, stopping early once
``budget`` seconds are spent (but after at least ``min_repeat`` samples).
"""

import time

perf = time.perf_counter


def best_of(fn, repeat=10, min_repeat=3, budget=1.0, min_sample=2e-3, max_number=10000):
    t0 = perf()
    fn()
    one = max(perf() - t0, 1e-9)
    number = int(min(max_number, max(1, min_sample / one)))
    # A slow call is a sample in itself (the caller has warmed it up).
    best, done = (one, 1) if number == 1 else (float("inf"), 0)
    start = perf() - (one if done else 0.0)
    for r in range(done, repeat):
        t0 = perf()
        for _ in range(number):
            fn()
        best = min(best, (perf() - t0) / number)
        if r + 1 >= min_repeat and perf() - start > budget:
            break
    return best
