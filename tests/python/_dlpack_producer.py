"""A DLPack producer written with ctypes, for the tests of the import path.

Each Producer owns its memory (a ctypes buffer holding the elements after a
byte offset), a managed tensor (DLManagedTensorVersioned or the legacy
DLManagedTensor) describing it with whatever fields the test asks for,
valid or not, and a deleter that is a Python function behind a ctypes
CFUNCTYPE pointer: it counts its calls, drops the buffer (the producer's
memory is released) and, if asked, raises.  `capsule()` wraps the tensor
in a PyCapsule named as the DLPack Python specification says, whose
destructor calls the deleter only while the capsule is unconsumed (not yet
renamed "used_dltensor[_versioned]"), as a real producer's does; so every
tensor's deleter runs exactly once in its life, whoever ends it.

Nothing here is Tack's: it stands in for a foreign producer (a C library,
a framework) whose deleter happens to be Python code.
"""

import ctypes as C

DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2
DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED = 4

kDLInt, kDLUInt, kDLFloat, kDLOpaqueHandle, kDLBfloat, kDLComplex, kDLBool = 0, 1, 2, 3, 4, 5, 6
kDLCPU = 1


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32), ("dtype", DLDataType),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)),
                ("byte_offset", C.c_uint64)]


class DLPackVersion(C.Structure):
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]


# Both deleters take the managed tensor's address; a c_void_p keeps ctypes
# from building a pointer object the deleter does not need.
DELETER = C.CFUNCTYPE(None, C.c_void_p)


class DLManagedTensorVersioned(C.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", C.c_void_p), ("deleter", DELETER),
                ("flags", C.c_uint64), ("dl_tensor", DLTensor)]


class DLManagedTensor(C.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p), ("deleter", DELETER)]


_CAPSULE_DESTRUCTOR = C.CFUNCTYPE(None, C.c_void_p)
_api = C.pythonapi
_api.PyCapsule_New.restype = C.py_object
_api.PyCapsule_New.argtypes = [C.c_void_p, C.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = C.c_int
_api.PyCapsule_IsValid.argtypes = [C.c_void_p, C.c_char_p]
_api.PyCapsule_GetPointer.restype = C.c_void_p
_api.PyCapsule_GetPointer.argtypes = [C.c_void_p, C.c_char_p]
_api.PyCapsule_GetName.restype = C.c_char_p
_api.PyCapsule_GetName.argtypes = [C.py_object]

_live = {}  # address of a managed tensor -> its Producer, until the deleter runs


@DELETER
def _deleter(address):
    p = _live.get(address)  # stays registered after the call, so a second call counts too
    if p is None:
        return
    p.deleted += 1
    if p.deleted == 1:
        p.final = p.memory()  # what it held when it was given back
        p.buffer = None  # the producer's memory goes
    if p.raise_in_deleter:
        raise RuntimeError("deleter of a test producer raising on purpose")


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # Called while the capsule is deallocated: its address, no reference.
    for name in (b"dltensor_versioned", b"dltensor"):
        if _api.PyCapsule_IsValid(capsule, name):
            _deleter(_api.PyCapsule_GetPointer(capsule, name))
            return


class Producer:
    """A tensor with fields as given (see the module docstring).

    payload: the bytes the data pointer points at (64-byte aligned; the
    first element is `byte_offset` bytes into them); shape, strides: sequences of
    ints (strides None: a NULL pointer); dtype: (code, bits, lanes);
    null_data: a NULL data pointer; null_shape: a NULL shape pointer;
    ndim: overrides len(shape)."""

    def __init__(self, payload=b"", shape=(), strides=None, dtype=(kDLFloat, 64, 1), *, byte_offset=0,
                 flags=0, version=(1, 0), device=(kDLCPU, 0), versioned=True, null_data=False,
                 null_shape=False, ndim=None, raise_in_deleter=False):
        self.deleted = 0
        self.final = None
        self.raise_in_deleter = raise_in_deleter
        self.versioned = versioned
        self.payload = bytes(payload)
        self.buffer = (C.c_uint8 * (64 + len(self.payload)))()
        base = self.base = (C.addressof(self.buffer) + 63) // 64 * 64
        C.memmove(base, self.payload, len(self.payload))
        self.shape = (C.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (C.c_int64 * max(len(strides), 1))(*strides)
        self.managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        m = self.managed
        if versioned:
            m.version.major, m.version.minor = version
            m.flags = flags
        m.deleter = _deleter
        t = m.dl_tensor
        t.data = None if null_data else base
        t.device.device_type, t.device.device_id = device
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
        t.shape = None if null_shape else self.shape
        t.strides = self.strides
        t.byte_offset = byte_offset
        self.address = C.addressof(m)
        _live[self.address] = self

    def capsule(self):
        """A new capsule holding the tensor (the producer's part of __dlpack__)."""
        name = b"dltensor_versioned" if self.versioned else b"dltensor"
        return _api.PyCapsule_New(self.address, name, _capsule_destructor)

    def __dlpack__(self, **kw):
        return self.capsule()

    def __dlpack_device__(self):
        t = self.managed.dl_tensor
        return (t.device.device_type, t.device.device_id)

    def memory(self):
        """The bytes the producer holds now (None once its deleter ran)."""
        return None if self.buffer is None else C.string_at(self.base, len(self.payload))

    def forget(self):
        """Drop the registry's reference (at the end of a test)."""
        _live.pop(self.address, None)


def capsule_name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()
