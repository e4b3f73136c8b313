"""Relaying a stream that a surface translates (SPEC §12): OpenAI SSE in, the surface's bytes out.

Like ``stream.Relay`` it takes over after the first upstream event (a bad start has already failed
over) and never lets a cut, failed or stalled upstream look like a finished answer: the
translator's ``fail`` ends the stream instead of its ``end``.

The upstream is piped natively into a ``TransformStream`` whose ``transform`` is the translator:
one synchronous Python call per upstream read and no ``await`` (a Python await of a JS promise
costs more than the translation itself; measured in ``scripts/bench_relay.py``). Python awaits
the pipe once, for the stream's end; the stall watchdog wakes a few times per stall period, never
per read. No JS is written here: workerd forbids ``eval`` (PLATFORM-NOTES §5.6), so the one
callback is a Python function. The head goes in through the writable, as the first read (a
``start`` callback that is a Python proxy crashes the V8 of Node 22, the local runtime, in its
deoptimizer once the code is warm), and the writer is released only once it is written (workerd
drops a released writer's queued writes).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js

from gateway.shell.http import fulfilled, plain
from gateway.shell.stream import STALL_CHECKS, OpenedStream
from gateway.shell.tasks import Later
from gateway.surfaces.contract import StreamTranslator

__all__ = ["TranslatedRelay"]

# The pipe leaves the caller's side to the relay: it stays open after the upstream closes or fails,
# for the translator's end or error event. The upstream is cancelled by the pipe whenever the
# caller's side stops first (the caller went away, or the translated answer is over).
_PIPE_OPTIONS = {"preventClose": True, "preventAbort": True}


class TranslatedRelay:
    """The caller's side of a translated stream is ``readable``; ``run()`` pipes the upstream into
    it to its end (give it to waitUntil)."""

    def __init__(
        self, opened: OpenedStream, stall_ms: int, label: str, translator: StreamTranslator, secret: str | None = None
    ) -> None:
        """``secret``: the provider key the upstream was sent; never passed on, should the
        upstream echo it in an error the translator turns into the surface's own event."""
        self._opened = opened
        self._translator = translator
        self._stall_s = stall_ms / 1000
        self._label = label
        self._secret = secret.encode() if secret else b""
        self._reads = 0
        self._started = time.monotonic()
        self._over = False  # the caller's side was closed: nothing more is sent
        self._stalled = False
        self._controller: Any = None  # the caller side's, given to the head's transform
        self._transform = create_proxy(self._on_read)
        # A readable side of one chunk: its desiredSize tells a waiting caller from a slow one.
        readable_strategy = plain({"highWaterMark": 1})
        self._pipe = js.TransformStream.new(plain({"transform": self._transform}), None, readable_strategy)
        self.readable = self._pipe.readable
        # The head is the first chunk through the translator; the pipe's chunks follow it.
        self._writer = self._pipe.writable.getWriter()
        self._head_written = self._writer.write(to_js(opened.head))

    async def run(self) -> None:
        watchdog = Later(self._stall_s / STALL_CHECKS, self._watch)
        try:
            head_written = await fulfilled(self._head_written)
            if not head_written or self._over:  # the caller went away, or the head held it all
                await fulfilled(self._opened.reader.cancel())
                return
            self._writer.releaseLock()
            self._opened.reader.releaseLock()
            closed = await fulfilled(self._opened.answer.body.pipeTo(self._pipe.writable, plain(_PIPE_OPTIONS)))
            if not self._over:
                self._send(self._ending(closed))
        finally:
            watchdog.cancel()
            self._transform.destroy()

    def _on_read(self, chunk: Any, controller: Any) -> None:
        self._controller = controller
        self._reads += 1
        if not self._over:
            self._send(self._translate(chunk.to_bytes()))

    def _send(self, out: bytes) -> None:
        """Queue ``out`` for the caller; once the answer is over, close the caller's side (which
        also ends the pipe and cancels the upstream). A caller that went away takes nothing."""
        try:
            if out:
                self._controller.enqueue(to_js(out))
            if self._over:
                self._controller.terminate()
        except JsException:  # the caller cancelled its side: the pipe ends and cancels the upstream
            self._over = True

    def _scrubbed(self, out: bytes) -> bytes:
        # One substring search per read: the translator re-encodes upstream text, so the key
        # can only be there if the upstream echoed it.
        return out.replace(self._secret, b"[redacted]") if self._secret and self._secret in out else out

    def _translate(self, data: bytes) -> bytes:
        """The translation of one read; after ``[DONE]`` also the surface's end, and the stream
        is over (an upstream that keeps its connection open must not stall a finished answer)."""
        translator = self._translator
        try:
            out = translator.feed(data)
            if translator.done:
                out += translator.end()
                self._over = True
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._over = True
            out = translator.fail(f"{self._label}: the gateway failed while relaying the stream")
        return self._scrubbed(out)

    def _ending(self, closed: bool) -> bytes:
        """The last bytes once the pipe stopped: ``closed`` when the upstream closed, False when
        it failed, stalled or the caller went away. The caller's side closes after them."""
        self._over = True
        translator = self._translator
        try:
            if self._stalled:
                out = translator.fail(f"{self._label}: no data from the upstream for {round(self._stall_s)}s")
            elif not closed:
                out = translator.fail(f"{self._label}: the upstream stream failed")
            else:
                out = translator.feed(b"\n\n")  # a last event may lack its blank line
                if translator.complete:
                    out += translator.end()
                else:
                    out += translator.fail(f"{self._label}: the upstream stream ended before the answer was complete")
        except Exception:  # noqa: BLE001 - as in _translate
            out = translator.fail(f"{self._label}: the gateway failed while relaying the stream")
        return self._scrubbed(out)

    async def _watch(self) -> None:
        """No upstream read for a whole stall period while the caller has room for more aborts
        the upstream request (which ends the pipe); the stream then ends as stalled. A caller that
        reads slowly keeps the caller's side full, so it is never taken for a stalled upstream.
        Its first look is a quarter period after the relay began."""
        seen, last_progress = 0, self._started
        while True:
            reads = self._reads
            # null once the caller's side is closed or errored (None before the head is through)
            room = None if self._controller is None else self._controller.desiredSize
            if reads != seen or not isinstance(room, int | float) or room <= 0:
                seen, last_progress = reads, time.monotonic()
            elif time.monotonic() - last_progress >= self._stall_s:
                self._stalled = True
                self._opened.answer.abort()
                return
            await asyncio.sleep(self._stall_s / STALL_CHECKS)
