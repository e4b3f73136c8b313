"""core/endpoint_scores.py: scoring OpenRouter's endpoints of a model (SPEC §15). Time is a fake
clock: an int the tests advance."""

from __future__ import annotations

import math

import pytest

from gateway.core import rules
from gateway.core.endpoint_scores import Ranked, prices_now, rank_endpoints

MINUTE = rules.MINUTE_MS
T0 = 1_800_000_000_000 - 1_800_000_000_000 % rules.DAY_MS  # 00:00 UTC
# SPEC §15's ε and price weights, written out: a test that took them from ``rules`` would move with
# a wrong constant instead of failing on it.
EPS = 1e-6
INPUT_WEIGHT, OUTPUT_WEIGHT = 0.4, 0.6


def at(hours: int, minutes: int = 0) -> int:
    return T0 + (hours * 60 + minutes) * MINUTE


def endpoint(
    tag="a", *, prompt=1e-6, completion=2e-6, cache_read=1e-7, caching=False, p50=50.0, status=0, uptime=99.0, **extra
):
    ep = {
        "tag": tag,
        "provider_name": tag.upper(),
        "status": status,
        "uptime_last_30m": uptime,
        "supports_implicit_caching": caching,
        "pricing": {"prompt": str(prompt), "completion": str(completion), "input_cache_read": str(cache_read)},
        "throughput_last_30m": None if p50 is None else {"p50": p50, "p75": p50 * 2},
    }
    ep.update(extra)
    return ep


def payload(*endpoints):
    return {"data": {"id": "x/m", "endpoints": list(endpoints)}}


def ranked(*endpoints, now=T0):
    return rank_endpoints(payload(*endpoints), now)


def slugs(*endpoints, now=T0):
    return [r.slug for r in ranked(*endpoints, now=now)]


# --- Scoring ---


def test_the_score_is_throughput_over_weighted_price():
    result = {
        r.slug: r
        for r in ranked(
            endpoint("plain", prompt=1e-6, completion=3e-6, p50=40),
            endpoint("cached", prompt=2e-6, completion=4e-6, cache_read=2e-7, caching=True, p50=30),
        )
    }
    plain, cached = result["plain"], result["cached"]

    assert plain.score == pytest.approx(40 / (INPUT_WEIGHT * 1e-6 + OUTPUT_WEIGHT * 3e-6 + EPS))
    effective = 0.98 * 2e-7 + 0.02 * 2e-6
    assert cached.score == pytest.approx(30 / (INPUT_WEIGHT * effective + OUTPUT_WEIGHT * 4e-6 + EPS) * 2)
    assert (cached.caching, plain.caching) == (True, False)


def test_a_cheap_endpoint_without_caching_loses_to_a_caching_one():
    cheap = endpoint("cheap", prompt=1e-7, completion=1e-6)
    caching = endpoint("caching", prompt=3e-7, completion=1.2e-6, cache_read=3e-8, caching=True)

    assert slugs(cheap, caching) == ["caching", "cheap"]
    # The same endpoint without caching would lose: the bonus and the hit rate are what win.
    assert slugs(cheap, {**caching, "supports_implicit_caching": False}) == ["cheap", "caching"]


def test_the_output_price_weighs_more_than_the_input_price():
    assert slugs(
        endpoint("dear-output", prompt=1e-6, completion=2e-6),
        endpoint("dear-input", prompt=2e-6, completion=1e-6),
    ) == ["dear-input", "dear-output"]


def test_the_score_scales_with_throughput():
    slow, fast = endpoint("slow", p50=25), endpoint("fast", p50=100)

    result = ranked(slow, fast)

    assert [r.slug for r in result] == ["fast", "slow"]
    assert result[0].score == pytest.approx(4 * result[1].score)


def test_epsilon_keeps_a_free_endpoint_finite_and_throughput_ranks_free_ones():
    result = ranked(
        endpoint("free-slow", prompt=0, completion=0, cache_read=0, p50=10),
        endpoint("free-fast", prompt=0, completion=0, cache_read=0, p50=20),
        endpoint("paid", p50=20),
    )

    assert [r.slug for r in result] == ["free-fast", "free-slow", "paid"]  # free stays in
    assert all(math.isfinite(r.score) for r in result)
    assert result[0].score == pytest.approx(20 / EPS)


@pytest.mark.parametrize(
    "bad",
    [
        {"status": -2},
        {"status": 1},
        {"status": "0"},
        {"status": False},
        {"status": None},
        {"uptime_last_30m": 89.9},
        {"uptime_last_30m": 0},
        {"uptime_last_30m": "99"},
    ],
    ids=repr,
)
def test_an_unhealthy_endpoint_never_wins(bad):
    # The unhealthy one is free and fast: it would win by score.
    unhealthy = endpoint("unhealthy", prompt=0, completion=0, p50=1000) | bad

    assert slugs(unhealthy, endpoint("healthy")) == ["healthy"]


