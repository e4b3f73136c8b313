"""Usage of routed requests (SPEC §17, §18): counted in the isolate's book, written to D1 at most
once per ``usage_flush_minutes`` (the rules are ``core/counting.py``'s and ``core/usage.py``'s).

A request's count has one life: ``start`` when it is routed (``serving/routing.route``), ``end``
when its answer is over. The entry module ends it after the handler returned
(``end_unless_relayed``), unless a stream's relay took it over (``relayed``): the relay then ends
it when the stream is over, through the callback ``relay_end`` made. After each
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
from gateway.core.counting import RequestCount, Tokens, estimate_output, surface_of
from gateway.core.settings import Settings
from gateway.core.sse import first_event_size
from gateway.shell import d1
from gateway.shell.stream import StreamEnd

__all__ = ["end", "end_unless_relayed", "flush", "relay_end", "relayed", "start"]

logger = logging.getLogger("fllmapi")


def start(call: Call, settings: Settings, client: int, input_estimate: int) -> RequestCount:
    """A new count for ``call``, routed for ``client`` (0: the API token), kept on the call; the
    book is written as often as ``settings`` say."""
    book = isolate.current().usage
    book.interval_ms = settings.usage_flush_minutes * rules.MINUTE_MS
    call.count = RequestCount(book, client, surface_of(call.request.path), call.started_ms, input_estimate)
    return call.count


def end_unless_relayed(call: Call) -> None:
    """After the handler: end the request's count unless a relay ends it, and write when due."""
    if call.count is not None and not call.count.deferred:
        end(call)


def end(call: Call, cut: bool = False, broken: bool = False, rescued: bool = False) -> None:
    """End ``call``'s count (``RequestCount.end``), then write the book when due."""
    counted = call.count
    if counted is None:
        return
    try:
        counted.end(isolate.now_ms(), cut, broken, rescued)
        if isolate.current().usage.due(isolate.now_ms()):
            # Not started eagerly: the batch is built after the answer was handed back.
            call.ctx.waitUntil(asyncio.ensure_future(flush(call.env.DB)))
    except Exception as exc:  # noqa: BLE001 - counting must never fail the request it counts
        logger.error("usage not counted: %s", type(exc).__name__)


def relayed(call: Call) -> None:
    """The count's end is now a relay's (the callback ``relay_end`` made), not ``end_unless_relayed``'s."""
    if call.count is not None:
        call.count.deferred = True


def relay_end(call: Call, head: bytes) -> StreamEnd:
    """What a relay calls once its stream is over: the count ends with the stream's usage, or an
    estimate of one token per event, events as long as the first (in ``head``, the bytes read up
    to it)."""
    event_bytes = first_event_size(head)

    def stream_over(tokens: Tokens | None, stream_bytes: int, failed: bool, rescued: bool = False) -> None:
        if call.count is not None:
            call.count.report(tokens, estimate_output(stream_bytes, event_bytes))
        end(call, cut=failed or rescued, rescued=rescued)

    return stream_over


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
