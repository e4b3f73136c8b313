"""Streams: opening an upstream SSE stream up to its first event, then relaying it (SPEC §2.6).

Before the first event has been forwarded a bad stream is an attempt's failure (the loop may
fail over): ``open_stream`` reads just that far. After it, ``Relay`` forwards the upstream's
bytes as they are and makes sure the caller never gets a truncated answer that looks complete:
an upstream error, a close without a proper end, or a stall ends the stream with an in-band
``stream_error`` event and no ``[DONE]``.

Such an end is a ``Fault``, and ``log_failure`` reports each on the ``fllmapi`` logger, one
warning line naming the request's id (``X-Request-Id``), as ``wrangler tail`` shows it; the local
runtime reads that line to mark the request's own (scripts/runtime/logline.mjs). The status was
sent long before, so the log is where such an end shows. ``translation.TranslatedRelay`` ends its
streams the same ways and reports them alike.

Python does no work per chunk on a healthy stream: the bytes move by a native ``pipeTo`` into an
``IdentityTransformStream`` (workerd's native stream: no JavaScript runs per chunk either, where a
spec ``TransformStream`` would wake the isolate for every chunk); Python wakes a few times per
stall period and once at the end (see ``Relay``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

import js
from pyodide.ffi import to_js

from gateway.core.attempt import Defect
from gateway.core.counting import Tokens, usage_of
from gateway.core.sse import TAIL_BYTES, Fault, First, FirstEvent, ended_properly, first_event, stream_error_event
from gateway.shell.http import UpstreamResponse, fulfilled, plain, settled, unawaited
from gateway.shell.tasks import Later

__all__ = [
    "CODES",
    "STALL_CHECKS",
    "OpenedStream",
    "Relay",
    "StallTimer",
    "StreamEnd",
    "failure_message",
    "log_failure",
    "log_rescue",
    "open_stream",
]

logger = logging.getLogger("fllmapi")

# A first event larger than this is content by any measure: stop buffering and forward it.
FIRST_EVENT_MAX_BYTES = 64 * 1024
# The watchdog looks this many times per stall period, so a stall is seen within 1.25 periods.
STALL_CHECKS = 4
# One drain read takes up to this many queued bytes at once (BYOB).
_DRAIN_BYTES = 64 * 1024
_NOTHING_YET = "nothing yet"


# What a relay reports when its stream is over (the usage buckets, SPEC §17): the usage the stream
# carried, its bytes read, whether it failed, and (a rescuing relay, SPEC §16) whether it broke and
# another candidate finished it.
class StreamEnd(Protocol):
    def __call__(self, tokens: Tokens | None, stream_bytes: int, failed: bool, rescued: bool = False) -> None: ...


# What the caller reads after the upstream's name (a stall's message names its period).
_MESSAGES = {
    Fault.CUT: "the upstream stream failed",
    Fault.TRUNCATED: "the upstream stream ended before the answer was complete",
    Fault.GATEWAY: "the gateway failed while relaying the stream",
}
# The pass-through stream_error's code.
CODES = {
    Fault.CUT: "stream_interrupted",
    Fault.STALLED: "stream_stalled",
    Fault.TRUNCATED: "stream_truncated",
    Fault.GATEWAY: "stream_interrupted",
}


def failure_message(failure: Fault, label: str, stall_s: float) -> str:
    """The caller's message for ``failure`` of the stream from ``label`` (``provider/model``),
    whose stall period is ``stall_s`` seconds."""
    if failure is Fault.STALLED:
        return f"{label}: no data from the upstream for {round(stall_s)}s"
    return f"{label}: {_MESSAGES[failure]}"


def log_failure(failure: Fault, label: str, request_id: str | None) -> None:
    """Warn ``stream failed: <failure> (via <label>, request <request_id>)``, without the request
    part when there is no id. No key and no byte of the stream: the label is the routed-via name.
    The local runtime parses this line (logline.mjs, ``Faults``): keep the two in step."""
    if request_id is None:
        logger.warning("stream failed: %s (via %s)", failure.value, label)
    else:
        logger.warning("stream failed: %s (via %s, request %s)", failure.value, label, request_id)


def log_rescue(fault: object, label: str, request_id: str | None, by: str, method: object) -> None:
    """Warn ``stream rescued: <fault> (via <label>, request <request_id>) by <provider/model>
    (<method>)`` (SPEC §16): the cut is said, and who finished the answer (``by``, by ``method``).
    The local runtime parses this line as they do ``log_failure``'s (logline.mjs): keep the two in
    step."""
    logger.warning("stream rescued: %s (via %s, request %s) by %s (%s)", fault, label, request_id, by, method)


class StallTimer:
    """The stall rule of a relay that reads its upstream itself: no bytes for a whole stall
    period aborts ``answer``'s request (the read then fails, and ``stalled`` says why). It looks
    every quarter period, the first a quarter period from now. ``seen()`` when bytes came;
    ``cancel()`` once the stream is over."""

    def __init__(self, stall_s: float, answer: UpstreamResponse) -> None:
        self.stalled = False
        self._stall_s = stall_s
        self._answer = answer
        self._progress = time.monotonic()
        self._later = Later(stall_s / STALL_CHECKS, self._watch)

    def seen(self) -> None:
        self._progress = time.monotonic()

    def cancel(self) -> None:
        self._later.cancel()

    async def _watch(self) -> None:
        while True:
            if time.monotonic() - self._progress >= self._stall_s:
                self.stalled = True
                self._answer.abort()
                return
            await asyncio.sleep(self._stall_s / STALL_CHECKS)


@dataclass(frozen=True, slots=True)
class OpenedStream:
    """A stream whose first data event arrived: ``head`` is every byte read so far."""

    answer: UpstreamResponse
    reader: Any
    head: bytes
    first: FirstEvent


async def open_stream(answer: UpstreamResponse) -> OpenedStream | Defect:
    """Read up to the first data event under the attempt timer, then disarm it.

    ``EMPTY_STREAM`` when the stream closes before one, ``TIMEOUT`` when the timer fires,
    ``NETWORK`` when the connection fails. ``First.ERROR``/``First.DONE`` are returned as they are
    for the caller to judge."""
    body = answer.body
    if body is None:
        answer.disarm()
        return Defect.EMPTY_STREAM
    reader = body.getReader()
    head = b""
    while True:
        ok, result = await settled(reader.read())
        if not ok:
            answer.disarm()
            return Defect.TIMEOUT if answer.timed_out else Defect.NETWORK
        if result.done:
            answer.disarm()
            found = first_event(head + b"\n\n")  # a last event may lack its blank line
            return Defect.EMPTY_STREAM if found is None else OpenedStream(answer, reader, head, found)
        head += result.value.to_bytes()
        found = first_event(head)
        if found is None and len(head) > FIRST_EVENT_MAX_BYTES:
            found = FirstEvent(First.DATA, "")
        if found is not None:
            answer.disarm()
            return OpenedStream(answer, reader, head, found)


class Relay:
    """Forwards an opened stream to ``readable``; ``run()`` feeds it (give it to waitUntil).

    The bytes after the head go from the upstream to the caller by a native ``pipeTo`` into an
    ``IdentityTransformStream``: no Python and no JavaScript per chunk. A ``tee`` branch is drained
    only by the stall watchdog, a few times per stall period, in whole-queue BYOB reads that keep
    just the last bytes (to judge the ending). A stream over before the watchdog's first look
    (most are) costs Python three awaits: the head's write, the pipe and one read of the branch;
    the last writes to the caller are not awaited.

    ``label``: the upstream's ``provider/model``, named in the stream_error; ``request_id``: the
    answer's ``X-Request-Id``, named in the log when the stream fails (``log_failure``);
    ``on_end``: told once when the stream is over (``StreamEnd``).
    """

    def __init__(
        self,
        opened: OpenedStream,
        stall_ms: int,
        label: str,
        request_id: str | None = None,
        on_end: StreamEnd | None = None,
    ) -> None:
        self._opened = opened
        self._on_end = on_end
        self._stream_bytes = len(opened.head)  # and then what the watched branch drained
        self._stall_s = stall_ms / 1000
        self._label = label
        self._request_id = request_id
        self._tail = opened.head[-TAIL_BYTES:]
        self._watch_reader: Any = None
        self._pending_read: Any = None
        self._ended = False
        self._failed = False
        self._stalled = False
        # The head is written now, before the answer is even returned: its write completes when
        # the runtime reads the body, so the first bytes leave at once.
        self._pipe = js.IdentityTransformStream.new()
        self.readable = self._pipe.readable
        self._writer = self._pipe.writable.getWriter()
        self._head_written = self._writer.write(to_js(opened.head))

    async def run(self) -> None:
        if not await fulfilled(self._head_written):  # the caller went away
            await fulfilled(self._opened.reader.cancel())
            self._report_end(None)
            return
        # Released only once the head is written: workerd drops a released writer's queued
        # writes (the streams spec, and Node, keep them).
        self._writer.releaseLock()
        self._writer = None
        try:
            failure = await self._forward()
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            failure = Fault.GATEWAY
        writer = self._writer or self._pipe.writable.getWriter()  # _forward takes it after the pipe
        if failure is not None:
            # Logged before the stream ends: the local runtime prints the request's line at its end
            # and look for this one then.
            log_failure(failure, self._label, self._request_id)
            message = failure_message(failure, self._label, self._stall_s)
            unawaited(writer.write(to_js(stream_error_event(message, CODES[failure]))))
        unawaited(writer.close())
        self._report_end(failure)

    def _report_end(self, failure: Fault | None) -> None:
        """Report the stream's end: the usage its tail carries (an OpenAI stream's last chunk
        holds it, when it has one), its size, whether it failed."""
        if self._on_end is not None:
            self._on_end(usage_of(self._tail), self._stream_bytes, failure is not None)

    async def _forward(self) -> Fault | None:
        """Pipe the rest; None when it ended properly or the caller went away, else how it failed."""
        self._opened.reader.releaseLock()
        to_caller, watched = self._opened.answer.body.tee()
        self._watch_reader = watched.getReader(plain({"mode": "byob"}))
        # The pipe leaves both ends to us: the caller's side stays open for the stream_error
        # event, and the upstream is cancelled below (a tee branch's cancel waits for the other
        # branch's, so the pipe must not wait for it).
        options = plain({"preventClose": True, "preventAbort": True, "preventCancel": True})
        started = time.monotonic()
        watchdog = Later(self._stall_s / STALL_CHECKS, lambda: self._watch(started))
        piped = await fulfilled(to_caller.pipeTo(self._pipe.writable, options))
        watchdog.cancel()
        self._writer = self._pipe.writable.getWriter()
        # An errored side has no desiredSize: the caller went away. (workerd may end the pipe
        # without an error then; the upstream must be cancelled all the same.)
        caller_gone = not isinstance(self._writer.desiredSize, int | float)
        if not piped or caller_gone:
            cancelled = to_caller.cancel()
            await fulfilled(self._watch_reader.cancel())
            await fulfilled(cancelled)
            if caller_gone:
                return None  # no one to tell
            if self._stalled and ended_properly(self._tail):
                return None  # a whole answer ([DONE], or its finish_reason) whose upstream kept its connection open
            return Fault.STALLED if self._stalled else Fault.CUT
        while not self._ended:
            fresh = self._pending_read is None
            read = await self._drain(wait=True)
            # The pipe read the upstream to its end, so the branch holds all that is left: a read
            # made now that comes back short emptied it (its "done" need not be waited for).
            if fresh and 0 < read < _DRAIN_BYTES:
                break
        if self._failed:
            return Fault.CUT
        if not ended_properly(self._tail):
            return Fault.TRUNCATED
        return None

    async def _watch(self, last_progress: float) -> None:
        """Every quarter of the stall period (the first a quarter in), drain what arrived; no
        bytes for a whole period aborts the upstream request, which ends the pipe (the caller
        then gets ``stream_stalled``)."""
        while not self._ended:
            if await self._drain(wait=False):
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress >= self._stall_s:
                self._stalled = True
                self._opened.answer.abort()
                return
            await asyncio.sleep(self._stall_s / STALL_CHECKS)

    async def _drain(self, *, wait: bool) -> int:
        """Read what the watched branch holds (``wait``: also wait for the next bytes); keep the
        last ``TAIL_BYTES``. Returns the bytes read. A failed read ends the branch as failed
        (the pipe reports the same failure)."""
        got = 0
        while True:
            if self._pending_read is None:
                self._pending_read = self._watch_reader.read(js.Uint8Array.new(_DRAIN_BYTES))
            read = self._pending_read
            if not wait:
                # A read with bytes queued is already settled and wins the race; else it stays
                # pending (kept for the next drain) and the sentinel wins.
                read = js.Promise.race(to_js([read, js.Promise.resolve(_NOTHING_YET)]))
            ok, result = await settled(read)
            if ok and isinstance(result, str):
                return got
            self._pending_read = None
            if not ok or result.done:
                self._ended = True
                self._failed = not ok
                return got
            view = result.value
            size = int(view.byteLength)
            start = max(0, size - TAIL_BYTES)
            self._tail = (self._tail + view.subarray(start).to_bytes())[-TAIL_BYTES:]
            got += size
            self._stream_bytes += size
            if wait:
                return got
