"""The spec's "NumPy: an independent array" snippet, verbatim."""


def test_numpy_independent_array_snippet():
    import numpy as np
    import tack

    tack.set_default_device("cpu")
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = tack.array(host)
    host[:] = -1                              # does not change the Tack array
    np.testing.assert_array_equal(data.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    tack.copyto(data, host)                   # now it does
    np.testing.assert_array_equal(np.asarray(data), host)
