"""The fallback loop (SPEC §4, §5.4) against a scripted fake upstream and a fake clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from gateway.core import rules
from gateway.core.attempt import Candidate, Defect, Delivered, Observed, Outcome
from gateway.core.capabilities import Needs
from gateway.core.chain import build_chain
from gateway.core.classify import classify
from gateway.core.loop import run_loop
from gateway.core.modelfacts import NO_FACTS, Facts
from gateway.core.outcome import CallerError, Exhausted, LoopResult, Served, format_eta
from gateway.core.providers import Provider
from gateway.core.settings import Settings
from gateway.core.state import RouterState
from gateway.core.subrequests import Subrequests
from support.factories import T0, FakeClock, candidate, provider

S, M, H = rules.SECOND_MS, rules.MINUTE_MS, rules.HOUR_MS
CEILING = rules.DEFAULT_COOLDOWN_CEILING_MS
TIMEOUT = object()  # the fake upstream never answers: the attempt times out
DEFAULTS = Settings()


def ok(latency_ms: int = 100) -> Delivered:
    return Delivered("response", latency_ms)


def http(status: int, body: str = "", latency_ms: int = 100, **headers: str) -> Observed:
    return Observed(status=status, headers={k.replace("_", "-"): v for k, v in headers.items()},
                    body=body, latency_ms=latency_ms)  # fmt: skip


NETWORK = Observed(defect=Defect.NETWORK)
KEY_UNREADABLE = Observed(defect=Defect.KEY_UNREADABLE, detail="the key of provider 'p1' cannot be decrypted")
CONTEXT = http(400, '{"error":{"code":"context_length_exceeded","message":"too long"}}')


@dataclass
class Upstream:
    """Scripted answers by (provider id, model) or provider id; the last answer repeats.
    Each call advances the fake clock by the answer's latency (a timeout: by the timeout)."""

    clock: FakeClock
    script: dict[Any, list[Any]]
    calls: list[tuple[int, str, int]] = field(default_factory=list)

    async def __call__(self, candidate: Candidate, timeout_ms: int) -> Outcome:
        key = (candidate.provider.id, candidate.model)
        self.calls.append((*key, timeout_ms))
        queue = self.script.get(key) or self.script[candidate.provider.id]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer is TIMEOUT:
            self.clock.now += timeout_ms
            return Observed(defect=Defect.TIMEOUT, latency_ms=timeout_ms)
        assert isinstance(answer, (Delivered, Observed))
        self.clock.now += answer.latency_ms
        return answer

    def tried(self) -> list[tuple[int, str]]:
        return [(id_, model) for id_, model, _ in self.calls]


@dataclass
class Run:
    result: LoopResult
    upstream: Upstream
    state: RouterState
    clock: FakeClock


def run(
    providers: list[Provider],
    script: dict[Any, list[Any]],
    model: str | None = None,
    *,
    settings: Settings = DEFAULTS,
    state: RouterState | None = None,
    now: int = T0,
) -> Run:
    state = state or RouterState()
    clock = FakeClock(now)
    upstream = Upstream(clock, script)
    chain = build_chain(providers, model, state, clock.now)
    result = asyncio.run(run_loop(chain, upstream, settings=settings, state=state, clock=clock.clock))
    return Run(result, upstream, state, clock)


THREE = [provider(1), provider(2), provider(3)]


# --- Serving ---------------------------------------------------------------------------------


def test_first_candidate_serves_with_no_trail():
    r = run(THREE, {1: [ok(250)]})

    assert isinstance(r.result, Served)
    assert r.result.candidate.provider.id == 1
    assert (r.result.trail, r.result.degraded_from, r.result.latency_ms) == ((), None, 250)
    assert r.upstream.tried() == [(1, "m")]
    stats = r.state.memory.stats(1, "m")
    assert stats is not None and stats.latency_ms == 250


def test_failure_then_next_serves_and_the_failure_is_recorded():
    r = run(THREE, {1: [http(401)], 2: [ok()]})

    assert isinstance(r.result, Served) and r.result.candidate.provider.id == 2
    assert [e.label for e in r.result.trail] == ["p1/m: auth"]
    cooldown = r.state.ledger.blocking(1, "m", r.clock.now, THREE[0].keys)
    assert cooldown is not None and cooldown.source == "heuristic" and cooldown.key_id == 101
    assert cooldown.until_ms - T0 - 100 == rules.AUTH_COOLDOWN_MS
    stats = r.state.memory.stats(1, "m")
    assert stats is not None and stats.success == 0.0


def test_degraded_answer_names_the_model_asked_for():
    providers = [provider(1, models=("wanted",)), provider(2, models=("other",))]

    r = run(providers, {1: [http(503)], 2: [ok()]}, "wanted")

    assert isinstance(r.result, Served)
    assert (r.result.candidate.model, r.result.degraded_from) == ("other", "wanted")


def test_served_by_the_model_asked_for_is_not_degraded():
    r = run(THREE, {1: [http(429, retry_after="30")], 2: [ok()]}, "m")

    assert isinstance(r.result, Served) and r.result.degraded_from is None


