"""Free-tier caps per key and model, counted in isolate memory (SPEC §19).

Rules:
- A key's caps for a model (``caps``): the model's facts (``core/capabilities.py``: the admin's
  setting, the listing, the presets), each lowered, never raised, by what a 429 of that key and
  model stated (``learn``, from ``core/stated.py``).
- Counted per key and model (``count``, when an attempt is sent): requests in the current UTC
  minute and UTC day, and tokens (the request's estimate) in the current UTC minute.
- At cap (``at_cap``): the minute's requests reached ``rpm``, or the day's ``rpd``, or the
  minute's tokens plus the request's would pass ``tpm`` (a request larger than ``tpm`` alone is
  at cap whatever the count). A key at cap is passed over like a cooling key until its window
  turns (``reset_ms``).
- Isolate memory only, no D1 (SPEC §18): each isolate counts what it sent, so a platform's 429
  stays the last word, and its stated limit then lowers the cap here. At most
  ``FREE_TIER_COUNTS_KEPT`` counts are kept; past it, those of a past day go first.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.core import rules
from gateway.core.modelfacts import NO_FACTS, Facts

__all__ = ["Count", "FreeTier"]


@dataclass(slots=True)
class Count:
    """What one key sent one model: in the UTC minute ``minute`` and the UTC day ``day``."""

    minute: int = -1
    minute_requests: int = 0
    minute_tokens: int = 0
    day: int = -1
    day_requests: int = 0

    def turned(self, now_ms: int) -> Count:
        """This count as it reads at ``now_ms`` (a past window reads as empty)."""
        minute, day = now_ms // rules.MINUTE_MS, now_ms // rules.DAY_MS
        same_minute, same_day = self.minute == minute, self.day == day
        return Count(
            minute,
            self.minute_requests if same_minute else 0,
            self.minute_tokens if same_minute else 0,
            day,
            self.day_requests if same_day else 0,
        )


def _lower(configured: int | None, learned: int | None) -> int | None:
    if learned is None:
        return configured
    return learned if configured is None else min(configured, learned)


def _lowered(caps: Facts, by: Facts) -> Facts:
    """``caps``'s caps, each lowered by ``by``'s."""
    return Facts(rpm=_lower(caps.rpm, by.rpm), rpd=_lower(caps.rpd, by.rpd), tpm=_lower(caps.tpm, by.tpm))


class FreeTier:
    """The free-tier counts and learned caps of one isolate, by (key id, model)."""

    __slots__ = ("_counts", "_learned")

    def __init__(self) -> None:
        self._counts: dict[tuple[int, str], Count] = {}
        self._learned: dict[tuple[int, str], Facts] = {}

    def caps(self, key_id: int, model: str, facts: Facts) -> Facts:
        """The key's caps for the model: ``facts``'s, lowered by what it learned."""
        learned = self._learned.get((key_id, model)) if self._learned else None
        return facts if learned is None else _lowered(facts, learned)

    def learn(self, key_id: int, model: str, stated: Facts) -> None:
        """A 429 of this key and model stated ``stated``'s limits: they lower its caps."""
        if stated.capped:
            self._learned[(key_id, model)] = _lowered(self._learned.get((key_id, model), NO_FACTS), stated)

    def count(self, key_id: int, model: str, tokens: int, now_ms: int) -> None:
        """One request of ``tokens`` was sent with this key to this model at ``now_ms``."""
        pair = (key_id, model)
        count = self._counts.get(pair)
        if count is None:
            if len(self._counts) >= rules.FREE_TIER_COUNTS_KEPT:
                self._make_room(now_ms)
            count = Count()
        count = count.turned(now_ms)
        count.minute_requests += 1
        count.minute_tokens += tokens
        count.day_requests += 1
        self._counts[pair] = count

    def usage(self, key_id: int, model: str, now_ms: int) -> Count:
        """The key's count for the model as it reads at ``now_ms``."""
        return self._counts.get((key_id, model), Count()).turned(now_ms)

    def at_cap(self, key_id: int, model: str, facts: Facts, tokens: int, now_ms: int) -> str | None:
        """Why the key may not send the model a request of ``tokens`` now (``at cap 30/min``),
        or None when it may."""
        caps = self.caps(key_id, model, facts)
        if not caps.capped:
            return None
        count = self.usage(key_id, model, now_ms)
        if caps.rpd is not None and count.day_requests >= caps.rpd:
            return f"at cap {caps.rpd}/day"
        if caps.rpm is not None and count.minute_requests >= caps.rpm:
            return f"at cap {caps.rpm}/min"
        if caps.tpm is not None and count.minute_tokens + tokens > caps.tpm:
            return f"at cap {caps.tpm} tokens/min"
        return None

    def reset_ms(self, key_id: int, model: str, facts: Facts, now_ms: int) -> int:
        """When the key's window that holds it at cap turns (epoch ms): the next UTC day for a
        day's cap, else the next UTC minute."""
        caps = self.caps(key_id, model, facts)
        if caps.rpd is not None and self.usage(key_id, model, now_ms).day_requests >= caps.rpd:
            return (now_ms // rules.DAY_MS + 1) * rules.DAY_MS
        return (now_ms // rules.MINUTE_MS + 1) * rules.MINUTE_MS

    def _make_room(self, now_ms: int) -> None:
        today = now_ms // rules.DAY_MS
        stale = [pair for pair, count in self._counts.items() if count.day != today]
        for pair in stale or list(self._counts)[: len(self._counts) // 2]:
            del self._counts[pair]
