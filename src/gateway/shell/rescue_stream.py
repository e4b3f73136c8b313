"""Reading a rescue's stream (SPEC §16): its bytes through the ``Continuation`` that joins them to
the cut answer, under the relay's stall rule (``rescue.StreamRescue`` decides what follows).

The rescue's stream is read one upstream read at a time: the rare path, so a Python wake per read
is taken rather than the translated relay's paced batches.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.shell.http import settled, unawaited
from gateway.shell.stream import OpenedStream, StallTimer
from gateway.surfaces.continuation import Continuation

__all__ = ["RescueStream", "close"]


def close(opened: OpenedStream) -> None:
    """Stop an opened stream's upstream: its reader cancelled, its request aborted."""
    unawaited(opened.reader.cancel())
    opened.answer.abort()


class RescueStream:
    """The rescue's stream, read by ``run(send)``; ``bytes_read``: its size so far."""

    def __init__(self, opened: OpenedStream, continuation: Continuation, stall_s: float) -> None:
        self._opened = opened
        self._continuation = continuation
        self._stall_s = stall_s
        self.bytes_read = len(opened.head)

    async def run(self, send: Callable[[bytes], bool]) -> str | None:
        """Hand each read's chunks to ``send`` (which answers False once the caller's side is
        over) until the continuation is done or failed, the caller's side is over, or the stream
        ends. None, or why the stream broke first (it stalled, or failed)."""
        opened, continuation = self._opened, self._continuation
        watchdog = StallTimer(self._stall_s, opened.answer)
        ended = False  # the upstream closed its stream
        try:
            going = send(continuation.feed(opened.head))
            while going and not continuation.failed and not continuation.done:
                ok, result = await settled(opened.reader.read())
                if not ok:
                    return "its stream stalled" if watchdog.stalled else "its stream failed"
                if result.done:
                    ended = True
                    send(continuation.close())
                    return None
                data = result.value.to_bytes()
                self.bytes_read += len(data)
                watchdog.seen()
                going = send(continuation.feed(data))
            return None
        finally:
            watchdog.cancel()
            if not ended:  # it may still be sending (after [DONE] too): stop it at its source
                close(opened)