# --- Exhaustion (SPEC §4 table) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "settings", "status", "type_", "code"),
    [
        pytest.param({1: [http(401)], 2: [http(401)], 3: [http(401)]}, Settings(),
                     502, "provider_error", "provider_authentication_failed", id="all-auth"),
        pytest.param({1: [CONTEXT], 2: [CONTEXT], 3: [CONTEXT]}, Settings(),
                     413, "invalid_request_error", "context_length_exceeded", id="all-context"),
        pytest.param({1: [http(404)], 2: [http(404)], 3: [http(404)]}, Settings(),
                     404, "invalid_request_error", "model_not_found", id="all-model-not-found"),
        pytest.param({1: [http(503)], 2: [http(503)], 3: [ok()]},
                     Settings(max_consecutive_upstream_fails=2),
                     503, "service_unavailable", "upstream_unhealthy", id="breaker"),
        pytest.param({1: [http(401)], 2: [http(401)], 3: [ok()]},
                     Settings(max_consecutive_upstream_fails=2),
                     502, "provider_error", "provider_authentication_failed",
                     id="all-auth-outranks-breaker"),
        pytest.param({1: [http(429)], 2: [http(402)], 3: [http(403)]}, Settings(),
                     429, "rate_limit_error", "rate_limit_exceeded", id="rate-credit-tier"),
        pytest.param({1: [http(429, '{"error":{"message":"daily quota"}}')], 2: [http(429)],
                      3: [http(429)]}, Settings(),
                     429, "rate_limit_error", "rate_limit_exceeded", id="quota-and-rate"),
        pytest.param({1: [http(429)], 2: [http(503)], 3: [http(429)]}, Settings(),
                     502, "provider_error", "upstream_failed", id="mix-429-503"),
        pytest.param({1: [NETWORK], 2: [http(500)], 3: [TIMEOUT]}, Settings(),
                     502, "provider_error", "upstream_failed", id="network-5xx-timeout"),
        pytest.param({1: [KEY_UNREADABLE], 2: [http(429)], 3: [http(429)]}, Settings(),
                     429, "rate_limit_error", "rate_limit_exceeded",
                     id="unreadable-key-does-not-mask-the-class"),
        pytest.param({1: [KEY_UNREADABLE], 2: [KEY_UNREADABLE], 3: [KEY_UNREADABLE]}, Settings(),
                     502, "provider_error", "upstream_failed", id="only-unreadable-keys"),
        pytest.param({1: [http(508)], 2: [http(508)], 3: [http(508)]}, Settings(),
                     508, "provider_error", "loop_detected", id="all-loop"),
        pytest.param({1: [http(508)], 2: [http(503)], 3: [http(429)]}, Settings(),
                     502, "provider_error", "upstream_failed", id="loop-in-a-mix"),
    ],
)  # fmt: skip
def test_exhaustion_status(script, settings, status, type_, code):
    r = run(THREE, script, settings=settings)

    assert isinstance(r.result, Exhausted)
    assert (r.result.status, r.result.type, r.result.code) == (status, type_, code)
    assert r.result.status != 500


def test_breaker_stops_after_that_many_failures():
    r = run(THREE, {1: [http(503)], 2: [http(503)], 3: [ok()]},
            settings=Settings(max_consecutive_upstream_fails=2))  # fmt: skip

    assert r.upstream.tried() == [(1, "m"), (2, "m")]


def test_breaker_is_off_by_default():
    r = run(THREE, {1: [http(503)], 2: [http(503)], 3: [ok()]})

    assert isinstance(r.result, Served)


def test_rate_limit_exhaustion_carries_retry_at_cooldowns_and_an_honest_message():
    r = run(THREE, {1: [http(429, '{"error":{"message":"slow down, Bearer sk-secret12345"}}')],
                    2: [http(402)], 3: [http(403)]})  # fmt: skip

    result = r.result
    assert isinstance(result, Exhausted)
    assert result.retry_at_ms == T0 + 100 + rules.LADDER_MS[0]
    assert [c.provider_id for c in result.cooldowns] == [1, 2, 3]
    assert result.retry_after_s(r.clock.now) == 90
    assert "Soonest reset ~90s" in result.message
    assert "p1/m: rate_limited (429 slow down, Bearer [redacted])" in result.message
    assert "p2/m: out_of_credits" in result.message and "p3/m: forbidden" in result.message
    assert "sk-secret" not in result.message


def test_unreadable_key_names_the_provider_and_skips_its_other_models():
    providers = [provider(1, models=("a", "b")), provider(2)]

    r = run(providers, {1: [KEY_UNREADABLE], 2: [http(503)]})

    assert isinstance(r.result, Exhausted)
    assert r.upstream.tried() == [(1, "a"), (2, "m")]
    expected = "p1/a: key_unreadable (the key of provider 'p1' cannot be decrypted)"
    assert expected in r.result.message
    assert not r.state.ledger.is_cooling(1, "a", r.clock.now)


def test_empty_chain_is_no_providers_configured():
    r = run([provider(1, enabled=False)], {})

    assert isinstance(r.result, Exhausted)
    assert (r.result.status, r.result.code) == (503, "no_providers_configured")


# --- Everything cooling, half-open probes ----------------------------------------------------


