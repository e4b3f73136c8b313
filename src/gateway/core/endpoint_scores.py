"""Scoring OpenRouter's upstream endpoints of a model (SPEC §15): the candidates ``pinning``'s
lock chooses among, best first.

Rules:
- Candidates come from ``GET {origin}/api/v1/models/{model}/endpoints``. An endpoint counts when
  its ``status`` is 0 and its ``uptime_last_30m`` is absent or at least ``OPENROUTER_MIN_UPTIME``.
  Its slug is the first ``/``-part of its ``tag`` (else of ``provider_name``), lower-cased.
- Score = throughput / (INPUT_WEIGHT × effective input + OUTPUT_WEIGHT × completion + EPSILON),
  × ``OPENROUTER_CACHE_BONUS`` with implicit caching; effective input = h × input_cache_read +
  (1 − h) × prompt, h = ``OPENROUTER_HIT_RATE`` with implicit caching, else 0. Prices are USD per
  token, those of the ``pricing.overrides`` window (UTC minutes of the day) that holds now.
  Free endpoints stay in: EPSILON keeps their score finite and lets throughput rank them.
- Throughput is the endpoint's ``throughput_last_30m`` p50; without one, the median of the other
  counted endpoints' p50s. A slug's score is its best endpoint's.
- Nothing here raises on what the endpoints API or a hand-edited D1 row contains: malformed
  entries are skipped.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.core import rules

__all__ = ["Ranked", "prices_now", "rank_endpoints"]

_MINUTES_PER_DAY = 24 * 60


def _number(value: object) -> float | None:
    """A finite number from a JSON number or a decimal string; None for anything else (bools
    included: JSON ``true`` is no price)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _price(value: object) -> float | None:
    """A price (USD per token): a finite number at or above 0, else None."""
    number = _number(value)
    return number if number is not None and number >= 0 else None


@dataclass(frozen=True, slots=True)
class Ranked:
    """One upstream slug of a model, scored. Prices are those in effect when it was scored."""

    slug: str
    score: float
    prompt: float
    completion: float
    input_cache_read: float
    caching: bool
    # The endpoint's own p50 (tokens/s); None when it had none (its score used the others' median).
    throughput: float | None

    def as_json(self) -> dict[str, object]:
        return {
            "slug": self.slug,
            "score": self.score,
            "prompt": self.prompt,
            "completion": self.completion,
            "input_cache_read": self.input_cache_read,
            "caching": self.caching,
            "throughput": self.throughput,
        }

    @classmethod
    def from_json(cls, obj: object) -> Ranked | None:
        """The entry ``as_json`` wrote; None when it is malformed (a D1 text edited by hand):
        every key but ``throughput`` (null or absent: None) is required with its type."""
        if not isinstance(obj, Mapping):
            return None
        slug = obj.get("slug")
        caching = obj.get("caching")
        if not isinstance(slug, str) or not slug.strip() or not isinstance(caching, bool):
            return None
        score = _number(obj.get("score"))
        prices = [_price(obj.get(key)) for key in ("prompt", "completion", "input_cache_read")]
        if score is None or None in prices:
            return None
        raw_throughput = obj.get("throughput")
        throughput = _number(raw_throughput)
        if raw_throughput is not None and (throughput is None or throughput <= 0):
            return None
        prompt, completion, cache_read = prices
        return cls(slug.strip().lower(), score, prompt, completion, cache_read, caching, throughput)