def test_an_endpoint_without_uptime_counts_and_the_threshold_is_inclusive():
    absent = endpoint("absent")
    del absent["uptime_last_30m"]

    assert sorted(slugs(absent, endpoint("null", uptime=None), endpoint("edge", uptime=90))) == [
        "absent",
        "edge",
        "null",
    ]


def test_a_missing_throughput_takes_the_median_of_the_others():
    result = {
        r.slug: r
        for r in ranked(
            endpoint("p10", p50=10),
            endpoint("p30", p50=30),
            endpoint("p80", p50=80),
            endpoint("none", p50=None),
            endpoint("zero", p50=0),
            endpoint("junk", throughput_last_30m={"p50": "fast"}),
        )
    }

    assert result["none"].throughput is None
    assert result["none"].score == pytest.approx(result["p30"].score)  # median of 10, 30, 80
    assert result["zero"].score == result["none"].score == result["junk"].score


def test_an_even_count_takes_the_mean_of_the_middle_two():
    result = {r.slug: r for r in ranked(endpoint("p10", p50=10), endpoint("p30", p50=30), endpoint("none", p50=None))}

    assert result["none"].score == pytest.approx(result["p10"].score * 2)


def test_without_any_throughput_price_alone_decides():
    result = ranked(endpoint("dear", completion=4e-6, p50=None), endpoint("cheap", completion=1e-6, p50=None))

    assert [r.slug for r in result] == ["cheap", "dear"]
    assert result[0].score == pytest.approx(1 / (0.4 * 1e-6 + 0.6 * 1e-6 + EPS))


def test_an_unhealthy_endpoints_throughput_is_not_in_the_median():
    result = {
        r.slug: r
        for r in ranked(endpoint("p10", p50=10), endpoint("down", status=-2, p50=1000), endpoint("none", p50=None))
    }

    assert result["none"].score == pytest.approx(result["p10"].score)


# --- Time-of-day prices ---

OFF_PEAK = {"utc_start": 60, "utc_end": 120, "prompt": "0.0000005", "completion": "0.000001"}
NIGHT = {"utc_start": 23 * 60, "utc_end": 60, "prompt": "0", "completion": "0", "input_cache_read": "0"}
BASE = {"prompt": "0.000002", "completion": "0.000004", "input_cache_read": "0.0000002"}


@pytest.mark.parametrize(
    ("override", "now", "expected"),
    [
        (OFF_PEAK, at(0, 59), (2e-6, 4e-6, 2e-7)),
        (OFF_PEAK, at(1, 0), (5e-7, 1e-6, 2e-7)),  # start inclusive; a missing field keeps base
        (OFF_PEAK, at(1, 59), (5e-7, 1e-6, 2e-7)),
        (OFF_PEAK, at(2, 0), (2e-6, 4e-6, 2e-7)),  # end exclusive
        (OFF_PEAK, at(25, 30), (5e-7, 1e-6, 2e-7)),  # the next day
        (NIGHT, at(22, 59), (2e-6, 4e-6, 2e-7)),
        (NIGHT, at(23, 0), (0.0, 0.0, 0.0)),  # wraps midnight
        (NIGHT, at(0, 30), (0.0, 0.0, 0.0)),
        (NIGHT, at(1, 0), (2e-6, 4e-6, 2e-7)),
        ({"utc_start": 60, "utc_end": 60, "prompt": "0"}, at(1, 0), (2e-6, 4e-6, 2e-7)),  # empty
        ({"utc_start": "x", "utc_end": 120, "prompt": "0"}, at(1, 0), (2e-6, 4e-6, 2e-7)),
        ({"utc_end": 120, "prompt": "0"}, at(1, 0), (2e-6, 4e-6, 2e-7)),
        ({"utc_start": 0, "utc_end": 1440, "prompt": "junk"}, at(1, 0), (2e-6, 4e-6, 2e-7)),
    ],
)
def test_an_override_applies_inside_its_window_only(override, now, expected):
    assert prices_now({**BASE, "overrides": [override]}, now) == pytest.approx(expected)


def test_the_first_override_that_holds_wins():
    pricing = {**BASE, "overrides": ["junk", NIGHT, {**NIGHT, "prompt": "0.000009"}]}

    assert prices_now(pricing, at(0)) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("pricing", "expected"),
    [
        (None, (0.0, 0.0, 0.0)),
        ("0.1", (0.0, 0.0, 0.0)),
        ({}, (0.0, 0.0, 0.0)),
        ({"prompt": "abc", "completion": "-1", "input_cache_read": "nan"}, (0.0, 0.0, 0.0)),
        ({"prompt": 1e-6, "completion": " 2e-6 ", "overrides": "x"}, (1e-6, 2e-6, 0.0)),
    ],
)
def test_missing_or_invalid_prices_are_zero(pricing, expected):
    assert prices_now(pricing, T0) == expected


