"""The rescue of a translated stream that broke (SPEC §16): whether one is tried, the keep-alives
while one is sought, the rescue's stream joined after the cut one, and the record of how it ended.

The relay (``translation.TranslatedRelay``) reads the upstream; once that stream is over without a
proper end, it hands the caller's side (an ``Outlet``) and the broken stream's fault to a
``StreamRescue``. The rescue asks the ``Rescuer`` (the request's, which runs the fallback loop once
more) for another candidate's stream, relays it through the ``Continuation`` that joins it to the
cut answer (read by ``rescue_stream.RescueStream``), and leaves the caller's side open when no
rescue was tried or nothing of one was sent, for the relay to fail as without rescue.

Each broken stream is kept as a ``RescueRecord`` (the admin status) through the rescuer, and
logged: ``stream not rescued: …`` here, ``stream rescued: …`` by ``stream.log_rescue``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.core import rules
from gateway.core.counting import Tokens
from gateway.core.rescue import Method, RescueRecord, eligibility
from gateway.core.sse import Fault
from gateway.shell.rescue_stream import RescueStream, close
from gateway.shell.stream import OpenedStream, failure_message, log_rescue
from gateway.surfaces.continuation import Continuation
from gateway.surfaces.watch import StreamWatch

__all__ = ["Outlet", "Rescued", "Rescuer", "StreamRescue"]

logger = logging.getLogger("fllmapi")

# Why a rescue was not sent, when no candidate delivered a first event.
_NO_RESCUER = "no other candidate could continue the answer"
_CALLER_GONE = "the caller went away"


@dataclass(frozen=True, slots=True)
class Rescued:
    """The rescue's stream, opened up to its first event: who sends it (``label``:
    ``provider/model``), by which method, its key in plain text (kept out of the caller's
    bytes), the rescue's failed attempts (``trail``, ``X-Fallback-Trail``'s form)."""

    opened: OpenedStream
    label: str
    model: str
    method: Method
    secret: str | None
    trail: str | None


class Rescuer(Protocol):
    """What rescue needs of the request it serves (``gateway.serving.rescue.LoopRescuer``).
    ``body``: the chat request as the upstream was sent it."""

    body: dict[str, Any]

    def tokens_before(self, usage: Tokens | None, partial: str) -> Tokens:
        """The broken attempt's tokens: its stated ``usage``, else estimates."""
        ...

    async def open(self, partial: str) -> Rescued | None:
        """The rescue's stream continuing ``partial``, or None when no candidate delivered one."""
        ...

    def keep(self, record: RescueRecord) -> None:
        """Keep the record of a broken stream (the admin status)."""
        ...


class Outlet(Protocol):
    """The caller's side of a broken stream, as its relay holds it. ``label``: the cut stream's
    ``provider/model``; ``request_id``: the answer's ``X-Request-Id``; ``stall_s``: the stall rule."""

    @property
    def label(self) -> str: ...

    @property
    def request_id(self) -> str | None: ...

    @property
    def stall_s(self) -> float: ...

    @property
    def over(self) -> bool:
        """The caller's side is closed, or the caller went away."""
        ...

    @property
    def gone(self) -> bool:
        """Sending failed: the caller went away."""
        ...

    def caller_gone(self) -> bool:
        """The caller went away: sending failed, or the caller's side was cancelled."""
        ...

    def hand_on(self, data: bytes) -> None:
        """``data`` (the cut stream's) through the translator to the caller."""
        ...

    def keep_alive(self) -> None: ...

    def stop_upstream(self) -> None: ...

    def add_secret(self, secret: str) -> None:
        """Another key kept out of the caller's bytes (the rescue's)."""
        ...

    def send_rescued(self, chunks: bytes) -> bool:
        """The continuation's chunks through the translator, its end once the answer is done;
        False once the caller's side is over."""
        ...

    def end_complete(self) -> None:
        """End the answer with the surface's end, when the translator holds a complete one."""
        ...

    def end_failed(self, failure: Fault, message: str) -> None:
        """End the stream with the surface's error for ``failure``, saying ``message``."""
        ...


