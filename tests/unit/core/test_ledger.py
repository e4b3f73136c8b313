"""The cooldown ledger: SPEC §5.1 durations, §5.2 rules, §5.4 half-open state."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.attempt import Candidate, Observed
from gateway.core.classify import Failure, FailureKind, classify
from gateway.core.ledger import Ledger
from gateway.wire.cooldowns import cooldown_json
from support.factories import T0, candidate, provider

S, M, H = rules.SECOND_MS, rules.MINUTE_MS, rules.HOUR_MS
DAY = rules.DAY_MS
CEILING = rules.DEFAULT_COOLDOWN_CEILING_MS


def failure(status: int, **headers: str) -> Failure:
    return classify(Observed(status=status, headers=headers), T0)


RATE_LIMIT = failure(429)
SERVER = failure(503)
CREDIT = failure(402)
TIER = failure(403)
AUTH = failure(401)
NOT_FOUND = failure(404)
AUTHORITATIVE = failure(429, **{"retry-after": "7200"})
QUOTA = Failure(FailureKind.DAILY_QUOTA, "provider", "quota", 10 * H)


def remaining(ledger: Ledger, now: int, id_: int = 1, model: str = "m") -> int:
    cooldown = ledger.blocking(id_, model, now)
    return 0 if cooldown is None else cooldown.remaining_ms(now)


@pytest.mark.parametrize(
    ("fail", "source", "expected_ms"),
    [
        pytest.param(AUTH, "heuristic", rules.AUTH_COOLDOWN_MS, id="401-5min"),
        pytest.param(CREDIT, "credit", DAY, id="402-24h"),
        pytest.param(TIER, "tier", DAY, id="403-24h"),
        pytest.param(AUTHORITATIVE, "authoritative", 2 * H, id="429-retry-after-as-said"),
        pytest.param(QUOTA, "quota", 10 * H, id="429-quota-until-midnight"),
        pytest.param(RATE_LIMIT, "heuristic", rules.LADDER_MS[0], id="429-first-ladder-step"),
        pytest.param(SERVER, "heuristic", rules.TRANSIENT_COOLDOWN_MS, id="5xx-90s"),
    ],
)
def test_failure_sets_a_provider_cooldown(fail, source, expected_ms):
    ledger = Ledger()

    cooldown = ledger.record_failure(candidate(), fail, T0, CEILING)

    assert cooldown is not None and cooldown.model is None
    assert (cooldown.source, cooldown.until_ms - T0) == (source, expected_ms)
    assert ledger.is_cooling(1, "another-model", T0 + expected_ms - 1)
    assert not ledger.is_cooling(1, "m", T0 + expected_ms)
    assert not ledger.is_cooling(2, "m", T0)


@pytest.mark.parametrize(
    ("fail", "expected_ms"),
    [
        pytest.param(SERVER, M, id="heuristic-capped"),
        pytest.param(CREDIT, M, id="credit-capped"),
        pytest.param(TIER, M, id="tier-capped"),
        pytest.param(RATE_LIMIT, M, id="ladder-capped"),
        pytest.param(AUTHORITATIVE, 2 * H, id="authoritative-never-capped"),
        pytest.param(QUOTA, 10 * H, id="quota-never-capped"),
    ],
)
def test_ceiling(fail, expected_ms):
    ledger = Ledger()

    cooldown = ledger.record_failure(candidate(), fail, T0, rules.COOLDOWN_CEILING_MIN_MS)

    assert cooldown is not None and cooldown.until_ms - T0 == expected_ms


@pytest.mark.parametrize(
    ("gaps_ms", "expected_ms"),
    [
        pytest.param([0], 90 * S, id="first-90s"),
        pytest.param([0, 2 * M], 2 * M, id="second-within-1h-2min"),
        pytest.param([0, 2 * M, 3 * M], 10 * M, id="third-within-1h-10min"),
        pytest.param([0, 2 * M, 3 * M, 11 * M], 10 * M, id="fourth-stays-10min"),
        pytest.param([0, H + S], 90 * S, id="second-after-1h-starts-over"),
        pytest.param([0, 30 * M, 31 * M], 2 * M, id="first-hit-slid-out-of-the-hour"),
    ],
)
def test_ladder(gaps_ms, expected_ms):
    ledger = Ledger()
    now = T0
    for gap in gaps_ms:
        now += gap
        cooldown = ledger.record_failure(candidate(), RATE_LIMIT, now, CEILING)

    assert cooldown is not None and cooldown.until_ms - now == expected_ms


@pytest.mark.parametrize(
    ("first", "second", "source", "until_ms"),
    [
        pytest.param(CREDIT, SERVER, "credit", T0 + DAY, id="shorter-never-shortens"),
        pytest.param(SERVER, CREDIT, "credit", T0 + S + DAY, id="longer-extends"),
        pytest.param(AUTHORITATIVE, SERVER, "authoritative", T0 + 2 * H, id="keeps-its-source"),
    ],
)
def test_extend_never_shorten(first, second, source, until_ms):
    ledger = Ledger()
    ledger.record_failure(candidate(), first, T0, CEILING)

    cooldown = ledger.record_failure(candidate(), second, T0 + S, CEILING)

    assert cooldown is not None and (cooldown.source, cooldown.until_ms) == (source, until_ms)


def test_success_clears_the_cooldown_and_the_ladder():
    ledger = Ledger()
    for at in (0, S, 2 * S):
        ledger.record_failure(candidate(), RATE_LIMIT, T0 + at, CEILING)

    ledger.record_success(1)

    assert not ledger.is_cooling(1, "m", T0 + 3 * S)
    cooldown = ledger.record_failure(candidate(), RATE_LIMIT, T0 + 4 * S, CEILING)
    assert cooldown is not None and cooldown.until_ms - (T0 + 4 * S) == rules.LADDER_MS[0]


@pytest.mark.parametrize(
    ("gaps_ms", "benched"),
    [
        pytest.param([0, M], False, id="two-strikes-nothing"),
        pytest.param([0, M, M], True, id="third-strike-benches"),
        pytest.param([0, 10 * M, 6 * M], False, id="first-strike-left-the-15min-window"),
    ],
)
def test_404_strikes(gaps_ms, benched):
    ledger = Ledger()
    now = T0
    for gap in gaps_ms:
        now += gap
        cooldown = ledger.record_failure(candidate(1, "gone"), NOT_FOUND, now, CEILING)

    assert (cooldown is not None) is benched
    assert ledger.is_cooling(1, "gone", now) is benched
    assert not ledger.is_cooling(1, "other-model", now)
    if benched:
        assert cooldown is not None
        assert (cooldown.model, cooldown.source) == ("gone", "model")
        assert cooldown.until_ms - now == rules.MODEL_COOLDOWN_MS


def test_strikes_are_per_model():
    ledger = Ledger()
    for model in ("a", "b", "a", "b"):
        ledger.record_failure(candidate(1, model), NOT_FOUND, T0, CEILING)

    assert not ledger.is_cooling(1, "a", T0) and not ledger.is_cooling(1, "b", T0)


def test_a_failure_of_an_attempt_begun_before_an_edit_is_not_recorded():
    ledger = Ledger()
    ledger.forget_provider(1, T0 + S)  # the admin fixed the provider while an attempt ran

    assert ledger.record_failure(candidate(1), SERVER, T0 + 2 * S, CEILING, started_ms=T0) is None
    assert ledger.active(T0 + 2 * S) == []
    assert ledger.record_failure(candidate(1), SERVER, T0 + 3 * S, CEILING, started_ms=T0 + 2 * S)


def test_forget_provider_clears_everything_of_that_provider_only():
    ledger = Ledger()
    for at in (0, S):
        ledger.record_failure(candidate(1), RATE_LIMIT, T0 + at, CEILING)
    for _ in range(rules.MODEL_STRIKES):
        ledger.record_failure(candidate(1, "gone"), NOT_FOUND, T0, CEILING)
    ledger.record_failure(candidate(2), SERVER, T0, CEILING)

    ledger.forget_provider(1, T0 + S)

    assert [c.provider_id for c in ledger.active(T0 + S)] == [2]
    cooldown = ledger.record_failure(candidate(1), RATE_LIMIT, T0 + 2 * S, CEILING)
    assert cooldown is not None and cooldown.until_ms - (T0 + 2 * S) == rules.LADDER_MS[0]


def test_clear_counts_live_cooldowns_and_resets_ladders_and_deferrals():
    ledger = Ledger()
    ledger.record_failure(candidate(1), RATE_LIMIT, T0, CEILING)
    ledger.record_failure(candidate(2), SERVER, T0, CEILING)
    ledger.record_failure(candidate(3), SERVER, T0 - H, CEILING)  # long expired
    ledger.end_probe(2, False, T0)

    assert ledger.clear(T0) == 2

    assert ledger.active(T0) == []
    cooldown = ledger.record_failure(candidate(1), RATE_LIMIT, T0 + S, CEILING)
    assert cooldown is not None and cooldown.until_ms - (T0 + S) == rules.LADDER_MS[0]


def test_active_wire_form_has_exactly_the_spec_fields():
    ledger = Ledger()
    ledger.record_failure(candidate(7), failure(503), T0, CEILING)

    (cooldown,) = ledger.active(T0 + 10 * S)

    assert cooldown_json(cooldown, T0 + 10 * S) == {
        "providerId": 7,
        "name": "p7",
        "model": None,
        "source": "heuristic",
        "remainingMs": rules.TRANSIENT_COOLDOWN_MS - 10 * S,
        "lastStatus": 503,
        "lastMessage": "HTTP 503",
        "keyId": None,
    }


def test_active_filters_by_provider_and_retry_at_is_the_soonest_end():
    ledger = Ledger()
    ledger.record_failure(candidate(1), CREDIT, T0, CEILING)
    ledger.record_failure(candidate(2), SERVER, T0, CEILING)
    ledger.record_failure(candidate(3), AUTH, T0, CEILING)

    assert [c.provider_id for c in ledger.active(T0, {1, 3})] == [3, 1]
    assert ledger.retry_at_ms(T0) == T0 + rules.TRANSIENT_COOLDOWN_MS
    assert ledger.retry_at_ms(T0, {1}) == T0 + DAY
    assert ledger.retry_at_ms(T0, {9}) is None


# --- Half-open -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fail", "elapsed_ms", "ready"),
    [
        pytest.param(SERVER, 45 * S, False, id="heuristic-exactly-half-not-yet"),
        pytest.param(SERVER, 46 * S, True, id="heuristic-more-than-half"),
        pytest.param(SERVER, 90 * S, False, id="expired-is-not-cooling"),
        pytest.param(AUTH, 151 * S, True, id="auth-is-heuristic"),
        pytest.param(CREDIT, 13 * H, False, id="credit-never"),
        pytest.param(TIER, 13 * H, False, id="tier-never"),
        pytest.param(AUTHORITATIVE, H + S, False, id="authoritative-never"),
        pytest.param(QUOTA, 6 * H, False, id="quota-never"),
    ],
)
def test_probe_ready(fail, elapsed_ms, ready):
    ledger = Ledger()
    ledger.record_failure(candidate(), fail, T0, CEILING)

    assert ledger.probe_ready(1, T0 + elapsed_ms) is ready


def test_model_cooldowns_are_never_probed():
    ledger = Ledger()
    for _ in range(rules.MODEL_STRIKES):
        ledger.record_failure(candidate(), NOT_FOUND, T0, CEILING)

    assert not ledger.probe_ready(1, T0 + 9 * M)


def test_one_probe_in_flight_per_provider():
    ledger = Ledger()
    ledger.record_failure(candidate(), SERVER, T0, CEILING)
    ready_at = T0 + 50 * S

    assert ledger.begin_probe(1, ready_at)
    assert not ledger.begin_probe(1, ready_at)
    assert not ledger.probe_ready(1, ready_at)
    ledger.end_probe(1, False, ready_at)
    assert ledger.begin_probe(1, ready_at)


def test_an_abandoned_probe_stops_blocking_after_it_goes_stale():
    ledger = Ledger()
    ledger.record_failure(candidate(), SERVER, T0, CEILING)
    began = T0 + 50 * S
    ledger.begin_probe(1, began)  # its request went away: end_probe never comes

    assert not ledger.probe_ready(1, began + rules.PROBE_STALE_MS - 1)
    assert ledger.probe_ready(1, began + rules.PROBE_STALE_MS)
    assert ledger.begin_probe(1, began + rules.PROBE_STALE_MS)


def test_clear_also_forgets_probes_in_flight():
    ledger = Ledger()
    ledger.record_failure(candidate(), SERVER, T0, CEILING)
    ledger.begin_probe(1, T0 + 50 * S)
    ledger.clear(T0 + 51 * S)
    ledger.record_failure(candidate(), SERVER, T0 + 51 * S, CEILING)

    assert ledger.begin_probe(1, T0 + 52 * S)


def test_failed_probes_defer_the_next_30s_doubling_capped_at_15min():
    ledger = Ledger()
    long_heuristic = Failure(FailureKind.UPSTREAM_ERROR, "provider", "heuristic", DAY)
    ledger.record_failure(candidate(), long_heuristic, T0, CEILING)
    now = T0 + 13 * H
    deferrals = []
    for _ in range(7):
        ledger.begin_probe(1, now)
        ledger.end_probe(1, False, now)
        wait = 0
        while not ledger.probe_ready(1, now + wait):
            wait += S
        deferrals.append(wait)
        now += wait

    assert deferrals == [30 * S, 60 * S, 120 * S, 240 * S, 480 * S, 15 * M, 15 * M]


def test_failed_probe_neither_extends_the_cooldown_nor_climbs_the_ladder():
    ledger = Ledger()
    ledger.record_failure(candidate(), RATE_LIMIT, T0, CEILING)
    before = ledger.active(T0)

    ledger.begin_probe(1, T0 + 50 * S)
    ledger.end_probe(1, False, T0 + 50 * S)

    assert ledger.active(T0) == before
    cooldown = ledger.record_failure(candidate(), RATE_LIMIT, T0 + 100 * S, CEILING)
    assert cooldown is not None and cooldown.until_ms - (T0 + 100 * S) == rules.LADDER_MS[1]


def test_successful_probe_clears_cooldown_and_ladder():
    ledger = Ledger()
    ledger.record_failure(candidate(), RATE_LIMIT, T0, CEILING)
    ledger.begin_probe(1, T0 + 50 * S)

    ledger.end_probe(1, True, T0 + 50 * S)

    assert not ledger.is_cooling(1, "m", T0 + 50 * S)
    cooldown = ledger.record_failure(candidate(), RATE_LIMIT, T0 + 60 * S, CEILING)
    assert cooldown is not None and cooldown.until_ms - (T0 + 60 * S) == rules.LADDER_MS[0]


def test_a_new_cooldown_restarts_the_probe_deferral():
    ledger = Ledger()
    ledger.record_failure(candidate(), SERVER, T0, CEILING)
    for at in (50 * S, 51 * S):
        ledger.end_probe(1, False, T0 + at)  # deferral now 60 s
    start = T0 + 2 * M  # the first cooldown is over
    ledger.record_failure(candidate(), SERVER, start, CEILING)
    ledger.end_probe(1, False, start + 46 * S)

    assert not ledger.probe_ready(1, start + 46 * S + 29 * S)
    assert ledger.probe_ready(1, start + 46 * S + 30 * S)


# --- Key cooldowns (SPEC §13) ------------------------------------------------------------------


def keyed(provider_id: int = 1, n: int = 2, key_index: int = 0) -> Candidate:
    p = provider(provider_id, keys=n)
    return Candidate(p, "m", p.keys[key_index])


@pytest.mark.parametrize(
    ("fail", "keyed_cooldown"),
    [
        pytest.param(AUTH, True, id="401"),
        pytest.param(CREDIT, True, id="402"),
        pytest.param(TIER, True, id="403"),
        pytest.param(RATE_LIMIT, True, id="429-ladder"),
        pytest.param(AUTHORITATIVE, True, id="429-authoritative"),
        pytest.param(SERVER, False, id="5xx"),
    ],
)
def test_key_scoped_failures_cool_the_key_others_the_provider(fail, keyed_cooldown):
    ledger = Ledger()
    c = keyed()

    cooldown = ledger.record_failure(c, fail, T0, CEILING)

    assert cooldown is not None
    assert cooldown.key_id == (101 if keyed_cooldown else None)
    assert (ledger.key_cooldown(101, T0) is not None) is keyed_cooldown
    assert ledger.key_cooldown(102, T0) is None
    # One key of two cooling: the provider may still be tried; a platform fault blocks it.
    assert (ledger.blocking(1, "m", T0, c.provider.keys) is None) is keyed_cooldown


def test_without_a_key_a_key_scoped_failure_cools_the_provider():
    ledger = Ledger()
    cooldown = ledger.record_failure(candidate(1), AUTH, T0, CEILING)
    assert cooldown is not None and cooldown.key_id is None and ledger.is_cooling(1, "m", T0)


def test_all_enabled_keys_cooling_blocks_the_provider_until_the_earliest_ends():
    p = provider(1, keys=3, disabled_keys=(103,))
    ledger = Ledger()
    ledger.record_failure(Candidate(p, "m", p.keys[0]), AUTH, T0, CEILING)  # 5 min
    assert ledger.blocking(1, "m", T0, p.keys) is None
    ledger.record_failure(Candidate(p, "m", p.keys[1]), RATE_LIMIT, T0, CEILING)  # 90 s

    blocking = ledger.blocking(1, "m", T0, p.keys)

    assert blocking is not None and blocking.key_id == 102
    assert blocking.until_ms == T0 + rules.LADDER_MS[0]
    assert not ledger.is_cooling(1, "m", T0 + rules.LADDER_MS[0], p.keys)
    assert {(c.key_id, c.provider_id) for c in ledger.active(T0)} == {(101, 1), (102, 1)}


def test_the_ladder_climbs_per_key():
    ledger = Ledger()
    first, second = keyed(key_index=0), keyed(key_index=1)

    steps = [
        ledger.record_failure(first, RATE_LIMIT, T0, CEILING),
        ledger.record_failure(first, RATE_LIMIT, T0 + 2 * M, CEILING),
        ledger.record_failure(second, RATE_LIMIT, T0 + 2 * M, CEILING),
    ]

    lengths = [c.until_ms - c.started_ms for c in steps if c is not None]
    assert lengths == [rules.LADDER_MS[0], rules.LADDER_MS[1], rules.LADDER_MS[0]]


def test_success_with_a_key_clears_that_key_only():
    ledger = Ledger()
    ledger.record_failure(keyed(key_index=0), AUTH, T0, CEILING)
    ledger.record_failure(keyed(key_index=1), AUTH, T0, CEILING)

    ledger.record_success(1, 101)

    assert ledger.key_cooldown(101, T0) is None and ledger.key_cooldown(102, T0) is not None


def test_key_cooldowns_are_probed_per_key():
    ledger = Ledger()
    ledger.record_failure(keyed(key_index=0), AUTH, T0, CEILING)  # heuristic, 5 min
    ledger.record_failure(keyed(key_index=1), CREDIT, T0, CEILING)  # credit: never probed
    half = T0 + rules.AUTH_COOLDOWN_MS // 2 + 1

    assert ledger.probe_ready(1, half, 101) and not ledger.probe_ready(1, half, 102)
    assert not ledger.probe_ready(1, half)  # the provider itself is not cooling
    assert ledger.begin_probe(1, half, 101) and not ledger.begin_probe(1, half, 101)
    ledger.end_probe(1, False, half, 101)
    assert ledger.key_cooldown(101, half) is not None and not ledger.probe_ready(1, half + 1, 101)
    ledger.end_probe(1, True, half + rules.PROBE_DEFER_BASE_MS, 101)
    assert ledger.key_cooldown(101, half) is None


def test_forget_key_drops_its_cooldown_and_ignores_attempts_under_way():
    ledger = Ledger()
    ledger.record_failure(keyed(key_index=0), AUTH, T0, CEILING)
    ledger.record_failure(keyed(key_index=1), AUTH, T0, CEILING)

    ledger.forget_key(101, T0 + S)

    assert ledger.key_cooldown(101, T0 + S) is None and ledger.key_cooldown(102, T0 + S) is not None
    assert ledger.record_failure(keyed(key_index=0), AUTH, T0 + 2 * S, CEILING, started_ms=T0) is None


def test_forget_provider_drops_its_key_cooldowns():
    ledger = Ledger()
    ledger.record_failure(keyed(key_index=0), AUTH, T0, CEILING)
    ledger.record_failure(keyed(provider_id=2), AUTH, T0, CEILING)

    ledger.forget_provider(1, T0 + S)

    assert [c.provider_id for c in ledger.active(T0 + S)] == [2]


def test_key_cooldown_wire_form_names_the_key():
    ledger = Ledger()
    ledger.record_failure(keyed(key_index=1), AUTH, T0, CEILING)

    (cooldown,) = ledger.active(T0)

    assert cooldown_json(cooldown, T0)["keyId"] == 102


def test_reset_times_are_dropped_once_no_attempt_under_way_can_need_them():
    # Each admin write stamps a reset time; one per key written would pile up for the isolate's
    # life. A reset only guards attempts already under way, which end within the budget.
    ledger = Ledger()
    for n in range(100):
        ledger.forget_key(1_000 + n, T0 + n * rules.FORGET_HOLD_MS)

    assert len(ledger._forgotten) <= 2  # the latest write, and the one before it


def test_a_reset_still_guards_the_attempts_under_way_until_it_is_dropped():
    ledger = Ledger()
    ledger.forget_key(101, T0 + S)
    ledger.forget_key(999, T0 + S + rules.FORGET_HOLD_MS)  # another write: prunes, keeps 101's

    late = T0 + S + rules.FORGET_HOLD_MS
    assert ledger.record_failure(keyed(key_index=0), AUTH, late, CEILING, started_ms=T0) is None
