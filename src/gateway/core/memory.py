"""Speed and success memory per (provider, model), and the order of a provider's models it
induces (SPEC §6). Plain isolate memory.

Rules:
- Exponential moving averages, weight ``EMA_ALPHA`` on the newest sample; the first sample is
  taken as is. Success (1/0) is averaged over every attempt that reached the model; latency (ms
  to headers, or to the first chunk of a stream) over successful attempts only, since a 401 in
  40 ms says nothing about how fast the model answers.
- Order inside a provider: reliable models (success average ≥ ``EMA_RELIABLE_MIN``) first,
  cheapest expected wait (latency / success) first; then models with no data, in the configured
  order; then the unreliable ones by the same measure, the ones that never succeeded last.
  Ties keep the configured order (the sort is stable).
- Editing a provider drops its memory (``forget_provider``; SPEC §8.2).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.core import rules
from gateway.core.providers import Provider

__all__ = ["Memory", "Stats"]

_RELIABLE, _UNKNOWN, _UNRELIABLE = 0, 1, 2
_NEVER = float("inf")


@dataclass(slots=True)
class Stats:
    """The averages of one (provider, model). ``latency_ms`` is None until a first success.
    ``successes`` and ``failures``: the counts the ``reliable`` strategy samples (SPEC §19)."""

    success: float
    latency_ms: float | None
    successes: int = 0
    failures: int = 0


def _ema(old: float, sample: float) -> float:
    return rules.EMA_ALPHA * sample + (1 - rules.EMA_ALPHA) * old


class Memory:
    """Speed and success averages of one isolate, by provider id then model."""

    __slots__ = ("_stats",)

    def __init__(self) -> None:
        self._stats: dict[int, dict[str, Stats]] = {}

    def record_success(self, provider_id: int, model: str, latency_ms: int) -> None:
        models = self._stats.setdefault(provider_id, {})
        stats = models.get(model)
        if stats is None:
            models[model] = Stats(1.0, float(latency_ms), successes=1)
            return
        stats.successes += 1
        stats.success = _ema(stats.success, 1.0)
        stats.latency_ms = float(latency_ms) if stats.latency_ms is None else _ema(stats.latency_ms, latency_ms)

    def record_failure(self, provider_id: int, model: str) -> None:
        models = self._stats.setdefault(provider_id, {})
        stats = models.get(model)
        if stats is None:
            models[model] = Stats(0.0, None, failures=1)
        else:
            stats.success = _ema(stats.success, 0.0)
            stats.failures += 1

    def stats(self, provider_id: int, model: str) -> Stats | None:
        return self._stats.get(provider_id, {}).get(model)

    def order(self, provider: Provider) -> tuple[str, ...]:
        """The provider's models in trying order (rules in the module doc). Returns
        ``provider.models`` itself when there is nothing to reorder."""
        models = self._stats.get(provider.id)
        if not models or len(provider.models) < 2:
            return provider.models

        def rank(model: str) -> tuple[int, float]:
            stats = models.get(model)
            if stats is None:
                return (_UNKNOWN, 0.0)
            if stats.latency_ms is None or stats.success <= 0.0:
                return (_UNRELIABLE, _NEVER)
            cost = stats.latency_ms / stats.success
            return (_RELIABLE if stats.success >= rules.EMA_RELIABLE_MIN else _UNRELIABLE, cost)

        return tuple(sorted(provider.models, key=rank))

    def forget_provider(self, provider_id: int) -> None:
        self._stats.pop(provider_id, None)
