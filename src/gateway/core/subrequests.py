"""The subrequests of one Workers request (SPEC §18): every fetch and every D1 round trip it makes,
the work it hands to ``waitUntil`` included, counted against the plan's limit.

Rules:
- One ``Subrequests`` per request, made by the entry (``begin``) before anything else. The
  shell's fetch (``http.send``) and D1 helpers (one per statement run or ``batch``: a round trip)
  add one each, before the call (a call that fails was made all the same). Tasks the request
  starts inherit it, since asyncio copies the context into every task: a stream's relay (and so a
  rescue's attempts) and the work given to ``waitUntil`` count against the request that made them.
- ``limit`` is the setting ``subrequest_limit``; the snapshot sets it when a request reads it
  (``isolate.load_config``; the default until then).
- ``room(count)``: whether ``count`` more still fit, keeping ``SUBREQUESTS_RESERVED`` for the
  work that may come after the check (``rules`` says what). The fallback loop asks before every
  attempt and stops when the next one does not fit: a fetch past the limit fails like a network
  fault, which would cool a healthy provider.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from gateway.core import rules

__all__ = ["SUBREQUESTS", "Subrequests", "begin"]


@dataclass(slots=True)
class Subrequests:
    """``used`` of ``limit`` subrequests. The shell adds to ``used`` (an integer add, no call:
    it is on every fetch and D1 query)."""

    limit: int = rules.DEFAULT_SUBREQUEST_LIMIT
    used: int = 0

    def room(self, count: int = 1) -> bool:
        """Whether ``count`` more subrequests fit, with ``SUBREQUESTS_RESERVED`` kept."""
        return self.used + count + rules.SUBREQUESTS_RESERVED <= self.limit

    def left(self) -> int:
        """How many more fit, with ``SUBREQUESTS_RESERVED`` kept (0 when none)."""
        return max(0, self.limit - self.used - rules.SUBREQUESTS_RESERVED)


# The request's counter. The default counts what runs outside any request (a module imported by a
# test, a task with no request); no request's answer depends on it.
SUBREQUESTS: ContextVar[Subrequests] = ContextVar("subrequests", default=Subrequests())  # noqa: B039 - see above


def begin(limit: int = rules.DEFAULT_SUBREQUEST_LIMIT) -> Subrequests:
    """A new counter for the request (or cron run) the current task serves, from zero."""
    counter = Subrequests(limit)
    SUBREQUESTS.set(counter)
    return counter
