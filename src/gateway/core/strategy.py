"""Routing strategies: the order a chain tries its (provider, model) pairs in (SPEC §19).

Rules:
- ``priority`` (the default, SPEC §3): providers by (priority, id), inside one its models in
  speed-memory order (``Memory.order``).
- ``fastest``: pairs measured fast first, by expected wait (latency / success average); then the
  pairs never measured, in priority order; then those that never succeeded.
- ``reliable``: pairs by a draw from Beta(successes + 1, failures + 1) of each pair's counts in
  isolate memory, highest first: Thompson sampling, so a pair with few samples still gets tried.
- ``balanced``: by ``BALANCED_RELIABILITY_WEIGHT`` of that draw plus the rest of a speed score
  (1 at ``SPEED_SCORE_FAST_MS`` or less, 0 at ``SPEED_SCORE_SLOW_MS`` or more, linear between,
  ``SPEED_SCORE_UNKNOWN`` when never measured).
- The setting ``routing_strategy`` chooses for ``auto``; a request's ``model: "auto:fast"``,
  ``"auto:reliable"`` or ``"auto:balanced"`` chooses for itself (``auto_strategy``). Every sort
  is stable: ties keep the priority order.
- The draw comes from the caller (``Beta``): the core draws no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum

from gateway.core import rules
from gateway.core.memory import Memory, Stats
from gateway.core.providers import Provider

__all__ = ["Beta", "Pair", "Strategy", "auto_strategy", "is_auto", "order_pairs", "speed_score"]

AUTO_MODEL = "auto"


class Strategy(StrEnum):
    PRIORITY = "priority"
    FASTEST = "fastest"
    RELIABLE = "reliable"
    BALANCED = "balanced"


# ``model`` values that choose a strategy for one request (the original server's names).
_AUTO_STRATEGIES = {
    "auto:fast": Strategy.FASTEST,
    "auto:fastest": Strategy.FASTEST,
    "auto:reliable": Strategy.RELIABLE,
    "auto:balanced": Strategy.BALANCED,
}

# beta(alpha, beta): a draw from Beta(alpha, beta).
Beta = Callable[[float, float], float]
Pair = tuple[Provider, str]


def auto_strategy(model: str | None) -> Strategy | None:
    """The strategy ``model`` names (``auto:fast``, any case), or None."""
    return _AUTO_STRATEGIES.get(model.lower()) if model else None


def is_auto(model: str | None) -> bool:
    """``model`` asks for any model: absent, empty, ``auto`` or ``auto:<strategy>``."""
    return not model or model.lower() == AUTO_MODEL or auto_strategy(model) is not None


def speed_score(stats: Stats | None) -> float:
    if stats is None or stats.latency_ms is None:
        return rules.SPEED_SCORE_UNKNOWN
    fast, slow = rules.SPEED_SCORE_FAST_MS, rules.SPEED_SCORE_SLOW_MS
    return min(1.0, max(0.0, (slow - stats.latency_ms) / (slow - fast)))


def _wait_rank(stats: Stats | None) -> tuple[int, float]:
    if stats is None:
        return (1, 0.0)
    if stats.latency_ms is None or stats.success <= 0.0:
        return (2, 0.0)
    return (0, stats.latency_ms / stats.success)


def _draw(stats: Stats | None, beta: Beta) -> float:
    successes, failures = (stats.successes, stats.failures) if stats is not None else (0, 0)
    return beta(successes + 1.0, failures + 1.0)


def order_pairs(pairs: Sequence[Pair], strategy: Strategy, memory: Memory, beta: Beta) -> list[Pair]:
    """``pairs`` (in priority order) in ``strategy``'s order (rules in the module doc)."""
    if strategy is Strategy.PRIORITY or len(pairs) < 2:
        return list(pairs)
    stats = [memory.stats(provider.id, model) for provider, model in pairs]
    if strategy is Strategy.FASTEST:
        ranks: list[object] = [_wait_rank(s) for s in stats]
    elif strategy is Strategy.RELIABLE:
        ranks = [-_draw(s, beta) for s in stats]
    else:
        weight = rules.BALANCED_RELIABILITY_WEIGHT
        ranks = [-(weight * _draw(s, beta) + (1 - weight) * speed_score(s)) for s in stats]
    order = sorted(range(len(pairs)), key=ranks.__getitem__)  # type: ignore[arg-type]  # one type per strategy
    return [pairs[i] for i in order]
