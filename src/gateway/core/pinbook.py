"""The isolate's OpenRouter pins (SPEC §15, ``core/pinning.py``): one ``Pin`` per model, as D1 held
it at the last configuration snapshot plus what this isolate's requests did since.

Rules:
- A snapshot's rows are merged in (``merge_stored``), never blindly replace what the isolate
  knows: the newer candidates win (by ``refreshed_at_ms``); for the same locked slug, the later
  ``lock_until`` and the larger ``switches`` win and the isolate's own fault count stays; when the
  row holds another slug, another isolate took or moved the lock, and the row wins unless this
  isolate moved its lock more often (its move is the newer, and is on its way to D1); a row with
  no lock never takes this isolate's away.
- ``written`` remembers the ``lock_until`` this isolate last wrote per model, so a renewal is
  written at most once per half the idle time (``pinning.renewal_due``).
- A model whose endpoints could not be fetched is not fetched again by requests for
  ``OPENROUTER_CANDIDATES_FRESH_MS`` (``scoring_failed``): its requests go unpinned meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gateway.core import rules
from gateway.core.pinning import Pin

__all__ = ["PinBook", "merge_pin"]


def merge_pin(local: Pin, stored: Pin) -> Pin:
    """``local`` (this isolate's) and ``stored`` (a D1 row) of one model, merged by the rules."""
    newer = stored if (stored.refreshed_at_ms or 0) > (local.refreshed_at_ms or 0) else local
    candidates = (newer.candidates, newer.refreshed_at_ms)
    if stored.lock_slug != local.lock_slug:
        # No lock in the row: this isolate's lock is on its way to D1 (or its write failed).
        ours = local.switches > stored.switches or stored.lock_slug is None
        base = local if ours else stored
    else:
        until = max(local.lock_until_ms or 0, stored.lock_until_ms or 0) or None
        cooled = {**stored.cooled, **{s: max(t, stored.cooled.get(s, 0)) for s, t in local.cooled.items()}}
        base = replace(local, lock_until_ms=until, switches=max(local.switches, stored.switches), cooled=cooled)
    return replace(base, candidates=candidates[0], refreshed_at_ms=candidates[1])


class PinBook:
    """The pins one isolate holds (see the module's rules)."""

    def __init__(self) -> None:
        self._pins: dict[str, Pin] = {}
        self._written: dict[str, int | None] = {}
        self._scoring_failed: dict[str, int] = {}

    def get(self, model: str) -> Pin | None:
        return self._pins.get(model)

    def put(self, pin: Pin) -> None:
        self._pins[pin.model] = pin

    def pins(self) -> list[Pin]:
        """Every pin, by model."""
        return [self._pins[m] for m in sorted(self._pins)]

    def merge_stored(self, stored: Iterable[Pin]) -> None:
        """Merge the D1 rows of a snapshot."""
        for row in stored:
            local = self._pins.get(row.model)
            if local is None:
                self._pins[row.model] = row
                self._written[row.model] = row.lock_until_ms
            else:
                self._pins[row.model] = merge_pin(local, row)

    def written(self, model: str) -> int | None:
        """The ``lock_until`` this isolate last wrote (or read) for ``model``."""
        return self._written.get(model)

    def mark_written(self, pin: Pin) -> None:
        self._written[pin.model] = pin.lock_until_ms

    def scoring_failed(self, model: str, now_ms: int) -> bool:
        """True while a failed fetch of ``model``'s endpoints is recent."""
        return now_ms - self._scoring_failed.get(model, -rules.OPENROUTER_CANDIDATES_FRESH_MS) < (
            rules.OPENROUTER_CANDIDATES_FRESH_MS
        )

    def note_scoring_failed(self, model: str, now_ms: int) -> None:
        self._scoring_failed[model] = now_ms
