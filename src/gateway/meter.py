"""Usage of routed requests (SPEC §17): counted in the isolate's book, written to D1 at most once a
minute (the rules are ``core/usage.py``'s).

``visit`` starts a request's count when it is routed (``routes/routing.route``); whoever ends the
answer ends the count: the entry module after the handler returned, or, for an answer that is still
being sent (a stream, a body read for its usage), the task sending it, which calls ``Visit.end``
through ``ended``. After each end the book is flushed when due, in ``waitUntil``: one D1 batch,
never on the request's own path. ``flush(force=True)`` is the admin's read: the serving isolate's
counts are written before they are read.
"""

from __future__ import annotations

import logging
from typing import Any

from gateway import isolate
from gateway.core.usage import Tokens, Visit, estimate_output, surface_of
from gateway.errors import StorageError
from gateway.routes import Call
from gateway.shell import d1, tasks
from gateway.shell.stream import StreamEnd

__all__ = ["ended", "finish", "flush", "stream_ended", "visit"]

logger = logging.getLogger("fllmapi")


def visit(call: Call, client: int, input_estimate: int) -> Visit:
    """A new count for ``call``, routed for ``client`` (0: the API token), kept on the call."""
    call.visit = Visit(isolate.current().usage, client, surface_of(call.request.path), call.started_ms, input_estimate)
    return call.visit


def finish(call: Call) -> None:
    """After the handler: end the request's count unless its answer's sender ends it, and flush
    when due."""
    counted = call.visit
    if counted is not None and not counted.deferred:
        counted.end(isolate.now_ms())
        _flush_when_due(call)


def ended(call: Call, tokens: Tokens | None = None, output_estimate: int = 0, cut: bool = False) -> None:
    """The deferred end of ``call``'s count (see ``Visit.end``), then a flush when due."""
    counted = call.visit
    if counted is not None:
        counted.end(isolate.now_ms(), tokens, output_estimate, cut)
        _flush_when_due(call)


def stream_ended(call: Call, head: bytes) -> StreamEnd:
    """What a relay calls once its stream is over: the count ends with the stream's usage, or an
    estimate of one token per event, events as long as the first (in ``head``, the bytes read up to
    it)."""
    end_of_first = head.find(b"\n\n")
    event_bytes = len(head) if end_of_first < 0 else end_of_first + 2
    if call.visit is not None:
        call.visit.deferred = True

    def end(tokens: Tokens | None, stream_bytes: int, failed: bool) -> None:
        ended(call, tokens, estimate_output(stream_bytes, event_bytes), failed)

    return end


def _flush_when_due(call: Call) -> None:
    if isolate.current().usage.due(isolate.now_ms()):
        call.ctx.waitUntil(tasks.start(flush(call.env.DB)))


async def flush(db: Any, force: bool = False) -> None:
    """Write the isolate's buckets and events when due (``force``: whenever it holds any); what
    D1 refuses is given back to the book, for the next flush."""
    book = isolate.current().usage
    taken = book.take(isolate.now_ms(), force)
    if not taken:
        return
    try:
        await d1.write_usage(db, taken)
    except StorageError:
        book.give_back(taken)
        logger.warning("usage not written (D1 failed); kept for the next flush")
