"""The optimizations against no optimizations (TACK_OPT=0 turns off folding,
check hoisting, strength reduction, privatization and SIMD lanes).

1. The language test suites run again, in a fresh process, with every pass
   off: each of their results is compared with NumPy or Python, so both
   compiles give the same answers (the tests that look at the optimized
   source itself are marked ``optimized_source`` and left out).
2. The benchmark kernels, and the SIMD cases, run with the passes on and off
   in two processes; their outputs must be equal bit for bit, except a float
   sum, whose order of additions is unspecified (within 1e-5), and the
   kernel of the C library's math functions: its calls run in SIMD lanes
   (glibc's libmvec, within 4 ulps of the correctly rounded result, docs/language.md)
   only when the loop is vectorized, which the unoptimized compile does not do.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import _suite  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(os.environ.get("TACK_OPT") == "0", reason="already the unoptimized run")


def test_language_suites_without_optimizations(record_property):
    """The suite's unoptimized run (_suite.RUNS, started in the background when
    this test is collected): every test passes with every pass off."""
    run = _suite.result("unoptimized")
    proc, outcomes = run["_process"], run["_outcomes"]
    assert proc["returncode"] == 0, proc["tail"]
    assert " passed" in proc["tail"] and " failed" not in proc["tail"]
    record_property("language_suite", f"unoptimized (C, one thread): {len(outcomes)} test outcomes compared")
    assert len(outcomes) > 1000 and all(o["ok"] for o in outcomes.values())


RUN = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {here!r})
    from benchmarks import kernels as K
    from benchmarks.peers import tack_peer
    import test_simd as S

    got = {{}}
    for name, spec in K.SPECS.items():
        for size in spec.quick + [spec.sizes[1]]:
            inp = spec.make(size)
            run, result = tack_peer.prepare(name, inp)
            run()
            out = result() if result else {{k: inp[k] for k in spec.outputs}}
            for k, v in out.items():
                got[f"{{name}}/{{size}}/{{k}}"] = np.array(v, copy=True)
    r = np.random.default_rng(5)
    for n in (7, 100, 1000):
        p = r.standard_normal((3, n)).astype(np.float32)
        m = r.uniform(0.5, 1.5, n).astype(np.float32)
        a = [np.zeros(n, np.float32) for _ in range(3)]
        S.nbody(p[0].copy(), p[1].copy(), p[2].copy(), m, *a, 0.01)
        got[f"simd-nbody/{{n}}"] = np.stack(a)
    a, b = r.random((33, 17)), r.random((17, 29))
    c = np.zeros((33, 29))
    S.matmul(a, b, c)
    got["simd-matmul"] = c
    out = np.zeros(1 << 16)
    S.row_sums(r.random((1 << 16, 9)), 1, 8, out)
    got["simd-row-sums"] = out
    feat = r.random((5000, 34)).astype(np.float32)  # in-order sums in a narrowed chunk (emit_cpu.c)
    member, counts = np.zeros(5000, np.int32), np.zeros(5, np.int32)
    S.nearest(feat, feat[:5] + np.float32(0.01), member, np.zeros((5, 34), np.float32), counts)
    got["simd-nearest-member"], got["simd-nearest-counts"] = member, counts
    rows = np.zeros(5000, np.float32)
    S.scattered_row_sums(feat, r.permutation(5000), rows)
    got["simd-scattered-row-sums"] = rows
    np.savez(sys.argv[1], **got)
""")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    script = d / "run.py"
    script.write_text(RUN.format(root=ROOT, here=HERE))
    res = {}
    for opt in ("1", "0"):
        out = d / f"opt{opt}.npz"
        r = subprocess.run([sys.executable, str(script), str(out)], env=dict(os.environ, TACK_OPT=opt),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-4000:]
        res[opt] = dict(np.load(out))
    return res


def test_same_cases(both):
    assert sorted(both["1"]) == sorted(both["0"]) and len(both["1"]) > 20


def test_bit_for_bit(both):
    for key, on in both["1"].items():
        off = both["0"][key]
        assert on.dtype == off.dtype and on.shape == off.shape, key
        if key.startswith("sum/"):
            np.testing.assert_allclose(on, off, rtol=1e-5, err_msg=key)
        elif key.startswith("transcendental/"):  # vector math in the lanes, the C library's scalar calls without
            # tanh(log(x + 1) * 0.5) + sqrt(exp(-x)), x in [0, 4), values below 2: four calls, 4 ulps each at
            # most, none amplified (the derivatives are at most 1), make each side within 8 eps of the exact value
            np.testing.assert_allclose(on, off, rtol=0, atol=16 * np.finfo(np.float32).eps, err_msg=key)
        elif key.startswith("hist2/") and key.endswith("/sums"):  # float adds in any order (atomics or private copies)
            np.testing.assert_allclose(on, off, rtol=1e-12, err_msg=key)
        else:
            assert np.array_equal(on, off, equal_nan=True), (key, np.flatnonzero(on != off)[:5])