class StreamRescue:
    """One broken stream's rescue: ``run(fault)``; then ``rescued`` says whether a rescue finished
    the answer, and ``bytes_read`` how much of the rescue's stream was read."""

    def __init__(self, outlet: Outlet, rescuer: Rescuer, watch: StreamWatch) -> None:
        self._outlet = outlet
        self._rescuer = rescuer
        self._watch = watch
        self.rescued = False
        self.bytes_read = 0

    async def run(self, fault: Fault) -> None:
        """When rescue allows it, finish the answer from another candidate. Leaves the stream open
        (``outlet.over`` unset) for the relay to fail as without rescue when no rescue was tried or
        nothing of one was sent."""
        outlet, watch, rescuer = self._outlet, self._watch, self._rescuer
        verdict = eligibility(True, rescuer.body, watch.streamed, fault)
        if not verdict.allowed:
            self._record_and_log(fault, "refused", verdict.reason)
            self._hand_on_held()
            return
        outlet.stop_upstream()
        broke = time.monotonic()
        outlet.keep_alive()
        if outlet.caller_gone():  # no one to finish the answer for (seen where a keep-alive was sent)
            self._record_and_log(fault, "refused", _CALLER_GONE)
            return
        keeper = asyncio.ensure_future(self._keep_alive())
        try:
            rescued = await rescuer.open(watch.streamed.text)
            if rescued is not None and outlet.caller_gone():
                close(rescued.opened)
                self._record_and_log(fault, "failed", _CALLER_GONE, rescued)
                return
            if rescued is None:
                self._record_and_log(fault, "failed", _NO_RESCUER)
                if watch.held:
                    self._hand_on_held()  # the upstream's own error, as without rescue
                else:
                    self._end_failed(fault, _NO_RESCUER, None)
                return
            wait_ms = int((time.monotonic() - broke) * 1000)
            await self._relay(fault, rescued, wait_ms)
        finally:
            keeper.cancel()

    async def _relay(self, fault: Fault, rescued: Rescued, wait_ms: int) -> None:
        """Relay the rescue's stream through its ``Continuation`` and the translator, to its end:
        the answer's end, or the surface's error (the seam refused, or the rescue broke too)."""
        outlet, watch = self._outlet, self._watch
        if rescued.secret:
            outlet.add_secret(rescued.secret)
        partial = watch.streamed.text
        before = self._rescuer.tokens_before(_tokens(watch), partial)
        continuation = Continuation(partial, outlet.label, watch.id, rescued.model, int(time.time()), before)
        reading = RescueStream(rescued.opened, continuation, outlet.stall_s)
        try:
            broken = await reading.run(outlet.send_rescued)
        finally:
            self.bytes_read = reading.bytes_read
        if not outlet.over and continuation.complete:
            # Finished without [DONE]: the surface's end, as for any stream that ends so.
            outlet.end_complete()
        if outlet.gone:
            return
        if outlet.over and not continuation.failed:
            self.rescued = True
            self._record_and_log(fault, "rescued", None, rescued, wait_ms)
            log_rescue(fault, outlet.label, outlet.request_id, rescued.label, rescued.method)
            return
        if continuation.refused is not None:
            broken = str(continuation.refused)
        elif continuation.error is not None:
            broken = "its stream reported an error"
        elif broken is None:
            broken = "its stream ended before the answer was complete"
        self._record_and_log(fault, "failed", broken, rescued, wait_ms)
        self._end_failed(fault, broken, rescued.label)

    def _end_failed(self, fault: Fault, why: str, rescuer: str | None) -> None:
        """End the stream with the surface's error for ``fault``, saying why no rescue finished it."""
        outlet = self._outlet
        failure = Fault.CUT if fault is Fault.PROVIDER_ERROR else fault
        rescue = f"the rescue by {rescuer} failed: {why}" if rescuer else f"no rescue: {why}"
        outlet.end_failed(failure, f"{failure_message(failure, outlet.label, outlet.stall_s)}; {rescue}")

    def _hand_on_held(self) -> None:
        """No rescue replaces the upstream's in-band error: hand it on, as without rescue."""
        if self._watch.held:
            self._outlet.hand_on(self._watch.held + b"\n\n")

    async def _keep_alive(self) -> None:
        outlet = self._outlet
        while not outlet.over:
            await asyncio.sleep(rules.RESCUE_KEEPALIVE_MS / 1000)
            if not outlet.over:
                outlet.keep_alive()

    def _record_and_log(
        self, fault: Fault, outcome: str, reason: str | None, rescued: Rescued | None = None, wait_ms: int | None = None
    ) -> None:
        """Keep the record of the broken stream (the admin status, SPEC §16) and log it when it
        was not rescued: ``stream not rescued: <fault> (via <cut>, request <id>): <why>`` (a
        rescue is logged by ``stream.log_rescue``). No text of the answer, no key."""
        request_id, cut = self._outlet.request_id, self._outlet.label
        record = RescueRecord(
            int(time.time() * 1000), request_id, cut, str(fault), outcome, reason,
            rescued.label if rescued else None, str(rescued.method) if rescued else None,
            rescued.trail if rescued else None, wait_ms,
        )  # fmt: skip
        self._rescuer.keep(record)
        if outcome != "rescued":
            logger.warning("stream not rescued: %s (via %s, request %s): %s", fault, cut, request_id, reason)


def _tokens(watch: StreamWatch) -> Tokens | None:
    usage = watch.usage
    return None if usage is None else Tokens.stated(usage.input_tokens, usage.output_tokens, usage.cached_tokens)
