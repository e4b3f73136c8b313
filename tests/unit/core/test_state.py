"""The router state of one isolate (SPEC §5.2): an edit forgets a provider in both memories."""

from __future__ import annotations

from gateway.core import rules
from gateway.core.attempt import Observed
from gateway.core.classify import classify
from gateway.core.state import RouterState
from support.factories import T0, candidate, provider

CEILING = rules.DEFAULT_COOLDOWN_CEILING_MS
MODELS = ("a", "b")


def test_forget_provider_drops_its_cooldown_and_speed_memory_only():
    state = RouterState()
    failure = classify(Observed(status=503), T0)
    for id_ in (1, 2):
        state.memory.record_success(id_, "b", 200)  # "b" is known fast: tried before "a"
        state.ledger.record_failure(candidate(id_), failure, T0, CEILING)

    state.forget_provider(1, T0 + 1)

    assert state.memory.stats(1, "b") is None
    assert state.memory.order(provider(1, models=MODELS)) == MODELS
    assert not state.ledger.is_cooling(1, "m", T0 + 1)
    assert state.memory.stats(2, "b") is not None
    assert state.memory.order(provider(2, models=MODELS)) == ("b", "a")
    assert state.ledger.is_cooling(2, "m", T0 + 1)
