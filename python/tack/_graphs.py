"""tack.capture and tack.Graph: a stream's work captured once, replayed many times.

``with tack.capture(s) as g:`` makes ``s`` the thread's current stream for
the block and records the kernel launches, same-device copies and fills
queued on it, without running them; ``g.launch()`` (or
``g.launch(stream=other)``) replays them, in order, with the same arrays and
the same scalar values.  On CUDA and HIP the driver's stream capture makes
a graph that one call replays, on Level Zero a recorded command list; on the
CPU, OpenCL and Metal Tack keeps the list of calls and runs it at each
launch.  The capture and its refusals are libtack's
(src/runtime/graph.c); docs/backends.md, "Graphs", has the rules and
docs/design/decisions.md the reasons.
"""

from __future__ import annotations

from . import _core
from ._streams import Stream, _current

__all__ = ["Graph", "capture"]


class Graph:
    """The work ``tack.capture(stream)`` recorded; ``launch()`` replays it.

    A replay uses the arrays and scalar values of the captured calls: new
    contents of a captured array are seen, a name bound to another array is
    not.  The graph keeps its arrays and kernels alive while it lives.

    >>> import numpy as np, tack
    >>> @tack.kernel
    ... def inc(x):
    ...     for i in range(x.shape[0]):
    ...         x[i] += 1.0
    >>> x = tack.zeros(4)
    >>> s = tack.Stream("cpu")
    >>> with tack.capture(s) as g:
    ...     inc(x)
    >>> g.launch(); g.launch()
    >>> x.numpy().tolist()
    [2.0, 2.0, 2.0, 2.0]
    """

    def __init__(self, _stream=None):
        if not isinstance(_stream, Stream):
            raise TypeError("a tack.Graph is made by tack.capture(stream), not called directly")
        self._stream = _stream
        self._cap = None
        self._state = "capturing"

    @property
    def stream(self) -> Stream:
        """The stream the graph was captured on (where ``launch()`` replays it by default)."""
        return self._stream

    @property
    def device(self) -> str:
        """The device the graph runs on."""
        return self._stream.device

    @property
    def count(self) -> int:
        """How many launches, copies and fills were captured (0 until the capture ends)."""
        return _core._graph_info(self._cap)[1] if self._cap is not None else 0

    def launch(self, stream: Stream | None = None) -> None:
        """Replay the captured work on ``stream`` (default: the stream it was captured on), ordered
        after the work queued before it on any stream that used its arrays."""
        if self._cap is None:
            if self._state == "capturing":
                raise RuntimeError("Graph.launch() inside its own tack.capture block: the capture has not ended")
            raise RuntimeError("this graph's capture was discarded (an exception left its tack.capture block); "
                               "capture again")
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"Graph.launch(stream=) takes a tack.Stream or None, not {type(stream).__name__}")
        _core._graph_launch(self._cap, stream)

    def __repr__(self):
        return f"tack.Graph({self._state}, device={self.device!r}, count={self.count})"


class capture:
    """``with tack.capture(stream) as g:`` records the launches, copies and
    fills the block queues on ``stream``'s device into the graph ``g``,
    without running them; ``g.launch()`` runs them.  ``stream`` is the
    thread's current stream in the block.  Captures do not nest; an
    exception in the block discards the capture.  Inside it, what would wait
    for the captured work or read it on the host (``.numpy()``,
    ``tack.synchronize()``, ``stream.synchronize()``, events on the stream,
    copying host data in) raises ``ValueError``."""

    def __init__(self, stream: Stream):
        if not isinstance(stream, Stream):
            raise TypeError(f"tack.capture() takes a tack.Stream, not {type(stream).__name__}")
        self._stream = stream
        self._graph = None

    def __enter__(self) -> Graph:
        if self._graph is not None:
            raise RuntimeError("a tack.capture object is used once; make another for a new capture")
        graph = Graph(self._stream)
        _core._capture_begin(self._stream._cap)
        stack = getattr(_current, "stack", None)
        if stack is None:
            stack = _current.stack = []
        stack.append(self._stream)  # a tack.stream block inside comes back to it
        self._graph = graph
        return graph

    def __exit__(self, kind, value, tb):
        stack = _current.stack
        stack.pop()
        graph = self._graph
        try:
            cap = _core._capture_end(self._stream._cap)
        except Exception:
            graph._state = "discarded"
            if kind is None:
                raise
            return False  # the block's own exception is the one to see
        if kind is not None:
            graph._state = "discarded"
            del cap  # released: the block failed, so its capture is not kept
            return False
        graph._cap = cap
        graph._state = "ready"
        return False