def cool_all(state: RouterState, status: int, at: int = T0) -> None:
    failure = classify(Observed(status=status, body='{"error":{"message":"busy"}}'), at)
    for id_ in (1, 2, 3):
        state.ledger.record_failure(candidate(id_), failure, at, CEILING)


def test_all_cooled_is_429_with_cooldowns_and_no_attempt():
    state = RouterState()
    cool_all(state, 402)

    r = run(THREE, {}, state=state, now=T0 + H)

    result = r.result
    assert isinstance(result, Exhausted)
    assert (result.status, result.code, result.trail) == (429, "rate_limit_exceeded", ())
    assert r.upstream.calls == []
    assert result.retry_at_ms == T0 + rules.DAY_MS
    assert [c.remaining_ms(r.clock.now) for c in result.cooldowns] == [23 * H] * 3
    assert "p1: credit, 402 busy, ready in ~23h" in result.message
    assert "Soonest reset ~23h" in result.message


def test_all_cooled_probe_ready_provider_is_probed_and_serves():
    state = RouterState()
    cool_all(state, 503)

    r = run(THREE, {1: [ok()]}, state=state, now=T0 + 50 * S)

    assert isinstance(r.result, Served) and r.result.candidate.provider.id == 1
    assert r.upstream.calls == [(1, "m", rules.PROBE_TIMEOUT_MS)]
    assert not state.ledger.is_cooling(1, "m", r.clock.now)
    assert state.ledger.is_cooling(2, "m", r.clock.now)


def test_failed_probes_defer_and_leave_the_cooldown_alone():
    state = RouterState()
    cool_all(state, 503)
    before = state.ledger.active(T0)

    r = run(THREE, {1: [http(503)], 2: [http(503)], 3: [http(503)]}, state=state,
            now=T0 + 50 * S)  # fmt: skip

    assert isinstance(r.result, Exhausted) and len(r.result.trail) == 3
    assert [timeout for *_, timeout in r.upstream.calls] == [rules.PROBE_TIMEOUT_MS] * 3
    assert state.ledger.active(T0) == before
    probe_ended = T0 + 50 * S + 100  # each scripted answer takes 100 ms
    assert not state.ledger.probe_ready(1, probe_ended + rules.PROBE_DEFER_BASE_MS - 1)
    assert state.ledger.probe_ready(1, probe_ended + rules.PROBE_DEFER_BASE_MS)


def test_beyond_a_recovered_primary_is_probed_before_the_usable_candidate():
    state = RouterState()
    state.ledger.record_failure(candidate(1), classify(http(503), T0), T0, CEILING)

    r = run(THREE, {1: [ok()], 2: [ok()]}, state=state, now=T0 + 50 * S)

    assert isinstance(r.result, Served) and r.result.candidate.provider.id == 1
    assert r.upstream.calls == [(1, "m", rules.PROBE_TIMEOUT_MS)]


def test_a_probe_waits_5_s_whatever_the_provider_timeout():
    # SPEC §5.4 states the number: the literal, not rules.PROBE_TIMEOUT_MS, so changing it fails.
    state = RouterState()
    state.ledger.record_failure(candidate(1), classify(http(503), T0), T0, CEILING)
    providers = [provider(1, timeout_ms=30 * S), provider(2, timeout_ms=30 * S)]

    r = run(providers, {1: [TIMEOUT], 2: [ok()]}, state=state, now=T0 + 50 * S)

    assert r.upstream.calls == [(1, "m", 5_000), (2, "m", 30_000)]
    assert isinstance(r.result, Served) and r.result.candidate.provider.id == 2


def test_probe_in_flight_elsewhere_is_not_probed_again():
    state = RouterState()
    cool_all(state, 503)
    for id_ in (1, 2, 3):
        state.ledger.begin_probe(id_, T0 + 50 * S)

    r = run(THREE, {}, state=state, now=T0 + 50 * S)

    assert isinstance(r.result, Exhausted) and r.result.status == 429
    assert r.upstream.calls == []


# --- Budget and timeouts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout_ms", "expected"),
    [
        pytest.param(None, [15 * S, 15 * S, 15 * S], id="default-15s-three-fit"),
        pytest.param(20 * S, [20 * S, 20 * S, 5 * S], id="clamped-to-what-is-left"),
        pytest.param(7 * S, [7 * S] * 5, id="provider-timeout"),
    ],
)
def test_per_attempt_timeout_and_total_budget(timeout_ms, expected):
    providers = [provider(i, timeout_ms=timeout_ms) for i in range(1, 6)]

    r = run(providers, {i: [TIMEOUT] for i in range(1, 6)})

    assert [timeout for *_, timeout in r.upstream.calls] == expected
    assert isinstance(r.result, Exhausted) and r.result.code == "upstream_failed"


def test_budget_stop_is_said_in_the_message():
    r = run([provider(i) for i in range(1, 6)], {i: [TIMEOUT] for i in range(1, 6)})

    assert isinstance(r.result, Exhausted)
    assert "stopped early: time budget 45s exceeded" in r.result.message
    assert len(r.result.trail) == 3


