"""What the fallback loop returns, and the honest answer when every candidate failed (SPEC §4).

The loop returns one of:
- ``Served``: a candidate delivered; the shell answers with its response.
- ``CallerError``: the upstream said the request itself is wrong (a 4xx that is not a provider
  fault); the shell returns that answer as it is.
- ``Exhausted``: nothing served. Status, OpenAI ``type``/``code`` and message follow the table
  below, most specific row first, over the classes of the failed attempts (an unreadable key is
  a local fault and does not count against a class when upstream attempts were made too):

  | every attempt ended as …           | status | type / code                               |
  |-------------------------------------|--------|-------------------------------------------|
  | auth                                | 502    | provider_error / provider_authentication_failed |
  | context too long (reference server) | 413    | invalid_request_error / context_length_exceeded |
  | model not found                     | 404    | invalid_request_error / model_not_found   |
  | (the breaker tripped)               | 503    | service_unavailable / upstream_unhealthy  |
  | loop detected (508, ``hop``)        | 508    | provider_error / loop_detected            |
  | rate limit, quota, credit or tier   | 429    | rate_limit_error / rate_limit_exceeded    |
  | anything else, or a mix             | 502    | provider_error / upstream_failed          |

  No attempt at all because every candidate cools down or is at its free-tier cap (SPEC §19): 429
  with ``retry_at_ms`` (the soonest cooldown's end or cap's turn) and the cooldowns. An empty
  chain: 503 ``no_providers_configured``. The loop stopped before an attempt that would pass the
  request's subrequest limit (SPEC §18): 503 ``service_unavailable`` / ``subrequest_limit``,
  whatever the attempts made ended as; its message names the limit and the setting, then says
  what the answer above would have said of those attempts.

Messages name each attempt (``provider/model: class (status reason)``, the reason redacted)
and, for 429, the soonest reset (``~45s``, ``~12m``, ``~3h``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any, Literal

from gateway.core import rules
from gateway.core.attempt import Candidate, Observed
from gateway.core.classify import FailureKind
from gateway.core.ledger import Cooldown
from gateway.core.subrequests import Subrequests
from gateway.core.trail import Pass, Trail, TrailEntry

__all__ = [
    "CallerError",
    "Exhausted",
    "LoopResult",
    "Served",
    "Stop",
    "decide_exhaustion",
    "format_eta",
    "no_providers",
]

Stop = Literal["breaker", "budget", "subrequests"] | None


@dataclass(frozen=True, slots=True)
class Served:
    """``handle`` is the shell's response object; ``degraded_from`` is the model asked for when
    another one served (``X-Fallback-From``), else None; ``passed``: the chain's pairs passed over
    (SPEC §19)."""

    candidate: Candidate
    handle: Any
    latency_ms: int
    trail: Trail
    degraded_from: str | None
    passed: tuple[Pass, ...] = ()


@dataclass(frozen=True, slots=True)
class CallerError:
    """The upstream's 4xx answer to pass through as it is (no cooldown was set)."""

    candidate: Candidate
    observed: Observed
    trail: Trail
    passed: tuple[Pass, ...] = ()


