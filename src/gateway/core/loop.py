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
  - a key-scoped failure (SPEC §13: 401, 402, 403, 429; or an unreadable key, which sets no
    cooldown): the same step is tried again at once with the provider's next usable key
    (``Rotation``), until one serves, no untried usable key is left or ``MAX_KEY_TRIES`` keys
    were tried; each try is an attempt
    of the trail, named with its key (``name#<key id>``) when the provider has several. An
    unreadable key is not tried again in this request;
  - otherwise the next step, unless the breaker trips: with
    ``max_consecutive_upstream_fails`` > 0, that many upstream failures in a row end the loop.
- Every attempt uses one key of the provider, chosen by ``RouterState.rotation`` among those not
  at their free-tier cap for the model (a probe of a cooling key, or a sticky step, uses its key);
  a sent attempt counts against its key's caps (SPEC §19, ``core/freetier.py``).
- What failures teach (SPEC §19): a 429 that states a limit lowers its key's cap for the model
  (``core/stated.py``); a context-too-long failure bounds the model's window, at the window it
  states or else under the request's tokens at its whole ``max_tokens`` (``Needs.ceiling``,
  ``capabilities.Windows``).
- Same-model retry, only for the model the caller named (not ``auto``, not a degraded step, not
  a probe), at most once per step, with the key of the last try (once no other key is left):
  after a 5xx or a network error (a reset connection) at once;
  after a 429 that asks to wait at most ``same_model_retry_max_ms``, after that wait, when the
  budget allows.
- A step whose provider started cooling earlier in this request (or all of whose keys did) is
  skipped.
- Subrequests (SPEC §18, ``core/subrequests.py``): before every attempt, the request's counter
  is asked whether one more fits; when it does not, the loop stops there (``"subrequests"``):
  the attempt is not made, and nothing is recorded for its candidate.
- Nothing served: ``outcome.decide_exhaustion`` over the trail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.core import rules
from gateway.core.attempt import Attempt, Candidate, Delivered, Observed
from gateway.core.chain import Chain, Step
from gateway.core.classify import Failure, FailureKind, classify
from gateway.core.outcome import (
    CallerError,
    LoopResult,
    Served,
    Stop,
    decide_exhaustion,
    no_providers,
)
from gateway.core.providers import ProviderKey
from gateway.core.settings import Settings
from gateway.core.state import RouterState
from gateway.core.stated import stated_caps, stated_context
from gateway.core.subrequests import Subrequests
from gateway.core.trail import TrailEntry, named_key_id

__all__ = ["Clock", "run_loop"]


@dataclass(frozen=True, slots=True)
class Clock:
    """``now_ms()``: epoch milliseconds; ``sleep(ms)``: wait that long."""

    now_ms: Callable[[], int]
    sleep: Callable[[int], Awaitable[None]]


async def run_loop(
    chain: Chain,
    attempt: Attempt,
    *,
    settings: Settings,
    state: RouterState,
    clock: Clock,
    avoid_keys: frozenset[int] = frozenset(),
    subrequests: Subrequests | None = None,
) -> LoopResult:
    """Run ``chain`` (rules in the module doc). Returns ``Served``, ``CallerError`` or
    ``Exhausted``; never raises for an upstream problem (``attempt`` reports those as values).
    ``avoid_keys``: keys not to use (a rescue's, SPEC §16: the key whose stream broke);
    ``subrequests``: the request's counter (None: not limited), which ``attempt`` adds to."""
    if not chain.steps and not chain.skipped and not chain.passed:
        return no_providers()
    run = _Run(chain, settings, state, clock, subrequests)
    run.skip_keys |= avoid_keys
    for step in chain.steps:
        result = await run.try_step(step, attempt)
        if result is not None:
            return result
        if run.stop is not None:
            break
    now_ms = clock.now_ms()
    cooldowns = state.ledger.active(now_ms, chain.provider_ids())
    several_keys = chain.several_keys()
    return decide_exhaustion(tuple(run.trail), run.stop, cooldowns, now_ms, several_keys, subrequests, chain.passed)


