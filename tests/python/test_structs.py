"""@tack.struct: user types, their arrays and values in kernels (issue 35, item 1).

  - the layout is NumPy's aligned structured dtype, field by field (every
    numeric dtype, bool, vectors, matrices, complex, nested structs, array
    fields); a record array is the struct array without a copy, both ways;
  - one kernel that uses every form -- element fields read, written and
    updated in place, components, nested fields, array fields, matrix and
    complex fields, struct locals made by copy and by constructor, stores of
    whole structs, a @tack.func taking and returning structs, a struct
    passed by value, an atomic on a field -- gives NumPy's values compiled
    and in debug mode (jit=False), alike to the bit;
  - the fields of one record array are disjoint bytes: a kernel writing one
    field and reading another of the same array gets the restrict build,
    whichever order the fields come in (the launch's overlap test);
  - what is refused says what: == on structs, an unknown field (naming the
    struct and its fields), a record array of no struct, a struct array of
    another struct (which has its own build), arithmetic on a whole struct;
    compiled and in debug mode alike;
  - every GPU dialect takes the same kernel: NVRTC, hiprtc, ocloc and the MSL
    check compile it, and the CUDA and Metal sources run emulated on the CPU
    to the CPU's values;
  - struct arrays and values pickle.
"""

import json
import pickle
import re
import warnings
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core, _structs

pytestmark = pytest.mark.filterwarnings("error::tack.RaceWarning")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _msl  # noqa: E402
import _ocloc  # noqa: E402


@tack.struct
class Shape:
    radius: tack.f32
    kind: tack.i8


@tack.struct
class Body:
    pos: tack.vec3
    vel: tack.vec3
    mass: tack.f32
    alive: bool
    n: tack.u16
    k: tack.i32
    m: tack.mat22
    z: tack.complex64
    shape: Shape
    hist: tack.array_field(tack.f32, 4)


@tack.struct
class Kick:
    dv: tack.vec3
    scale: tack.f32


@tack.func
def pushed(b, kick):
    """A func taking two structs (an element and a value) and returning one."""
    return Kick(dv=b.vel + kick.dv * kick.scale, scale=b.mass)


@tack.func
def speed2(b):
    return tack.dot(b.vel, b.vel)


def every(b, o, cnt, out, kick, dt):
    for i in range(b.shape[0]):
        b[i].vel.x += dt * b[i].mass                  # a component, updated in place
        b[i].pos = b[i].pos + b[i].vel * dt            # a whole vector field
        b[i].shape.radius *= 2.0                       # a nested field
        b[i].hist[i % 4] = b[i].shape.radius + 1.0     # an array field's element
        b[i].m[0, 1] += b[i].z.real                    # a matrix element, a complex part
        b[i].z = b[i].z * 2j
        if b[i].alive:
            b[i].n += 1
        q = b[i]                                       # a struct local, by copy
        w = Kick(dv=q.vel, scale=3)                    # by constructor
        w.scale += 1.0
        k = pushed(q, kick)                            # func: struct in, struct out
        out[i] = k.scale + w.scale + speed2(b[i]) + len(b) + b[i].hist[i % 4]
        b[i].vel = k.dv
        tack.atomic_add(cnt, 0, "k", 1)                # an atomic on a field
        o[i] = b[i]                                    # a whole struct stored


step = tack.kernel(every)
step_py = tack.kernel(every, jit=False)
N = 6


def records():
    b = np.zeros(N, Body.dtype)
    b["pos"] = np.arange(3 * N, dtype=np.float32).reshape(N, 3)
    b["vel"] = 0.5
    b["mass"] = np.arange(N) + 1
    b["alive"][::2] = True
    b["m"] = np.arange(4, dtype=np.float32).reshape(2, 2)
    b["z"] = np.arange(N) + 1j
    b["shape"]["radius"] = np.arange(N) / 4
    return b


