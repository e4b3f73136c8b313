"""Stream pacing (SPEC §18): how long a relayed event may wait to go out with the ones after it.

A relay that reads its upstream pays for each wake of the isolate, and a wake costs about as much
in a bare JavaScript Worker as in this one (0.2–0.4 ms on workerd here), so what a long answer
costs is how often the relay wakes, not how many events it carries. The setting
``stream_pacing`` trades that against how smoothly the caller sees the text come:

- ``paced`` (the default): the first content event goes at once; after it no event waits longer
  than ``PACED_EARLY_HOLD_MS`` during the answer's first ``PACED_EARLY_MS`` and ``PACED_HOLD_MS``
  after that (about 30 wakes for a 20 s answer). Fits the free plan.
- ``smooth``: no event waits longer than ``SMOOTH_HOLD_MS`` (about 200 wakes for 20 s; paid plans).
- ``live``: every upstream read is forwarded as it comes (a wake per read; paid plans).

The answer's end is never held, whatever the setting: once the finish reason is in, or the
upstream ends, what is left goes at once. A stream the gateway need not read (the native
pass-through) is never held either. The schedule goes to the relay (``shell/paced.mjs``) as data:
``schedule(pacing)``.

Pure: no clock; the time since the first content event is given.
"""

from __future__ import annotations

from enum import StrEnum

from gateway.core import rules

__all__ = ["Pacing", "hold_ms", "schedule"]


class Pacing(StrEnum):
    PACED = "paced"
    SMOOTH = "smooth"
    LIVE = "live"


# Each pacing's holds: (until, hold) pairs, ``until`` the time since the first content event (ms)
# the hold applies before, None for the rest of the answer. Live has none: nothing is held.
_SCHEDULES: dict[Pacing, tuple[tuple[int | None, int], ...]] = {
    Pacing.PACED: ((rules.PACED_EARLY_MS, rules.PACED_EARLY_HOLD_MS), (None, rules.PACED_HOLD_MS)),
    Pacing.SMOOTH: ((None, rules.SMOOTH_HOLD_MS),),
    Pacing.LIVE: (),
}


def schedule(pacing: Pacing) -> tuple[tuple[int | None, int], ...]:
    """``pacing``'s holds, in order: the relay holds an event at most the ``hold`` of the first
    pair whose ``until`` has not passed; no pair (live) holds nothing."""
    return _SCHEDULES[pacing]


def hold_ms(pacing: Pacing, since_first_ms: int) -> int:
    """The longest an event that arrives ``since_first_ms`` after the first content event may wait."""
    for until, hold in _SCHEDULES[pacing]:
        if until is None or since_first_ms < until:
            return hold
    return 0