class _Run:
    """The bookkeeping of one loop: budget, trail, breaker count, what to skip."""

    __slots__ = (
        "chain", "clock", "deadline_ms", "failures", "settings", "skip_keys", "skip_models",
        "skip_providers", "state", "stop", "subrequests", "trail",
    )  # fmt: skip

    def __init__(
        self, chain: Chain, settings: Settings, state: RouterState, clock: Clock, subrequests: Subrequests | None
    ) -> None:
        self.chain = chain
        self.subrequests = subrequests
        self.settings = settings
        self.state = state
        self.clock = clock
        self.deadline_ms = clock.now_ms() + rules.TOTAL_BUDGET_MS
        self.trail: list[TrailEntry] = []
        self.failures = 0
        self.stop: Stop = None
        self.skip_models: set[str] = set()
        self.skip_providers: set[int] = set()
        self.skip_keys: set[int] = set()  # keys found unreadable, and keys to avoid

    async def try_step(self, step: Step, attempt: Attempt) -> LoopResult | None:
        """Try one step (its next keys and its same-model retry); a result ends the loop, None
        goes on."""
        candidate = step.candidate
        provider = candidate.provider
        if candidate.model in self.skip_models or provider.id in self.skip_providers:
            return None
        if not step.probe and self.state.ledger.is_cooling(
            provider.id, candidate.model, self.clock.now_ms(), provider.keys
        ):
            return None
        tried_keys: set[int] = set()
        key = self._next_key(step, tried_keys)
        if key is None and provider.keys:
            return None
        retried = False
        while True:
            timeout_ms = self._timeout_ms(step)
            if timeout_ms is None:
                return None
            if self.subrequests is not None and not self.subrequests.room():
                self.stop = "subrequests"
                return None
            started_ms = self.clock.now_ms()
            # A probe is never retried, so this runs once for it.
            if step.probe and not self.state.ledger.begin_probe(provider.id, started_ms, _probed_key_id(step)):
                return None
            tried = Candidate(provider, candidate.model, key)
            if key is not None:
                self.state.free_tier.count(key.id, candidate.model, self.chain.needs.tokens, started_ms)
            outcome = await attempt(tried, timeout_ms)
            if isinstance(outcome, Delivered):
                return self._served(step, tried, outcome)
            failure = classify(outcome, self.clock.now_ms())
            result = self._failed(step, tried, outcome, failure, started_ms)
            if result is not None or self.stop is not None:
                return result
            if key is not None and _key_scoped(failure) and not step.probe:
                tried_keys.add(key.id)
                # The cap first: asking the rotation moves its turn on, and a key handed out
                # but never tried would lose its turn in the round-robin.
                capped = len(tried_keys) >= rules.MAX_KEY_TRIES
                next_key = None if capped else self._next_key(step, tried_keys)
                if next_key is not None:
                    key = next_key
                    continue
            if retried:
                return None
            wait_ms = self._retry_wait_ms(step, failure)
            if wait_ms is None:
                return None
            retried = True
            if wait_ms > 0:
                await self.clock.sleep(wait_ms)

    def _next_key(self, step: Step, tried_keys: set[int]) -> ProviderKey | None:
        """The key of the step's next try: a probed key (first try only), else the rotation's
        next usable key not tried yet; a provider's probe takes any untried enabled key when all
        cool down. None when none is left."""
        provider = step.candidate.provider
        if step.candidate.key is not None:
            return None if tried_keys else step.candidate.key
        now_ms = self.clock.now_ms()
        exclude = tried_keys | self.skip_keys | self._capped(step, now_ms)
        key = self.state.rotation.next_key(provider, self.state.ledger, now_ms, exclude)
        if key is None and step.probe:
            key = next((k for k in provider.enabled_keys if k.id not in exclude), None)
        return key

    def _capped(self, step: Step, now_ms: int) -> set[int]:
        """The ids of the step's provider's keys at their free-tier cap for its model."""
        provider, model = step.candidate.provider, step.candidate.model
        facts, tokens, tier = provider.facts_of(model), self.chain.needs.tokens, self.state.free_tier
        return {k.id for k in provider.enabled_keys if tier.at_cap(k.id, model, facts, tokens, now_ms) is not None}

    def _timeout_ms(self, step: Step) -> int | None:
        left = self.deadline_ms - self.clock.now_ms()
        if left <= 0:
            self.stop = "budget"
            return None
        if step.probe:
            return min(rules.PROBE_TIMEOUT_MS, left)
        return min(step.candidate.provider.timeout_ms or rules.DEFAULT_ATTEMPT_TIMEOUT_MS, left)

    def _served(self, step: Step, candidate: Candidate, delivered: Delivered) -> Served:
        provider_id = candidate.provider.id
        ledger = self.state.ledger
        if step.probe:
            ledger.end_probe(provider_id, True, self.clock.now_ms(), _probed_key_id(step))
        ledger.record_success(provider_id, candidate.key.id if candidate.key else None)
        self.state.memory.record_success(provider_id, candidate.model, delivered.latency_ms)
        degraded_from = self.chain.requested_model if step.degraded else None
        trail = tuple(self.trail)
        return Served(candidate, delivered.handle, delivered.latency_ms, trail, degraded_from, self.chain.passed)

    def _failed(
        self,
        step: Step,
        candidate: Candidate,
        observed: Observed,
        failure: Failure,
        started_ms: int,
    ) -> CallerError | None:
        provider = candidate.provider
        provider_id = provider.id
        now_ms = self.clock.now_ms()
        if step.probe:
            self.state.ledger.end_probe(provider_id, False, now_ms, _probed_key_id(step))
        if failure.kind is FailureKind.CALLER_ERROR:
            return CallerError(candidate, observed, tuple(self.trail), self.chain.passed)
        key_id = named_key_id(provider, candidate.key)
        used_key_id = candidate.key.id if candidate.key is not None else 0
        self.trail.append(TrailEntry(provider.name, candidate.model, failure, key_id, provider_id, used_key_id, now_ms))
        if not step.probe:
            ceiling_ms = self.settings.routing_cooldown_ceiling_ms
            self.state.ledger.record_failure(candidate, failure, now_ms, ceiling_ms, started_ms)
        self._learn(candidate, observed, failure)
        if failure.kind is FailureKind.KEY_UNREADABLE:
            if candidate.key is None:
                self.skip_providers.add(provider_id)
            else:
                self.skip_keys.add(candidate.key.id)
        elif failure.kind is FailureKind.CONTEXT_TOO_LARGE:
            self.skip_models.add(candidate.model)
        else:
            self.state.memory.record_failure(provider_id, candidate.model)
            self.failures += 1
            limit = self.settings.max_consecutive_upstream_fails
            if 0 < limit <= self.failures:
                self.stop = "breaker"
        return None

    def _learn(self, candidate: Candidate, observed: Observed, failure: Failure) -> None:
        """What a failure tells of the model's window or the key's caps (rules in the module doc)."""
        if failure.kind is FailureKind.CONTEXT_TOO_LARGE:
            # Unstated, the window is under the request at its whole max_tokens (its estimate
            # counts only part of a large one, which a short prompt may have been refused for).
            bound = stated_context(observed.body) or self.chain.needs.ceiling - 1
            self.state.windows.learn(candidate.provider.id, candidate.model, bound)
        elif observed.status == 429 and candidate.key is not None:
            stated = stated_caps(observed.body, observed.headers, platform=candidate.provider.platform)
            self.state.free_tier.learn(candidate.key.id, candidate.model, stated)

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


def _key_scoped(failure: Failure) -> bool:
    """A failure another key of the provider may not have (SPEC §13)."""
    return failure.scope == "key" or failure.kind is FailureKind.KEY_UNREADABLE


def _probed_key_id(step: Step) -> int | None:
    """The key a probe step probes (its cooldown is the key's), or None for a provider's probe."""
    key = step.candidate.key
    return key.id if step.probe and key is not None else None