# --- Same-model retries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "script", "settings", "tried", "slept"),
    [
        pytest.param("m", {1: [http(503), ok()]}, Settings(), [1, 1], [], id="5xx-retried-at-once"),
        pytest.param("m", {1: [NETWORK, ok()]}, Settings(), [1, 1], [], id="reset-retried-at-once"),
        pytest.param("m", {1: [http(429, retry_after="2"), ok()]}, Settings(), [1, 1], [2000],
                     id="429-short-retry-after-waited-then-retried"),
        pytest.param("m", {1: [http(429, retry_after="3")], 2: [ok()]}, Settings(), [1, 1, 2],
                     [3000], id="429-at-the-limit-retried-once"),
        pytest.param("m", {1: [http(429, retry_after="5")], 2: [ok()]}, Settings(), [1, 2], [],
                     id="429-longer-than-the-setting-moves-on"),
        pytest.param("m", {1: [http(429, retry_after="2")], 2: [ok()]},
                     Settings(same_model_retry_max_ms=0), [1, 2], [], id="setting-0-disables"),
        pytest.param("m", {1: [http(429)], 2: [ok()]}, Settings(), [1, 2], [],
                     id="429-without-retry-after-moves-on"),
        pytest.param("m", {1: [http(503)], 2: [ok()]}, Settings(), [1, 1, 2], [],
                     id="retried-only-once"),
        pytest.param("m", {1: [TIMEOUT], 2: [ok()]}, Settings(), [1, 2], [],
                     id="timeout-not-retried"),
        pytest.param("m", {1: [http(508)], 2: [ok()]}, Settings(), [1, 2], [],
                     id="508-loop-not-retried"),
        pytest.param(None, {1: [http(503)], 2: [ok()]}, Settings(), [1, 2], [],
                     id="auto-never-retries"),
        pytest.param("elsewhere", {1: [http(503)], 2: [ok()]}, Settings(), [1, 2], [],
                     id="degraded-step-never-retries"),
    ],
)  # fmt: skip
def test_same_model_retry(model, script, settings, tried, slept):
    r = run(THREE, script, model, settings=settings)

    assert [id_ for id_, *_ in r.upstream.calls] == tried
    assert r.clock.slept == slept
    assert isinstance(r.result, Served)


def test_429_retry_waits_only_when_the_budget_allows():
    script: dict[Any, list[Any]] = {1: [http(429, latency_ms=44 * S, retry_after="2")], 2: [ok()]}

    r = run(THREE, script, "m")

    assert r.clock.slept == []
    assert r.upstream.calls == [(1, "m", 15 * S), (2, "m", 1 * S)]


def test_successful_retry_clears_the_cooldown_of_the_first_failure():
    r = run(THREE, {1: [http(503), ok()]}, "m")

    assert not r.state.ledger.is_cooling(1, "m", r.clock.now)
    assert isinstance(r.result, Served) and len(r.result.trail) == 1


# --- Moving on: context, caller errors, cooling within the request ---------------------------


def test_context_too_long_skips_every_candidate_with_that_model_without_cooldown():
    providers = [provider(1, models=("big",)), provider(2, models=("big", "small"))]

    r = run(providers, {1: [CONTEXT], 2: [ok()]})

    assert r.upstream.tried() == [(1, "big"), (2, "small")]
    assert isinstance(r.result, Served) and r.result.candidate.model == "small"
    assert r.state.ledger.active(r.clock.now) == []


def test_caller_4xx_is_returned_at_once_without_cooldown():
    r = run(THREE, {1: [http(503)], 2: [http(400, '{"error":{"message":"bad field"}}')]})

    result = r.result
    assert isinstance(result, CallerError)
    assert result.observed.status == 400 and result.candidate.provider.id == 2
    assert [e.label for e in result.trail] == ["p1/m: upstream_error"]
    assert r.upstream.tried() == [(1, "m"), (2, "m")]
    assert not r.state.ledger.is_cooling(2, "m", r.clock.now)


def test_provider_cooled_earlier_in_the_request_is_not_tried_again():
    providers = [provider(1, models=("a", "b")), provider(2)]

    r = run(providers, {1: [http(503)], 2: [ok()]})

    assert r.upstream.tried() == [(1, "a"), (2, "m")]


# --- Small formats ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        pytest.param(500, "~1s", id="under-a-second-rounds-up"),
        pytest.param(45 * S, "~45s", id="seconds"),
        pytest.param(89_001, "~90s", id="just-under-90s"),
        pytest.param(12 * M, "~12m", id="minutes"),
        pytest.param(3 * H, "~3h", id="hours"),
    ],
)
def test_format_eta(ms, expected):
    assert format_eta(ms) == expected


def test_retry_after_header_rounds_up():
    result = Exhausted(429, "rate_limit_error", "rate_limit_exceeded", "", T0 + 61_500, (), ())

    assert result.retry_after_s(T0) == 62
    assert result.retry_after_s(T0 + 70 * S) == 0


# --- Several keys per provider (SPEC §13) -------------------------------------------------------


