"""Components assigned by name: `v.y = s`, `v.x += s`, `q.w = s`, `t.p = v`, `t.p.x = s`.

A user porting Warp code met "assigning to an attribute ('v.y = ...') is not supported in
kernels" where `v[1] = s` worked: the front end refused every attribute target.  These are the
cases, compiled and in debug mode (jit=False), where a vector is a NumPy view whose .x ... .w
were read-only properties: f32, f64 and int vectors of 2, 3 and 4 components, quaternions,
transforms, augmented assignment, a @tack.func, a blocks kernel, a local array's element, a
struct local's field, and one on PoCL.  Attribute targets that name no local's component stay
CompileErrors naming them.  A struct field store of another precision named the rewrite's
temporary ('__tk_t1'); it names the field.  An array parameter's element takes them too
(`a[i].x = s`, `a[i][k] = s`, `a[i].x += s`), as a write of that component alone: those tests
are at the end.
"""

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _msl  # noqa: E402
import _ocloc  # noqa: E402

OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)
JIT = pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])

VECTORS = [(tack.vec2, np.float32, 2), (tack.vec3, np.float32, 3), (tack.vec4, np.float32, 4),
           (tack.vec2d, np.float64, 2), (tack.vec3d, np.float64, 3), (tack.vec4d, np.float64, 4),
           (tack.vec2i, np.int32, 2), (tack.vec3i, np.int32, 3), (tack.vec4i, np.int32, 4)]


def set_by_name2(a, s, out):
    for i in range(a.shape[0]):
        v = a[i]
        v.y = s[i]          # a float64 into the vector's scalar type, converted as v[1] = s converts
        v.x += 2.7          # read, added in float64, converted back
        out[i] = v


def set_by_name3(a, s, out):
    for i in range(a.shape[0]):
        v = a[i]
        v.y = s[i]
        v.x += 2.7
        v.z *= 3
        out[i] = v


def set_by_name4(a, s, out):
    for i in range(a.shape[0]):
        v = a[i]
        v.y = s[i]
        v.x += 2.7
        v.z *= 3
        v.w = v.x - v.y
        out[i] = v


KERNELS = {2: set_by_name2, 3: set_by_name3, 4: set_by_name4}


def _cast(x, dt):
    """x (float64) converted as a C cast converts: truncated toward zero for an integer."""
    return np.trunc(x).astype(dt) if np.dtype(dt).kind == "i" else np.asarray(x).astype(dt)


@JIT
@pytest.mark.parametrize("vt, dt, n", VECTORS, ids=lambda x: getattr(x, "name", None) or str(x))
def test_vector_components_by_name(vt, dt, n, jit):
    rng = np.random.default_rng(n)
    an = (rng.standard_normal((5, n)) * 10).astype(dt)
    s = rng.standard_normal(5) * 10 + 0.1
    out = tack.zeros(5, vt)
    a = tack.array(an, vt)
    tack.kernel(KERNELS[n], jit=jit)(a, s, out)
    np.testing.assert_array_equal(a.numpy(), an)  # v = a[i] is a value: setting v.y leaves a[i]
    want = an.copy()
    want[:, 1] = _cast(s, dt)
    if np.dtype(dt).kind == "f":  # a float literal is weak: added in the vector's type
        want[:, 0] = an[:, 0] + dt(2.7)
    else:  # an int and a float add in float64
        want[:, 0] = _cast(an[:, 0].astype(np.float64) + 2.7, dt)
    if n > 2:
        want[:, 2] = want[:, 2] * dt(3)
    if n > 3:
        want[:, 3] = want[:, 0] - want[:, 1]
    np.testing.assert_array_equal(out.numpy(), want)


