"""Chain construction (SPEC §3) and where half-open probes go in it (SPEC §5.4)."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.attempt import Candidate, Observed
from gateway.core.capabilities import Needs
from gateway.core.chain import build_chain
from gateway.core.classify import classify
from gateway.core.modelfacts import Facts
from gateway.core.state import RouterState
from gateway.core.sticky import Target
from gateway.core.strategy import Strategy
from support.factories import T0, candidate, provider

S = rules.SECOND_MS
CEILING = rules.DEFAULT_COOLDOWN_CEILING_MS
SERVER = classify(Observed(status=503), T0)
CREDIT = classify(Observed(status=402), T0)
NOT_FOUND = classify(Observed(status=404), T0)
# 90 s heuristic cooldowns set at T0 are probe-ready after 45 s.
PROBE_TIME = T0 + 50 * S

PROVIDERS = (
    provider(3, models=("x", "shared"), priority=20),
    provider(1, models=("a", "b"), priority=10),
    provider(2, models=("shared",), priority=10),
    provider(4, models=("z",), priority=5, enabled=False),
)


def pairs(chain) -> list[tuple[int, str]]:
    return [(s.candidate.provider.id, s.candidate.model) for s in chain.steps]


def cool(state: RouterState, id_: int, fail=SERVER, model: str = "m", at: int = T0) -> None:
    state.ledger.record_failure(candidate(id_, model), fail, at, CEILING)


@pytest.mark.parametrize("model", [None, "", "auto", "AUTO", "Auto"])
def test_auto_is_every_enabled_provider_by_priority_then_id(model):
    chain = build_chain(PROVIDERS, model, RouterState(), T0)

    assert pairs(chain) == [(1, "a"), (1, "b"), (2, "shared"), (3, "x"), (3, "shared")]
    assert not chain.explicit and chain.requested_model is None
    assert not any(s.degraded or s.probe for s in chain.steps)


def test_auto_orders_models_inside_a_provider_by_memory():
    state = RouterState()
    state.memory.record_failure(1, "a")

    chain = build_chain(PROVIDERS, "auto", state, T0)

    assert pairs(chain)[:2] == [(1, "b"), (1, "a")]


def test_explicit_model_first_from_its_providers_then_degrades():
    chain = build_chain(PROVIDERS, "shared", RouterState(), T0)

    assert pairs(chain) == [(2, "shared"), (3, "shared"), (1, "a"), (1, "b"), (3, "x")]
    assert [s.degraded for s in chain.steps] == [False, False, True, True, True]
    assert chain.explicit and chain.requested_model == "shared"


def test_explicit_model_nobody_declares_degrades_at_once():
    chain = build_chain(PROVIDERS, "nope", RouterState(), T0)

    assert pairs(chain)[0] == (1, "a")
    assert all(s.degraded for s in chain.steps)


def test_cap_of_12_candidates():
    many = [provider(i, models=("m1", "m2", "m3")) for i in range(1, 6)]

    chain = build_chain(many, None, RouterState(), T0)

    assert len(chain.steps) == rules.MAX_CANDIDATES


def test_skipped_pairs_do_not_count_against_the_cap():
    many = [provider(i, models=("m1", "m2", "m3")) for i in range(1, 7)]
    state = RouterState()
    cool(state, 1, CREDIT)

    chain = build_chain(many, None, state, T0)

    assert len(chain.steps) == rules.MAX_CANDIDATES
    assert pairs(chain)[0] == (2, "m1")


def test_provider_cooldown_skips_all_its_models_and_reports_them():
    state = RouterState()
    cool(state, 1)

    chain = build_chain(PROVIDERS, None, state, T0)

    assert (1, "a") not in pairs(chain) and (1, "b") not in pairs(chain)
    assert [(c.provider.id, c.model) for c in chain.skipped] == [(1, "a"), (1, "b")]
    assert chain.provider_ids() == {1, 2, 3}


def test_model_cooldown_skips_only_that_pair():
    state = RouterState()
    for _ in range(rules.MODEL_STRIKES):
        cool(state, 1, NOT_FOUND, model="a")

    chain = build_chain(PROVIDERS, None, state, T0)

    assert pairs(chain)[0] == (1, "b")
    assert [(c.provider.id, c.model) for c in chain.skipped] == [(1, "a")]


@pytest.mark.parametrize(
    ("cooled", "now", "expected"),
    [
        pytest.param({1: SERVER, 2: SERVER, 3: SERVER}, PROBE_TIME,
                     [(1, "a", True), (2, "shared", True), (3, "x", True)],
                     id="all-cooled-every-ready-provider-probed-once"),
        pytest.param({1: SERVER, 2: SERVER, 3: SERVER}, T0 + 10 * S, [],
                     id="all-cooled-none-ready"),
        pytest.param({1: CREDIT, 2: CREDIT, 3: SERVER}, PROBE_TIME, [(3, "x", True)],
                     id="all-cooled-credit-never-probed"),
        pytest.param({1: SERVER}, PROBE_TIME,
                     [(1, "a", True), (2, "shared", False), (3, "x", False),
                      (3, "shared", False)],
                     id="beyond-ready-primary-ahead-is-probed-first"),
        pytest.param({2: SERVER}, PROBE_TIME,
                     [(1, "a", False), (1, "b", False), (3, "x", False), (3, "shared", False),
                      (2, "shared", True)],
                     id="ready-provider-behind-the-first-usable-is-tried-last"),
        pytest.param({1: SERVER}, T0 + 10 * S,
                     [(2, "shared", False), (3, "x", False), (3, "shared", False)],
                     id="not-ready-is-skipped"),
    ],
)  # fmt: skip
def test_probes(cooled, now, expected):
    state = RouterState()
    for id_, fail in cooled.items():
        cool(state, id_, fail)

    chain = build_chain(PROVIDERS, None, state, now)

    got = [(s.candidate.provider.id, s.candidate.model, s.probe) for s in chain.steps]
    assert got == expected


def test_no_probe_while_one_is_in_flight():
    state = RouterState()
    cool(state, 1)
    state.ledger.begin_probe(1, PROBE_TIME)

    chain = build_chain(PROVIDERS, None, state, PROBE_TIME)

    assert not any(s.probe for s in chain.steps)


def test_probe_uses_the_first_model_without_a_cooldown_of_its_own():
    state = RouterState()
    for _ in range(rules.MODEL_STRIKES):
        cool(state, 1, NOT_FOUND, model="a")
    cool(state, 1)

    chain = build_chain(PROVIDERS, None, state, PROBE_TIME)

    assert (chain.steps[0].candidate.model, chain.steps[0].probe) == ("b", True)


def test_chain_building_changes_nothing():
    state = RouterState()
    cool(state, 1)
    before = state.ledger.active(T0)

    build_chain(PROVIDERS, None, state, PROBE_TIME)

    assert state.ledger.active(T0) == before
    assert state.ledger.begin_probe(1, PROBE_TIME)


# --- A router that knows its models (SPEC §19) ---------------------------------------------

SMALL = provider(1, models=("small",), priority=1, facts={"small": Facts(context=8192, tools=False)})
BLIND = provider(2, models=("blind",), priority=2, facts={"blind": Facts(vision=False)})
BIG = provider(3, models=("big",), priority=3, facts={"big": Facts(context=131_072)})
KNOWN = (SMALL, BLIND, BIG)


def passes(chain) -> list[str]:
    return [p.label for p in chain.passed]


def test_a_model_that_cannot_serve_is_passed_over_with_its_reason():
    chain = build_chain(KNOWN, None, RouterState(), T0, needs=Needs(21_000))

    assert pairs(chain) == [(2, "blind"), (3, "big")]
    assert passes(chain) == ["p1/small: skipped: context 8192 < ~21000"]


@pytest.mark.parametrize(
    ("needs", "served", "passed"),
    [
        (Needs(100, vision=True), [1, 3], ["p2/blind: skipped: no vision"]),
        (Needs(100, tools=True), [2, 3], ["p1/small: skipped: no tools"]),
        (Needs(100), [1, 2, 3], []),
    ],
)
def test_needs_pass_over_models_that_lack_them(needs, served, passed):
    chain = build_chain(KNOWN, None, RouterState(), T0, needs=needs)

    assert [p for p, _ in pairs(chain)] == served
    assert passes(chain) == passed


def test_a_learned_window_passes_a_model_over_unless_the_admin_set_its_window():
    state = RouterState()
    state.windows.learn(2, "blind", 20_000)
    state.windows.learn(3, "big", 20_000)  # the admin said 131,072: that stands

    chain = build_chain(KNOWN, None, state, T0, needs=Needs(21_000))

    assert pairs(chain) == [(3, "big")]
    assert "p2/blind: skipped: context 20000 < ~21000" in passes(chain)


def test_a_key_at_its_cap_leaves_its_siblings_and_a_pair_whose_keys_all_are_is_passed_over():
    capped = provider(1, models=("m",), priority=1, keys=2, facts={"m": Facts(rpm=1)})
    state = RouterState()
    state.free_tier.count(101, "m", 10, T0)

    assert pairs(build_chain([capped], None, state, T0, needs=Needs(10))) == [(1, "m")]
    state.free_tier.count(102, "m", 10, T0)
    chain = build_chain([capped], None, state, T0, needs=Needs(10))
    assert chain.steps == ()
    assert passes(chain) == ["p1/m: skipped: at cap 1/min"]
    assert chain.passed[0].until_ms == T0 - T0 % rules.MINUTE_MS + rules.MINUTE_MS


def test_a_strategy_orders_the_chain():
    state = RouterState()
    state.memory.record_success(3, "x", 100)
    state.memory.record_success(1, "a", 900)

    chain = build_chain(PROVIDERS, "auto:fast", state, T0, strategy=Strategy.FASTEST)

    assert pairs(chain)[:2] == [(3, "x"), (1, "a")]


def test_the_sticky_target_comes_first_with_its_key():
    two_keys = provider(2, models=("m",), priority=2, keys=2)
    target = Target(2, 202, "m")

    chain = build_chain([provider(1, priority=1), two_keys], None, RouterState(), T0, sticky=target)

    assert pairs(chain) == [(2, "m"), (1, "m"), (2, "m")]
    assert chain.steps[0].candidate.key is not None and chain.steps[0].candidate.key.id == 202


@pytest.mark.parametrize("why", ["cooling", "capped", "unfit", "other model", "gone"])
def test_a_sticky_target_that_cannot_serve_is_passed_over(why):
    facts = {"m": Facts(context=50, rpm=1)} if why in ("unfit", "capped") else None
    sticky = provider(2, models=("m",), priority=2, keys=2, facts=facts)
    state = RouterState()
    target, needs, model = Target(2, 202, "m"), Needs(10), None
    if why == "cooling":
        state.ledger.record_failure(candidate(2, "m"), SERVER, T0, CEILING)
    elif why == "capped":
        state.free_tier.count(202, "m", 10, T0)
    elif why == "unfit":
        needs = Needs(100)
    elif why == "other model":
        model = "n"
    else:
        target = Target(2, 999, "m")

    chain = build_chain([provider(1, models=("m", "n")), sticky], model, state, T0, needs=needs, sticky=target)

    assert not chain.steps or chain.steps[0].candidate.key is None


def test_a_capped_pair_is_ready_when_a_cooling_sibling_key_is_if_that_is_sooner():
    capped = provider(1, models=("m",), priority=1, keys=2, facts={"m": Facts(rpd=1)})
    state = RouterState()
    state.free_tier.count(101, "m", 10, T0)
    key_refused = classify(Observed(status=401), T0)  # cools that key alone
    state.ledger.record_failure(Candidate(capped, "m", capped.keys[1]), key_refused, T0, CEILING)

    [passed] = build_chain([capped], None, state, T0, needs=Needs(10)).passed

    assert passed.until_ms == state.ledger.key_cooling_until(102, T0) < T0 + rules.HOUR_MS
