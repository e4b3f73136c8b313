"""Relaying a stream that a surface translates (SPEC §12): OpenAI SSE in, the surface's bytes out.

Like ``stream.Relay`` it takes over after the first upstream event (a bad start has already failed
over) and never lets a cut, failed or stalled upstream look like a finished answer: the
translator's ``fail`` ends the stream instead of its ``end``, and the failure is logged
(``stream.log_failure``). A stream the upstream ended with an error event of its own is not: the
translator has already ended it with that error (its ``fail`` then returns nothing), as
``stream.Relay`` passes such an end on as it came.

What a translated stream costs is how often the isolate wakes, and a wake into Python costs far
more than one into JavaScript (SPEC §18). So the loop that runs per batch is ``paced.mjs``, a
JavaScript module of the Worker (``shell/jsmodules.py``): it
reads the upstream on the pacing schedule (``core/pacing.py``, the ``stream_pacing`` setting),
splices the events that only carry the next piece of text into the translator's templates
(``surfaces/contract.Plan``) and calls back here, synchronously, for a batch holding any other
event: the translator (and the rescue's watch) see that batch, and first what was spliced before
it (``absorb``). A steady 20 s answer costs ~30 wakes and a handful of Python calls: its head, a
block or call that opens, its end.

This module is the rest of the relay: the caller's side, a ``ReadableStream`` whose controller
both languages enqueue on (``enqueue`` returns nothing, where a writer's ``write`` returns a
promise, a wake), the head (translated before the answer is returned), and what follows the
loop: the surface's end or error, a rescue, the stream's count. No JS is evaluated here: workerd
forbids ``eval`` (PLATFORM-NOTES §5.6); the module is a file of the bundle.

With rescue on for the stream (a ``Rescuer``, SPEC §16), a ``StreamWatch`` stands before the
translator (whole events only, an in-band error held back: the loop then stops, ``halt``), and a
stream that breaks without a proper end is handed to a ``rescue.StreamRescue``, which may finish
it from another candidate's stream; the relay is its ``Outlet``, the caller's side.
"""

from __future__ import annotations

import json
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js

from gateway.core.pacing import Pacing, schedule
from gateway.core.sse import Fault, whole_events
from gateway.shell import jsmodules, tasks
from gateway.shell.http import js_bytes, plain, unawaited
from gateway.shell.rescue import Rescuer, StreamRescue
from gateway.shell.stream import (
    CODES,
    OpenedStream,
    StreamEnd,
    failure_message,
    log_failure,
)
from gateway.surfaces.batches import TranslatedBatches
from gateway.surfaces.contract import StreamTranslator
from gateway.surfaces.watch import StreamWatch

__all__ = ["TranslatedRelay"]