def expected(b, kick, dt):
    """every() in NumPy, f32 as the kernel computes."""
    b = b.copy()
    f = np.float32
    out = np.zeros(N)
    for i in range(N):
        r = b[i]
        r["vel"][0] = f(r["vel"][0] + f(dt * r["mass"]))
        r["pos"] = r["pos"] + r["vel"] * f(dt)
        r["shape"]["radius"] = r["shape"]["radius"] * f(2)
        r["hist"][i % 4] = r["shape"]["radius"] + f(1)
        r["m"][0, 1] = r["m"][0, 1] + r["z"].real
        r["z"] = r["z"] * np.complex64(2j)
        if r["alive"]:
            r["n"] += 1
        dv = r["vel"] + kick.dv * f(kick.scale)
        out[i] = (f(r["mass"]) + f(4) + np.dot(r["vel"], r["vel"]).astype(f) + N + r["hist"][i % 4])
        r["vel"] = dv
    return b, out


def same(a, b):
    """Record arrays equal field by field, to the bit (padding aside: NumPy's copy leaves it undefined)."""
    a, b = np.asarray(a), np.asarray(b)
    lay = _structs._STRUCT_DTYPES[a.dtype].__tack_struct__
    return a.dtype == b.dtype and all(
        np.ascontiguousarray(_structs._leaf_view(a, lf)).tobytes() ==
        np.ascontiguousarray(_structs._leaf_view(b, lf)).tobytes() for lf in lay.leaves)


KICK = Kick(dv=np.array([1, 2, 3], np.float32), scale=0.25)