@dataclass
class KeyedUpstream(Upstream):
    """Scripted answers by key id first (then as ``Upstream``); records the key of each call."""

    keys: list[int | None] = field(default_factory=list)

    async def __call__(self, candidate: Candidate, timeout_ms: int) -> Outcome:
        key_id = candidate.key.id if candidate.key is not None else None
        self.keys.append(key_id)
        if key_id in self.script:
            queue = self.script[key_id]
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
            self.calls.append((candidate.provider.id, candidate.model, timeout_ms))
            assert isinstance(answer, (Delivered, Observed))
            self.clock.now += answer.latency_ms
            return answer
        return await super().__call__(candidate, timeout_ms)


def keyed_run(
    providers: list[Provider],
    script: dict[Any, list[Any]],
    model: str | None = None,
    *,
    state: RouterState | None = None,
    now: int = T0,
    settings: Settings = DEFAULTS,
    avoid_keys: frozenset[int] = frozenset(),
) -> tuple[LoopResult, KeyedUpstream, RouterState, FakeClock]:
    state = state or RouterState()
    clock = FakeClock(now)
    upstream = KeyedUpstream(clock, script)
    chain = build_chain(providers, model, state, clock.now)
    result = asyncio.run(
        run_loop(chain, upstream, settings=settings, state=state, clock=clock.clock, avoid_keys=avoid_keys)
    )
    return result, upstream, state, clock


def trail_labels(result: LoopResult) -> list[str]:
    return [e.label for e in result.trail] if not isinstance(result, Exhausted) or result.trail else []


@pytest.mark.parametrize(
    ("failure", "label"),
    [
        pytest.param(http(429), "rate_limited", id="429"),
        pytest.param(http(401), "auth", id="401"),
        pytest.param(http(402), "out_of_credits", id="402"),
        pytest.param(http(403), "forbidden", id="403"),
        pytest.param(http(429, '{"error":{"message":"daily quota"}}'), "daily_quota_exhausted", id="quota"),
        pytest.param(KEY_UNREADABLE, "key_unreadable", id="unreadable"),
    ],
)  # fmt: skip
def test_a_key_scoped_failure_retries_the_same_model_with_the_next_key(failure, label):
    providers = [provider(1, keys=2), provider(2)]

    result, upstream, state, clock = keyed_run(providers, {101: [failure], 102: [ok()], 2: [ok()]})

    assert isinstance(result, Served) and result.candidate.key is not None
    assert (result.candidate.provider.id, result.candidate.key.id) == (1, 102)
    assert upstream.keys == [101, 102]
    assert trail_labels(result) == [f"p1#101/m: {label}"]
    assert not state.ledger.is_cooling(1, "m", clock.now, providers[0].keys)


def test_a_platform_fault_cools_the_provider_and_moves_on_without_trying_other_keys():
    providers = [provider(1, keys=3), provider(2)]

    result, upstream, state, clock = keyed_run(providers, {1: [http(503)], 2: [ok()]})

    assert isinstance(result, Served) and result.candidate.provider.id == 2
    assert upstream.keys == [101, 201]
    assert trail_labels(result) == ["p1#101/m: upstream_error"]
    cooldown = state.ledger.blocking(1, "m", clock.now, providers[0].keys)
    assert cooldown is not None and cooldown.key_id is None


def test_every_key_failing_moves_on_and_names_each_try():
    providers = [provider(1, keys=rules.MAX_KEY_TRIES), provider(2)]

    result, _upstream, state, clock = keyed_run(providers, {1: [http(429)], 2: [ok()]})

    assert isinstance(result, Served) and result.candidate.provider.id == 2
    assert trail_labels(result) == ["p1#101/m: rate_limited", "p1#102/m: rate_limited",
                                    "p1#103/m: rate_limited"]  # fmt: skip
    blocking = state.ledger.blocking(1, "m", clock.now, providers[0].keys)
    assert blocking is not None and blocking.key_id == 101  # the earliest to end


def test_one_key_is_not_named_in_the_trail():
    result, *_ = keyed_run([provider(1), provider(2)], {1: [http(429)], 2: [ok()]})

    assert trail_labels(result) == ["p1/m: rate_limited"]


def test_keys_take_turns_across_requests_and_a_cooling_key_is_skipped():
    providers = [provider(1, keys=3)]
    state = RouterState()
    served = []
    script: dict[Any, list[Any]] = {102: [http(429)], 1: [ok()]}
    for _ in range(4):
        _result, upstream, *_ = keyed_run(providers, script, state=state)
        served.append(upstream.keys)

    # 101; 102 (429, cools) then 103; then 101, 103 (102 cools).
    assert served == [[101], [102, 103], [101], [103]]


def test_a_disabled_key_is_never_used_and_all_disabled_leaves_the_provider_out():
    result, upstream, *_ = keyed_run([provider(1, keys=2, disabled_keys=(101,))], {1: [ok()]})
    assert upstream.keys == [102]

    result, upstream, *_ = keyed_run([provider(1, keys=1, disabled_keys=(101,))], {1: [ok()]})
    assert isinstance(result, Exhausted) and result.code == "no_providers_configured"