class TranslatedRelay:
    """The caller's side of a translated stream is ``readable``; ``run()`` relays the upstream to
    its end, batch by batch on ``pacing``'s schedule (give it to waitUntil)."""

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
        pacing: Pacing = Pacing.PACED,
    ) -> None:
        """``label``: the upstream's ``provider/model``, named in the surface's error event;
        ``secret``: the provider key the upstream was sent; never passed on, should the upstream
        echo it in an error the translator turns into the surface's own event; ``request_id``:
        the answer's ``X-Request-Id``, named in the log when the stream fails; ``on_end``: told
        once when the stream is over (the translator's usage, the bytes read); ``rescuer``: set
        when rescue is on for this stream (SPEC §16, ``_rescue``); ``pacing``: how long an event
        may wait for the ones after it (SPEC §18)."""
        self._opened = opened
        self._rescuer = rescuer
        # With rescue on, the translator is handed whole events only, and an in-band error is
        # held back until it is known whether a rescue replaces it.
        self._watch = StreamWatch() if rescuer is not None else None
        self._batches = TranslatedBatches(translator, self._watch, [secret] if secret else [])
        self._on_end = on_end
        self._stream_bytes = len(opened.head)
        self._failed = False
        self._translator = translator
        self._stall_ms = stall_ms
        self._pacing = pacing
        self._label = label
        self._request_id = request_id
        self._secrets = [secret] if secret else []  # for the loop, which keeps them out too
        self._over = False  # the caller's side is closed, or the caller went away
        self._gone = False  # the caller went away
        self._rescued = False  # the stream broke and a rescue finished it (SPEC §16)
        self._upstream_failed = False
        self._upstream_stopped = False
        self._stalled = False
        self._relay_failed = False
        # The constructor calls ``start`` at once, with the controller. ``start`` is a native
        # function that keeps it, not a Python proxy (a proxy as a stream's ``start`` crashes
        # Node 22's V8 in its deoptimizer once the code is warm).
        kept = js.Array.new()
        # ``cancel`` likewise: the reason of a caller's cancel lands in ``_cancelled``.
        self._cancelled = js.Array.new()
        source = {"start": kept.push.bind(kept), "cancel": self._cancelled.push.bind(self._cancelled)}
        self.readable = js.ReadableStream.new(plain(source))
        self._controller = kept[0]
        # The head's whole events (the prologue and the first event) go at once, before the
        # answer is returned; the loop goes on from the rest.
        whole, self._head_rest = whole_events(opened.head)
        self._send(self._translate(whole))

    async def start(self) -> Any:
        """Start the loop (``paced.mjs``); the promise to give ``waitUntil``, settled once the
        stream is over. No Python waits on it: the loop calls back, synchronously, for a batch it
        does not splice (``_batch``) and once at the end (``_finish``)."""
        paced = await jsmodules.load("gateway/shell/paced.mjs")
        self._opened.reader.releaseLock()
        return paced.relay(
            plain(
                {
                    "body": self._opened.answer.body,
                    "aborter": self._opened.answer.aborter,
                    "controller": self._controller,
                    "cancelled": self._cancelled,
                    "tail": js_bytes(self._head_rest),
                    "state": self._batches.state(),
                    "translate": create_proxy(self._batch),
                    "finish": create_proxy(self._finish),
                    "schedule": json.dumps(schedule(self._pacing)),
                    "stallMs": self._stall_ms,
                    "secrets": self._secrets,
                }
            )
        )

    def _finish(self, end: str, consumed: int, tail: Any, record: str, raw: str) -> Any:
        """Called by the loop once it stopped reading (unless ``_batch`` ended the stream): how
        (``end``: over, halt, eof, cut, stalled, gone, failed), the bytes it read, the unfinished
        last event, what it spliced since it last called. Ends the stream; None, or when a rescue
        is tried (SPEC §16) the task that ends it."""
        self._upstream_stopped = True  # the loop stopped it, or it ended
        self._stream_bytes += consumed
        self._upstream_failed = end == "cut"
        self._stalled = end == "stalled"
        self._relay_failed = end == "failed"
        if end == "gone":
            self._over = self._gone = True
        try:
            self._batches.absorb(record, raw)
            rest = tail.to_bytes()
            if rest:  # an unfinished last event: the watch or the translator keeps it for the end
                if self._watch is not None:
                    self._watch.feed(rest)
                else:
                    self._send(self._batches.scrubbed(self._translator.feed(rest)))
            if self._broken():
                return tasks.start(self._rescue_then_end())
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._relay_failed = True
        self._end()
        return None

    def _end(self) -> None:
        if not self._over:
            self._send(self._ending())
        self.stop_upstream()
        if self._on_end is not None:
            self._on_end(self._translator.usage, self._stream_bytes, self._failed, self._rescued)

    def _batch(self, whole: Any, record: str, raw: str, consumed: int) -> Any:
        """Called by the loop for a batch it does not splice: ``whole`` its events (a Uint8Array),
        after ``record`` and ``raw``, what it spliced before them; ``consumed``: the bytes it has
        read. The translation to send, and the state the loop goes on with. When the batch ends
        the answer (``[DONE]``), the stream is ended here too, in the same call (the loop's last
        call is then for nothing: ``ended``)."""
        try:
            self._batches.absorb(record, raw)
        except Exception:  # noqa: BLE001 - as in _translate
            self._over = self._batches.over = True
            return to_js([js_bytes(self._fail(Fault.GATEWAY)), self._batches.state()])
        out = self._translate(whole.to_bytes())
        ended = self._batches.over and self._over and not self._gone
        if ended:
            self._upstream_stopped = True  # the loop stops it
            self._stream_bytes += consumed
            self._end()
        return to_js([js_bytes(out), self._batches.state(ended=ended)])

    def _broke_in_band(self) -> bool:
        return self._batches.broke_in_band

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

    def _translate(self, data: bytes) -> bytes:
        """The translation of one batch (``TranslatedBatches.translate``); a translator that fails
        ends the stream with the surface's error."""
        try:
            out = self._batches.translate(data)
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._batches.over = True
            out = self._batches.scrubbed(self._fail(Fault.GATEWAY))
        self._over = self._over or self._batches.over
        return out

    def _ending(self) -> bytes:
        """The last bytes once the upstream's stream is over: the surface's end when the answer is
        complete, else its error (the relay failed, the upstream stalled, failed, or ended too
        soon). The caller's side closes after them."""
        self._over = True
        translator = self._translator
        try:
            out = translator.feed(b"\n\n")  # a last event may lack its blank line
            if self._relay_failed:
                out = self._fail(Fault.GATEWAY)
            elif translator.complete:
                out += translator.end()
            elif self._stalled:
                out += self._fail(Fault.STALLED)
            elif self._upstream_failed:
                out += self._fail(Fault.CUT)
            else:
                out += self._fail(Fault.TRUNCATED)
        except Exception:  # noqa: BLE001 - as in _translate
            out = self._fail(Fault.GATEWAY)
        return self._batches.scrubbed(out)

    def _fail(self, failure: Fault) -> bytes:
        """The surface's error event for ``failure``, logged before it is sent (the local runtime
        looks for the line when the stream ends); ``b""``, and nothing logged, when the stream has
        already ended: the upstream's own error event ended it (the translator's contract)."""
        return self._fail_with(failure, failure_message(failure, self._label, self.stall_s))

    def _fail_with(self, failure: Fault, message: str) -> bytes:
        out = self._translator.fail(message, CODES[failure])
        if out:
            self._failed = True
            log_failure(failure, self._label, self._request_id)
        return out

    # -- rescue (SPEC §16) ------------------------------------------------------------------------

    def _broken(self) -> bool:
        """With rescue on, whether the upstream's stream is over without a proper end (its last
        event handed on first): a ``StreamRescue`` may then finish the answer."""
        watch = self._watch
        if self._over or watch is None or self._relay_failed:
            return False
        self.hand_on(watch.close())  # an unterminated last event
        return not self._over and not self._translator.complete

    async def _rescue_then_end(self) -> None:
        try:
            await self._rescue()
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._relay_failed = True
        self._end()

    async def _rescue(self) -> None:
        """Finish the broken answer from another candidate, if the rescue can (see the module doc)."""
        watch = self._watch
        assert watch is not None and self._rescuer is not None  # a watch is kept only with a rescuer
        fault = (
            Fault.PROVIDER_ERROR if watch.error is not None
            else Fault.STALLED if self._stalled
            else Fault.CUT if self._upstream_failed
            else Fault.TRUNCATED
        )  # fmt: skip
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
        return self._stall_ms / 1000

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
        self._send(self._batches.scrubbed(self._translator.feed(data)))

    def keep_alive(self) -> None:
        self._send(self._translator.keep_alive())

    def stop_upstream(self) -> None:
        """Stop the upstream unless it has ended or the loop stopped it: it may still be sending
        (the answer was over at its head, or its stream broke there with an error event)."""
        if not self._upstream_stopped:
            self._upstream_stopped = True
            answer = self._opened.answer
            body = answer.body
            if body is not None:
                unawaited(body.cancel())
            answer.abort()

    def add_secret(self, secret: str) -> None:
        self._batches.add_secret(secret)

    def send_rescued(self, chunks: bytes) -> bool:
        if chunks:
            translator = self._translator
            out = translator.feed(chunks)
            if translator.done:
                out += translator.end()
                self._over = True
            self._send(self._batches.scrubbed(out))
        return not self._over

    def end_complete(self) -> None:
        if not self._over and self._translator.complete:
            self._over = True
            self._send(self._batches.scrubbed(self._translator.end()))

    def end_failed(self, failure: Fault, message: str) -> None:
        self._send(self._batches.scrubbed(self._fail_with(failure, message)))
        self._over = True
        self._send(b"")
