"""Correct uses of Tack's public API: mypy must find nothing here
(tests/python/test_typing.py; the file is checked, never run)."""

import numpy as np

import tack


@tack.kernel
def saxpy(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel(fast_math=True, default_float=tack.f64, check_races=False)
def norms(v, out):
    for i in range(out.shape[0]):
        out[i] = tack.sqrt(tack.dot(v[i], v[i]))


@tack.kernel(jit=False)
def debugged(x):
    for i in tack.independent(range(x.shape[0])):
        tack.atomic_add(x, i, 1.0)


@tack.func
def twice(v):
    return 2.0 * v


x: tack.Array = tack.zeros(8, tack.f32, device="cpu")
y = tack.ones((8,), dtype=np.float32, requires_grad=False)
saxpy(2.0, x, y)
host: np.ndarray = y.numpy()
same: tack.Array = tack.asarray(host, device=None)
tack.copyto(same, host, casting="unsafe")
v = tack.array(np.zeros((4, 3), np.float32), tack.vec3, copy=True)
out = tack.empty(4, tack.f32)
norms(v, out)
debugged(np.zeros(3))
print(saxpy.generated_source(2.0, x, y, target="cpu")[:10], saxpy.specializations, debugged.specializations)
seconds: list[float] = tack.compile_kernels([(saxpy, (2.0, x, y))], threads=2)
dev: str = tack.get_default_device()
tack.set_default_device(dev)
tack.synchronize()
names: list[str] = tack.devices()
total = tack.reduce(y, "sum", initial=0.0)
prefix = tack.scan(y, exclusive=True, dtype=tack.f64)
keys, values = tack.sort(y, y)
order: tack.Array = tack.argsort(y)
where = tack.searchsorted(y, 1.0, side="right")
counts, edges = tack.histogram(y, bins=4, range=(0.0, 2.0))
with tack.profile(print=False) as prof:
    saxpy(1.0, x, y)
table: str = prof.table()
events: list[tack.ProfileEvent] = prof.events
s = tack.Stream("cpu")
e = s.record()
ms: float = e.elapsed_time(s.record())
with tack.stream(s):
    pass
with tack.Tape() as tape:
    saxpy(1.0, x, y)
tape.backward(grads={})
grid = tack.HashGrid(np.zeros((10, 3), np.float32), cell_size=0.5)
bvh = tack.Bvh(np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)).refit(np.zeros((2, 3)), np.ones((2, 3)))
tack.set_default_float(tack.f32)
f: tack.DType = tack.get_default_float()
kind: str = tack.dtype(np.float32).name
report = tack.info()
try:
    saxpy(1.0)
except tack.CompileError as err:
    print(err.filename, err.lineno)