def test_all_keys_cooling_is_the_all_cooled_429_with_key_cooldowns():
    p = provider(1, keys=2)
    state = RouterState()
    for key, status in zip(p.keys, (402, 403), strict=True):
        failure = classify(Observed(status=status), T0)
        state.ledger.record_failure(Candidate(p, "m", key), failure, T0, CEILING)

    result, upstream, *_ = keyed_run([p], {1: [ok()]}, state=state, now=T0 + M)

    assert isinstance(result, Exhausted) and (result.status, result.trail) == (429, ())
    assert upstream.calls == []
    assert [(c.key_id, c.source) for c in result.cooldowns] == [(101, "credit"), (102, "tier")]
    assert "p1#101: credit" in result.message


def test_a_probe_ready_key_is_probed_with_that_key_when_every_key_cools():
    p = provider(1, keys=2)
    state = RouterState()
    for key in p.keys:
        state.ledger.record_failure(Candidate(p, "m", key), classify(http(401), T0), T0, CEILING)
    half = T0 + rules.AUTH_COOLDOWN_MS // 2 + S

    result, upstream, *_ = keyed_run([p], {1: [ok()]}, state=state, now=half)

    assert isinstance(result, Served) and upstream.keys == [101]
    assert upstream.calls[0][2] == rules.PROBE_TIMEOUT_MS
    assert state.ledger.key_cooldown(101, half) is None
    assert state.ledger.key_cooldown(102, half) is not None


def test_same_model_retry_after_the_keys_keeps_the_last_key():
    providers = [provider(1, keys=2), provider(2)]
    script: dict[Any, list[Any]] = {101: [http(429, retry_after="1")], 102: [http(429, retry_after="1"), ok()],
                                    2: [ok()]}  # fmt: skip

    result, upstream, _state, clock = keyed_run(providers, script, "m")

    assert isinstance(result, Served) and result.candidate.provider.id == 1
    assert upstream.keys == [101, 102, 102]
    assert clock.slept == [1 * S]


def test_a_provider_key_failure_in_a_request_skips_that_key_for_its_other_models():
    p = provider(1, models=("a", "b"), keys=2)

    result, upstream, *_ = keyed_run([p], {101: [KEY_UNREADABLE], 102: [http(503)]})

    assert upstream.keys == [101, 102]  # b is not tried: the provider cools (503), 101 unreadable
    assert isinstance(result, Exhausted)


def test_at_most_max_key_tries_keys_per_step():
    providers = [provider(1, keys=rules.MAX_KEY_TRIES + 2), provider(2)]

    result, upstream, *_ = keyed_run(providers, {1: [http(401)], 2: [ok()]})

    assert upstream.keys == [101 + n for n in range(rules.MAX_KEY_TRIES)] + [201]
    assert isinstance(result, Served) and result.candidate.provider.id == 2


def test_the_key_try_cap_does_not_spend_a_keys_turn():
    # Request 1 tries MAX_KEY_TRIES keys (all refused, all cool) and stops there; the next key
    # in the round was never used, so request 2 must start with it, not skip it.
    p = provider(1, keys=rules.MAX_KEY_TRIES + 2)
    state = RouterState()
    refused = {101 + n: [http(401)] for n in range(rules.MAX_KEY_TRIES)}

    keyed_run([p], {**refused, 1: [ok()]}, state=state)
    result, upstream, *_ = keyed_run([p], {**refused, 1: [ok()]}, state=state, now=T0 + S)

    assert upstream.keys == [101 + rules.MAX_KEY_TRIES]
    assert isinstance(result, Served)


def test_no_provider_with_an_enabled_key_says_so():
    result, *_ = keyed_run([provider(1, keys=2, disabled_keys=(101, 102))], {1: [ok()]})

    assert isinstance(result, Exhausted) and result.code == "no_providers_configured"
    assert "enabled key" in result.message


def test_the_all_cooled_message_names_a_key_only_when_its_provider_has_several():
    single, several = provider(1), provider(2, keys=2)
    state = RouterState()
    for p in (single, several):
        for key in p.keys:
            credit = classify(http(402), T0)
            state.ledger.record_failure(Candidate(p, "m", key), credit, T0, CEILING)

    result, *_ = keyed_run([single, several], {1: [ok()], 2: [ok()]}, state=state, now=T0 + M)

    assert isinstance(result, Exhausted) and result.status == 429
    assert "p1: credit" in result.message and "p1#101" not in result.message
    assert "p2#201: credit" in result.message and "p2#202: credit" in result.message


# --- Keys to avoid (a rescue's, SPEC §16) -------------------------------------------------------


def test_an_avoided_key_is_not_used_and_another_key_of_its_provider_serves():
    providers = [provider(1, keys=3), provider(2)]

    result, upstream, state, clock = keyed_run(providers, {1: [ok()], 2: [ok()]}, avoid_keys=frozenset({101}))

    assert isinstance(result, Served) and result.candidate.key is not None
    assert (result.candidate.provider.id, result.candidate.key.id) == (1, 102)
    assert upstream.keys == [102]
    assert not state.ledger.is_cooling(1, "m", clock.now, providers[0].keys)  # avoided, not cooled


