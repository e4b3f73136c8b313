"""core/pinning.py: the lock's life, the fault rules and the savings estimate (SPEC §15).
Time is a fake clock: an int the tests advance."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.endpoint_scores import Ranked
from gateway.core.pinning import (
    Pin,
    candidates_fresh,
    is_openrouter,
    pin_after_fault,
    pin_after_success,
    pin_for_request,
    pin_refreshed,
    provider_field,
    renewal_due,
    savings_estimate,
)

MINUTE = rules.MINUTE_MS
T0 = 1_800_000_000_000 - 1_800_000_000_000 % rules.DAY_MS  # 00:00 UTC
IDLE = 20 * MINUTE  # not the default, so a test fails if the parameter is ignored
COOLDOWN = rules.OPENROUTER_ENDPOINT_COOLDOWN_MS


# --- The lock ---


def candidates(*scored: tuple[str, float]) -> tuple[Ranked, ...]:
    return tuple(Ranked(slug, score, 1e-6, 2e-6, 1e-7, False, 10.0) for slug, score in scored)


AB = candidates(("a", 2.0), ("b", 1.0))


def test_the_first_request_takes_the_best_candidate():
    pin = pin_refreshed(Pin("m"), AB, T0)

    taken = pin_for_request(pin, T0 + 5, IDLE)

    assert (taken.lock_slug, taken.lock_until_ms) == ("a", T0 + 5 + IDLE)
    assert (taken.switches, taken.failures) == (0, 0)


def test_without_candidates_the_request_goes_unpinned():
    pin = Pin("m")

    assert pin_for_request(pin, T0, IDLE) is pin
    assert pin.best(T0) is None and pin.locked(T0) is None


def test_each_request_renews_a_live_lock():
    now = T0
    pin = pin_for_request(pin_refreshed(Pin("m"), AB, now), now, IDLE)
    for _ in range(5):  # an hour and more of traffic, each gap shorter than IDLE
        now += IDLE - 1
        pin = pin_for_request(pin, now, IDLE)

    assert (pin.lock_slug, pin.lock_until_ms, pin.switches) == ("a", now + IDLE, 0)


def test_a_live_lock_is_kept_when_a_better_candidate_appears():
    pin = pin_for_request(pin_refreshed(Pin("m"), AB, T0), T0, IDLE)
    pin = pin_refreshed(pin, candidates(("c", 9.0), ("a", 2.0)), T0 + MINUTE)

    kept = pin_for_request(pin, T0 + IDLE - 1, IDLE)

    assert pin.best(T0 + MINUTE) == "c"
    assert (kept.lock_slug, kept.switches) == ("a", 0)


def test_an_idle_lock_is_replaced_by_the_current_candidate():
    pin = pin_for_request(pin_refreshed(Pin("m"), AB, T0), T0, IDLE)
    pin = pin_after_fault(pin, "a", T0 + 1, IDLE)  # one fault: the count goes with the slug
    pin = pin_refreshed(pin, candidates(("c", 9.0), ("a", 2.0)), T0 + MINUTE)

    assert pin.locked(T0 + IDLE) is None  # idle exactly IDLE: gone
    replaced = pin_for_request(pin, T0 + IDLE, IDLE)

    assert (replaced.lock_slug, replaced.lock_until_ms) == ("c", T0 + 2 * IDLE)
    assert (replaced.switches, replaced.failures) == (1, 0)


def test_an_idle_lock_retaken_by_the_same_slug_is_no_switch():
    pin = pin_for_request(pin_refreshed(Pin("m"), AB, T0), T0, IDLE)
    pin = pin_after_fault(pin, "a", T0 + 1, IDLE)

    again = pin_for_request(pin, T0 + 3 * IDLE, IDLE)

    assert (again.lock_slug, again.lock_until_ms) == ("a", T0 + 4 * IDLE)
    assert (again.switches, again.failures) == (0, 1)


@pytest.mark.parametrize("new", [AB[::-1], candidates(("z", 5.0)), ()], ids=repr)
def test_a_refresh_never_moves_the_lock(new):
    pin = pin_after_fault(pin_for_request(pin_refreshed(Pin("m"), AB, T0), T0, IDLE), "a", T0, IDLE)

    refreshed = pin_refreshed(pin, new, T0 + 3 * rules.HOUR_MS)

    assert (refreshed.lock_slug, refreshed.lock_until_ms, refreshed.failures) == ("a", T0 + IDLE, 1)
    assert refreshed.candidates == (new or AB)
    assert refreshed.refreshed_at_ms == (T0 + 3 * rules.HOUR_MS if new else T0)


def test_a_lock_with_no_candidate_left_is_cleared():
    pin = Pin("m", lock_slug="a", lock_until_ms=T0)  # idle, and its model has no candidates now

    cleared = pin_for_request(pin, T0, IDLE)

    assert (cleared.lock_slug, cleared.lock_until_ms, cleared.switches) == (None, None, 0)


def test_a_lock_on_a_cooled_slug_is_replaced_at_once():
    pin = Pin("m", AB, T0, "a", T0 + IDLE, cooled={"a": T0 + MINUTE})

    assert pin.locked(T0) is None
    moved = pin_for_request(pin, T0, IDLE)

    assert (moved.lock_slug, moved.switches) == ("b", 1)


# --- Faults ---


def locked_pin(now: int = T0) -> Pin:
    return pin_for_request(pin_refreshed(Pin("m"), AB, now), now, IDLE)


def test_two_faults_keep_the_lock():
    pin = locked_pin()
    for _ in range(rules.OPENROUTER_FAULTS_TO_MOVE - 1):
        pin = pin_after_fault(pin, "a", T0 + 1, IDLE)

    assert (pin.lock_slug, pin.failures, pin.switches, dict(pin.cooled)) == ("a", 2, 0, {})


def test_the_third_fault_cools_the_slug_and_moves_the_lock_at_once():
    pin = locked_pin()
    for i in range(rules.OPENROUTER_FAULTS_TO_MOVE):
        pin = pin_after_fault(pin, "a", T0 + i, IDLE)

    now = T0 + 2
    assert dict(pin.cooled) == {"a": now + COOLDOWN}
    assert (pin.lock_slug, pin.lock_until_ms) == ("b", now + IDLE)
    assert (pin.failures, pin.switches) == (0, 1)
    assert pin_for_request(pin, now + 1, IDLE).lock_slug == "b"


def test_a_success_resets_the_count():
    pin = pin_after_fault(pin_after_fault(locked_pin(), "a", T0, IDLE), "a", T0, IDLE)

    pin = pin_after_success(pin, "a")
    pin = pin_after_fault(pin, "a", T0, IDLE)

    assert (pin.lock_slug, pin.failures) == ("a", 1)


def test_a_success_of_another_slug_or_with_no_faults_changes_nothing():
    clean = locked_pin()
    faulted = pin_after_fault(clean, "a", T0, IDLE)

    assert pin_after_success(clean, "a") is clean
    assert pin_after_success(faulted, "b") is faulted


def test_faults_of_a_stale_slug_are_ignored():
    pin = locked_pin()
    for i in range(rules.OPENROUTER_FAULTS_TO_MOVE):
        pin = pin_after_fault(pin, "a", T0 + i, IDLE)  # the lock moved to b

    assert pin_after_fault(pin, "a", T0 + 3, IDLE) is pin  # a request still in flight on a


def test_a_cooled_slug_comes_back_after_the_cooldown():
    pin = locked_pin()
    for _ in range(rules.OPENROUTER_FAULTS_TO_MOVE):
        pin = pin_after_fault(pin, "a", T0, IDLE)

    assert pin.best(T0 + COOLDOWN - 1) == "b"
    assert pin.best(T0 + COOLDOWN) == "a"
    # b's lock, idle since T0, has lapsed by then: the next request goes back to a.
    back = pin_for_request(pin, T0 + COOLDOWN, IDLE)
    assert (back.lock_slug, back.switches) == ("a", 2)


def test_with_every_slug_cooled_the_lock_is_cleared_until_one_comes_back():
    pin = pin_for_request(pin_refreshed(Pin("m"), candidates(("a", 1.0)), T0), T0, IDLE)
    for _ in range(rules.OPENROUTER_FAULTS_TO_MOVE):
        pin = pin_after_fault(pin, "a", T0, IDLE)

    assert (pin.lock_slug, pin.lock_until_ms) == (None, None)
    assert pin_for_request(pin, T0 + 1, IDLE).lock_slug is None
    assert pin_for_request(pin, T0 + COOLDOWN, IDLE).lock_slug == "a"


def test_a_fault_move_drops_expired_cooldowns():
    pin = locked_pin(T0 + 2 * COOLDOWN)
    pin = Pin(
        pin.model,
        pin.candidates,
        pin.refreshed_at_ms,
        pin.lock_slug,
        pin.lock_until_ms,
        cooled={"old": T0, "b": T0 + 3 * COOLDOWN},
    )
    for _ in range(rules.OPENROUTER_FAULTS_TO_MOVE):
        pin = pin_after_fault(pin, "a", T0 + 2 * COOLDOWN, IDLE)

    assert dict(pin.cooled) == {"a": T0 + 3 * COOLDOWN, "b": T0 + 3 * COOLDOWN}
    assert pin.lock_slug is None  # b is still cooled


# --- Freshness, renewal writes, forwarding ---


@pytest.mark.parametrize(
    ("refreshed", "now", "fresh"),
    [
        (None, T0, False),
        (T0, T0, True),
        (T0, T0 + rules.OPENROUTER_CANDIDATES_FRESH_MS - 1, True),
        (T0, T0 + rules.OPENROUTER_CANDIDATES_FRESH_MS, False),
        (T0 + rules.DAY_MS, T0, False),  # far in the future: cannot freeze the candidates
    ],
)
def test_candidates_are_fresh_for_ten_minutes(refreshed, now, fresh):
    assert candidates_fresh(Pin("m", AB, refreshed), now) is fresh


RENEW = IDLE // 2  # below OPENROUTER_RENEW_WRITE_MS


@pytest.mark.parametrize(
    ("written", "until", "due"),
    [
        (None, T0, True),
        (T0, T0, False),
        (T0, T0 + RENEW - 1, False),
        (T0, T0 + RENEW, True),
        (None, None, False),
        (T0, None, False),
    ],
)
def test_a_renewal_is_written_once_the_lock_moved_half_its_idle_time(written, until, due):
    assert renewal_due(written, Pin("m", AB, T0, "a", until), IDLE) is due


def test_a_long_idle_time_renews_at_most_every_fifteen_minutes():
    day = 24 * 60 * MINUTE
    assert renewal_due(T0, Pin("m", AB, T0, "a", T0 + rules.OPENROUTER_RENEW_WRITE_MS), day)
    assert not renewal_due(T0, Pin("m", AB, T0, "a", T0 + rules.OPENROUTER_RENEW_WRITE_MS - 1), day)


def test_traffic_writes_one_renewal_per_half_idle_time():
    pin = locked_pin()
    written, writes = pin.lock_until_ms, 0
    for second in range(1, 60 * 60 + 1):  # a request every second for an hour
        pin = pin_for_request(pin, T0 + second * rules.SECOND_MS, IDLE)
        if renewal_due(written, pin, IDLE):
            written, writes = pin.lock_until_ms, writes + 1

    assert writes == 6


def test_the_provider_field_pins_one_slug_without_fallbacks():
    assert provider_field("deepinfra") == {"order": ["deepinfra"], "allow_fallbacks": False}


ORIGIN = "https://openrouter.ai"


@pytest.mark.parametrize(
    ("platform", "base_url", "origin", "expected"),
    [
        ("openrouter", "https://example.com/v1", ORIGIN, True),
        ("OpenRouter", "", ORIGIN, True),
        ("custom", "https://openrouter.ai/api/v1", ORIGIN, True),
        ("custom", "https://OpenRouter.AI:443/api/v1", ORIGIN, True),
        ("custom", "https://openrouter.ai.evil.com/api/v1", ORIGIN, False),
        ("custom", "https://evil.com/openrouter.ai", ORIGIN, False),
        ("custom", "http://openrouter.ai/api/v1", ORIGIN, False),
        ("custom", "https://openrouter.ai:8443/api/v1", ORIGIN, False),
        ("custom", "https://api.groq.com/openai/v1", ORIGIN, False),
        ("custom", "http://127.0.0.1:8123/api/v1", "http://127.0.0.1:8123", True),
        ("custom", "http://127.0.0.1:8124/api/v1", "http://127.0.0.1:8123", False),
        ("custom", "http://127.0.0.1/api/v1", "http://127.0.0.1:80", True),
        ("custom", "https://openrouter.ai:99999/v1", ORIGIN, False),
        ("custom", "http://[::1/v1", ORIGIN, False),
        ("custom", "not a url", ORIGIN, False),
        ("custom", "", "", False),
        ("custom", "https://openrouter.ai/api/v1", "junk", False),
        (None, None, None, False),
    ],
)
def test_is_openrouter(platform, base_url, origin, expected):
    assert is_openrouter(platform, base_url, origin) is expected


# --- Seed 003's estimate: the pinned endpoint against the official one ---


def test_the_estimate_bills_seed_003s_traffic_at_the_pinned_and_the_official_prices():
    # 10M input at 98% cache reads, 1M output: official 10M × (0.98 × 1e-7 + 0.02 × 1e-6) + 1M × 2e-6
    official = Ranked("deepseek", 1.0, 1e-6, 2e-6, 1e-7, True, 50.0)
    cheap = Ranked("chutes", 2.0, 5e-7, 1e-6, 5e-8, True, 500.0)
    pin = Pin("deepseek/deepseek-v4", (cheap, official))

    estimate = savings_estimate(pin, T0)

    assert (estimate["pinned"], estimate["official"]) == ("chutes", "deepseek")
    assert estimate["official_usd"] == pytest.approx(10e6 * (0.98 * 1e-7 + 0.02 * 1e-6) + 1e6 * 2e-6)
    assert estimate["pinned_usd"] == pytest.approx(10e6 * (0.98 * 5e-8 + 0.02 * 5e-7) + 1e6 * 1e-6)
    assert estimate["savings_usd"] == pytest.approx(estimate["official_usd"] - estimate["pinned_usd"])


def test_without_the_official_endpoint_the_estimate_says_so():
    pin = Pin("deepseek/deepseek-v4", (Ranked("chutes", 1.0, 1e-6, 2e-6, 1e-7, True, 50.0),))

    estimate = savings_estimate(pin, T0)

    assert estimate["pinned"] == "chutes" and estimate["official"] is None
    assert estimate["official_usd"] is None and estimate["savings_usd"] is None
    assert savings_estimate(Pin("deepseek/deepseek-v4"), T0) is None
