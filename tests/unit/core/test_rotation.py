"""Key rotation (SPEC §13): round-robin per provider over usable keys, with a fake clock."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.attempt import Candidate, Observed
from gateway.core.classify import classify
from gateway.core.ledger import Ledger
from gateway.core.rotation import Rotation
from support.factories import T0, provider

CEILING = rules.DEFAULT_COOLDOWN_CEILING_MS


def picks(rotation: Rotation, ledger: Ledger, p, n: int, now: int = T0, exclude=()) -> list[int | None]:
    out = []
    for _ in range(n):
        key = rotation.next_key(p, ledger, now, exclude)
        out.append(None if key is None else key.id)
    return out


def cool(ledger: Ledger, p, key_id: int, status: int = 429, at: int = T0) -> None:
    key = next(k for k in p.keys if k.id == key_id)
    ledger.record_failure(Candidate(p, "m", key), classify(Observed(status=status), at), at, CEILING)


@pytest.mark.parametrize(
    ("keys", "disabled", "cooling", "exclude", "expected"),
    [
        pytest.param(1, (), (), (), [101, 101, 101], id="one-key"),
        pytest.param(3, (), (), (), [101, 102, 103, 101], id="round-robin"),
        pytest.param(3, (102,), (), (), [101, 103, 101], id="disabled-skipped"),
        pytest.param(3, (), (101,), (), [102, 103, 102], id="cooling-skipped"),
        pytest.param(3, (), (), (102,), [101, 103, 101], id="excluded-skipped"),
        pytest.param(2, (), (101, 102), (), [None, None], id="all-cooling"),
        pytest.param(2, (101, 102), (), (), [None], id="all-disabled"),
    ],
)  # fmt: skip
def test_next_key(keys, disabled, cooling, exclude, expected):
    p = provider(1, keys=keys, disabled_keys=disabled)
    ledger = Ledger()
    for key_id in cooling:
        cool(ledger, p, key_id)

    assert picks(Rotation(), ledger, p, len(expected), exclude=exclude) == expected


def test_a_key_back_from_its_cooldown_rejoins_the_round_in_id_order():
    p = provider(1, keys=3)
    ledger, rotation = Ledger(), Rotation()
    cool(ledger, p, 102)  # 90 s ladder step
    assert picks(rotation, ledger, p, 2) == [101, 103]

    later = T0 + rules.LADDER_MS[0]
    assert picks(rotation, ledger, p, 3, now=later) == [101, 102, 103]


def test_rotation_is_per_provider_and_forgotten_with_it():
    one, two = provider(1, keys=2), provider(2, keys=2)
    ledger, rotation = Ledger(), Rotation()

    assert picks(rotation, ledger, one, 1) == [101]
    assert picks(rotation, ledger, two, 1) == [201]
    assert picks(rotation, ledger, one, 1) == [102]
    rotation.forget_provider(1)
    assert picks(rotation, ledger, one, 1) == [101]