def test_an_avoided_key_is_not_tried_when_its_siblings_fail():
    providers = [provider(1, keys=3), provider(2)]
    script = {102: [http(429)], 103: [http(429)], 1: [ok()], 2: [ok()]}

    result, upstream, *_ = keyed_run(providers, script, avoid_keys=frozenset({101}))

    assert 101 not in upstream.keys
    assert isinstance(result, Served) and result.candidate.provider.id == 2


def test_a_provider_whose_only_key_is_avoided_is_skipped():
    providers = [provider(1), provider(2)]

    result, upstream, state, clock = keyed_run(providers, {1: [ok()], 2: [ok()]}, avoid_keys=frozenset({101}))

    assert isinstance(result, Served) and result.candidate.provider.id == 2
    assert upstream.keys == [201]
    assert not state.ledger.is_cooling(1, "m", clock.now, providers[0].keys)


def test_avoiding_every_key_serves_nothing_and_tries_nothing():
    result, upstream, *_ = keyed_run([provider(1), provider(2)], {1: [ok()], 2: [ok()]},
                                     avoid_keys=frozenset({101, 201}))  # fmt: skip

    assert isinstance(result, Exhausted)
    assert upstream.keys == []


def test_avoiding_no_key_changes_nothing():
    result, upstream, *_ = keyed_run([provider(1, keys=2)], {1: [ok()]}, avoid_keys=frozenset())

    assert isinstance(result, Served) and upstream.keys == [101]


# --- Subrequests (SPEC §18) ---------------------------------------------------------------------


@dataclass
class CountedUpstream(KeyedUpstream):
    """A ``KeyedUpstream`` that counts each call on the request's counter, as the shell's fetch
    does."""

    counter: Subrequests = field(default_factory=Subrequests)

    async def __call__(self, candidate: Candidate, timeout_ms: int) -> Outcome:
        self.counter.used += 1
        return await super().__call__(candidate, timeout_ms)


TWELVE = [provider(n, keys=3) for n in range(1, 13)]
# A 429 that asks for no wait: each key of a step is tried, then the model asked for once more.
AT_ONCE = http(429, retry_after="0")
PER_STEP = rules.MAX_KEY_TRIES + 1


def counted_run(
    providers: list[Provider],
    script: dict[Any, list[Any]],
    model: str | None,
    counter: Subrequests | None,
    *,
    state: RouterState | None = None,
    now: int = T0,
) -> tuple[LoopResult, CountedUpstream, RouterState]:
    state = state or RouterState()
    clock = FakeClock(now)
    upstream = CountedUpstream(clock, script, counter=counter or Subrequests(rules.SUBREQUEST_LIMIT_MAX))
    chain = build_chain(providers, model, state, clock.now)
    result = asyncio.run(
        run_loop(chain, upstream, settings=DEFAULTS, state=state, clock=clock.clock, subrequests=counter)
    )
    return result, upstream, state


def test_twelve_candidates_of_three_keys_stop_before_the_free_plans_limit():
    counter = Subrequests(50, used=1)  # the configuration's D1 read

    result, upstream, _ = counted_run(TWELVE, {n: [AT_ONCE] for n in range(1, 13)}, "m", counter)

    made = 50 - rules.SUBREQUESTS_RESERVED - 1
    assert len(upstream.calls) == made < 12 * PER_STEP
    assert counter.used == 50 - rules.SUBREQUESTS_RESERVED
    assert isinstance(result, Exhausted)
    assert (result.status, result.type, result.code) == (503, "service_unavailable", "subrequest_limit")
    assert result.message.startswith(
        f"This request stopped after {counter.used} subrequests: the Workers plan allows 50 per request "
        "(setting subrequest_limit;"
    )
    # What the normal exhaustion answer says of the attempts made follows.
    assert f"All providers are rate-limited or out of quota after {made} attempt(s)" in result.message
    assert "Attempts: p1#101/m: rate_limited (429 HTTP 429); p1#102/m" in result.message
    assert len(result.trail) == made
    assert (result.retry_at_ms, result.cooldowns) == (None, ())


def test_the_attempt_not_made_records_nothing_against_its_candidate():
    # Room for the first 5 steps exactly: the 6th provider is never asked.
    counter = Subrequests(1 + 5 * PER_STEP + rules.SUBREQUESTS_RESERVED, used=1)

    result, upstream, state = counted_run(TWELVE, {n: [AT_ONCE] for n in range(1, 13)}, "m", counter)

    assert isinstance(result, Exhausted) and result.code == "subrequest_limit"
    assert sorted({p for p, _, _ in upstream.calls}) == [1, 2, 3, 4, 5]
    cooling = {c.provider_id for c in state.ledger.active(upstream.clock.now)}
    assert cooling == {1, 2, 3, 4, 5}
    assert state.memory.stats(6, "m") is None
    assert "p6" not in result.message


def test_a_probe_not_made_is_not_begun():
    state = RouterState()
    p = provider(1)
    state.ledger.record_failure(Candidate(p, "m"), classify(http(503), T0), T0, CEILING)
    counter = Subrequests(3, used=1)  # nothing fits beside the reserve

    result, upstream, state = counted_run([p], {1: [ok()]}, "m", counter, state=state, now=T0 + 60 * S)

    assert upstream.calls == []
    assert isinstance(result, Exhausted) and result.code == "subrequest_limit"
    assert result.message.endswith("(up to 10000)")  # no attempt to report
    assert state.ledger.begin_probe(1, T0 + H, None)  # no probe was left in flight