def _minute_of_day(now_ms: int) -> int:
    return (now_ms // rules.MINUTE_MS) % _MINUTES_PER_DAY


def _window_holds(start: float, end: float, minute: int) -> bool:
    """[start, end) in minutes of the UTC day; start > end wraps midnight; start == end is empty."""
    if start <= end:
        return start <= minute < end
    return minute >= start or minute < end


def prices_now(pricing: object, now_ms: int) -> tuple[float, float, float]:
    """(prompt, completion, input_cache_read), USD per token, of an endpoint's ``pricing`` at
    ``now_ms``: the base prices (decimal strings; missing or invalid: 0), replaced by those of the
    first ``overrides`` entry whose [utc_start, utc_end) window holds now. An override field that
    is missing or invalid keeps the base price; an override of "0" is a free window."""
    if not isinstance(pricing, Mapping):
        return (0.0, 0.0, 0.0)
    prompt = _price(pricing.get("prompt")) or 0.0
    completion = _price(pricing.get("completion")) or 0.0
    cache_read = _price(pricing.get("input_cache_read")) or 0.0
    override = _override_now(pricing.get("overrides"), now_ms)
    if override is None:
        return (prompt, completion, cache_read)
    return (
        _or(_price(override.get("prompt")), prompt),
        _or(_price(override.get("completion")), completion),
        _or(_price(override.get("input_cache_read")), cache_read),
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _override_now(overrides: object, now_ms: int) -> Mapping[str, object] | None:
    """The first well-formed ``overrides`` entry whose window holds ``now_ms``."""
    if not isinstance(overrides, list):
        return None
    minute = _minute_of_day(now_ms)
    for override in overrides:
        if not isinstance(override, Mapping):
            continue
        start, end = _number(override.get("utc_start")), _number(override.get("utc_end"))
        if start is None or end is None or start < 0 or end < 0:
            continue
        if _window_holds(start, end, minute):
            return override
    return None


@dataclass(frozen=True, slots=True)
class _Counted:
    """An endpoint that counts, before its throughput is known for sure."""

    slug: str
    prompt: float
    completion: float
    input_cache_read: float
    caching: bool
    p50: float | None


def _slug(endpoint: Mapping[str, object]) -> str:
    for key in ("tag", "provider_name"):
        value = endpoint.get(key)
        if isinstance(value, str) and value.strip():
            return value.split("/")[0].strip().lower()
    return ""


def _counted(endpoint: object, now_ms: int) -> _Counted | None:
    if not isinstance(endpoint, Mapping):
        return None
    status = endpoint.get("status")
    if isinstance(status, bool) or not isinstance(status, (int, float)) or status != 0:
        return None
    uptime = endpoint.get("uptime_last_30m")
    if uptime is not None:
        if isinstance(uptime, bool) or not isinstance(uptime, (int, float)):
            return None
        if not uptime >= rules.OPENROUTER_MIN_UPTIME:  # NaN too
            return None
    slug = _slug(endpoint)
    pricing = endpoint.get("pricing")
    if not slug or not isinstance(pricing, Mapping):
        return None
    if _price(pricing.get("prompt")) is None or _price(pricing.get("completion")) is None:
        return None  # no price, or OpenRouter's "-1" (variable): it cannot be ranked, and is no gift
    prompt, completion, cache_read = prices_now(pricing, now_ms)
    caching = endpoint.get("supports_implicit_caching") is True
    return _Counted(slug, prompt, completion, cache_read, caching, _p50(endpoint))


def _p50(endpoint: Mapping[str, object]) -> float | None:
    """The endpoint's median throughput, when it is a positive number. A bare number is read too
    (the seed's reading of the field)."""
    raw = endpoint.get("throughput_last_30m")
    if isinstance(raw, Mapping):
        raw = raw.get("p50")
    if isinstance(raw, str):  # a p50 is a JSON number; a string is not a measurement
        return None
    p50 = _number(raw)
    return p50 if p50 is not None and p50 > 0 else None


def _score(counted: _Counted, throughput: float) -> float:
    hit = rules.OPENROUTER_HIT_RATE if counted.caching else 0.0
    effective_input = hit * counted.input_cache_read + (1 - hit) * counted.prompt
    cost = (
        rules.OPENROUTER_INPUT_WEIGHT * effective_input
        + rules.OPENROUTER_OUTPUT_WEIGHT * counted.completion
        + rules.OPENROUTER_PRICE_EPSILON
    )
    score = throughput / cost
    return score * rules.OPENROUTER_CACHE_BONUS if counted.caching else score


def rank_endpoints(payload: object, now_ms: int) -> tuple[Ranked, ...]:
    """The slugs of a model scored from the endpoints API's parsed JSON
    (``{"data": {"endpoints": [...]}}``), best first (ties: slug ascending); one entry per slug,
    its best-scored endpoint. () when nothing counts or the payload is malformed; never raises."""
    data = payload.get("data") if isinstance(payload, Mapping) else None
    endpoints = data.get("endpoints") if isinstance(data, Mapping) else None
    if not isinstance(endpoints, list):
        return ()
    counted = [c for c in (_counted(e, now_ms) for e in endpoints) if c is not None]
    measured = [c.p50 for c in counted if c.p50 is not None]
    # An endpoint without a p50 is taken at the median of the others. When none has one, every
    # endpoint gets 1.0: the scores are then 1/cost, and price alone decides.
    fallback = statistics.median(measured) if measured else 1.0
    best: dict[str, Ranked] = {}
    for c in counted:
        score = _score(c, c.p50 if c.p50 is not None else fallback)
        if c.slug in best and best[c.slug].score >= score:
            continue
        best[c.slug] = Ranked(c.slug, score, c.prompt, c.completion, c.input_cache_read, c.caching, c.p50)
    return tuple(sorted(best.values(), key=lambda r: (-r.score, r.slug)))
