"""Relaying a stream that a surface translates (SPEC §12): OpenAI SSE in, the surface's bytes out.

Like ``stream.Relay`` it takes over after the first upstream event (a bad start has already failed
over) and never lets a cut, failed or stalled upstream look like a finished answer: the
translator's ``fail`` ends the stream instead of its ``end``, and the failure is logged
(``stream.log_failure``). A stream the upstream ended with an error event of its own is not: the
translator has already ended it with that error (its ``fail`` then returns nothing), as
``stream.Relay`` passes such an end on as it came.

What a translated stream costs is how often the isolate wakes into Python: on workerd each wake
from the event loop (an awaited promise, a promise callback) costs far more than the translation
of an event (``scripts/bench``'s paced figures). So the relay does not wake per upstream read.
The upstream is piped natively into an inbox, an ``IdentityTransformStream``, and the relay reads
the inbox in batches: one BYOB ``readAtLeast(minimum, buffer)`` returns once ``minimum`` bytes
have come in, gathered by the runtime, or when the upstream has ended. ``minimum`` follows the
stream's own pace so that a batch spans about ``BATCH_MS``: a model that sends
one event every 20 ms wakes the relay every ``BATCH_MS`` for five of them, not five times. The
price is latency: an event may wait up to ``BATCH_MS`` for the rest of its batch. The first read
after the head is not held, nor is the rest of an answer once its finish reason is in.

A batch cannot be taken before it is whole, so bytes an upstream sends and then stops after (a
pause, a stall, an upstream that keeps its connection open after ``[DONE]``) wait in the inbox
until more come or the upstream ends. When the upstream fails or stalls, the pipe leaves the inbox
open and the relay closes it itself, which hands over what it holds: nothing is lost, and an
answer whose end was held still ends as finished.

Each batch's translation is enqueued on the caller's side, a ``ReadableStream`` whose controller
the relay holds: ``enqueue`` returns nothing, where a writer's ``write`` returns a promise, which
Pyodide turns into a Future whose settling wakes the isolate again. A caller who went away is
seen at the next enqueue (workerd notices it no sooner). No JS is written here: workerd forbids
``eval`` (PLATFORM-NOTES §5.6).

With rescue on for the stream (a ``Rescuer``, SPEC §16), a ``StreamWatch`` stands before the
translator (whole events only, an in-band error held back), and a stream that breaks without a
proper end is handed to a ``rescue.StreamRescue``, which may finish it from another candidate's
stream; the relay is its ``Outlet``, the caller's side.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from gateway.core.sse import Fault
from gateway.shell.http import fulfilled, plain, settled, unawaited
from gateway.shell.rescue import Rescuer, StreamRescue
from gateway.shell.stream import (
    CODES,
    OpenedStream,
    StallTimer,
    StreamEnd,
    failure_message,
    log_failure,
)
from gateway.surfaces.contract import StreamTranslator
from gateway.surfaces.watch import StreamWatch

__all__ = ["BATCH_MS", "TranslatedRelay"]

# How long a batch of upstream bytes spans, at the stream's own pace (see the module doc).
BATCH_MS = 250
# One read takes up to this many bytes; a batch never waits for more than a quarter of them.
_READ_BYTES = 64 * 1024
_MAX_MINIMUM = _READ_BYTES // 4
# The pace is a moving average of the bytes per second of each read: this much of the newest.
_PACE_WEIGHT = 0.5
# The upstream is piped into the inbox, which it closes when it ends; if it fails, the inbox is
# left open for the relay to close, handing over what it holds.
_INBOX_PIPE = {"preventAbort": True}


def _pace_minimum(bytes_per_s: float) -> int:
    """The bytes a batch waits for at ``bytes_per_s``: what arrives in ``BATCH_MS``, at least 1."""
    return max(1, min(_MAX_MINIMUM, int(bytes_per_s * BATCH_MS / 1000)))


class TranslatedRelay:
    """The caller's side of a translated stream is ``readable``; ``run()`` reads the upstream to
    its end, translating it batch by batch (give it to waitUntil)."""

    def __init__(
        self,
        opened: OpenedStream,
        stall_ms: int,
        label: str,
        translator: StreamTranslator,
        secret: str | None = None,
        request_id: str | None = None,
        on_end: StreamEnd | None = None,
        rescuer: Rescuer | None = None,
    ) -> None:
        """``label``: the upstream's ``provider/model``, named in the surface's error event;
        ``secret``: the provider key the upstream was sent; never passed on, should the upstream
        echo it in an error the translator turns into the surface's own event; ``request_id``:
        the answer's ``X-Request-Id``, named in the log when the stream fails; ``on_end``: told
        once when the stream is over (the translator's usage, the bytes read); ``rescuer``: set
        when rescue is on for this stream (SPEC §16, ``_rescue``)."""
        self._opened = opened
        self._rescuer = rescuer
        # With rescue on, the translator is handed whole events only, and an in-band error is
        # held back until it is known whether a rescue replaces it.
        self._watch = StreamWatch() if rescuer is not None else None
        self._on_end = on_end
        self._stream_bytes = len(opened.head)
        self._failed = False
        self._translator = translator
        self._stall_s = stall_ms / 1000
        self._label = label
        self._request_id = request_id
        self._secrets = [secret.encode()] if secret else []
        self._over = False  # the caller's side is closed, or the caller went away
        self._gone = False  # the caller went away
        self._rescued = False  # the stream broke and a rescue finished it (SPEC §16)
        self._stall: StallTimer | None = None  # the stall rule, once the relay runs
        self._upstream_failed = False
        self._relay_failed = False
        self._inbox = js.IdentityTransformStream.new()
        self._inbox_ended = False
        self._reader: Any = None
        # The constructor calls ``start`` at once, with the controller. ``start`` is a native
        # function that keeps it, not a Python proxy (a proxy as a stream's ``start`` crashes
        # Node 22's V8 in its deoptimizer once the code is warm).
        kept = js.Array.new()
        # ``cancel`` likewise: the reason of a caller's cancel lands in ``_cancelled``.
        self._cancelled = js.Array.new()
        source = {"start": kept.push.bind(kept), "cancel": self._cancelled.push.bind(self._cancelled)}
        self.readable = js.ReadableStream.new(plain(source))
        self._controller = kept[0]
        # The head (the prologue and the first event) goes at once, before the answer is returned.
        self._send(self._translate(opened.head))

    async def run(self) -> None:
        self._opened.reader.releaseLock()
        piped = self._opened.answer.body.pipeTo(self._inbox.writable, plain(_INBOX_PIPE))
        self._reader = self._inbox.readable.getReader(plain({"mode": "byob"}))
        # The relay reads the upstream whatever the caller's pace, so a slow caller is never taken
        # for a stalled upstream; when it stalls, the inbox is closed, and the stream ends as
        # stalled (or as finished, if its end was waiting in the inbox).
        self._stall = stall = StallTimer(self._stall_s, self._opened.answer)
        inbox_closer = asyncio.ensure_future(self._close_inbox_on_failure(piped))
        try:
            await self._pump(stall)
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._relay_failed = True
        finally:
            stall.cancel()
        if not self._over and self._watch is not None and not self._relay_failed:
            try:
                await self._rescue(self._watch)
            except Exception:  # noqa: BLE001 - as above
                self._relay_failed = True
        if not self._over:
            self._send(self._ending())
        self.stop_upstream()
        if self._on_end is not None:
            self._on_end(self._translator.usage, self._stream_bytes, self._failed, self._rescued)
        await inbox_closer

    def _broke_in_band(self) -> bool:
        return self._watch is not None and self._watch.error is not None

    async def _pump(self, stall: StallTimer) -> None:
        """Read and translate batches until the inbox ends (the upstream ended, failed or
        stalled), the answer is over ([DONE] was read, or the caller went away), or, with rescue
        on, the upstream reported an error in-band."""
        buffer = js.Uint8Array.new(_READ_BYTES)
        minimum, pace = 1, 0.0
        while not self._over and not self._broke_in_band():
            asked = time.monotonic()
            ok, result = await settled(self._reader.readAtLeast(minimum, buffer))
            if not ok:
                return
            view = result.value
            size = 0 if view is None else int(view.byteLength)
            if size:
                self._stream_bytes += size
                now = time.monotonic()
                stall.seen()
                self._send(self._translate(view.to_bytes()))
                buffer = js.Uint8Array.new(view.buffer)  # the read hands its buffer back
                rate = size / max(now - asked, 1e-3)
                pace = rate if not pace else _PACE_WEIGHT * rate + (1 - _PACE_WEIGHT) * pace
                minimum = 1 if self._translator.complete else _pace_minimum(pace)
            if result.done:
                self._inbox_ended = True
                return

    async def _close_inbox_on_failure(self, piped: Any) -> None:
        """When the upstream fails (or is aborted as stalled), close the inbox: the batch that
        waits in it is handed over, then the inbox ends."""
        if not await fulfilled(piped) and not self._over:
            self._upstream_failed = True
            unawaited(self._inbox.writable.close())

    def _send(self, out: bytes) -> None:
        """Enqueue ``out`` for the caller; once the answer is over, close the caller's side. A
        caller who went away has cancelled it: enqueueing throws, and the answer is over."""
        try:
            if out:
                self._controller.enqueue(to_js(out))
            if self._over:
                self._controller.close()
        except JsException:
            self._over = self._gone = True

    def _scrubbed(self, out: bytes) -> bytes:
        # One substring search per batch and key: the translator re-encodes upstream text, so a
        # key can only be there if the upstream echoed it.
        for secret in self._secrets:
            if secret in out:
                out = out.replace(secret, b"[redacted]")
        return out

    def _translate(self, data: bytes) -> bytes:
        """The translation of one batch; after ``[DONE]`` also the surface's end, and the stream
        is over (an upstream that keeps its connection open must not stall a finished answer)."""
        translator = self._translator
        try:
            if self._watch is not None:
                data = self._watch.feed(data)
            out = translator.feed(data)
            if translator.done:
                out += translator.end()
                self._over = True
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._over = True
            out = self._fail(Fault.GATEWAY)
        return self._scrubbed(out)

    def _ending(self) -> bytes:
        """The last bytes once the inbox ended: the surface's end when the answer is complete,
        else its error (the relay failed, the upstream stalled, failed, or ended too soon). The
        caller's side closes after them."""
        self._over = True
        translator = self._translator
        try:
            out = translator.feed(b"\n\n")  # a last event may lack its blank line
            if self._relay_failed:
                out = self._fail(Fault.GATEWAY)
            elif translator.complete:
                out += translator.end()
            elif self._stalled():
                out += self._fail(Fault.STALLED)
            elif self._upstream_failed:
                out += self._fail(Fault.CUT)
            else:
                out += self._fail(Fault.TRUNCATED)
        except Exception:  # noqa: BLE001 - as in _translate
            out = self._fail(Fault.GATEWAY)
        return self._scrubbed(out)

    def _fail(self, failure: Fault) -> bytes:
        """The surface's error event for ``failure``, logged before it is sent (the local runtime
        looks for the line when the stream ends); ``b""``, and nothing logged, when the stream has
        already ended: the upstream's own error event ended it (the translator's contract)."""
        return self._fail_with(failure, failure_message(failure, self._label, self._stall_s))

    def _fail_with(self, failure: Fault, message: str) -> bytes:
        out = self._translator.fail(message, CODES[failure])
        if out:
            self._failed = True
            log_failure(failure, self._label, self._request_id)
        return out

    def _stalled(self) -> bool:
        return self._stall is not None and self._stall.stalled

    # -- rescue (SPEC §16) ------------------------------------------------------------------------

    async def _rescue(self, watch: StreamWatch) -> None:
        """The upstream's stream is over without a proper end: its last event handed on, a
        ``StreamRescue`` may finish the answer (see the module doc)."""
        self.hand_on(watch.close())  # an unterminated last event
        if self._over or self._translator.complete:
            return
        fault = (
            Fault.PROVIDER_ERROR if watch.error is not None
            else Fault.STALLED if self._stalled()
            else Fault.CUT if self._upstream_failed
            else Fault.TRUNCATED
        )  # fmt: skip
        assert self._rescuer is not None  # a watch is kept only with a rescuer
        rescue = StreamRescue(self, self._rescuer, watch)
        try:
            await rescue.run(fault)
        finally:
            self._stream_bytes += rescue.bytes_read
            self._rescued = rescue.rescued

    # The ``rescue.Outlet`` a rescue finishes the answer through.

    @property
    def label(self) -> str:
        return self._label

    @property
    def request_id(self) -> str | None:
        return self._request_id

    @property
    def stall_s(self) -> float:
        return self._stall_s

    @property
    def over(self) -> bool:
        return self._over

    @property
    def gone(self) -> bool:
        return self._gone

    def caller_gone(self) -> bool:
        """The caller went away: an enqueue failed, or the caller's side was cancelled."""
        return self._gone or self._cancelled.length > 0

    def hand_on(self, data: bytes) -> None:
        self._send(self._scrubbed(self._translator.feed(data)))

    def keep_alive(self) -> None:
        self._send(self._translator.keep_alive())

    def stop_upstream(self) -> None:
        """Stop the upstream unless it has ended: it may still be sending (the answer was over at
        [DONE], the caller went away, or its stream broke with an error event). A pipe notices a
        cancelled inbox only at its next chunk, so the request is aborted at its source."""
        if not self._inbox_ended:
            self._inbox_ended = True
            unawaited(self._reader.cancel())
            self._opened.answer.abort()

    def add_secret(self, secret: str) -> None:
        self._secrets.append(secret.encode())

    def send_rescued(self, chunks: bytes) -> bool:
        if chunks:
            translator = self._translator
            out = translator.feed(chunks)
            if translator.done:
                out += translator.end()
                self._over = True
            self._send(self._scrubbed(out))
        return not self._over

    def end_complete(self) -> None:
        if not self._over and self._translator.complete:
            self._over = True
            self._send(self._scrubbed(self._translator.end()))

    def end_failed(self, failure: Fault, message: str) -> None:
        self._send(self._scrubbed(self._fail_with(failure, message)))
        self._over = True
        self._send(b"")
