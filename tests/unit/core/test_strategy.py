"""Routing strategies: the order of a chain's pairs (SPEC §19)."""

from __future__ import annotations

import random

import pytest

from gateway.core.memory import Memory
from gateway.core.strategy import Strategy, auto_strategy, is_auto, order_pairs, speed_score
from support.factories import provider

P1, P2, P3, P4 = (provider(n, models=(f"m{n}",), priority=n) for n in range(1, 5))
PAIRS = [(P1, "m1"), (P2, "m2"), (P3, "m3"), (P4, "m4")]


def ids(pairs) -> list[int]:
    return [p.id for p, _ in pairs]


def mean(alpha: float, beta: float) -> float:
    return alpha / (alpha + beta)


@pytest.mark.parametrize(
    ("model", "strategy", "auto"),
    [
        (None, None, True),
        ("", None, True),
        ("auto", None, True),
        ("AUTO:FAST", Strategy.FASTEST, True),
        ("auto:fastest", Strategy.FASTEST, True),
        ("auto:reliable", Strategy.RELIABLE, True),
        ("auto:balanced", Strategy.BALANCED, True),
        ("auto:smart", None, False),  # not a strategy of ours: a model name like any other
        ("llama-3.1-8b-instant", None, False),
    ],
)
def test_auto_and_its_strategies(model, strategy, auto):
    assert (auto_strategy(model), is_auto(model)) == (strategy, auto)


def test_priority_keeps_the_order():
    memory = Memory()
    memory.record_success(4, "m4", 10)

    assert ids(order_pairs(PAIRS, Strategy.PRIORITY, memory, mean)) == [1, 2, 3, 4]


def test_fastest_puts_measured_fast_pairs_first_then_unmeasured_by_priority_then_the_failing():
    memory = Memory()
    memory.record_success(4, "m4", 200)
    memory.record_success(3, "m3", 900)
    memory.record_failure(1, "m1")

    assert ids(order_pairs(PAIRS, Strategy.FASTEST, memory, mean)) == [4, 3, 2, 1]


def test_reliable_orders_by_the_success_draw():
    memory = Memory()
    for _ in range(9):
        memory.record_success(3, "m3", 500)
    memory.record_failure(2, "m2")
    memory.record_success(4, "m4", 100)
    memory.record_failure(4, "m4")

    # Means: p3 10/11, p1 1/2 (no samples), p4 2/4, p2 1/3; ties keep the priority order.
    assert ids(order_pairs(PAIRS, Strategy.RELIABLE, memory, mean)) == [3, 1, 4, 2]


def test_reliable_still_tries_a_pair_with_few_samples():
    memory = Memory()
    for _ in range(20):
        memory.record_success(1, "m1", 500)
        memory.record_failure(1, "m1")
    draws = random.Random(7)
    firsts = [ids(order_pairs(PAIRS[:2], Strategy.RELIABLE, memory, draws.betavariate))[0] for _ in range(400)]

    # Both are worth a half on average; the unsampled one's draw spreads wider, so each leads often.
    assert 100 < firsts.count(2) < 300


def test_balanced_weighs_the_draw_with_speed():
    memory = Memory()
    memory.record_success(1, "m1", 4_900)  # reliable and slow
    memory.record_success(2, "m2", 250)  # as reliable and fast

    assert ids(order_pairs(PAIRS[:2], Strategy.BALANCED, memory, mean)) == [2, 1]


@pytest.mark.parametrize(
    ("latency", "score"), [(None, 0.6), (100, 1.0), (300, 1.0), (2650, 0.5), (5000, 0.0), (9000, 0.0)]
)
def test_speed_score(latency, score):
    memory = Memory()
    if latency is not None:
        memory.record_success(1, "m", latency)

    assert speed_score(memory.stats(1, "m")) == pytest.approx(score)
