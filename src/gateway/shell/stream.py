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

Nothing runs per chunk on a healthy stream: the bytes move by a native ``pipeTo`` into an
``IdentityTransformStream`` (workerd's native stream, where a spec ``TransformStream`` would wake
the isolate for every chunk). The little the relay still does while the stream lasts (the stall
watch, the stream's last bytes) runs in JavaScript (``piped.mjs``), which calls Python once, at
the end (see ``Relay``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

from pyodide.ffi import create_proxy

from gateway.core.attempt import Defect
from gateway.core.counting import Tokens, usage_of
from gateway.core.sse import Fault, First, FirstEvent, ended_properly, first_event, stream_error_event
from gateway.shell import jsmodules
from gateway.shell.http import UpstreamResponse, js_bytes, plain, settled
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
    """Forwards an opened stream as it came: ``start()`` hands it to ``piped.mjs`` (the native pipe,
    the stall watch and the end's bytes, in JavaScript) and gives the caller's side and the
    promise for ``waitUntil``; the loop calls ``_finish`` once, synchronously, at the end.

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
        self._stall_ms = stall_ms
        self._label = label
        self._request_id = request_id

    async def start(self) -> tuple[Any, Any]:
        """The caller's side (the head already written to it) and the promise to give waitUntil."""
        piped = await jsmodules.load("gateway/shell/piped.mjs")
        opened = self._opened
        opened.reader.releaseLock()
        started = piped.pipe(
            plain(
                {
                    "body": opened.answer.body,
                    "aborter": opened.answer.aborter,
                    "head": js_bytes(opened.head),
                    "stallMs": self._stall_ms,
                    "finish": create_proxy(self._finish),
                }
            )
        )
        return started.readable, started.done

    def _finish(self, end: str, read: int, tail: Any) -> Any:
        """How the stream ended (``piped.mjs``: eof, cut, stalled, gone, failed), the bytes read
        after the head, its last bytes: the stream is counted, and a failure logged; the bytes
        to send before the caller's side closes (the stream_error event, or none)."""
        last = tail.to_bytes()
        failure = _failure(end, ended_properly(last))
        out = b""
        if failure is not None:
            # Logged before the stream ends: the local runtime prints the request's line at its
            # end and looks for this one then.
            log_failure(failure, self._label, self._request_id)
            message = failure_message(failure, self._label, self._stall_ms / 1000)
            out = stream_error_event(message, CODES[failure])
        if self._on_end is not None:
            self._on_end(usage_of(last), len(self._opened.head) + read, failure is not None)
        return js_bytes(out)


def _failure(end: str, proper: bool) -> Fault | None:
    """How a passed-through stream failed, by how it ended and whether its last bytes are a proper
    end (``[DONE]``, or a finish reason, which an upstream that kept its connection open may have
    sent before it stalled); None when it did not, or when no one is there to tell."""
    if end == "gone" or (end in ("eof", "stalled") and proper):
        return None
    return {"cut": Fault.CUT, "stalled": Fault.STALLED, "eof": Fault.TRUNCATED}.get(end, Fault.GATEWAY)
