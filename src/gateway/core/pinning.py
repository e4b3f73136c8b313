"""OpenRouter upstream pinning (SPEC §15): scoring a model's upstream endpoints, and the life of
the lock that keeps one model on one endpoint.

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
- The lock (``Pin``): a request takes ``best`` when there is no live lock, and renews a live one
  for ``idle_ms``; only a lock idle that long (or whose slug was cooled) is replaced, so a session
  never changes upstream midway. A refresh of the candidates never touches the lock.
- ``OPENROUTER_FAULTS_TO_MOVE`` faults in a row of the locked slug cool it for this model for
  ``OPENROUTER_ENDPOINT_COOLDOWN_MS`` and move the lock at once; a success resets the count; a
  fault of a slug that is no longer the lock is ignored.
- Nothing here raises on what the endpoints API or a hand-edited D1 row contains: malformed
  entries are skipped.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from gateway.core import rules

__all__ = [
    "Pin",
    "Ranked",
    "candidates_fresh",
    "is_openrouter",
    "pin_after_fault",
    "pin_after_success",
    "pin_for_request",
    "pin_refreshed",
    "prices_now",
    "provider_field",
    "with_provider_member",
    "rank_endpoints",
    "renewal_due",
    "savings_estimate",
]

_MINUTES_PER_DAY = 24 * 60
_DEFAULT_PORTS = {"http": 80, "https": 443}


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
        best[c.slug] = Ranked(
            c.slug, score, c.prompt, c.completion, c.input_cache_read, c.caching, c.p50
        )
    return tuple(sorted(best.values(), key=lambda r: (-r.score, r.slug)))


@dataclass(frozen=True, slots=True)
class Pin:
    """One model's pinning state (one D1 row, also held in isolate memory). Transitions return a
    new ``Pin`` (the same object when nothing changed); ``cooled`` is never mutated."""

    model: str
    candidates: tuple[Ranked, ...] = ()
    refreshed_at_ms: int | None = None
    lock_slug: str | None = None
    # The lock lives while now < lock_until_ms; traffic renews it.
    lock_until_ms: int | None = None
    # Consecutive faults of the locked endpoint.
    failures: int = 0
    # Times the lock moved: a fault move, or an idle replacement by a different slug.
    switches: int = 0
    # slug -> cooled until (ms), after faults, for this model.
    cooled: Mapping[str, int] = field(default_factory=dict)

    def _cooled(self, slug: str, now_ms: int) -> bool:
        return now_ms < self.cooled.get(slug, now_ms)

    def best(self, now_ms: int) -> str | None:
        """The best-scored candidate slug not cooled at ``now_ms`` (ties: slug ascending)."""
        usable = [r for r in self.candidates if not self._cooled(r.slug, now_ms)]
        if not usable:
            return None
        return min(usable, key=lambda r: (-r.score, r.slug)).slug

    def locked(self, now_ms: int) -> str | None:
        """The lock's slug while the lock lives and its slug is not cooled, else None."""
        if self.lock_slug is None or self.lock_until_ms is None or now_ms >= self.lock_until_ms:
            return None
        return None if self._cooled(self.lock_slug, now_ms) else self.lock_slug


def _take(pin: Pin, slug: str | None, now_ms: int, idle_ms: int) -> Pin:
    """``pin`` locked to ``slug`` from now (None: the lock cleared). A different slug resets the
    fault count and, when a lock existed, counts as a switch."""
    moved = slug != pin.lock_slug
    return replace(
        pin,
        lock_slug=slug,
        lock_until_ms=None if slug is None else now_ms + idle_ms,
        failures=0 if moved else pin.failures,
        switches=pin.switches + (1 if moved and pin.lock_slug is not None and slug else 0),
    )


def pin_for_request(pin: Pin, now_ms: int, idle_ms: int) -> Pin:
    """What a request does to the pin: a live lock is renewed until ``now_ms + idle_ms``; no lock,
    an idle-expired lock or a cooled slug is replaced by ``pin.best(now_ms)``; with no candidate
    left the lock is cleared. The request uses the result's ``lock_slug`` (None: unpinned)."""
    if pin.locked(now_ms) is not None:
        return replace(pin, lock_until_ms=now_ms + idle_ms)
    slug = pin.best(now_ms)
    if slug is None and pin.lock_slug is None and pin.lock_until_ms is None:
        return pin
    return _take(pin, slug, now_ms, idle_ms)


def pin_after_fault(pin: Pin, slug: str, now_ms: int, idle_ms: int) -> Pin:
    """A timeout, stall, 5xx or bad stream of a request pinned to ``slug``. Ignored (``pin``
    returned) when ``slug`` is no longer the lock's. The ``OPENROUTER_FAULTS_TO_MOVE``-th fault in a
    row cools ``slug`` for ``OPENROUTER_ENDPOINT_COOLDOWN_MS`` and moves the lock at once to the
    next best uncooled candidate (none: the lock is cleared); it counts as a switch."""
    if slug != pin.lock_slug:
        return pin
    failures = pin.failures + 1
    if failures < rules.OPENROUTER_FAULTS_TO_MOVE:
        return replace(pin, failures=failures)
    cooled = {s: until for s, until in pin.cooled.items() if until > now_ms}
    cooled[slug] = now_ms + rules.OPENROUTER_ENDPOINT_COOLDOWN_MS
    cooled_pin = replace(pin, cooled=cooled)
    following = cooled_pin.best(now_ms)
    return replace(
        cooled_pin,
        lock_slug=following,
        lock_until_ms=None if following is None else now_ms + idle_ms,
        failures=0,
        switches=pin.switches + 1,
    )