@dataclass(frozen=True, slots=True)
class Exhausted:
    """Nothing served. ``retry_at_ms`` (epoch ms) and ``cooldowns`` are set for 429 answers."""

    status: int
    type: str
    code: str
    message: str
    retry_at_ms: int | None
    cooldowns: tuple[Cooldown, ...]
    trail: Trail
    passed: tuple[Pass, ...] = ()

    def retry_after_s(self, now_ms: int) -> int | None:
        """The ``Retry-After`` header value: whole seconds to ``retry_at_ms``, rounded up."""
        if self.retry_at_ms is None:
            return None
        return max(0, -(-(self.retry_at_ms - now_ms) // rules.SECOND_MS))


LoopResult = Served | CallerError | Exhausted

_RATE_KINDS = frozenset(
    {
        FailureKind.RATE_LIMITED,
        FailureKind.DAILY_QUOTA,
        FailureKind.OUT_OF_CREDITS,
        FailureKind.FORBIDDEN,
    }
)


@dataclass(frozen=True, slots=True)
class _Row:
    """One exhaustion row: it matches when every attempt's class is in ``kinds``, or, for the
    breaker row, when the breaker tripped."""

    kinds: frozenset[FailureKind]
    breaker: bool
    status: int
    type: str
    code: str
    headline: str


_ROWS = (
    _Row(frozenset({FailureKind.AUTH}), False, 502, "provider_error",
         "provider_authentication_failed", "Every provider rejected its API key"),
    _Row(frozenset({FailureKind.CONTEXT_TOO_LARGE}), False, 413, "invalid_request_error",
         "context_length_exceeded", "The prompt is too long for every model tried"),
    _Row(frozenset({FailureKind.MODEL_NOT_FOUND}), False, 404, "invalid_request_error",
         "model_not_found", "The model was not found at any provider tried"),
    _Row(frozenset(), True, 503, "service_unavailable", "upstream_unhealthy",
         "Stopped: too many consecutive upstream failures"),
    _Row(frozenset({FailureKind.LOOP_DETECTED}), False, 508, "provider_error", "loop_detected",
         "Every provider tried leads back to a gateway this request already passed (a request loop: "
         "fix the provider's base_url)"),
    _Row(_RATE_KINDS, False, 429, "rate_limit_error", "rate_limit_exceeded",
         "All providers are rate-limited or out of quota"),
)  # fmt: skip
_ANYTHING_ELSE = _Row(frozenset(), False, 502, "provider_error", "upstream_failed", "Every provider tried failed")


def format_eta(ms: int) -> str:
    """``~45s`` / ``~12m`` / ``~3h`` for a wait of ``ms`` (seconds rounded up)."""
    if ms < rules.ETA_SECONDS_BELOW_MS:
        return f"~{max(1, -(-ms // rules.SECOND_MS))}s"
    if ms < rules.ETA_MINUTES_BELOW_MS:
        return f"~{(ms + rules.MINUTE_MS // 2) // rules.MINUTE_MS}m"
    return f"~{(ms + rules.HOUR_MS // 2) // rules.HOUR_MS}h"


def _describe(entry: TrailEntry) -> str:
    failure = entry.failure
    detail = f"{failure.status} {failure.reason}" if failure.status else failure.reason
    return f"{entry.label} ({detail.strip()})" if detail.strip() else entry.label


def _match(trail: Trail, stop: Stop) -> _Row:
    kinds = {entry.failure.kind for entry in trail}
    if len(kinds) > 1:
        kinds.discard(FailureKind.KEY_UNREADABLE)
    for row in _ROWS:
        matched = stop == "breaker" if row.breaker else kinds <= row.kinds
        if matched:
            return row
    return _ANYTHING_ELSE


def decide_exhaustion(
    trail: Trail,
    stop: Stop,
    cooldowns: list[Cooldown],
    now_ms: int,
    several_keys: Collection[int] = frozenset(),
    subrequests: Subrequests | None = None,
    passed: tuple[Pass, ...] = (),
) -> Exhausted:
    """The answer when no candidate served. ``trail``: the failed attempts (empty when every
    candidate was skipped); ``stop``: why the loop ended early, if it did; ``cooldowns``: the
    live cooldowns of the chain's providers, soonest end first; ``several_keys``: the ids of
    those providers that hold more than one key (only their keys are named, as in the trail);
    ``subrequests``: the request's counter, for a ``"subrequests"`` stop; ``passed``: the pairs
    the chain passed over, kept in the answer's trail."""
    return replace(_decide(trail, stop, cooldowns, now_ms, several_keys, subrequests, passed), passed=passed)


def _decide(
    trail: Trail,
    stop: Stop,
    cooldowns: list[Cooldown],
    now_ms: int,
    several_keys: Collection[int],
    subrequests: Subrequests | None,
    passed: tuple[Pass, ...],
) -> Exhausted:
    if stop == "subrequests" and subrequests is not None:
        return _out_of_subrequests(trail, cooldowns, now_ms, several_keys, subrequests)
    if not trail:
        return _all_cooling(cooldowns, now_ms, several_keys, [p for p in passed if p.until_ms is not None])
    row = _match(trail, stop)
    parts = [f"{row.headline} after {len(trail)} attempt(s)"]
    if stop == "budget":
        budget_s = rules.TOTAL_BUDGET_MS // rules.SECOND_MS
        parts[0] += f" (stopped early: time budget {budget_s}s exceeded)"
    retry_at_ms: int | None = None
    kept: tuple[Cooldown, ...] = ()
    if row.status == 429:
        kept = tuple(cooldowns)
        retry_at_ms = cooldowns[0].until_ms if cooldowns else None
        if retry_at_ms is not None:
            parts.append(f"Soonest reset {format_eta(retry_at_ms - now_ms)}")
    parts.append("Attempts: " + "; ".join(_describe(entry) for entry in trail))
    return Exhausted(row.status, row.type, row.code, ". ".join(parts), retry_at_ms, kept, trail)


def _out_of_subrequests(
    trail: Trail,
    cooldowns: list[Cooldown],
    now_ms: int,
    several_keys: Collection[int],
    counter: Subrequests,
) -> Exhausted:
    message = (
        f"This request stopped after {counter.used} subrequests: the Workers plan allows {counter.limit} per "
        f"request (setting subrequest_limit; {rules.SUBREQUESTS_RESERVED} are kept for the work after the "
        "answer) and the next attempt would pass it; on a paid plan raise the setting (up to "
        f"{rules.SUBREQUEST_LIMIT_MAX})"
    )
    if trail:
        message += ". " + decide_exhaustion(trail, None, cooldowns, now_ms, several_keys).message
    return Exhausted(503, "service_unavailable", "subrequest_limit", message, None, (), trail)


def _all_cooling(
    cooldowns: list[Cooldown], now_ms: int, several_keys: Collection[int], capped: list[Pass]
) -> Exhausted:
    entries = []
    for cooldown in cooldowns:
        named = cooldown.key_id is not None and cooldown.provider_id in several_keys
        where = f"{cooldown.name}#{cooldown.key_id}" if named else cooldown.name
        where = where if cooldown.model is None else f"{where}/{cooldown.model}"
        status = f"{cooldown.last_status} " if cooldown.last_status else ""
        why = f"{cooldown.source}, {status}{cooldown.last_message}".strip()
        entries.append(f"{where}: {why}, ready in {format_eta(cooldown.remaining_ms(now_ms))}")
    resets = [c.until_ms for c in cooldowns[:1]]
    for cap in capped:
        until_ms = cap.until_ms or now_ms
        resets.append(until_ms)
        entries.append(f"{cap.provider}/{cap.model}: {cap.reason}, ready in {format_eta(until_ms - now_ms)}")
    retry_at_ms = min(resets) if resets else None
    message = "Every candidate is cooling down" + (" or at its free-tier cap" if capped else "")
    if retry_at_ms is not None:
        message += f". Soonest reset {format_eta(retry_at_ms - now_ms)}. " + "; ".join(entries)
    return Exhausted(429, "rate_limit_error", "rate_limit_exceeded", message, retry_at_ms, tuple(cooldowns), ())


def no_providers() -> Exhausted:
    """The answer for an empty chain: no enabled provider with at least one model and at least
    one enabled key (SPEC §4, §13)."""
    return Exhausted(
        503,
        "service_unavailable",
        "no_providers_configured",
        "No enabled provider with a model and an enabled key is configured. Add one in the config "
        "page or with POST /api/admin/providers, or enable one of its keys.",
        None,
        (),
        (),
    )
