"""Speed and success memory and the model order it induces (SPEC §6)."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.memory import Memory
from support.factories import provider

A = rules.EMA_ALPHA
MODELS = ("a", "b", "c", "d")


def test_first_sample_is_taken_as_is_then_averaged():
    memory = Memory()

    memory.record_success(1, "a", 1000)
    memory.record_success(1, "a", 2000)
    memory.record_failure(1, "a")

    stats = memory.stats(1, "a")
    assert stats is not None
    assert stats.latency_ms == pytest.approx(A * 2000 + (1 - A) * 1000)
    assert stats.success == pytest.approx(1 - A)


def test_failures_do_not_touch_latency():
    memory = Memory()

    memory.record_failure(1, "a")

    stats = memory.stats(1, "a")
    assert stats is not None and (stats.success, stats.latency_ms) == (0.0, None)


# Each event: ("ok", model, latency_ms) or ("fail", model).
@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param([], MODELS, id="no-data-configured-order"),
        pytest.param([("ok", "c", 300), ("ok", "b", 900)], ("c", "b", "a", "d"),
                     id="fast-first-then-unknown-in-configured-order"),
        pytest.param([("fail", "a")], ("b", "c", "d", "a"), id="only-failed-goes-last"),
        pytest.param([("ok", "b", 100)] + [("fail", "b")] * 3 + [("ok", "d", 2000)],
                     ("d", "a", "c", "b"), id="unreliable-after-unknown"),
        pytest.param([("ok", "b", 300), ("fail", "b"), ("ok", "c", 400)], ("c", "b", "a", "d"),
                     id="cost-is-latency-over-success"),
        pytest.param([("ok", "b", 500), ("ok", "a", 500)], ("a", "b", "c", "d"),
                     id="ties-keep-configured-order"),
        pytest.param([("fail", "d"), ("fail", "b")], ("a", "c", "b", "d"),
                     id="never-succeeded-keep-configured-order"),
    ],
)  # fmt: skip
def test_order(events, expected):
    memory = Memory()
    for event in events:
        if event[0] == "ok":
            memory.record_success(1, event[1], event[2])
        else:
            memory.record_failure(1, event[1])

    assert memory.order(provider(1, models=MODELS)) == expected


def test_order_is_the_configured_tuple_itself_without_data():
    memory = Memory()
    memory.record_success(2, "a", 10)
    configured = provider(1, models=MODELS)

    assert memory.order(configured) is configured.models


def test_forget_provider_drops_its_memory_only():
    memory = Memory()
    memory.record_failure(1, "a")
    memory.record_failure(2, "a")

    memory.forget_provider(1)

    assert memory.stats(1, "a") is None
    assert memory.stats(2, "a") is not None
    assert memory.order(provider(1, models=MODELS)) == MODELS
