"""Exchange of Tack arrays with other libraries' own data structures.

``tack.interop.vtk`` shares arrays with VTK and copies whole VTK datasets.
NumPy and DLPack exchange need no submodule: see ``tack.array``,
``tack.from_dlpack`` and ``tack.array_from_ptr``.

The submodules import their peer library on first use, so ``import
tack.interop`` costs nothing when VTK is not installed.
"""

__all__ = ["vtk"]


def __getattr__(name):
    if name == "vtk":
        import importlib

        return importlib.import_module(__name__ + ".vtk")
    raise AttributeError(f"module 'tack.interop' has no attribute {name!r}")