def quats(q, out_q, out_t):
    for i in range(q.shape[0]):
        r = q[i]
        r.w = 0.5           # a local quaternion's components, by name and by index
        r.x += 1.0
        r[1] = r.z * 2.0
        out_q[i] = r
        t = tack.transform(tack.vec3(1.0, 2.0, 3.0), r)
        t.p = tack.vec3(4.0, 5.0, 6.0)
        t.p.y = 0.25        # a part's component
        t.q.w += 1.0
        t.p += tack.vec3(1.0, 1.0, 1.0)
        out_t[i] = t


def quats_d(q, out_q, out_t):
    for i in range(q.shape[0]):
        r = q[i]
        r.w = 0.1           # 0.1 is a float64: kept as one in a quatd
        r.x += 1.0
        out_q[i] = r
        t = tack.transformd(tack.vec3d(1.0, 2.0, 3.0), r)
        t.q = tack.quatd(0.0, 0.0, 0.0, 1.0)
        t.p.z = 0.1
        out_t[i] = t


@JIT
def test_quaternion_and_transform_parts_by_name(jit):
    rng = np.random.default_rng(4)
    qn = rng.standard_normal((3, 4)).astype(np.float32)
    oq, ot = tack.zeros(3, tack.quat), tack.zeros(3, tack.transform)
    tack.kernel(quats, jit=jit)(tack.array(qn, tack.quat), oq, ot)
    wq = qn.copy()
    wq[:, 3] = 0.5
    wq[:, 0] += np.float32(1)
    wq[:, 1] = wq[:, 2] * np.float32(2)
    np.testing.assert_array_equal(oq.numpy(), wq)
    wt = np.concatenate([np.tile(np.float32([5, 1.25, 7]), (3, 1)), wq], 1)
    wt[:, 6] += np.float32(1)
    np.testing.assert_array_equal(ot.numpy(), wt)

    oq, ot = tack.zeros(3, tack.quatd), tack.zeros(3, tack.transformd)
    tack.kernel(quats_d, jit=jit)(tack.array(qn.astype(np.float64), tack.quatd), oq, ot)
    wq = qn.astype(np.float64)
    wq[:, 3] = 0.1
    wq[:, 0] += 1
    np.testing.assert_array_equal(oq.numpy(), wq)
    np.testing.assert_array_equal(ot.numpy(), np.tile([1, 2, 0.1, 0, 0, 0, 1], (3, 1)))


@tack.func
def with_y(v, s):
    v.y = s                 # a parameter is a local: the caller's vector is not changed
    v.z += s
    return v


def calls_with_y(a, out, keep):
    for i in range(a.shape[0]):
        v = a[i]
        out[i] = with_y(v, 10.0)
        keep[i] = v


@JIT
def test_in_a_func(jit):
    an = np.arange(9, dtype=np.float32).reshape(3, 3)
    out, keep = tack.zeros(3, tack.vec3), tack.zeros(3, tack.vec3)
    tack.kernel(calls_with_y, jit=jit)(tack.array(an, tack.vec3), out, keep)
    want = an.copy()
    want[:, 1] = 10
    want[:, 2] += 10
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(keep.numpy(), an)


