"""JAX (CPU) consuming Tack arrays through DLPack.

JAX is installed by ``make test`` (the ``peers`` extra); where it cannot be
installed these tests are skipped with the reason."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tack  # noqa: E402

jax = pytest.importorskip("jax", reason="JAX is not installed (uv sync --group peers installs jax[cpu])")
jnp = pytest.importorskip("jax.numpy")


@pytest.mark.parametrize("dt", [tack.bool, tack.i8, tack.i32, tack.u8, tack.u32, tack.f16, tack.f32],
                         ids=lambda d: d.name)
def test_jax_reads_tack_arrays(dt):
    src = np.arange(12).reshape(3, 4) % 2 if dt is tack.bool else np.arange(12).reshape(3, 4)
    a = tack.array(src, dtype=dt)
    j = jnp.from_dlpack(a)
    assert j.dtype == np.dtype(dt.numpy) and j.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(j), a.numpy())


def test_jax_64_bit_types():
    a = tack.array(np.arange(5, dtype=np.float64))
    j = jnp.from_dlpack(a)
    # Without jax_enable_x64 JAX may narrow 64-bit input; the values survive.
    np.testing.assert_array_equal(np.asarray(j), np.arange(5))


def test_jax_vectors_zero_d_and_empty():
    assert jnp.from_dlpack(tack.zeros(4, tack.vec3)).shape == (4, 3)
    assert jnp.from_dlpack(tack.array(np.float32(1.5))).shape == ()
    assert jnp.from_dlpack(tack.zeros((0, 2))).shape == (0, 2)


def test_jax_result_outlives_the_tack_handle():
    a = tack.array(np.arange(1000, dtype=np.float32))
    j = jnp.from_dlpack(a)
    del a
    import gc

    gc.collect()
    assert float(j.sum()) == float(np.arange(1000).sum())


def test_jax_device_query():
    a = tack.zeros(2)
    assert a.__dlpack_device__() == (1, 0)
    j = jnp.from_dlpack(a)
    assert j.devices().pop().platform == "cpu"
