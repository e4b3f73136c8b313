"""Usage of routed requests (SPEC §17, §18): counted in the isolate's book, written to D1 at most
once per ``usage_flush_minutes`` (the rules are ``core/counting.py``'s and ``core/usage.py``'s).

``visit`` starts a request's count when it is routed (``serving/routing.route``); whoever ends the
answer ends the count: the entry module after the handler returned (``finish``), or, for a stream,
its relay when the stream is over (``stream_ended``; ``hand_over`` tells ``finish`` so). After each
end the book is written when due, by a task given to ``waitUntil`` that runs once the answer is
handed back: one D1 batch, one row per hour changed, never on the request's own path.
``flush(force=True)`` is the admin's read: the serving isolate's counts are written before they are
read. A write that fails is not retried at once: the next due write carries the same hours again.

Counting never fails a request: an error in it is logged (by type) and the request goes on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from gateway import isolate
from gateway.call import Call
from gateway.core import rules
from gateway.core.counting import Tokens, Visit, estimate_output, first_event_bytes, surface_of
from gateway.core.settings import Settings
from gateway.shell import d1
from gateway.shell.stream import StreamEnd

__all__ = ["ended", "finish", "flush", "hand_over", "stream_ended", "visit"]

logger = logging.getLogger("fllmapi")


def visit(call: Call, settings: Settings, client: int, input_estimate: int) -> Visit:
    """A new count for ``call``, routed for ``client`` (0: the API token), kept on the call; the
    book is written as often as ``settings`` say."""
    book = isolate.current().usage
    book.interval_ms = settings.usage_flush_minutes * rules.MINUTE_MS
    call.visit = Visit(book, client, surface_of(call.request.path), call.started_ms, input_estimate)
    return call.visit


def finish(call: Call) -> None:
    """After the handler: end the request's count unless a relay ends it, and write when due."""
    if call.visit is not None and not call.visit.deferred:
        ended(call)


def ended(call: Call, cut: bool = False, broken: bool = False, rescued: bool = False) -> None:
    """End ``call``'s count (``Visit.end``), then write the book when due."""
    counted = call.visit
    if counted is None:
        return
    try:
        counted.end(isolate.now_ms(), cut, broken, rescued)
        if isolate.current().usage.due(isolate.now_ms()):
            # Not started eagerly: the batch is built after the answer was handed back.
            call.ctx.waitUntil(asyncio.ensure_future(flush(call.env.DB)))
    except Exception as exc:  # noqa: BLE001 - counting must never fail the request it counts
        logger.error("usage not counted: %s", type(exc).__name__)


def hand_over(call: Call) -> None:
    """The count's end is now a relay's (its ``stream_ended`` callback), not ``finish``'s."""
    if call.visit is not None:
        call.visit.deferred = True


def stream_ended(call: Call, head: bytes) -> StreamEnd:
    """What a relay calls once its stream is over: the count ends with the stream's usage, or an
    estimate of one token per event, events as long as the first (in ``head``, the bytes read up
    to it)."""
    event_bytes = first_event_bytes(head)

    def end(tokens: Tokens | None, stream_bytes: int, failed: bool, rescued: bool = False) -> None:
        if call.visit is not None:
            call.visit.report(tokens, estimate_output(stream_bytes, event_bytes))
        ended(call, cut=failed or rescued, rescued=rescued)

    return end


async def flush(db: Any, force: bool = False) -> None:
    """Write the isolate's changed hours when due (``force``: whenever one changed). A failed
    write is only logged: the book still holds the hours, and its next write carries them."""
    state = isolate.current()
    taken = state.usage.take(isolate.now_ms(), force)
    for hour_ms in taken.dropped:
        logger.warning("usage of the hour %d dropped unwritten: D1 failed for too long", hour_ms)
    if not taken:
        return
    try:
        await d1.write_usage(db, state.id, taken)
    except Exception as exc:  # noqa: BLE001 - whatever failed, the counts are kept
        logger.warning("usage not written (%s); kept for the next write", type(exc).__name__)
        return
    state.usage.written(taken, isolate.now_ms())
