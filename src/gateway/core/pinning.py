"""OpenRouter upstream pinning (SPEC §15): the life of the lock that keeps one model on one
endpoint, among candidates ``endpoint_scores`` ranked.

Rules:
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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from gateway.core import rules
from gateway.core.endpoint_scores import Ranked

__all__ = [
    "Pin",
    "candidates_fresh",
    "is_openrouter",
    "pin_after_fault",
    "pin_after_success",
    "pin_for_request",
    "pin_refreshed",
    "provider_field",
    "renewal_due",
    "savings_estimate",
    "with_provider_member",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


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
