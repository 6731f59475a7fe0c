"""Wrong uses of Tack's public API: mypy must flag every line marked
``# E: code`` with that error code, and nothing else
(tests/python/test_typing.py; the file is checked, never run)."""

import numpy as np

import tack


@tack.kernel
def scale(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] * a


a = tack.zeros(4)
tack.zeros(4, dtyp=tack.f32)  # E: call-arg
tack.zeros(4, device=0)  # E: arg-type
tack.ones(4, tack.f32, "cpu")  # E: call-arg
tack.array([1.0, 2.0], copy="yes")  # E: arg-type
tack.kernel(fast_math="yes")  # E: call-overload
tack.kernel(fastmath=True)  # E: call-overload
tack.set_default_device(0)  # E: arg-type
tack.scan(a, exclusive=1)  # E: arg-type
tack.reduce(a, op="prod")  # E: arg-type
tack.sqroot(2.0)  # E: attr-defined
tack.from_dlpack(obj=np.zeros(3))  # E: call-arg
tack.Stream(handle="0x1")  # E: arg-type
tack.profile(trace=True)  # E: arg-type
tack.compile_kernels([(scale, (a, 2.0))], thread=2)  # E: call-arg
tack.HashGrid(np.zeros((4, 3)), cellsize=0.1)  # E: call-arg
tack.searchsorted(a, 1.0, side="middle")  # E: arg-type
scale.generated_source(a, 2.0, target=3)  # E: arg-type
a.numpy(1)  # E: call-arg
n: str = a.ndim  # E: assignment