@pytest.mark.parametrize("jit", [True, False])
def test_every_form_gives_numpys_values(jit):
    b = records()
    want, want_out = expected(b, KICK, np.float32(0.5))
    out, o, cnt = np.zeros(N), np.zeros(N, Body.dtype), np.zeros(1, Body.dtype)
    (step if jit else step_py)(b, o, cnt, out, KICK, np.float32(0.5))
    assert same(o, b) and cnt["k"][0] == N
    for name in Body.dtype.names:
        np.testing.assert_allclose(b[name].astype(np.complex128) if name != "shape" else b[name]["radius"],
                                   want[name].astype(np.complex128) if name != "shape" else
                                   want[name]["radius"], rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(out, want_out, rtol=1e-6)
    assert b["n"].tolist() == want["n"].tolist()


def test_compiled_and_debug_mode_agree_to_the_bit():
    a, c = records(), records()
    oa, oc = np.zeros(N), np.zeros(N)
    step(a, np.zeros(N, Body.dtype), np.zeros(1, Body.dtype), oa, KICK, np.float32(0.25))
    step_py(c, np.zeros(N, Body.dtype), np.zeros(1, Body.dtype), oc, KICK, np.float32(0.25))
    assert same(a, c) and oa.tobytes() == oc.tobytes()


def test_layout_is_numpys_aligned_dtype():
    want = np.dtype([("pos", ("<f4", (3,))), ("vel", ("<f4", (3,))), ("mass", "<f4"), ("alive", "?"),
                     ("n", "<u2"), ("k", "<i4"), ("m", ("<f4", (2, 2))), ("z", "<c8"),
                     ("shape", np.dtype([("radius", "<f4"), ("kind", "i1")], align=True)),
                     ("hist", ("<f4", (4,)))], align=True)
    assert Body.dtype == want and Body.itemsize == want.itemsize == 84

    @tack.struct
    class Every:
        b: bool
        i8: tack.i8
        i16: tack.i16
        i32: tack.i32
        i64: tack.i64
        u8: tack.u8
        u16: tack.u16
        u32: tack.u32
        u64: tack.u64
        f16: tack.f16
        f32: tack.f32
        f64: tack.f64
        c128: tack.complex128
        v: tack.vec2d
        m: tack.mat33

    names = ["?", "i1", "<i2", "<i4", "<i8", "u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c16"]
    spec = list(zip(Every.fields, names)) + [("v", ("<f8", (2,))), ("m", ("<f4", (3, 3)))]
    assert Every.dtype == np.dtype(spec, align=True)
    assert Every.dtype.fields["i64"][1] == 8 and Every.itemsize % 8 == 0


def test_record_arrays_are_struct_arrays_without_a_copy():
    rec = records()
    a = tack.asarray(rec, dtype=Body)
    assert isinstance(a, tack.StructArray) and a.dtype is Body and a.shape == (N,)
    assert np.shares_memory(np.asarray(a), rec)
    cnt = tack.zeros(1, Body)
    step(a, np.zeros(N, Body.dtype), cnt, np.zeros(N), KICK, np.float32(0.5))   # writes the records themselves
    assert rec["n"][0] == 1 and np.asarray(cnt)["k"][0] == N
    c = tack.array(rec, dtype=Body)                   # tack.array copies, as it always does
    assert not np.shares_memory(np.asarray(c), rec) and same(c, rec)
    z = tack.zeros(3, Body)
    assert np.asarray(z).tobytes() == bytes(3 * Body.itemsize)
    assert a[2].mass == rec["mass"][2] and a.field("shape.radius") is not None
    with pytest.raises(TypeError, match="make tack.zeros"):
        tack.ones(3, Body)


def test_fields_of_one_array_are_disjoint_in_either_order():
    @tack.kernel
    def copy_fields(b):
        for i in range(b.shape[0]):
            b[i].vel = b[i].pos * 2.0     # writes vel, reads pos: fields at 12 and 0
            b[i].mass = b[i].pos.x        # writes mass (24), reads pos

    @tack.struct
    class Swapped:                        # the same names in the other order: vel before pos in memory
        vel: tack.vec3
        pos: tack.vec3
        mass: tack.f32

    for cls in (Body, Swapped):
        b = np.zeros(4, cls.dtype)
        b["pos"] = np.arange(12, dtype=np.float32).reshape(4, 3)
        copy_fields(b)
        assert b["vel"].tolist() == (2 * b["pos"]).tolist() and b["mass"].tolist() == b["pos"][:, 0].tolist()


@pytest.mark.parametrize("jit", [True, False])
def test_refusals_name_what_is_wrong(jit):
    def eq(b, out):
        for i in range(b.shape[0]):
            out[i] = b[i] == b[0]

    def unknown(b, out):
        for i in range(b.shape[0]):
            out[i] = b[i].shape.radiu

    def arith(b, out):
        for i in range(b.shape[0]):
            q = b[i] + b[i]  # noqa: F841

    def bad_ctor(b, out):
        for i in range(b.shape[0]):
            q = Kick(dv=b[i].vel, speed=1.0)  # noqa: F841

    cases = [(eq, "structs are not compared (Body)"),
             (unknown, "struct Shape has no field 'radiu' (its fields: radius, kind)"),
             (arith, "structs have no arithmetic (Body)"),
             (bad_ctor, "struct Kick has no field 'speed' (its fields: dv, scale)")]
    for fn, msg in cases:
        with pytest.raises(tack.CompileError, match=msg.replace("(", r"\(").replace(")", r"\)")) as e:
            tack.kernel(fn, jit=jit)(records(), np.zeros(N))
        assert e.value.lineno > fn.__code__.co_firstlineno and e.value.filename == __file__

    other = np.zeros(3, np.dtype([("a", "<f4"), ("b", "<f4")]))
    with pytest.raises(TypeError, match="which is no @tack.struct's"):
        tack.kernel(unknown, jit=jit)(other, np.zeros(3))
    with pytest.raises(TypeError, match=r"is not Body.dtype"):
        tack.array(np.zeros(3, Kick.dtype), dtype=Body)


def append_alive(src, out, count):
    for i in range(src.shape[0]):
        if src[i].alive:
            out[tack.atomic_add(count, 0, 1)] = src[i]     # every field of one slot: one atomic


def append_maybe(src, out, count):
    for i in range(src.shape[0]):
        out[i].mass = out[tack.atomic_add(count, 0, 1)].mass if i > 2 else 0.0


@pytest.mark.parametrize("jit", [True, False])
def test_an_element_index_is_evaluated_once(jit):
    src, out, count = records(), np.zeros(N, Body.dtype), np.zeros(1, np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tack.RaceWarning)  # the slots come from an atomic: unprovable
        tack.kernel(append_alive, jit=jit)(src, out, count)
    assert count[0] == 3 and sorted(out["mass"][:3].tolist()) == [1, 3, 5] and out["mass"][3:].tolist() == [0] * 3
    with pytest.raises(tack.CompileError, match="compute the index into a variable first"):
        tack.kernel(append_maybe, jit=jit)(src, out, count)


def scatter_mass(b, idx):
    for i in range(b.shape[0]):
        b[idx[i]].mass = b[i].shape.radius


@pytest.mark.parametrize("jit", [True, False])
def test_the_race_detector_watches_fields(jit):
    k = tack.kernel(scatter_mass, jit=jit, check_races=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tack.RaceWarning)
        k(records(), np.arange(N))
        with pytest.raises(tack.RaceError, match=r"iteration i=1 writes b·mass\[1\].*iteration i=2 writes it"):
            k(records(), np.array([0, 1, 1, 3, 4, 5]))


@tack.struct
class Cell:
    f: tack.vec3
    m: tack.mat22d
    h: tack.array_field(tack.vec2, 3)
    k: tack.vec3i


def scatter_fields(c, idx):
    for i in range(idx.shape[0]):
        j = idx[i]
        c[j].f += tack.vec3(1.0, 2.0, 3.0)
        c[j].f -= 0.5
        c[j].m += tack.mat22d(1.0, 2.0, 3.0, 4.0)
        c[j].h[1] += tack.vec2(1.0, -1.0)
        c[j].k += tack.vec3i(1, 2, 3)


@pytest.mark.parametrize("jit", [True, False])
def test_adds_into_a_shared_vector_field_are_atomic(jit):
    """`c[j].f += v` on a vector, matrix or array-of-vectors field from many iterations: each
    component is its own atomic add, as on a vector array's element. The field was read, added and
    stored whole, with a RaceWarning only: 4,000,000 adds into 4 records on 2 threads lost a
    quarter of one record's."""
    n = 1 << 18 if jit else 400
    idx = np.arange(n, dtype=np.int32) % 4
    c = np.zeros(4, Cell.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tack.RaceWarning)  # an atomic is no race
        tack.kernel(scatter_fields, jit=jit)(c, idx)
    q = n // 4
    assert c["f"].tolist() == [[q * 0.5, q * 1.5, q * 2.5]] * 4
    assert c["m"].tolist() == [[[q, 2 * q], [3 * q, 4 * q]]] * 4
    assert c["h"][:, 1].tolist() == [[q, -q]] * 4 and not c["h"][:, [0, 2]].any()
    assert c["k"].tolist() == [[q, 2 * q, 3 * q]] * 4
    if jit:  # the iteration's own element needs no atomic
        assert not re.search(r"tk_atomic_add_\w+\(&", tack.kernel(own_field).generated_source(c))
        assert re.search(r"tk_atomic_add_\w+\(&", tack.kernel(scatter_fields).generated_source(c, idx))


def own_field(c):
    for i in range(c.shape[0]):
        c[i].f += tack.vec3(1.0, 2.0, 3.0)


def test_an_array_of_another_struct_gets_its_own_build():
    @tack.struct
    class Light:                 # vel and mass at other offsets than Body's
        mass: tack.f32
        vel: tack.vec3

    @tack.kernel
    def heavier(b):
        for i in range(b.shape[0]):
            b[i].mass += b[i].vel.y

    a, c = np.zeros(3, Body.dtype), np.zeros(3, Light.dtype)
    a["vel"][:, 1], c["vel"][:, 1] = 2, 5
    heavier(a)
    heavier(c)
    assert a["mass"].tolist() == [2, 2, 2] and c["mass"].tolist() == [5, 5, 5]
    with pytest.raises(tack.CompileError, match="struct Kick has no field 'mass'"):
        heavier(np.zeros(3, Kick.dtype))


def test_pickling():
    a = tack.asarray(records(), dtype=Body)
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype is Body and same(b, a)
    k = pickle.loads(pickle.dumps(KICK))
    assert k.dv.tolist() == [1, 2, 3] and k.scale == 0.25
    with pytest.raises(TypeError, match="not compared"):
        assert k == KICK


def test_truth_value_is_numpys():
    # bool() fell back on len(): two zeroed records were true
    with pytest.raises(ValueError, match="truth value of a tack.StructArray of 2 records is ambiguous"):
        bool(tack.zeros(2, Body))
    with pytest.raises(ValueError, match="empty tack.StructArray is ambiguous"):
        bool(tack.zeros(0, Body))
    one = tack.zeros(1, Body)
    assert not one and bool(one) == bool(np.asarray(one))
    a = tack.asarray(records(), dtype=Body)
    assert a[:1] and bool(np.asarray(a)[:1])  # a record with nonzero bytes, as NumPy says


def test_comparisons_of_struct_arrays_are_refused():
    # `a == b` was Python's identity, False for two arrays of equal records
    a, b = tack.zeros(2, Body), tack.zeros(2, Body)
    for op in ("==", "!=", "<", ">="):
        with pytest.raises(TypeError, match=f"'{op}' between a tack.StructArray and StructArray is refused"):
            eval(f"a {op} b")
    with pytest.raises(TypeError, match="and itself is refused"):
        assert a == a
    assert {a: 1}[a] == 1 and a in [a] and hash(a) == hash(a)  # identity: dict keys, set members


def test_dlpack_carries_fields_not_records():
    a = tack.asarray(records(), dtype=Body)
    with pytest.raises(TypeError, match="DLPack carries arrays of one number type"):
        np.from_dlpack(a)
    mass = np.from_dlpack(a.field("mass"))            # a field is a strided view of one dtype
    assert np.shares_memory(mass, np.asarray(a)) and mass.strides == (Body.itemsize,)


def test_vtk_point_data_by_field_name():
    vtk = pytest.importorskip("tack.interop.vtk")
    from vtkmodules.util.numpy_support import vtk_to_numpy

    rec = records()
    arrays = {a.GetName(): a for a in vtk.struct_to_vtk(rec)}
    assert list(arrays) == ["pos", "vel", "mass", "alive", "n", "k", "m", "z", "shape.radius", "shape.kind", "hist"]
    assert vtk_to_numpy(arrays["vel"]).tolist() == rec["vel"].tolist()
    assert vtk_to_numpy(arrays["m"]).tolist() == rec["m"].reshape(N, 4).tolist()
    assert vtk_to_numpy(arrays["z"]).tolist() == np.stack([rec["z"].real, rec["z"].imag], 1).tolist()
    assert vtk_to_numpy(arrays["shape.radius"]).tolist() == rec["shape"]["radius"].tolist()
    assert vtk_to_numpy(arrays["alive"]).tolist() == rec["alive"].astype(int).tolist()
    with pytest.raises(ValueError, match="struct Body has no numeric field 'shape.r'"):
        vtk.struct_to_vtk(rec, fields=["shape.r"])


# ------------------------------------------------------ the GPU dialects
@tack.struct
class Part:
    pos: tack.vec3
    vel: tack.vec3
    mass: tack.f32
    alive: bool
    n: tack.i32
    m: tack.mat22
    shape: Shape
    hist: tack.array_field(tack.f32, 4)


def gpu_every(p, c, out, dt):
    for i in range(p.shape[0]):
        p[i].vel.y += dt * p[i].mass
        p[i].pos = p[i].pos + p[i].vel * dt
        p[i].shape.radius += 1.0
        p[i].hist[i % 4] = p[i].m[1, 0] + p[i].shape.radius
        q = p[i]
        w = Kick(dv=q.vel, scale=q.mass)
        if q.alive:
            out[i] = w.scale * tack.length(w.dv)
        tack.atomic_add(c, i % 2, "n", 1)


gpu_step = tack.kernel(gpu_every)


def gpu_args():
    p = np.zeros(40, Part.dtype)
    p["pos"] = np.arange(120, dtype=np.float32).reshape(40, 3) / 7
    p["mass"] = np.arange(40) / 3
    p["alive"][1::3] = True
    p["m"][:, 1, 0] = 2.5
    return [p, np.zeros(2, Part.dtype), np.zeros(40, np.float32), np.float32(0.125)]


def gpu_source(target):
    return gpu_step.generated_source(*gpu_args(), target=target)   # the struct build's source


def test_compile_generated_source_and_ir_take_structs():
    args = gpu_args()
    gpu_step.compile(*args)
    assert "p·vel" in gpu_step.ir(*args) and "tack_entry" in gpu_step.generated_source(*args)
    with pytest.raises(TypeError, match="positional argument"):
        gpu_step.generated_source(args[0], target="c")    # a wrong call stays the error it was


NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_source_compiles_with_nvrtc():
    assert ".entry" in _core._nvrtc_compile(gpu_source("cuda"), "sm_80")


_HIPRTC = ("import json, sys\nfrom tack import _core\njob = json.load(sys.stdin)\n"
           "assert len(_core._hiprtc_compile(job['source'], 'gfx90a')) > 0\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=json.dumps({"source": gpu_source("hip")}),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_source_compiles_with_ocloc():
    rc, out = _ocloc.compile(gpu_source("opencl"), "dg2")
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    problems = _msl.check(gpu_source("metal"))
    assert problems is None, problems


def _cpu_result():
    args = gpu_args()
    gpu_step(*args)
    return args


def test_cuda_source_runs_emulated_as_the_cpu_runs():
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    args = gpu_args()
    built, expanded = _structs.build_for(gpu_step, args, {})
    assert _cuda_emulate.run(built.generated_source(*expanded, target="cuda"), expanded)[0] == 0
    want = _cpu_result()
    assert same(args[0], want[0]) and same(args[1], want[1]) and args[2].tobytes() == want[2].tobytes()
    assert want[1]["n"].tolist() == [20, 20]


@pytest.mark.skipif(_msl.clang() is None or not _msl.has_float16(),
                    reason="the Metal emulation needs clang++ 15 or later (_msl_emulate.py)")
def test_metal_source_runs_emulated_as_the_cpu_runs():
    import _msl_emulate

    args = gpu_args()
    built, expanded = _structs.build_for(gpu_step, args, {})
    got, (failed, site) = _msl_emulate.run(built, *expanded)
    assert failed == 0, site
    want = _cpu_result()
    # the fields' views were written in place; `out`, contiguous, comes back as a copy
    assert same(args[0], want[0]) and same(args[1], want[1]) and got[-1].tobytes() == want[2].tobytes()


OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
def test_struct_arrays_on_an_opencl_device():
    """Struct arrays in device memory: each field a strided view of one buffer, at its offset."""
    args = gpu_args()
    p, c = (tack.array(a, dtype=Part, device=OPENCL) for a in args[:2])
    out = tack.array(args[2], device=OPENCL)
    assert p.device == OPENCL and p.field("vel").shape == (40, 3) and p.field("vel").strided
    gpu_step(p, c, out, args[3])
    want = _cpu_result()
    assert same(p.numpy(), want[0]) and same(c.numpy(), want[1]) and out.numpy().tobytes() == want[2].tobytes()
    assert same(p.to("cpu"), want[0]) and tack.zeros(3, Part, device=OPENCL).numpy()["n"].tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="copy it to the CPU first"):
        p[0]


@tack.struct
class Pose:
    xf: tack.transform
    q: tack.quat


@tack.struct
class PoseD:
    xf: tack.transformd
    q: tack.quatd


@tack.func
def pose_turned(b):
    c = b                       # a struct parameter and local with a transform field, returned
    c.q = c.q * c.xf.q
    return c


def pose_step(b, by_value, out):
    for i in range(b.shape[0]):
        out[i] = tack.transform_point(b[i].xf, tack.vec3(1.0, 0.0, 0.0)) + by_value.xf.p + Pose().xf.p
        b[i] = pose_turned(b[i])
        b[i].xf = tack.transform(b[i].xf.p + tack.vec3(0.0, 0.0, 1.0), b[i].q)
        b[i].q.x = b[i].xf.p.z


def pose_step_d(b, out):
    for i in range(b.shape[0]):
        out[i] = tack.transform_point(b[i].xf, tack.vec3d(1.0, 0.0, 0.0))
        b[i].xf = tack.transformd(b[i].xf.p * 2.0, b[i].xf.q * b[i].q)


def pose_part_store(b, out):
    for i in range(b.shape[0]):
        b[i].xf.p = out[i]


@pytest.mark.parametrize("jit", [True, False])
def test_transform_and_quat_fields(jit):
    """A transform field is a position and a rotation (7 numbers): loaded, stored whole and built
    by its constructor, not by seven numbers (which the compiler refused, naming none of the
    user's code: "transform() takes a position and a rotation (p, q) (7 given)")."""
    from scipy.spatial.transform import Rotation

    rot = Rotation.from_rotvec([[0, 0, 0.5], [0.3, -0.2, 0.1]])
    for S, vec, step in ((Pose, tack.vec3, pose_step), (PoseD, tack.vec3d, pose_step_d)):
        rec = np.zeros(2, S.dtype)
        rec["xf"][:, :3] = [[1, 2, 3], [-1, 0, 2]]
        rec["xf"][:, 3:] = rot.as_quat()
        rec["q"] = Rotation.from_rotvec([[0.1, 0, 0], [0, 0.2, 0]]).as_quat()
        before = rec.copy()
        res = tack.zeros(2, vec)
        if S is Pose:
            tack.kernel(step, jit=jit)(rec, Pose(xf=np.array([0, 0, 5, 0, 0, 0, 1], np.float32)), res)
            out = res.numpy()
            np.testing.assert_allclose(out, rot.apply([1, 0, 0]) + before["xf"][:, :3] + [0, 0, 5], atol=1e-6)
            q = (Rotation.from_quat(before["q"]) * Rotation.from_quat(before["xf"][:, 3:])).as_quat()
            np.testing.assert_allclose(rec["xf"][:, :3], before["xf"][:, :3] + [0, 0, 1], atol=1e-6)
            np.testing.assert_allclose(rec["xf"][:, 3:], q, atol=1e-6)
            np.testing.assert_allclose(rec["q"][:, 0], rec["xf"][:, 2], atol=0)
            np.testing.assert_allclose(rec["q"][:, 1:], q[:, 1:], atol=1e-6)
        else:
            tack.kernel(step, jit=jit)(rec, res)
            out = res.numpy()
            np.testing.assert_allclose(out, rot.apply([1, 0, 0]) + before["xf"][:, :3], rtol=1e-14, atol=1e-15)
            np.testing.assert_allclose(rec["xf"][:, :3], 2 * before["xf"][:, :3], rtol=0, atol=0)
            q = (Rotation.from_quat(before["xf"][:, 3:]) * Rotation.from_quat(before["q"])).as_quat()
            np.testing.assert_allclose(rec["xf"][:, 3:], q, atol=1e-15)
    with pytest.raises(tack.CompileError, match=r"assigning to an attribute \('b\[i\]\.xf\.p = \.\.\.'\)") as e:
        tack.kernel(pose_part_store, jit=jit)(np.zeros(2, Pose.dtype), tack.zeros(2, tack.vec3))
    assert e.value.lineno == pose_part_store.__code__.co_firstlineno + 2


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
def test_transform_fields_on_an_opencl_device():
    rec = np.zeros(3, Pose.dtype)
    rec["xf"] = [[1, 2, 3, 0, 0, np.sin(0.25), np.cos(0.25)]] * 3
    rec["q"] = [[0, np.sin(0.1), 0, np.cos(0.1)]] * 3
    by_value = Pose(xf=np.array([0, 0, 5, 0, 0, 0, 1], np.float32))
    cpu = rec.copy()
    out = tack.zeros(3, tack.vec3)
    tack.kernel(pose_step)(cpu, by_value, out)
    dev = tack.array(rec, dtype=Pose, device=OPENCL)
    dout = tack.zeros(3, tack.vec3, device=OPENCL)
    tack.kernel(pose_step)(dev, by_value, dout)
    assert dev.numpy().tobytes() == cpu.tobytes() and dout.numpy().tobytes() == out.numpy().tobytes()
