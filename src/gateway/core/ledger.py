"""The cooldown ledger: who is cooling down, until when and why; the 429 ladder, the 404 strikes
and the half-open probe state. Plain isolate memory; the clock is the caller's ``now_ms``.

Rules (SPEC §5; the numbers are in ``rules``):
- A cooldown is provider-wide, or for one (provider, model) pair (source ``model``: a model
  that answered 404 ``MODEL_STRIKES`` times within ``MODEL_STRIKE_WINDOW_MS``).
- A new failure may only extend a live cooldown, never shorten it; the entry keeps the source,
  status and message of the failure that set its current end.
- The 429 ladder is per provider: the n-th ladder 429 within ``LADDER_WINDOW_MS`` gets
  ``LADDER_MS[n-1]`` (the last step for n beyond it).
- The ceiling (``Settings.routing_cooldown_ceiling_ms``, already clamped) caps
  ``CEILING_CAPPED_SOURCES`` (heuristic, credit, tier), never authoritative, quota or model.
- A success clears the provider's cooldown, its ladder and its probe deferral.
- Half-open (SPEC §5.4): a provider is probe-ready when its cooldown's source is in
  ``PROBED_SOURCES``, more than ``PROBE_READY_FRACTION`` of it has elapsed, no probe of it is in
  flight and its probe deferral is over. A failed probe neither extends the cooldown nor climbs
  the ladder; it defers the next probe by ``PROBE_DEFER_BASE_MS``, doubling, capped at
  ``PROBE_DEFER_MAX_MS``. The deferral restarts with each new cooldown.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TypeVar, cast

from gateway.core import rules
from gateway.core.attempt import Candidate
from gateway.core.classify import Failure, Source

__all__ = ["Cooldown", "Ledger"]

_Key = TypeVar("_Key", int, tuple[int, str])


@dataclass(frozen=True, slots=True)
class Cooldown:
    """One cooldown. ``model`` is None for a provider-wide one; times are epoch ms."""

    provider_id: int
    name: str
    model: str | None
    source: Source
    started_ms: int
    until_ms: int
    last_status: int | None
    last_message: str

    def remaining_ms(self, now_ms: int) -> int:
        return max(0, self.until_ms - now_ms)


class Ledger:
    """Cooldowns of one isolate. Every method is O(1) except ``active``, ``clear``,
    ``retry_at_ms`` and ``forget_provider``, which walk the live entries (a few per provider)."""

    __slots__ = (
        "_deferrals", "_forgotten", "_ladders", "_models", "_probing", "_providers", "_strikes"
    )

    def __init__(self) -> None:
        self._providers: dict[int, Cooldown] = {}
        self._models: dict[tuple[int, str], Cooldown] = {}
        self._ladders: dict[int, list[int]] = {}  # provider id -> recent ladder 429 times
        self._strikes: dict[tuple[int, str], list[int]] = {}  # recent 404 times
        self._deferrals: dict[int, tuple[int, int]] = {}  # id -> (last deferral ms, not before)
        self._probing: dict[int, int] = {}  # id -> when its probe began
        self._forgotten: dict[int, int] = {}  # id -> when an admin write reset it

    # --- Recording -----------------------------------------------------------------------

    def record_failure(
        self, candidate: Candidate, failure: Failure, now_ms: int, ceiling_ms: int,
        started_ms: int | None = None,
    ) -> Cooldown | None:
        """Apply ``failure`` of ``candidate`` at ``now_ms``; ``ceiling_ms`` is the effective
        ceiling setting; ``started_ms``, when the attempt began. Returns the cooldown now in force
        for it, or None when the failure set none (no source, a 404 strike below the third, or an
        attempt that began before an admin write reset the provider: it used the old settings)."""
        if failure.source is None:
            return None
        provider = candidate.provider
        forgotten_ms = self._forgotten.get(provider.id)
        if forgotten_ms is not None and started_ms is not None and started_ms <= forgotten_ms:
            return None
        if failure.scope == "model":
            return self._strike(candidate, failure, now_ms)
        duration = self._climb(provider.id, now_ms) if failure.ladder else failure.cooldown_ms
        if failure.source in rules.CEILING_CAPPED_SOURCES:
            duration = min(duration, ceiling_ms)
        entry = _entry(candidate, None, failure, now_ms, duration)
        current = self._providers.get(provider.id)
        if current is not None and current.until_ms > now_ms:
            if current.until_ms >= entry.until_ms:
                return current
        else:
            self._deferrals.pop(provider.id, None)  # a new cooldown: probes start over
        self._providers[provider.id] = entry
        return entry

    def record_success(self, provider_id: int) -> None:
        """The provider answered: clear its cooldown, its ladder and its probe deferral."""
        self._providers.pop(provider_id, None)
        self._ladders.pop(provider_id, None)
        self._deferrals.pop(provider_id, None)

    def _climb(self, provider_id: int, now_ms: int) -> int:
        steps = rules.LADDER_MS
        window = rules.LADDER_WINDOW_MS
        hits = [t for t in self._ladders.get(provider_id, ()) if now_ms - t < window]
        hits.append(now_ms)
        self._ladders[provider_id] = hits[-len(steps) :]
        return steps[min(len(hits), len(steps)) - 1]

    def _strike(self, candidate: Candidate, failure: Failure, now_ms: int) -> Cooldown | None:
        key = (candidate.provider.id, candidate.model)
        window = rules.MODEL_STRIKE_WINDOW_MS
        strikes = [t for t in self._strikes.get(key, ()) if now_ms - t < window]
        strikes.append(now_ms)
        if len(strikes) < rules.MODEL_STRIKES:
            self._strikes[key] = strikes
            return None
        self._strikes.pop(key, None)
        entry = _entry(candidate, candidate.model, failure, now_ms, failure.cooldown_ms)
        current = self._models.get(key)
        if current is not None and current.until_ms >= entry.until_ms:
            return current
        self._models[key] = entry
        return entry

    # --- Reading -------------------------------------------------------------------------

    def blocking(self, provider_id: int, model: str, now_ms: int) -> Cooldown | None:
        """The live cooldown that keeps (provider, model) out of a chain: the provider-wide one
        first, then the pair's own; None when the pair may be tried."""
        entry = self._providers.get(provider_id)
        if entry is not None and entry.until_ms > now_ms:
            return entry
        return self.model_cooldown(provider_id, model, now_ms)

    def model_cooldown(self, provider_id: int, model: str, now_ms: int) -> Cooldown | None:
        """The live cooldown of the (provider, model) pair itself (a benched model), or None."""
        entry = self._models.get((provider_id, model)) if self._models else None
        return entry if entry is not None and entry.until_ms > now_ms else None

    def is_cooling(self, provider_id: int, model: str, now_ms: int) -> bool:
        return self.blocking(provider_id, model, now_ms) is not None

    def active(self, now_ms: int, provider_ids: Collection[int] | None = None) -> list[Cooldown]:
        """Live cooldowns (of ``provider_ids`` only, when given), soonest end first; drops the
        expired ones."""
        self._prune(now_ms)
        entries = [*self._providers.values(), *self._models.values()]
        if provider_ids is not None:
            entries = [e for e in entries if e.provider_id in provider_ids]
        entries.sort(key=lambda e: (e.until_ms, e.provider_id))
        return entries

    def retry_at_ms(self, now_ms: int, provider_ids: Collection[int] | None = None) -> int | None:
        """The soonest end (epoch ms) of a live cooldown (of ``provider_ids``), or None."""
        entries = self.active(now_ms, provider_ids)
        return entries[0].until_ms if entries else None

    def _prune(self, now_ms: int) -> None:
        _drop_expired(self._providers, now_ms)
        _drop_expired(self._models, now_ms)

    # --- Half-open -----------------------------------------------------------------------

    def probe_ready(self, provider_id: int, now_ms: int) -> bool:
        """True when a request may probe this cooling provider now (rules in the module doc)."""
        entry = self._providers.get(provider_id)
        if entry is None or entry.until_ms <= now_ms or entry.source not in rules.PROBED_SOURCES:
            return False
        began_ms = self._probing.get(provider_id)
        if began_ms is not None and now_ms - began_ms < rules.PROBE_STALE_MS:
            return False
        deferral = self._deferrals.get(provider_id)
        if deferral is not None and now_ms < deferral[1]:
            return False
        length = entry.until_ms - entry.started_ms
        return now_ms - entry.started_ms > length * rules.PROBE_READY_FRACTION

    def begin_probe(self, provider_id: int, now_ms: int) -> bool:
        """Mark a probe of the provider in flight; False when one already is (one per isolate).
        A probe that never ended (its request was abandoned) stops counting after
        ``PROBE_STALE_MS``."""
        began_ms = self._probing.get(provider_id)
        if began_ms is not None and now_ms - began_ms < rules.PROBE_STALE_MS:
            return False
        self._probing[provider_id] = now_ms
        return True

    def end_probe(self, provider_id: int, success: bool, now_ms: int) -> None:
        """End the provider's probe. Success is ``record_success``; failure only defers the next
        probe (the cooldown and the ladder stay as they are)."""
        self._probing.pop(provider_id, None)
        if success:
            self.record_success(provider_id)
            return
        last = self._deferrals.get(provider_id)
        delay = rules.PROBE_DEFER_BASE_MS if last is None else 2 * last[0]
        delay = min(delay, rules.PROBE_DEFER_MAX_MS)
        self._deferrals[provider_id] = (delay, now_ms + delay)

    # --- Admin ---------------------------------------------------------------------------

    def forget_provider(self, provider_id: int, now_ms: int) -> None:
        """The provider was edited or deleted at ``now_ms``: drop its cooldowns (provider-wide and
        per model), its ladder, its 404 strikes and its probe deferral (SPEC §5.2); failures of
        attempts already under way are not recorded."""
        self.record_success(provider_id)
        self._probing.pop(provider_id, None)
        self._forgotten[provider_id] = now_ms
        for table in (self._models, self._strikes):
            for key in [k for k in table if k[0] == provider_id]:
                del table[key]

    def clear(self, now_ms: int) -> int:
        """Clear every cooldown, ladder, 404 strike and probe deferral (SPEC §5.3 "Clear
        cooldowns"); returns how many live cooldowns there were."""
        cleared = len(self.active(now_ms))
        tables = (
            self._providers, self._models, self._ladders, self._strikes, self._deferrals,
            self._probing,
        )  # fmt: skip
        for table in tables:
            table.clear()
        return cleared


def _drop_expired(table: dict[_Key, Cooldown], now_ms: int) -> None:
    for key in [key for key, entry in table.items() if entry.until_ms <= now_ms]:
        del table[key]


def _entry(
    candidate: Candidate, model: str | None, failure: Failure, now_ms: int, duration_ms: int
) -> Cooldown:
    return Cooldown(
        provider_id=candidate.provider.id,
        name=candidate.provider.name,
        model=model,
        source=cast(Source, failure.source),  # callers return early when it is None
        started_ms=now_ms,
        until_ms=now_ms + duration_ms,
        last_status=failure.status,
        last_message=failure.reason,
    )
