"""The fallback loop: try a chain's steps through the shell's ``attempt`` until one serves
(SPEC §4, §5.4). It never touches the network or the clock itself: both come from the caller.

Rules (the numbers are in ``rules``, the settings in ``Settings``):
- Per attempt, the timeout is the provider's ``timeout_ms`` or ``DEFAULT_ATTEMPT_TIMEOUT_MS``
  (``PROBE_TIMEOUT_MS`` for a probe), clamped to what is left of ``TOTAL_BUDGET_MS``; when
  nothing is left the loop stops.
- A delivery is recorded as a success (ledger and memory) and served.
- A failure is classified and recorded: in the ledger (a probe's failure only defers the next
  probe), in the memory and in the trail. Then:
  - the caller's fault: the upstream's answer is returned as it is, at once;
  - context too long: every later step with the same model is skipped;
  - an unreadable key: every later step of that provider is skipped (no cooldown);
  - otherwise the next step, unless the breaker trips: with
    ``max_consecutive_upstream_fails`` > 0, that many upstream failures in a row end the loop.
- Same-model retry, only for the model the caller named (not ``auto``, not a degraded step, not
  a probe), at most once per step: after a 5xx or a network error (a reset connection) at once;
  after a 429 that asks to wait at most ``same_model_retry_max_ms``, after that wait, when the
  budget allows.
- A step whose provider started cooling earlier in this request is skipped.
- Nothing served: ``outcome.decide_exhaustion`` over the trail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.core import rules
from gateway.core.attempt import Attempt, Delivered, Observed
from gateway.core.chain import Chain, Step
from gateway.core.classify import Failure, FailureKind, classify
from gateway.core.config import Settings
from gateway.core.outcome import (
    CallerError,
    LoopResult,
    Served,
    Stop,
    decide_exhaustion,
    no_providers,
)
from gateway.core.state import RouterState
from gateway.core.trail import TrailEntry

__all__ = ["Clock", "run_loop"]


@dataclass(frozen=True, slots=True)
class Clock:
    """``now_ms()``: epoch milliseconds; ``sleep(ms)``: wait that long."""

    now_ms: Callable[[], int]
    sleep: Callable[[int], Awaitable[None]]


async def run_loop(
    chain: Chain, attempt: Attempt, *, settings: Settings, state: RouterState, clock: Clock
) -> LoopResult:
    """Run ``chain`` (rules in the module doc). Returns ``Served``, ``CallerError`` or
    ``Exhausted``; never raises for an upstream problem (``attempt`` reports those as values)."""
    if not chain.steps and not chain.skipped:
        return no_providers()
    run = _Run(chain, settings, state, clock)
    for step in chain.steps:
        result = await run.try_step(step, attempt)
        if result is not None:
            return result
        if run.stop is not None:
            break
    now_ms = clock.now_ms()
    cooldowns = state.ledger.active(now_ms, chain.provider_ids())
    return decide_exhaustion(tuple(run.trail), run.stop, cooldowns, now_ms)


class _Run:
    """The bookkeeping of one loop: budget, trail, breaker count, what to skip."""

    __slots__ = (
        "chain", "clock", "deadline_ms", "failures", "settings", "skip_models",
        "skip_providers", "state", "stop", "trail",
    )  # fmt: skip

    def __init__(self, chain: Chain, settings: Settings, state: RouterState, clock: Clock) -> None:
        self.chain = chain
        self.settings = settings
        self.state = state
        self.clock = clock
        self.deadline_ms = clock.now_ms() + rules.TOTAL_BUDGET_MS
        self.trail: list[TrailEntry] = []
        self.failures = 0
        self.stop: Stop = None
        self.skip_models: set[str] = set()
        self.skip_providers: set[int] = set()

    async def try_step(self, step: Step, attempt: Attempt) -> LoopResult | None:
        """Try one step (and its same-model retry); a result ends the loop, None goes on."""
        candidate = step.candidate
        provider_id = candidate.provider.id
        if candidate.model in self.skip_models or provider_id in self.skip_providers:
            return None
        if not step.probe and self.state.ledger.is_cooling(
            provider_id, candidate.model, self.clock.now_ms()
        ):
            return None
        retried = False
        while True:
            timeout_ms = self._timeout_ms(step)
            if timeout_ms is None:
                return None
            started_ms = self.clock.now_ms()
            # A probe is never retried, so this runs once for it.
            if step.probe and not self.state.ledger.begin_probe(provider_id, started_ms):
                return None
            outcome = await attempt(candidate, timeout_ms)
            if isinstance(outcome, Delivered):
                return self._served(step, outcome)
            failure = classify(outcome, self.clock.now_ms())
            result = self._failed(step, outcome, failure, started_ms)
            if result is not None or self.stop is not None or retried:
                return result
            wait_ms = self._retry_wait_ms(step, failure)
            if wait_ms is None:
                return None
            retried = True
            if wait_ms > 0:
                await self.clock.sleep(wait_ms)

    def _timeout_ms(self, step: Step) -> int | None:
        left = self.deadline_ms - self.clock.now_ms()
        if left <= 0:
            self.stop = "budget"
            return None
        if step.probe:
            return min(rules.PROBE_TIMEOUT_MS, left)
        return min(step.candidate.provider.timeout_ms or rules.DEFAULT_ATTEMPT_TIMEOUT_MS, left)

    def _served(self, step: Step, delivered: Delivered) -> Served:
        candidate = step.candidate
        provider_id = candidate.provider.id
        ledger = self.state.ledger
        if step.probe:
            ledger.end_probe(provider_id, True, self.clock.now_ms())
        else:
            ledger.record_success(provider_id)
        self.state.memory.record_success(provider_id, candidate.model, delivered.latency_ms)
        degraded_from = self.chain.requested_model if step.degraded else None
        return Served(
            candidate, delivered.handle, delivered.latency_ms, tuple(self.trail), degraded_from
        )

    def _failed(
        self, step: Step, observed: Observed, failure: Failure, started_ms: int
    ) -> CallerError | None:
        candidate = step.candidate
        provider_id = candidate.provider.id
        now_ms = self.clock.now_ms()
        if step.probe:
            self.state.ledger.end_probe(provider_id, False, now_ms)
        if failure.kind is FailureKind.CALLER_ERROR:
            return CallerError(candidate, observed, tuple(self.trail))
        self.trail.append(TrailEntry(candidate.provider.name, candidate.model, failure))
        if not step.probe:
            ceiling_ms = self.settings.routing_cooldown_ceiling_ms
            self.state.ledger.record_failure(candidate, failure, now_ms, ceiling_ms, started_ms)
        if failure.kind is FailureKind.KEY_UNREADABLE:
            self.skip_providers.add(provider_id)
        elif failure.kind is FailureKind.CONTEXT_TOO_LARGE:
            self.skip_models.add(candidate.model)
        else:
            self.state.memory.record_failure(provider_id, candidate.model)
            self.failures += 1
            limit = self.settings.max_consecutive_upstream_fails
            if 0 < limit <= self.failures:
                self.stop = "breaker"
        return None

    def _retry_wait_ms(self, step: Step, failure: Failure) -> int | None:
        """How long to wait before retrying the same step, or None for no retry."""
        if not self.chain.explicit or step.degraded or step.probe:
            return None
        if failure.kind is FailureKind.NETWORK or (
            failure.kind is FailureKind.UPSTREAM_ERROR and (failure.status or 0) >= 500
        ):
            return 0
        wait_ms = failure.retry_after_ms
        if (
            failure.kind is FailureKind.RATE_LIMITED
            and wait_ms is not None
            and wait_ms <= self.settings.same_model_retry_max_ms
            and self.clock.now_ms() + wait_ms < self.deadline_ms
        ):
            return wait_ms
        return None
