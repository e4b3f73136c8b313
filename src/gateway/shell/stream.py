"""Streams: opening an upstream SSE stream up to its first event, then relaying it (SPEC §2.6).

Before the first event has been forwarded a bad stream is an attempt's failure (the loop may
fail over): ``open_stream`` reads just that far. After it, ``Relay`` forwards the upstream's
chunks as they are (JS ``Uint8Array``s handed from reader to writer, never copied into Python)
and makes sure the caller never gets a truncated answer that looks complete: an upstream error,
a close without a proper end, or a stall ends the stream with an in-band ``stream_error`` event
and no ``[DONE]``.

Per chunk the relay does one read, one write and a clock read; the stall watchdog wakes once
per stall period, not per chunk, and the end of the stream is judged from its last chunks only.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from gateway.core.attempt import Defect
from gateway.core.sse import TAIL_BYTES, First, FirstEvent, ended_properly, first_event, stream_error_event
from gateway.shell.http import UpstreamResponse

__all__ = ["OpenedStream", "Relay", "open_stream"]

# A first event larger than this is content by any measure: stop buffering and forward it.
FIRST_EVENT_MAX_BYTES = 64 * 1024
# The last chunks kept to judge how a stream ended (their bytes are read only at the end).
_TAIL_CHUNKS = 4


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
        try:
            result = await reader.read()
        except JsException:
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
    """Forwards an opened stream to ``readable``; ``run()`` is the pump (give it to waitUntil)."""

    def __init__(self, opened: OpenedStream, stall_ms: int, label: str) -> None:
        self._reader = opened.reader
        self._head = opened.head
        self._stall_s = stall_ms / 1000
        self._label = label
        self._last_progress = time.monotonic()
        self._stalled = False
        pipe = js.TransformStream.new()
        self._writer = pipe.writable.getWriter()
        self.readable = pipe.readable

    async def run(self) -> None:
        watchdog = asyncio.ensure_future(self._watch())
        try:
            ending = await self._pump()
        finally:
            watchdog.cancel()
        try:
            if ending is not None:
                await self._writer.write(to_js(stream_error_event(*ending)))
            await self._writer.close()
        except JsException:
            pass  # the caller went away

    async def _pump(self) -> tuple[str, str] | None:
        """Forward every chunk; None when the stream ended properly, else the error to send."""
        tail: deque[Any] = deque(maxlen=_TAIL_CHUNKS)
        try:
            await self._writer.write(to_js(self._head))
        except JsException:
            await self._cancel_upstream()
            return None
        while True:
            try:
                result = await self._reader.read()
            except JsException:
                return (f"{self._label}: the upstream stream failed", "stream_interrupted")
            if result.done:
                break
            self._last_progress = time.monotonic()
            chunk = result.value
            tail.append(chunk)
            try:
                await self._writer.write(chunk)
            except JsException:
                await self._cancel_upstream()  # the caller went away: stop reading
                return None
        if self._stalled:
            seconds = round(self._stall_s)
            return (f"{self._label}: no data from the upstream for {seconds}s", "stream_stalled")
        end = (self._head + b"".join(c.to_bytes() for c in tail))[-TAIL_BYTES:]
        if not ended_properly(end):
            return (f"{self._label}: the upstream stream ended before the answer was complete", "stream_truncated")
        return None

    async def _watch(self) -> None:
        while True:
            idle = time.monotonic() - self._last_progress
            if idle >= self._stall_s:
                self._stalled = True
                await self._cancel_upstream()  # the pending read resolves as done
                return
            await asyncio.sleep(self._stall_s - idle)

    async def _cancel_upstream(self) -> None:
        try:
            await self._reader.cancel()
        except JsException:
            pass