def pin_after_success(pin: Pin, slug: str) -> Pin:
    """A good answer through ``slug``: the fault count restarts when it is the lock's."""
    if slug != pin.lock_slug or pin.failures == 0:
        return pin
    return replace(pin, failures=0)


def pin_refreshed(pin: Pin, candidates: tuple[Ranked, ...], now_ms: int) -> Pin:
    """New candidates (the cron, or a first scoring) replace the old and their time; the lock is
    never touched. Empty ``candidates`` (a failed fetch) keep the old ones and their time."""
    if not candidates:
        return pin
    return replace(pin, candidates=tuple(candidates), refreshed_at_ms=now_ms)


def candidates_fresh(pin: Pin, now_ms: int) -> bool:
    """True when the candidates were refreshed less than ``OPENROUTER_CANDIDATES_FRESH_MS`` ago.
    A time that far in the future (a hand-edited row, a skewed clock) is not fresh either, so it
    cannot freeze the candidates."""
    if pin.refreshed_at_ms is None:
        return False
    return abs(now_ms - pin.refreshed_at_ms) < rules.OPENROUTER_CANDIDATES_FRESH_MS


def renewal_due(written_until_ms: int | None, pin: Pin, idle_ms: int) -> bool:
    """True when ``pin.lock_until_ms`` moved at least half the lock's idle time ``idle_ms`` (at
    most ``OPENROUTER_RENEW_WRITE_MS``) past the last written value (None: never written): the
    written lock then never lapses while the model is used, and D1 gets at most one renewal write
    per that time per model per isolate. False without a lock (taking or clearing one is written
    anyway)."""
    if pin.lock_until_ms is None:
        return False
    if written_until_ms is None:
        return True
    return pin.lock_until_ms - written_until_ms >= min(idle_ms // 2, rules.OPENROUTER_RENEW_WRITE_MS)


def provider_field(slug: str) -> dict[str, object]:
    """The request body's ``provider`` object that pins OpenRouter to ``slug``."""
    return {"order": [slug], "allow_fallbacks": False}


def with_provider_member(raw: bytes, provider: dict[str, object]) -> bytes:
    """``raw``, the bytes of a JSON object without a ``provider`` member, with ``provider`` as its
    first member: spliced in after the opening brace, so the rest (a long conversation) is
    forwarded as it came, never decoded and encoded again."""
    member = b'"provider":' + json.dumps(provider, separators=(",", ":")).encode()
    start = raw.index(b"{") + 1  # only whitespace precedes an object's brace
    rest = raw[start:]
    return raw[:start] + member + (b"" if rest.lstrip()[:1] == b"}" else b",") + rest


def _origin(url: object) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a URL, the port defaulted by scheme; None for junk."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:  # a bad port or an unbalanced IPv6 bracket
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if not scheme or not host:
        return None
    if port is None:
        port = _DEFAULT_PORTS.get(scheme, -1)
    return scheme, host, port


@functools.lru_cache(maxsize=256)
def is_openrouter(platform: str, base_url: str, origin: str) -> bool:
    """True for the platform ``openrouter``, or a ``base_url`` on ``origin`` (same scheme, host,
    case-insensitive, and port). Never raises. Remembered: every attempt asks it of its provider,
    and parsing two URLs per attempt cost more than the rest of pinning's decision."""
    if isinstance(platform, str) and platform.strip().lower() == "openrouter":
        return True
    ours = _origin(base_url)
    return ours is not None and ours == _origin(origin)


def _bill(ranked: Ranked) -> float:
    """Seed 003's bill at ``ranked``'s prices: the estimate's input, ``OPENROUTER_HIT_RATE`` of it
    read from the cache, and its output."""
    hit = rules.OPENROUTER_HIT_RATE
    input_price = hit * ranked.input_cache_read + (1 - hit) * ranked.prompt
    return (
        rules.OPENROUTER_ESTIMATE_INPUT_TOKENS * input_price
        + rules.OPENROUTER_ESTIMATE_OUTPUT_TOKENS * ranked.completion
    )


def savings_estimate(pin: Pin, now_ms: int) -> dict[str, object] | None:
    """What the pinned endpoint (the lock, else the best candidate) bills against the model's
    official provider (the first part of its id: ``deepseek`` of ``deepseek/deepseek-v4``) for
    seed 003's assumed traffic, in USD; ``official_usd`` and ``savings_usd`` are None when the
    official endpoint is not among the candidates. None with no candidate."""
    slug = pin.locked(now_ms) or pin.best(now_ms)
    pinned = next((c for c in pin.candidates if c.slug == slug), None)
    if pinned is None:
        return None
    official_slug = pin.model.split("/")[0].lower()
    official = next((c for c in pin.candidates if c.slug == official_slug), None)
    pinned_usd = round(_bill(pinned), 4)
    official_usd = None if official is None else round(_bill(official), 4)
    return {
        "pinned": pinned.slug,
        "official": None if official is None else official.slug,
        "input_tokens": rules.OPENROUTER_ESTIMATE_INPUT_TOKENS,
        "output_tokens": rules.OPENROUTER_ESTIMATE_OUTPUT_TOKENS,
        "hit_rate": rules.OPENROUTER_HIT_RATE,
        "pinned_usd": pinned_usd,
        "official_usd": official_usd,
        "savings_usd": None if official_usd is None else round(official_usd - pinned_usd, 4),
    }
