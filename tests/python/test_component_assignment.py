"""Components assigned by name: `v.y = s`, `v.x += s`, `q.w = s`, `t.p = v`, `t.p.x = s`.

A user porting Warp code met "assigning to an attribute ('v.y = ...') is not supported in
kernels" where `v[1] = s` worked: the front end refused every attribute target.  These are the
cases, compiled and in debug mode (jit=False), where a vector is a NumPy view whose .x ... .w
were read-only properties: f32, f64 and int vectors of 2, 3 and 4 components, quaternions,
transforms, augmented assignment, a @tack.func, a blocks kernel, a local array's element, a
struct local's field, and one on PoCL.  Attribute targets that name no local's component stay
CompileErrors naming them.  A struct field store of another precision named the rewrite's
temporary ('__tk_t1'); it names the field.
"""

import math

import numpy as np
import pytest

import tack

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


def sets_an_array_elements_component(a):
    for i in range(a.shape[0]):
        a[i].x = 1.0


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
    (sets_an_array_elements_component, 2, r"cannot assign to a component of an element of 'a' \(a\[i\]\.x = s\); "
                                          r"copy the element into a local"),
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
