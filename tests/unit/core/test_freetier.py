"""Free-tier caps per key and model, counted in isolate memory (SPEC §19)."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.freetier import FreeTier
from gateway.core.modelfacts import NO_FACTS, Facts
from support.factories import T0

M, D = rules.MINUTE_MS, rules.DAY_MS
MINUTE = T0 - T0 % M  # the start of T0's UTC minute
DAY = T0 - T0 % D


def sent(tier: FreeTier, n: int, *, key: int = 1, model: str = "m", tokens: int = 100, at: int = MINUTE) -> None:
    for _ in range(n):
        tier.count(key, model, tokens, at)


@pytest.mark.parametrize(
    ("facts", "requests", "tokens", "reason"),
    [
        (Facts(rpm=3), 2, 100, None),
        (Facts(rpm=3), 3, 100, "at cap 3/min"),
        (Facts(rpd=3), 3, 100, "at cap 3/day"),
        (Facts(rpm=10, rpd=3), 3, 100, "at cap 3/day"),  # the day's cap is named first: it lasts longer
        (Facts(tpm=1000), 9, 100, None),  # 900 sent + 100 asked fits
        (Facts(tpm=1000), 10, 100, "at cap 1000 tokens/min"),
        (Facts(tpm=6000), 0, 21_000, "at cap 6000 tokens/min"),  # larger than a minute's tokens alone
        (NO_FACTS, 1000, 100, None),  # no cap known: never at cap
    ],
)
def test_at_cap(facts, requests, tokens, reason):
    tier = FreeTier()
    sent(tier, requests)

    assert tier.at_cap(1, "m", facts, tokens, MINUTE + 1) == reason


def test_counts_are_per_key_and_model():
    tier = FreeTier()
    sent(tier, 3, key=1, model="m")

    assert tier.at_cap(1, "m", Facts(rpm=3), 1, MINUTE) is not None
    assert tier.at_cap(2, "m", Facts(rpm=3), 1, MINUTE) is None
    assert tier.at_cap(1, "n", Facts(rpm=3), 1, MINUTE) is None


def test_the_minute_turns_at_the_next_utc_minute_and_the_day_at_utc_midnight():
    tier = FreeTier()
    sent(tier, 3, at=MINUTE)
    facts = Facts(rpm=3, rpd=5)

    assert tier.reset_ms(1, "m", facts, MINUTE + 59_999) == MINUTE + M
    assert tier.at_cap(1, "m", facts, 1, MINUTE + M) is None
    sent(tier, 2, at=MINUTE + M)
    assert tier.at_cap(1, "m", facts, 1, MINUTE + 2 * M) == "at cap 5/day"
    assert tier.reset_ms(1, "m", facts, MINUTE + 2 * M) == DAY + D
    assert tier.at_cap(1, "m", facts, 1, DAY + D) is None
    usage = tier.usage(1, "m", MINUTE + M + 1)
    assert (usage.minute_requests, usage.day_requests, usage.minute_tokens) == (2, 5, 200)


def test_a_stated_limit_lowers_the_cap_and_never_raises_it():
    tier = FreeTier()
    tier.learn(1, "m", Facts(rpm=20))
    assert tier.caps(1, "m", Facts(rpm=30, rpd=1000)) == Facts(rpm=20, rpd=1000)
    tier.learn(1, "m", Facts(rpm=50, tpm=6000))  # 50 would raise it: kept at 20
    assert tier.caps(1, "m", Facts(rpm=30)) == Facts(rpm=20, tpm=6000)
    assert tier.caps(1, "m", NO_FACTS) == Facts(rpm=20, tpm=6000)  # learned with nothing configured
    assert tier.caps(2, "m", Facts(rpm=30)) == Facts(rpm=30)  # another key learned nothing
    tier.learn(1, "m", NO_FACTS)  # a 429 that states no figure teaches nothing
    assert tier.caps(1, "m", NO_FACTS) == Facts(rpm=20, tpm=6000)


def test_the_counts_are_bounded_and_a_past_days_go_first():
    tier = FreeTier()
    for n in range(rules.FREE_TIER_COUNTS_KEPT - 1):
        tier.count(n, "m", 1, MINUTE - D)  # yesterday
    tier.count(10**6, "m", 1, MINUTE)  # today
    tier.count(10**6 + 1, "m", 1, MINUTE)  # full: yesterday's go

    assert tier.usage(10**6, "m", MINUTE).day_requests == tier.usage(10**6 + 1, "m", MINUTE).day_requests == 1
    assert tier.usage(0, "m", MINUTE - D).day_requests == 0
