"""The cooldown ledger: who is cooling down, until when and why; the 429 ladder, the 404 strikes
and the half-open probe state. Plain isolate memory; the clock is the caller's ``now_ms``.

Rules (SPEC §5, §13; the numbers are in ``rules``):
- A cooldown is provider-wide, for one key of a provider (``Cooldown.key_id``: a failure of scope
  ``key``, when the attempt used a known key; without one it cools the provider), or for one
  (provider, model) pair (source ``model``: a model that answered 404 ``MODEL_STRIKES`` times
  within ``MODEL_STRIKE_WINDOW_MS``).
- A provider whose enabled keys all cool down is blocked until the earliest of them ends
  (``blocking``).
- A new failure may only extend a live cooldown, never shorten it; the entry keeps the source,
  status and message of the failure that set its current end.
- The 429 ladder is per holder (the key, or the provider): the n-th ladder 429 within
  ``LADDER_WINDOW_MS`` gets ``LADDER_MS[n-1]`` (the last step for n beyond it).
- The ceiling (``Settings.routing_cooldown_ceiling_ms``, already clamped) caps
  ``CEILING_CAPPED_SOURCES`` (heuristic, credit, tier), never authoritative, quota or model.
- A success clears the provider's cooldown, its ladder and its probe deferral, and those of the
  key that served.
- An admin write resets a provider or key (``forget_*``): a failure of an attempt that began
  before the reset is not recorded. Reset times are kept ``FORGET_HOLD_MS``, then dropped.
- Half-open (SPEC §5.4), for a provider's cooldown and a key's alike (the holder): it is
  probe-ready when its cooldown's source is in
  ``PROBED_SOURCES``, more than ``PROBE_READY_FRACTION`` of it has elapsed, no probe of it is in
  flight and its probe deferral is over. A failed probe neither extends the cooldown nor climbs
  the ladder; it defers the next probe by ``PROBE_DEFER_BASE_MS``, doubling, capped at
  ``PROBE_DEFER_MAX_MS``. The deferral restarts with each new cooldown.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

from gateway.core import rules
from gateway.core.attempt import Candidate
from gateway.core.classify import Failure, Source
from gateway.core.providers import ProviderKey

__all__ = ["Cooldown", "Holder", "Ledger", "holder"]

_Key = TypeVar("_Key", int, tuple[int, str])
# Who a cooldown, ladder, probe deferral or probe belongs to: ("provider", id) or ("key", id)
# (provider and key ids are both row ids, of two tables: they may be equal).
Holder = tuple[Literal["provider", "key"], int]


def holder(provider_id: int, key_id: int | None = None) -> Holder:
    return ("provider", provider_id) if key_id is None else ("key", key_id)


@dataclass(frozen=True, slots=True)
class Cooldown:
    """One cooldown. ``model`` is None unless it benches one model; ``key_id`` is None unless
    it cools one key; times are epoch ms."""

    provider_id: int
    name: str
    model: str | None
    source: Source
    started_ms: int
    until_ms: int
    last_status: int | None
    last_message: str
    key_id: int | None = None

    @property
    def holder(self) -> Holder:
        return holder(self.provider_id, self.key_id)

    def remaining_ms(self, now_ms: int) -> int:
        return max(0, self.until_ms - now_ms)


class Ledger:
    """Cooldowns of one isolate. Every method is O(1) (``blocking`` O(keys of the provider))
    except ``active``, ``clear``, ``retry_at_ms`` and ``forget_provider``, which walk the live
    entries (a few per provider)."""

    __slots__ = ("_deferrals", "_forgotten", "_holders", "_ladders", "_models", "_probing", "_strikes")

    def __init__(self) -> None:
        self._holders: dict[Holder, Cooldown] = {}  # provider-wide and key cooldowns
        self._models: dict[tuple[int, str], Cooldown] = {}
        self._ladders: dict[Holder, list[int]] = {}  # recent ladder 429 times
        self._strikes: dict[tuple[int, str], list[int]] = {}  # recent 404 times
        self._deferrals: dict[Holder, tuple[int, int]] = {}  # (last deferral ms, not before)
        self._probing: dict[Holder, int] = {}  # when its probe began
        self._forgotten: dict[Holder, int] = {}  # when an admin write reset it

    # --- Recording -----------------------------------------------------------------------

    def record_failure(
        self,
        candidate: Candidate,
        failure: Failure,
        now_ms: int,
        ceiling_ms: int,
        started_ms: int | None = None,
    ) -> Cooldown | None:
        """Apply ``failure`` of ``candidate`` at ``now_ms``; ``ceiling_ms`` is the effective
        ceiling setting; ``started_ms``, when the attempt began. Returns the cooldown now in force
        for it, or None when the failure set none (no source, a 404 strike below the third, or an
        attempt that began before an admin write reset the provider or its key: it used the old
        settings)."""
        if failure.source is None:
            return None
        provider = candidate.provider
        key_id = candidate.key.id if failure.scope == "key" and candidate.key is not None else None
        if started_ms is not None and any(
            self._forgotten.get(h, started_ms - 1) >= started_ms
            for h in (holder(provider.id), holder(provider.id, _key_id(candidate)))
        ):
            return None
        if failure.scope == "model":
            return self._strike(candidate, failure, now_ms)
        owner = holder(provider.id, key_id)
        duration = self._climb(owner, now_ms) if failure.ladder else failure.cooldown_ms
        if failure.source in rules.CEILING_CAPPED_SOURCES:
            duration = min(duration, ceiling_ms)
        entry = _entry(candidate, None, key_id, failure, now_ms, duration)
        current = self._holders.get(owner)
        if current is not None and current.until_ms > now_ms:
            if current.until_ms >= entry.until_ms:
                return current
        else:
            self._deferrals.pop(owner, None)  # a new cooldown: probes start over
        self._holders[owner] = entry
        return entry

    def record_success(self, provider_id: int, key_id: int | None = None) -> None:
        """The provider answered (with key ``key_id``): clear the provider's cooldown, ladder and
        probe deferral, and the key's."""
        owners = [holder(provider_id)] + ([holder(provider_id, key_id)] if key_id is not None else [])
        for owner in owners:
            self._holders.pop(owner, None)
            self._ladders.pop(owner, None)
            self._deferrals.pop(owner, None)

    def _climb(self, owner: Holder, now_ms: int) -> int:
        steps = rules.LADDER_MS
        window = rules.LADDER_WINDOW_MS
        hits = [t for t in self._ladders.get(owner, ()) if now_ms - t < window]
        hits.append(now_ms)
        self._ladders[owner] = hits[-len(steps) :]
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
        entry = _entry(candidate, candidate.model, None, failure, now_ms, failure.cooldown_ms)
        current = self._models.get(key)
        if current is not None and current.until_ms >= entry.until_ms:
            return current
        self._models[key] = entry
        return entry

    # --- Reading -------------------------------------------------------------------------

    def blocking(self, provider_id: int, model: str, now_ms: int, keys: Iterable[ProviderKey] = ()) -> Cooldown | None:
        """The live cooldown that keeps (provider, model) out of a chain: the provider-wide one
        first; then, when every enabled key of ``keys`` (the provider's) cools down, the one that
        ends first; then the pair's own. None when the pair may be tried."""
        entry = self._live(holder(provider_id), now_ms)
        if entry is not None:
            return entry
        keyed = self.keys_cooldown(keys, now_ms)
        if keyed is not None:
            return keyed
        return self.model_cooldown(provider_id, model, now_ms)

    def keys_cooldown(self, keys: Iterable[ProviderKey], now_ms: int) -> Cooldown | None:
        """When every enabled key of ``keys`` cools down, the cooldown that ends first; else
        None (also for no enabled key: that provider is left out of chains, not cooling)."""
        soonest: Cooldown | None = None
        for key in keys:
            if not key.enabled:
                continue
            entry = self.key_cooldown(key.id, now_ms)
            if entry is None:
                return None
            if soonest is None or entry.until_ms < soonest.until_ms:
                soonest = entry
        return soonest

    def key_cooldown(self, key_id: int, now_ms: int) -> Cooldown | None:
        """The live cooldown of one key, or None."""
        return self._live(("key", key_id), now_ms) if self._holders else None

    def key_cooling_until(self, key_id: int, now_ms: int) -> int | None:
        """When the key's live cooldown ends (epoch ms), or None."""
        entry = self.key_cooldown(key_id, now_ms)
        return None if entry is None else entry.until_ms

    def _live(self, owner: Holder, now_ms: int) -> Cooldown | None:
        entry = self._holders.get(owner)
        return entry if entry is not None and entry.until_ms > now_ms else None

    def model_cooldown(self, provider_id: int, model: str, now_ms: int) -> Cooldown | None:
        """The live cooldown of the (provider, model) pair itself (a benched model), or None."""
        entry = self._models.get((provider_id, model)) if self._models else None
        return entry if entry is not None and entry.until_ms > now_ms else None

    def is_cooling(self, provider_id: int, model: str, now_ms: int, keys: Iterable[ProviderKey] = ()) -> bool:
        return self.blocking(provider_id, model, now_ms, keys) is not None

    def active(self, now_ms: int, provider_ids: Collection[int] | None = None) -> list[Cooldown]:
        """Live cooldowns (of ``provider_ids`` only, when given), soonest end first; drops the
        expired ones."""
        self._prune(now_ms)
        entries = [*self._holders.values(), *self._models.values()]
        if provider_ids is not None:
            entries = [e for e in entries if e.provider_id in provider_ids]
        entries.sort(key=lambda e: (e.until_ms, e.provider_id, e.key_id or 0))
        return entries

    def retry_at_ms(self, now_ms: int, provider_ids: Collection[int] | None = None) -> int | None:
        """The soonest end (epoch ms) of a live cooldown (of ``provider_ids``), or None."""
        entries = self.active(now_ms, provider_ids)
        return entries[0].until_ms if entries else None

    def _prune(self, now_ms: int) -> None:
        _drop_expired(self._holders, now_ms)
        _drop_expired(self._models, now_ms)

    # --- Half-open -----------------------------------------------------------------------

    def probe_ready(self, provider_id: int, now_ms: int, key_id: int | None = None) -> bool:
        """True when a request may probe this cooling provider (or, with ``key_id``, this
        cooling key) now (rules in the module doc)."""
        owner = holder(provider_id, key_id)
        entry = self._holders.get(owner)
        if entry is None or entry.until_ms <= now_ms or entry.source not in rules.PROBED_SOURCES:
            return False
        began_ms = self._probing.get(owner)
        if began_ms is not None and now_ms - began_ms < rules.PROBE_STALE_MS:
            return False
        deferral = self._deferrals.get(owner)
        if deferral is not None and now_ms < deferral[1]:
            return False
        length = entry.until_ms - entry.started_ms
        return now_ms - entry.started_ms > length * rules.PROBE_READY_FRACTION

    def begin_probe(self, provider_id: int, now_ms: int, key_id: int | None = None) -> bool:
        """Mark a probe of the provider (or key) in flight; False when one already is (one per
        isolate). A probe that never ended (its request was abandoned) stops counting after
        ``PROBE_STALE_MS``."""
        owner = holder(provider_id, key_id)
        began_ms = self._probing.get(owner)
        if began_ms is not None and now_ms - began_ms < rules.PROBE_STALE_MS:
            return False
        self._probing[owner] = now_ms
        return True

    def end_probe(self, provider_id: int, success: bool, now_ms: int, key_id: int | None = None) -> None:
        """End the probe of the provider (or key). Success is ``record_success``; failure only
        defers the next probe (the cooldown and the ladder stay as they are)."""
        owner = holder(provider_id, key_id)
        self._probing.pop(owner, None)
        if success:
            self.record_success(provider_id, key_id)
            return
        last = self._deferrals.get(owner)
        delay = rules.PROBE_DEFER_BASE_MS if last is None else 2 * last[0]
        delay = min(delay, rules.PROBE_DEFER_MAX_MS)
        self._deferrals[owner] = (delay, now_ms + delay)

    # --- Admin ---------------------------------------------------------------------------

    def forget_provider(self, provider_id: int, now_ms: int) -> None:
        """The provider was edited or deleted at ``now_ms``: drop its cooldowns (provider-wide,
        per key and per model), its ladders, its 404 strikes and its probe deferrals (SPEC §5.2);
        failures of attempts already under way are not recorded."""
        self._forget(holder(provider_id), now_ms)
        for owner in [h for h, e in self._holders.items() if e.provider_id == provider_id]:
            self._forget(owner, now_ms)
        for table in (self._models, self._strikes):
            for key in [k for k in table if k[0] == provider_id]:
                del table[key]

    def forget_key(self, key_id: int, now_ms: int) -> None:
        """The key was enabled, disabled or deleted at ``now_ms``: drop its cooldown, ladder and
        probe state; failures of attempts with it already under way are not recorded."""
        self._forget(("key", key_id), now_ms)

    def _forget(self, owner: Holder, now_ms: int) -> None:
        for table in (self._holders, self._ladders, self._deferrals, self._probing):
            table.pop(owner, None)  # type: ignore[attr-defined]
        # A reset time only guards the attempts under way when it was made; past FORGET_HOLD_MS
        # none is left, so it goes (one entry per admin write would otherwise pile up).
        for stale in [h for h, t in self._forgotten.items() if now_ms - t > rules.FORGET_HOLD_MS]:
            del self._forgotten[stale]
        self._forgotten[owner] = now_ms

    def clear(self, now_ms: int) -> int:
        """Clear every cooldown, ladder, 404 strike and probe deferral (SPEC §5.3 "Clear
        cooldowns"); returns how many live cooldowns there were."""
        cleared = len(self.active(now_ms))
        tables = (
            self._holders, self._models, self._ladders, self._strikes, self._deferrals,
            self._probing,
        )  # fmt: skip
        for table in tables:
            table.clear()  # type: ignore[attr-defined]
        return cleared


def _key_id(candidate: Candidate) -> int | None:
    return candidate.key.id if candidate.key is not None else None


def _drop_expired(table: dict[_Key, Cooldown] | dict[Holder, Cooldown], now_ms: int) -> None:
    for key in [key for key, entry in table.items() if entry.until_ms <= now_ms]:
        del table[key]


def _entry(
    candidate: Candidate,
    model: str | None,
    key_id: int | None,
    failure: Failure,
    now_ms: int,
    duration_ms: int,
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
        key_id=key_id,
    )
