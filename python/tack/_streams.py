"""tack.Stream, tack.stream() and tack.Event: ordering work on a GPU.

A GPU device runs Tack's copies and launches on one stream of Tack's own
unless the program names another: ``tack.Stream(device)`` makes one,
``tack.Stream(device, handle=...)`` wraps another library's (PyTorch's
``torch.cuda.Stream``, CuPy's ``cupy.cuda.Stream``, or a raw ``CUstream`` /
``hipStream_t`` / OpenCL queue / Level Zero immediate command list / Metal
``MTLCommandQueue``), ``with
tack.stream(s):`` makes it current on the thread and
``kernel(..., stream=s)`` uses it for one call.  Events order streams on the
device (``record`` on one, ``wait`` on another) and time them.  An array used
on one stream and then on another is ordered between them by Tack, so the
choice of streams changes what may overlap, never a result.  The streams
and the ordering are libtack's (src/runtime/stream.c); docs/backends.md,
"Streams, events and graphs", has the rules.
"""

from __future__ import annotations

import contextlib
import threading

from . import _core

__all__ = ["Stream", "Event", "stream"]


def _device(device):
    if device is None:
        from . import get_default_device

        device = get_default_device()
    return str(device)


def _handle_of(obj):
    """A stream handle as an integer, from an int or another library's stream."""
    if isinstance(obj, int):
        return obj
    proto = getattr(obj, "__cuda_stream__", None)  # the CUDA stream protocol: (version, handle)
    if callable(proto):
        return int(proto()[1])
    for attr in ("cuda_stream", "ptr", "handle"):  # PyTorch, CuPy, Numba
        v = getattr(obj, attr, None)
        if isinstance(v, int):
            return v
    raise TypeError(f"handle= takes a stream handle (an int) or a PyTorch, CuPy or Numba stream, not "
                    f"{type(obj).__name__}")


class Stream:
    """A stream on a device: ``Stream(device)`` makes one; ``Stream(device,
    handle=h)`` wraps another library's (an int, or an object with
    ``__cuda_stream__``, ``cuda_stream`` or ``ptr``), which must outlive it.
    ``handle`` gives ours to other libraries (``torch.cuda.ExternalStream(s.handle)``,
    ``cupy.cuda.ExternalStream(s.handle)``).  On the CPU a stream orders
    nothing (every call returns when done): code written with streams runs
    there unchanged.

    >>> import numpy as np, tack
    >>> s = tack.Stream("cpu")
    >>> with tack.stream(s):
    ...     a = tack.zeros(4)
    >>> s.synchronize()
    """

    def __init__(self, device=None, *, handle=None):
        self._owner = None if handle is None or isinstance(handle, int) else handle  # keeps theirs alive
        self._cap = _core._stream_new(_device(device), None if handle is None else _handle_of(handle))
        name, h = _core._stream_info(self._cap)
        self._device_name = name
        self._handle = h

    @property
    def device(self) -> str:
        """The device the stream belongs to ("cuda:0", as ``Array.device`` names it)."""
        return self._device_name

    @property
    def handle(self) -> int:
        """The API's handle as an integer: a CUstream or hipStream_t, an OpenCL cl_command_queue,
        a Level Zero ze_command_list_handle_t (an immediate list), a Metal MTLCommandQueue (an id);
        0 on the CPU."""
        return self._handle

    def __cuda_stream__(self):
        """The CUDA stream protocol: (version 0, the handle)."""
        return (0, self._handle)

    def synchronize(self) -> None:
        """Wait for the work queued on the stream; a failed check in a kernel run on it raises here."""
        _core._stream_sync(self._cap)

    def record(self, event: Event | None = None) -> Event:
        """Record an event (a new one when none is given) after the work queued so far."""
        if event is None:
            event = Event(self._device_name)
        event.record(self)
        return event

    def wait(self, event: Event) -> None:
        """Make work queued on this stream from now on wait for the event, on the device."""
        event.wait(self)

    def __repr__(self):
        return f"tack.Stream({self._device_name!r}, handle={self._handle:#x})"


_current = threading.local()


@contextlib.contextmanager
def stream(s: Stream | None):
    """Make s the calling thread's current stream for the block: copies and
    launches on its device go to it (None: Tack's own stream).  Nests; the
    stream before is current again after the block."""
    if s is not None and not isinstance(s, Stream):
        raise TypeError(f"tack.stream() takes a tack.Stream or None, not {type(s).__name__}")
    stack = getattr(_current, "stack", None)
    if stack is None:
        stack = _current.stack = []
    stack.append(s)
    _core._stream_use(s)
    try:
        yield s
    finally:
        stack.pop()
        _core._stream_use(stack[-1] if stack else None)


class Event:
    """A point in a stream's work: ``record(stream)`` marks it, ``wait(stream)``
    makes another stream wait for it on the device, ``synchronize()`` waits
    on the host, ``query()`` says whether it was reached, and
    ``elapsed_time(end)`` gives the milliseconds between two timing events.
    A stream of None is the thread's current one on the event's device (else
    Tack's own).  On the CPU an event records the host's clock."""

    def __init__(self, device=None, *, timing: bool = True):
        self._device_name = _device(device)
        self._cap = _core._event_new(self._device_name, bool(timing))

    def record(self, stream: Stream | None = None) -> Event:
        """Mark the point after the work queued so far on stream; returns the event."""
        _core._event_op(self._cap, "record", stream)
        return self

    def wait(self, stream: Stream | None = None) -> None:
        """Make work queued on stream from now on wait for this event's point, on the device."""
        _core._event_op(self._cap, "wait", stream)

    def synchronize(self) -> None:
        """Wait on the host for this event's point (a never-recorded event: at once)."""
        _core._event_op(self._cap, "sync", None)

    def query(self) -> bool:
        """Whether this event's point has been reached (True for one never recorded)."""
        return _core._event_query(self._cap)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to `end` (both recorded, with timing=True); waits for `end`."""
        return _core._event_elapsed(self._cap, end._cap)

    def __repr__(self):
        return f"tack.Event({self._device_name!r})"
