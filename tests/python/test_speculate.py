"""A branch's value computed before the branch (src/compiler/passes/speculate.c).

`t = c == 3 or a[i, j] == 1` loads a[i, j] only where c != 3.  Where the load
cannot fail wherever the loop runs (checks.c's TK_LOAD_IN_BOUNDS) and the
value has no effect, it is computed before the `if` and the `if` assigns a
local, so a CPU without byte-wide masked loads (AVX2) vectorizes the loop.
Results must be NumPy's bit for bit, compiled and in debug mode; a load the
condition guards (`i > 0 and a[i - 1] > 0`, an index from another array, a
loop that runs past the extent) stays inside its branch.
"""
import numpy as np

import tack


def rules_fn(a, u, out):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        c = a[i, (j + 1) % m] + a[(i + 1) % n, j]
        live = c == 2 or (a[i, j] == 1 and c == 1)      # or, then and: both loads in bounds
        v = 0.0
        if u[i, j] > 0.5:
            v = u[i, j] * 2.0 - u[i, j - 1 if j > 0 else j]  # an index the loop does not bound: stays
        w = 1.0
        if c > 0:
            w = a[i, j] * 3.0 + 1.0                     # an if statement: computed before it
        left = i > 0 and a[i - 1, j] == 1              # guarded: i - 1 is -1 at i = 0
        out[i, j] = (1.0 if live else 0.0) + v + w + (10.0 if left else 0.0)


def rules_ref(a, u):
    n, m = a.shape
    out = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            c = int(a[i, (j + 1) % m]) + int(a[(i + 1) % n, j])
            live = c == 2 or (a[i, j] == 1 and c == 1)
            v = 0.0
            if u[i, j] > 0.5:
                v = u[i, j] * 2.0 - u[i, j - 1 if j > 0 else j]
            w = 1.0
            if c > 0:
                w = a[i, j] * 3.0 + 1.0
            left = i > 0 and a[i - 1, j] == 1
            out[i, j] = (1.0 if live else 0.0) + v + w + (10.0 if left else 0.0)
    return out


def past_fn(a, k, out):
    for i in range(out.shape[0]):
        t = i < a.shape[0] and a[i] > 0       # the loop runs past a's extent: the `and` guards the load
        s = k[i] < a.shape[0] and a[k[i]] > 0  # an index from another array
        out[i] = 1 if t or s else 0


rules = tack.kernel(rules_fn)
rules_py = tack.kernel(jit=False)(rules_fn)
rules_nc = tack.kernel(checks=False)(rules_fn)
past_nc = tack.kernel(checks=False)(past_fn)


def test_rules_equal_python():
    rng = np.random.default_rng(7)
    for shape in [(1, 1), (1, 5), (5, 1), (2, 2), (3, 3), (9, 37)]:
        a = (rng.random(shape) < 0.5).astype(np.uint8)
        u = rng.random(shape)
        want = rules_ref(a, u)
        for kern in [rules, rules_nc] + ([rules_py] if a.size <= 16 else []):
            out = np.zeros(shape)
            kern(a, u, out)
            assert np.array_equal(out, want), (shape, kern)


def _branches(ir):
    """The lines of each `if` block of the IR dump."""
    lines = ir.splitlines()
    out = []
    for n, line in enumerate(lines):
        if line.lstrip().startswith("if "):
            depth = len(line) - len(line.lstrip())
            body = []
            for rest in lines[n + 1:]:
                if len(rest) - len(rest.lstrip()) <= depth:
                    break
                body.append(rest.strip())
            out.append((line.strip(), body))
    return out


CENTRE = "load a (cast:i64 i'2) (cast:i64 j'3)"


def test_which_loads_leave_their_branch():
    a, u, out = np.zeros((4, 4), np.uint8), np.zeros((4, 4)), np.zeros((4, 4))
    for kern in (rules, rules_nc):
        branches = _branches(kern.ir(a, u, out))
        inside = [line for _, body in branches for line in body]
        assert not [line for line in inside if CENTRE in line], branches  # live's and w's a[i, j]
        assert [line for line in inside if line.startswith("v'6 = ") and "load u" in line], branches
        spec = [body for _, body in branches if len(body) == 1 and "_spec" in body[0]]
        assert len(spec) == (2 if kern is rules else 1), branches  # live is an expression without checks
    assert [line for _, body in _branches(rules.ir(a, u, out)) for line in body
            if line.startswith("_t8'17 = ") and "load a (wrap a 0" in line]  # left: guarded, stays
    src = rules_nc.generated_source(a, u, out)
    live = next(line for line in src.splitlines() if "v5_live = (" in line)
    left = next(line for line in src.splitlines() if "v8_left = (" in line)
    assert "||" not in live and "&&" not in live and " | " in live, live
    assert "&&" in left, left  # i > 0 guards a[i - 1, j]


def test_a_guarded_load_past_the_extent_stays_guarded():
    a = np.arange(1, 9, dtype=np.int64)          # 8 elements
    k = np.array([3, 100, 7, 1 << 40] * 4096, dtype=np.int64)
    out = np.zeros(k.shape[0], np.int64)
    past_nc(a, k, out)                           # checks=False: a load past the end would read anywhere
    want = np.array([1 if i < 8 or kk < 8 else 0 for i, kk in enumerate(k)])
    assert np.array_equal(out, want)
    branches = _branches(past_nc.ir(a, k, out))
    assert [line for _, body in branches for line in body if "load a (wrap a 0" in line], branches  # s's
    t = next(line for line in past_nc.generated_source(a, k, out).splitlines() if "v1_t = (" in line)
    assert "&&" in t, t  # t's: a[i] only where i < a.shape[0]


def chains_fn(a, b, out):
    n = a.shape[0]
    for i in range(n):
        t = a[i] > 2 or b[i] < 1 or (a[i] == b[i] and b[i] > 0)  # a chain: nested branches
        u = 0
        if t:
            u = a[i] + b[i]                      # an else: stays
        else:
            u = a[i] - b[i]
        s = i
        if not t:
            s = s + a[i]                         # reads the local it assigns
        k = 0
        while k < 3 and a[i] + k < 5:            # a loop's condition
            k += 1
        out[i] = u * 100 + s * 10 + k + (1 if (b[i] > 1 and a[i] < 3) else 0)


def test_chains_equal_debug_mode():
    kernels = [tack.kernel(chains_fn), tack.kernel(checks=False)(chains_fn), tack.kernel(jit=False)(chains_fn)]
    rng = np.random.default_rng(8)
    for n in [1, 2, 3, 65]:
        a, b = rng.integers(0, 5, n), rng.integers(0, 3, n)
        outs = []
        for kern in kernels:
            out = np.zeros(n, np.int64)
            kern(a, b, out)
            outs.append(out)
        assert all(np.array_equal(outs[-1], o) for o in outs), (n, outs)
    assert "_spec" in kernels[0].ir(a, b, out)