def test_a_raised_limit_lets_the_loop_reach_its_usual_answer():
    counter = Subrequests(1000, used=1)

    result, upstream, _ = counted_run(TWELVE, {n: [AT_ONCE] for n in range(1, 13)}, "m", counter)

    assert len(upstream.calls) == 12 * PER_STEP
    assert isinstance(result, Exhausted) and result.code == "rate_limit_exceeded"


def test_without_a_counter_nothing_is_limited():
    result, upstream, _ = counted_run(TWELVE, {n: [AT_ONCE] for n in range(1, 13)}, "m", None)

    assert len(upstream.calls) == 12 * PER_STEP
    assert isinstance(result, Exhausted) and result.code == "rate_limit_exceeded"


def test_a_serving_attempt_that_fits_is_made():
    counter = Subrequests(1 + 1 + rules.SUBREQUESTS_RESERVED, used=1)

    result, upstream, _ = counted_run([provider(1), provider(2)], {1: [ok()]}, "m", counter)

    assert isinstance(result, Served) and len(upstream.calls) == 1


# --- What the loop learns and counts (SPEC §19) ---------------------------------------------

GROQ_RPM = (
    '{"error":{"message":"Rate limit reached for model `m` in organization `org_x` service tier `on_demand` on '
    'requests per minute (RPM): Limit 2, Used 2, Requested 1. Please try again in 20s.","type":"requests",'
    '"code":"rate_limit_exceeded"}}'
)


def routed(providers, script, state, needs=Needs(100), now=T0) -> Run:
    clock = FakeClock(now)
    upstream = Upstream(clock, script)
    chain = build_chain(providers, None, state, clock.now, needs=needs)
    result = asyncio.run(run_loop(chain, upstream, settings=DEFAULTS, state=state, clock=clock.clock))
    return Run(result, upstream, state, clock)


def test_each_sent_attempt_counts_against_its_key_and_a_capped_key_is_not_used():
    capped = provider(1, keys=2, facts={"m": Facts(rpm=1)})
    state = RouterState()
    used = []
    for _ in range(2):
        result = routed([capped], {1: [ok()]}, state).result
        assert isinstance(result, Served) and result.candidate.key is not None
        used.append(result.candidate.key.id)

    assert sorted(used) == [101, 102]
    third = routed([capped], {1: [ok()]}, state)
    assert isinstance(third.result, Exhausted) and third.result.status == 429
    assert third.upstream.calls == []
    assert "free-tier cap" in third.result.message and third.result.retry_at_ms is not None


def test_a_429_that_states_a_limit_lowers_its_keys_cap():
    state = RouterState()
    groq = replace(provider(1, keys=2), platform="groq")
    first = routed([groq], {1: [http(429, GROQ_RPM), ok()]}, state)
    assert isinstance(first.result, Served)

    learned = state.free_tier.caps(101, "m", NO_FACTS)
    assert learned.rpm == 2 and state.free_tier.caps(102, "m", NO_FACTS).rpm is None


def test_a_context_failure_bounds_the_window_and_the_next_request_passes_the_model_over():
    state = RouterState()
    two = [provider(1, models=("a",), priority=1), provider(2, models=("b",), priority=2)]
    first = routed(two, {1: [CONTEXT], 2: [ok()]}, state, needs=Needs(21_000, ceiling=21_000))
    assert first.upstream.tried() == [(1, "a"), (2, "b")]

    second = routed(two, {1: [CONTEXT], 2: [ok()]}, state, needs=Needs(21_000, ceiling=21_000))
    assert second.upstream.tried() == [(2, "b")]
    assert isinstance(second.result, Served)
    assert [p.label for p in second.result.passed] == ["p1/a: skipped: context 20999 < ~21000"]
    assert routed(two, {1: [ok()]}, state, needs=Needs(15_000)).upstream.tried() == [(1, "a")]


def test_a_refusal_for_a_large_max_tokens_bounds_the_window_at_the_whole_request():
    state = RouterState()
    two = [provider(1, models=("a",), priority=1), provider(2, models=("b",), priority=2)]
    # ~1,000 tokens of prompt, refused for its max_tokens of 200,000 (no window stated).
    routed(two, {1: [CONTEXT], 2: [ok()]}, state, needs=Needs(3_000, ceiling=201_000))

    assert state.windows.bound(1, "a") == 200_999
    assert routed(two, {1: [ok()]}, state, needs=Needs(4_000, ceiling=4_000)).upstream.tried() == [(1, "a")]


def test_a_stated_window_is_what_is_learned():
    state = RouterState()
    stated = http(
        400,
        '{"error":{"message":"This model\'s maximum context length is 8192 tokens. '
        'However, you requested 9000 tokens."}}',
    )
    two = [provider(1, models=("a",), priority=1), provider(2, models=("b",), priority=2)]
    routed(two, {1: [stated], 2: [ok()]}, state, needs=Needs(21_000))

    assert state.windows.bound(1, "a") == 8192
