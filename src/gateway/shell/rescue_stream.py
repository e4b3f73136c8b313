"""Reading a rescue's stream (SPEC §16): its bytes through the ``Continuation`` that joins them to
the cut answer, under the relay's stall rule, and saying how a rescue ended.

The rescue's stream is read one upstream read at a time: the rare path, so a Python wake per read
is taken rather than the translated relay's paced batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway import isolate
from gateway.core.rescue import Fault, RescueRecord
from gateway.shell.http import settled, unawaited
from gateway.shell.stream import OpenedStream, StallWatch
from gateway.surfaces.continuation import Continuation

if TYPE_CHECKING:  # the rescuer is the routes' (it runs the fallback loop); only its type here
    from gateway.routes.rescue import Rescued

__all__ = ["RescueStream", "close", "said"]

logger = logging.getLogger("fllmapi")


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
        watchdog = StallWatch(self._stall_s, opened.answer)
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


def said(
    request_id: str | None, cut: str, fault: Fault, outcome: str, reason: str | None,
    rescued: Rescued | None = None, wait_ms: int | None = None,
) -> None:
    """Keep the record of a broken stream that rescue was on for (the admin status, SPEC §16) and
    log it when it was not rescued: ``stream not rescued: <fault> (via <cut>, request <id>):
    <why>`` (a rescue is logged by ``stream.log_rescue``). No text of the answer, no key."""
    record = RescueRecord(
        isolate.now_ms(), request_id, cut, str(fault), outcome, reason,
        rescued.label if rescued else None, str(rescued.method) if rescued else None,
        rescued.trail if rescued else None, wait_ms,
    )  # fmt: skip
    isolate.current().rescues.add(record)
    if outcome != "rescued":
        logger.warning("stream not rescued: %s (via %s, request %s): %s", fault, cut, request_id, reason)