def in_blocks(out):
    for b, t in tack.blocks(out.shape[0] // 4, 4):
        v = tack.vec3(0.0, 0.0, 0.0)
        v.x = float(b)
        v.y = float(t)
        v.z += 0.5
        out[b * 4 + t] = v


@JIT
def test_in_a_blocks_kernel(jit):
    out = tack.zeros(8, tack.vec3)
    tack.kernel(in_blocks, jit=jit)(out)
    k = np.arange(8)
    np.testing.assert_array_equal(out.numpy(), np.stack([k // 4, k % 4, np.full(8, 0.5)], 1).astype(np.float32))


def local_array_element(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.vec3)
        t[1].y = 2.5        # an element of a local array of vectors, in place
        t[1].x += float(i)
        t[0] = t[1] * 2.0
        t[0].z = 1.0
        out[i] = t[0] + t[1]


@JIT
def test_an_element_of_a_local_array(jit):
    out = tack.zeros(3, tack.vec3)
    tack.kernel(local_array_element, jit=jit)(out)
    i = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(out.numpy(), np.stack([3 * i, np.full(3, 7.5), np.ones(3)], 1))


@tack.struct
class Body:
    pos: tack.vec3d
    vel: tack.vec3
    xf: tack.transformd


def struct_fields(b):
    for i in range(b.shape[0]):
        b[i].vel.x = 1.5            # an element's vector field, component by name
        b[i].vel.y += b[i].vel.x
        p = b[i]
        p.pos.z = 0.1               # a struct local's fields
        p.xf.p.y = 4.0              # a struct local's transform field's part
        p.xf.q.w += 1.0
        b[i].pos = p.pos
        b[i].xf = p.xf


@JIT
def test_struct_fields(jit):
    rec = np.zeros(2, Body.dtype)
    rec["vel"] = [[0, 1, 2], [3, 4, 5]]
    tack.kernel(struct_fields, jit=jit)(rec)
    np.testing.assert_array_equal(rec["vel"], np.float32([[1.5, 2.5, 2], [1.5, 5.5, 5]]))
    np.testing.assert_array_equal(rec["pos"], [[0, 0, 0.1]] * 2)
    np.testing.assert_array_equal(rec["xf"], [[0, 4, 0, 0, 0, 0, 1]] * 2)


def stores_an_f32_transform(b):
    for i in range(b.shape[0]):
        b[i].xf = tack.transform(tack.vec3(1.0, 2.0, 3.0), tack.quat(0.0, 0.0, 0.0, 1.0))


def sets_an_f32_vector(b):
    for i in range(b.shape[0]):
        p = b[i]
        p.pos = tack.vec3(1.0, 2.0, 3.0)
        b[i] = p


@JIT
@pytest.mark.parametrize("k, msg", [
    (stores_an_f32_transform, r"cannot assign transform to 'b\[i\]\.xf' of type transformd"),
    (sets_an_f32_vector, r"cannot assign vec3 to 'p\.pos' of type vec3d"),
])
def test_a_field_of_another_precision_is_named(k, msg, jit):
    """The field, as written, not the rewrite's names ('__tk_t1', 'p·pos')."""
    with pytest.raises(tack.CompileError, match=msg) as e:
        tack.kernel(k, jit=jit)(np.zeros(2, Body.dtype))
    assert "__tk" not in str(e.value) and "\u00b7" not in str(e.value)


def sets_shape(a):
    a.shape = 3


def sets_a_module_attribute(a):
    math.pi = 3.0


def sets_a_part_of_a_number_element(a):
    for i in range(a.shape[0]):
        a[i][1] = 1.0


def sets_a_numbers_component(a):
    for i in range(a.shape[0]):
        s = a[i].x
        s.x = 2.0


def sets_a_missing_component(a):
    for i in range(a.shape[0]):
        v = tack.vec2(1.0, 2.0)
        v.z = 1.0
        a[i] = tack.vec3(v.x, v.y, 0.0)


def sets_a_part_of_another_precision(a):
    for i in range(a.shape[0]):
        t = tack.transform(a[i], tack.quat(0.0, 0.0, 0.0, 1.0))
        t.p = tack.vec3d(1.0, 2.0, 3.0)
        a[i] = t.p


def sets_a_component_of_a_component(a):
    for i in range(a.shape[0]):
        t = tack.transform(a[i], tack.quat(0.0, 0.0, 0.0, 1.0))
        t.p.x.y = 2.0
        a[i] = t.p


def sets_a_vector_into_a_component(a):
    for i in range(a.shape[0]):
        v = a[i]
        v.x = a[i]
        a[i] = v


@JIT
@pytest.mark.parametrize("k, line, msg", [
    (sets_shape, 1, r"cannot assign to 'a\.shape': an array's attributes are read-only in kernels"),
    (sets_a_module_attribute, 1, r"cannot assign to 'math\.pi' in a kernel: 'math' is not a local variable"),
    (sets_a_numbers_component, 3, r"cannot assign to 's\.x': f32 has no components by name"),
    (sets_a_missing_component, 3, r"vec2 has no component 'z'"),
    (sets_a_part_of_another_precision, 3, r"cannot assign vec3d to 't\.p' \(vec3\)"),
    (sets_a_component_of_a_component, 3, r"cannot assign to 't\.p\.x\.y': 't\.p\.x' is a number"),
    (sets_a_vector_into_a_component, 3, r"cannot assign vec3 to a component of vec3"),
])
def test_other_attribute_targets_are_compile_errors(k, line, msg, jit):
    with pytest.raises(tack.CompileError, match=msg) as e:
        tack.kernel(k, jit=jit)(tack.zeros(2, tack.vec3))
    assert e.value.lineno == k.__code__.co_firstlineno + line


@JIT
def test_a_part_of_an_element_of_numbers_is_a_compile_error(jit):
    with pytest.raises(tack.CompileError, match=r"cannot assign to a part of an element of 'a': its elements are "
                                                r"f64 numbers; index every axis \(a\[i, j\] = s\)") as e:
        tack.kernel(sets_a_part_of_a_number_element, jit=jit)(np.zeros((2, 2)))
    assert e.value.lineno == sets_a_part_of_a_number_element.__code__.co_firstlineno + 2


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
def test_on_an_opencl_device():
    rng = np.random.default_rng(7)
    an = rng.standard_normal((6, 4)).astype(np.float32)
    s = rng.standard_normal(6)
    cpu = tack.zeros(6, tack.vec4)
    tack.kernel(set_by_name4)(tack.array(an, tack.vec4), s, cpu)
    dev = tack.zeros(6, tack.vec4, device=OPENCL)
    tack.kernel(set_by_name4)(tack.array(an, tack.vec4, device=OPENCL), tack.array(s, device=OPENCL), dev)
    np.testing.assert_array_equal(dev.numpy(), cpu.numpy())


def test_a_debug_views_components_are_set_by_name():
    """Debug mode's vector views (NumPy arrays of a VectorView subclass) take `v.y = s` outside a
    kernel too: the property had no setter."""
    from tack._kernels import _vector_view_type

    v = np.zeros((2, 3), np.float32).view(_vector_view_type())
    v.y = 5.0
    v[0].z = 2.0
    np.testing.assert_array_equal(np.asarray(v), [[0, 5, 2], [0, 5, 0]])


@tack.func
def sets_its_copies(v, m, buf):
    v[1] = 5.0                  # the func's own values; buf, a local array, is the caller's
    m[0, 1] = 9.0
    buf[0] = 7.0
    return v[1] + m[0, 1]


def values_by_index(a, out):
    for i in range(a.shape[0]):
        v = a[i]
        v[1] = 2.0              # v is a value: a[i] keeps its own
        w = v
        w[2] = 3.0              # so is w: v keeps its own
        m = tack.mat22(1.0, 2.0, 3.0, 4.0)
        buf = tack.zeros(1, tack.f32)
        r = sets_its_copies(w, m, buf)
        out[i] = tack.vec4(v[2], w[1] + w[2], m[0, 1], r + buf[0])


@JIT
def test_a_vector_is_a_value_in_debug_mode_too(jit):
    """Debug mode's vectors are NumPy arrays: `v = a[i]` was a view of the element, `w = v` a
    second name for it and a func's parameter the caller's, so `v[1] = s` there wrote a[i], v, or
    the caller's vector, where a compiled kernel's vector is a value."""
    an = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = tack.array(an, tack.vec3)
    out = tack.zeros(2, tack.vec4)
    tack.kernel(values_by_index, jit=jit)(a, out)
    np.testing.assert_array_equal(a.numpy(), an)
    np.testing.assert_array_equal(out.numpy(), [[an[0, 2], 5, 2, 21], [an[1, 2], 5, 2, 21]])


# ---------------------------------------------------------------- an array parameter's element
# `a[i].x = s` was refused ("cannot assign to a component of an element of 'a'; copy the element into a
# local ...").  It is now a write of that component alone, compiled (an IR_STORE of the component) and in
# debug mode (the element's own row): the element's other components are never read and written back.

def parts_of_elements(a, b, m, q, t, s):
    for i in range(a.shape[0]):
        a[i].y = s * i              # by name
        a[i][2] = -s                # by index
        a[i][-3] += 1.0             # a negative index, and an update (the iteration's own element)
        for k in range(2):
            b[i, k][k] = s + k      # an index known at run time; a 2-D array's element
            b[i, k].x *= 2          # any compound operator on the iteration's own element
        m[i][1, 2] = s              # a matrix's entry
        q[i].w -= 0.5               # a quaternion's
        t[i].p = tack.vec3d(1.0, 2.0, s)  # a transform's parts
        t[i].q.z = s
        t[i].p.x += 10.0


def _part_args(device="cpu"):
    rng = np.random.default_rng(3)
    vals = {"a": rng.standard_normal((5, 3)).astype(np.float32), "b": rng.standard_normal((5, 2, 4)),
            "m": rng.standard_normal((5, 3, 3)).astype(np.float32),
            "q": rng.standard_normal((5, 4)).astype(np.float32), "t": rng.standard_normal((5, 7))}
    dts = {"a": tack.vec3, "b": tack.vec4d, "m": tack.mat33, "q": tack.quat, "t": tack.transformd}
    return vals, {k: tack.array(v, dts[k], device=device) for k, v in vals.items()}


def _parts_reference(vals, s):
    """What the kernel does, by NumPy on the arrays of components."""
    r = {k: v.copy() for k, v in vals.items()}
    n = r["a"].shape[0]
    r["a"][:, 1] = np.float32(s) * np.arange(n, dtype=np.float32)
    r["a"][:, 2] = -np.float32(s)
    r["a"][:, 0] += np.float32(1.0)
    for k in range(2):
        r["b"][:, k, k] = s + k
        r["b"][:, k, 0] *= 2
    r["m"][:, 1, 2] = s
    r["q"][:, 3] -= np.float32(0.5)
    r["t"][:, :3] = [1.0, 2.0, s]
    r["t"][:, 5] = s
    r["t"][:, 0] += 10.0
    return r


@JIT
def test_a_component_of_an_array_parameters_element(jit):
    vals, arrs = _part_args()
    tack.kernel(parts_of_elements, jit=jit)(arrs["a"], arrs["b"], arrs["m"], arrs["q"], arrs["t"], 1.25)
    want = _parts_reference(vals, 1.25)
    for k in vals:
        np.testing.assert_array_equal(arrs[k].numpy().reshape(vals[k].shape), want[k], err_msg=k)


def halves(a, s):
    for it in tack.independent(range(2 * a.shape[0])):  # two iterations per element, one component each
        if it % 2 == 0:
            a[it // 2].x = s + it
        else:
            a[it // 2].y = s - it


@JIT
def test_iterations_writing_other_components_of_one_element_lose_nothing(jit):
    """A store of the whole element (load, set, store back) would lose one of the two writes whenever the
    two iterations of an element overlap, which on a parallel CPU or a GPU they do; the store of one
    component cannot.  The z components, never written, keep their values."""
    n = 200_000 if jit else 2_000  # debug mode runs an iteration as Python: fewer
    zs = np.arange(n, dtype=np.float32)
    a = tack.array(np.stack([np.zeros(n), np.zeros(n), zs], 1).astype(np.float32), tack.vec3)
    tack.kernel(halves, jit=jit)(a, 0.5)
    got = a.numpy()
    it = np.arange(n, dtype=np.float32) * 2
    np.testing.assert_array_equal(got[:, 0], np.float32(0.5) + it)
    np.testing.assert_array_equal(got[:, 1], np.float32(0.5) - (it + 1))
    np.testing.assert_array_equal(got[:, 2], zs)


def source_of_halves():
    return tack.kernel(halves).generated_source(tack.zeros(4, tack.vec3), 0.5, target="c")


def test_the_compiled_store_writes_the_component_alone():
    stores = [ln.strip() for ln in source_of_halves().splitlines() if re.match(r"\s*a0\[", ln)]
    assert stores and all(re.search(r"\]\.v\[[01]\] = ", st) for st in stores), stores  # (a copy per loop version)
    assert {re.search(r"\.v\[(\d)\]", st).group(1) for st in stores} == {"0", "1"}


def reductions(a, hist, n):
    for i in range(n):
        a[0].p.x += 1.0             # every iteration into one element: atomic, as a[0] += 1.0 is
        a[0].q.y -= 0.5
        hist[i % 4][1] += 2         # an integer vector's component, by index
        a[1].p += tack.vec3(1.0, 2.0, 3.0)  # a transform's part: each component atomic


def counts(cnt, n):
    for i in range(n):
        cnt[i % 4][i % 3] += 1      # a component picked at run time, atomically


@JIT
def test_an_update_in_a_parallel_loop_is_atomic(jit):
    n = 100_000 if jit else 2_000
    a = tack.zeros(2, tack.transform)
    hist = tack.array(np.arange(12, dtype=np.int32).reshape(4, 3), tack.vec3i)
    tack.kernel(reductions, jit=jit)(a, hist, n)
    got = a.numpy()
    assert got[0].tolist() == [n, 0, 0, 0, -n / 2, 0, 0]
    assert got[1].tolist() == [n, 2 * n, 3 * n, 0, 0, 0, 0]
    want = np.arange(12, dtype=np.int32).reshape(4, 3)
    want[:, 1] += 2 * (n // 4)
    np.testing.assert_array_equal(hist.numpy(), want)
    cnt = tack.zeros(4, tack.vec3i)
    tack.kernel(counts, jit=jit)(cnt, n)
    i = np.arange(n)
    np.testing.assert_array_equal(cnt.numpy(), np.histogram2d(i % 4, i % 3, bins=[4, 3], range=[[0, 4], [0, 3]])[0])


def test_the_atomic_update_converts_the_value_first_in_both_modes():
    """As for a number's element (a[k] += v atomic): the value takes the component's type before the add, so
    0.1 (f64) added to an f32 component is f32(0.1) added in f32 -- in debug mode as compiled."""
    def adds(a, v, n):
        for i in range(n):
            a[0].x += v

    got = []
    for jit in (True, False):
        a = tack.zeros(1, tack.vec3)
        tack.kernel(adds, jit=jit)(a, np.float64(0.1), 1)
        got.append(a.numpy()[0, 0])
    assert got[0] == got[1] == np.float32(0.1)


def times_a_shared_element(a, n):
    for i in range(n):
        a[0].x *= 2.0


def times_two_through_a_func(a, n):
    for i in range(n):
        doubles_x(a, 0)


@tack.func
def doubles_x(a, k):
    a[k].x *= 2.0


@JIT
@pytest.mark.parametrize("k", [times_a_shared_element, times_two_through_a_func])
def test_any_other_update_of_a_shared_element_is_a_compile_error(k, jit):
    with pytest.raises(tack.CompileError, match=r"'a\[\.\.\.\] component \*= \.\.\.' in a parallel loop.*only \+= "
                                                r"and -= are atomic"):
        tack.kernel(k, jit=jit)(tack.zeros(2, tack.vec3), 10)


def serial_updates(a):
    for k in range(1):  # a loop of one iteration is serial code
        pass
    a[0].x *= 3.0           # outside a parallel loop: a read and a write of the component
    a[1][2] //= 2.0


@JIT
def test_an_update_outside_a_parallel_loop(jit):
    a = tack.array(np.arange(6, dtype=np.float32).reshape(2, 3) + 1, tack.vec3)
    tack.kernel(serial_updates, jit=jit)(a)
    assert a.numpy().tolist() == [[3, 2, 3], [4, 5, 3]]


def out_of_range(a, k):
    for i in range(a.shape[0]):
        a[i][k] = 1.0


@JIT
def test_an_index_outside_the_vector_is_an_index_error_in_both_modes(jit):
    a = tack.zeros(3, tack.vec3)
    with pytest.raises(IndexError, match=r"index 3 is out of range for a vector of length 3 \(kernel out_of_range, "):
        tack.kernel(out_of_range, jit=jit)(a, 3)
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for axis 0 with size 3"):
        tack.kernel(parts_of_elements_row, jit=jit)(a, 5)
    assert not a.numpy().any()
    tack.kernel(out_of_range, jit=jit)(a, -1)  # counts from the end, as a vector's index does
    assert a.numpy()[:, 2].tolist() == [1, 1, 1] and not a.numpy()[:, :2].any()


def parts_of_elements_row(a, i):
    a[i].y = 2.0


def record_fields(b, n):
    for it in tack.independent(range(2 * n)):  # two iterations per record: vel.x, then vel.y
        if it % 2 == 0:
            b[it // 2].vel.x = 1.0 * it
        else:
            b[it // 2].vel.y = -1.0 * it


@JIT
def test_a_struct_arrays_vector_field(jit):
    """A struct array's vector field was already a component store (each field is a strided view whose
    components are an axis): checked here alongside, the same loop as `halves`."""
    n = 50_000 if jit else 1_000
    rec = np.zeros(n, Body.dtype)
    rec["vel"][:, 2] = 7.0
    tack.kernel(record_fields, jit=jit)(rec, n)
    it = np.arange(n) * 2
    np.testing.assert_array_equal(rec["vel"], np.stack([it, -(it + 1), np.full(n, 7)], 1).astype(np.float32))


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
def test_parts_of_elements_on_an_opencl_device():
    vals, cpu = _part_args()
    _, dev = _part_args(OPENCL)
    k = tack.kernel(parts_of_elements)
    k(cpu["a"], cpu["b"], cpu["m"], cpu["q"], cpu["t"], 1.25)
    k(dev["a"], dev["b"], dev["m"], dev["q"], dev["t"], 1.25)
    for name in vals:
        np.testing.assert_array_equal(dev[name].numpy(), cpu[name].numpy(), err_msg=name)
    a, hist = tack.zeros(2, tack.transform, device=OPENCL), tack.zeros(4, tack.vec3i, device=OPENCL)
    tack.kernel(reductions)(a, hist, 4096)
    assert a.numpy()[0, [0, 4]].tolist() == [4096, -2048] and hist.numpy()[:, 1].tolist() == [2048] * 4


def parts_f32(a, m, q, s):
    for i in range(a.shape[0]):
        for k in range(3):
            a[i][k] = s * k
        a[i].y *= s
        m[i][1, 2] = s
        q[i].w -= 0.5


def _gpu_sources(target):
    _, arrs = _part_args()
    first = tack.kernel(parts_f32).generated_source(arrs["a"], arrs["m"], arrs["q"], 1.25, target=target) \
        if target == "metal" else tack.kernel(parts_of_elements).generated_source(*arrs.values(), 1.25, target=target)
    return [first,
            tack.kernel(reductions).generated_source(tack.zeros(2, tack.transform), tack.zeros(4, tack.vec3i), 8,
                                                     target=target),
            tack.kernel(halves).generated_source(tack.zeros(4, tack.vec3), 0.5, target=target)]


@pytest.mark.skipif(not (hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0),
                    reason="NVRTC (libnvrtc) is not installed")
def test_cuda_sources_compile_with_nvrtc():
    """The component stores and atomics (&a0[i].v[0]) of every GPU dialect compile."""
    import _gpu_batch

    srcs = _gpu_sources("cuda")
    assert all(".v[0] = " in s for s in srcs[::2]) and "tk_atomic_add_float(&a0[" in srcs[1]
    ptx, entries = _gpu_batch.nvrtc_checked(srcs, "sm_90")
    assert all(n in ptx for names in entries for n in names)


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    import _gpu_batch

    assert _gpu_batch.hiprtc_checked(_gpu_sources("hip"), "gfx90a") == b"\x7fELF"


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_sources_compile_with_ocloc():
    failed = [r for r in _ocloc.check_many([(src, "pvc") for src in _gpu_sources("opencl")]) if r is not None]
    assert not failed, failed[0][1][-3000:]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_sources_pass_the_msl_check():
    verdicts = _msl.verdicts(_gpu_sources("metal"))
    assert verdicts == ["ok"] * len(verdicts), [v for v in verdicts if v != "ok"][0]


def scatter_vectors(a, idx):
    for i in range(idx.shape[0]):
        a[idx[i]] = tack.vec3(1.0, 2.0, 3.0)


def scatter_components(a, idx):
    for i in range(idx.shape[0]):
        a[idx[i]].y = 1.0
        a[idx[i]][2] += 2.0


def test_check_races_watches_vector_elements_and_their_components_in_both_modes():
    """check_races judges by element, compiled and in debug mode alike, with the same message.  Debug
    mode's detector had recorded no access to an array of vectors at all (its element index named
    fewer axes than the NumPy view's, components included), so a racing `a[idx[i]] = v` ran silently."""
    idx = np.array([0, 1, 2, 1])  # iterations 1 and 3 meet at a[1]
    for k in (scatter_vectors, scatter_components):
        msgs = []
        for jit in (True, False):
            with pytest.warns(tack.RaceWarning), pytest.raises(tack.RaceError) as e:
                tack.kernel(k, jit=jit, check_races=True)(tack.zeros(3, tack.vec3), idx)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1], msgs
        assert "iteration i=1" in msgs[0] and "iteration i=3" in msgs[0] and "a[1]" in msgs[0], msgs[0]
    for jit in (True, False):  # distinct elements: no race in either mode
        a = tack.zeros(3, tack.vec3)
        with pytest.warns(tack.RaceWarning):
            tack.kernel(scatter_components, jit=jit, check_races=True)(a, np.array([2, 0, 1]))
        assert a.numpy().tolist() == [[0, 1, 2]] * 3


def stores_components(x, y):
    for i in range(x.shape[0]):
        y[i].x = x[i] * x[i]
        y[i][1] = 3.0 * x[i]
        y[i].z += x[i]


@JIT
def test_the_adjoint_of_component_stores(jit):
    """Differentiated, a component set is an overwrite of that component (its incoming gradient is
    zero), and an update adds into it: by hand, d/dx = gx * 2x + gy * 3 + gz."""
    x = tack.array(np.arange(3, dtype=np.float32) + 1, requires_grad=True)
    y = tack.array(np.ones((3, 3), np.float32), tack.vec3, requires_grad=True)
    with tack.Tape() as tape:
        tack.kernel(stores_components, jit=jit)(x, y)
    seed = np.arange(9, dtype=np.float32).reshape(3, 3) + 1
    tape.backward(grads={y: tack.array(seed, tack.vec3)})
    xs = np.arange(3, dtype=np.float32) + 1
    np.testing.assert_array_equal(x.grad.numpy(), seed[:, 0] * 2 * xs + seed[:, 1] * 3 + seed[:, 2])
    np.testing.assert_array_equal(y.grad.numpy(), np.stack([np.zeros(3), np.zeros(3), seed[:, 2]], 1))
    np.testing.assert_array_equal(y.numpy(), np.stack([xs * xs, 3 * xs, 1 + xs], 1))