def test_ranking_uses_the_prices_in_effect_now():
    discounted = endpoint("discounted", prompt=2e-6, completion=4e-6)
    discounted["pricing"]["overrides"] = [OFF_PEAK]
    steady = endpoint("steady", prompt=1e-6, completion=2e-6)

    assert slugs(discounted, steady, now=at(3)) == ["steady", "discounted"]
    at_night = ranked(discounted, steady, now=at(1, 30))
    assert [r.slug for r in at_night] == ["discounted", "steady"]
    assert (at_night[0].prompt, at_night[0].completion) == (5e-7, 1e-6)


# --- Slugs ---


def test_a_slug_keeps_its_best_endpoint():
    result = ranked(
        endpoint("DeepInfra/fp8", completion=4e-6, p50=90),
        endpoint("deepinfra/fp4", completion=1e-6, p50=60),
        endpoint("other", completion=2e-6),
    )

    assert [r.slug for r in result] == ["deepinfra", "other"]
    assert (result[0].completion, result[0].throughput) == (1e-6, 60.0)


def test_the_slug_falls_back_to_the_provider_name_and_an_empty_one_is_skipped():
    no_tag = endpoint("x") | {"tag": "", "provider_name": "Chutes"}
    nameless = endpoint("y") | {"tag": None, "provider_name": "  "}

    assert slugs(no_tag, nameless) == ["chutes"]


def test_equal_scores_are_ordered_by_slug():
    assert slugs(endpoint("b"), endpoint("c"), endpoint("a")) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        "x",
        {},
        {"data": None},
        {"data": []},
        {"data": {"endpoints": None}},
        {"data": {"endpoints": {"tag": "a", "status": 0}}},
        {"data": {"endpoints": [None, 1, "a", [], {"status": 0}, {"tag": 5, "status": 0}]}},
    ],
    ids=repr,
)
def test_a_malformed_payload_ranks_nothing(body):
    assert rank_endpoints(body, T0) == ()


def test_malformed_entries_are_skipped_beside_good_ones():
    good = endpoint("good")

    assert slugs(None, {"status": 0}, good, endpoint("bad", status="x")) == ["good"]


# --- Ranked as JSON ---


def test_ranked_survives_a_json_round_trip():
    for entry in ranked(endpoint("a", caching=True), endpoint("b", p50=None), endpoint("c")):
        assert Ranked.from_json(entry.as_json()) == entry


def test_ranked_json_has_the_admin_keys():
    assert set(ranked(endpoint("a"))[0].as_json()) == {
        "slug",
        "score",
        "prompt",
        "completion",
        "input_cache_read",
        "caching",
        "throughput",
    }


GOOD = Ranked("a", 3.0, 1e-6, 2e-6, 1e-7, True, 40.0).as_json()


@pytest.mark.parametrize(
    "obj",
    [
        None,
        "a",
        [GOOD],
        {**GOOD, "slug": ""},
        {**GOOD, "slug": 1},
        {k: v for k, v in GOOD.items() if k != "slug"},
        {**GOOD, "score": None},
        {**GOOD, "score": "fast"},
        {**GOOD, "score": True},
        {**GOOD, "prompt": -1},
        {k: v for k, v in GOOD.items() if k != "completion"},
        {**GOOD, "caching": "yes"},
        {**GOOD, "throughput": 0},
        {**GOOD, "throughput": "x"},
    ],
    ids=repr,
)
def test_a_malformed_ranked_entry_reads_as_none(obj):
    assert Ranked.from_json(obj) is None


def test_a_ranked_entry_without_throughput_reads():
    entry = Ranked.from_json({k: v for k, v in GOOD.items() if k != "throughput"})

    assert entry is not None and entry.throughput is None


@pytest.mark.parametrize(
    "pricing",
    [
        pytest.param({"prompt": "-1", "completion": "-1"}, id="variable-price"),
        pytest.param({"completion": "0.000002"}, id="no-prompt-price"),
        pytest.param({"prompt": "x", "completion": "0.000002"}, id="invalid-prompt-price"),
        pytest.param(None, id="no-pricing"),
    ],
)
def test_an_endpoint_without_a_valid_price_is_never_ranked(pricing):
    unpriced = {**endpoint("unpriced", p50=500.0), "pricing": pricing}

    assert [r.slug for r in ranked(unpriced, endpoint("b"))] == ["b"]


def test_a_free_endpoint_is_ranked():
    assert [r.slug for r in ranked(endpoint("free", prompt="0", completion="0"))] == ["free"]
