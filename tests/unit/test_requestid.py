"""``gateway/requestid.py``: an id per routed answer, ``<isolate>-<n>``, whose isolate part is
drawn on the first id, never at import (the deploy snapshot forbids entropy)."""

from __future__ import annotations

import importlib
import re
import secrets
from collections.abc import Iterator
from types import ModuleType

import pytest

import gateway.requestid


@pytest.fixture
def fresh(monkeypatch) -> Iterator[tuple[ModuleType, list[int]]]:
    """The module imported anew, and the sizes of the draws it makes."""
    draws: list[int] = []

    def token_hex(size: int) -> str:
        draws.append(size)
        return "a1b2c3"

    monkeypatch.setattr(secrets, "token_hex", token_hex)
    yield importlib.reload(gateway.requestid), draws
    importlib.reload(gateway.requestid)


def test_nothing_is_drawn_at_import(fresh):
    _, draws = fresh

    assert draws == []


def test_ids_share_the_isolate_part_and_count_up(fresh):
    requestid, draws = fresh

    ids = [requestid.next_request_id() for _ in range(3)]

    assert ids == ["a1b2c3-1", "a1b2c3-2", "a1b2c3-3"]
    assert len(draws) == 1  # drawn once, on the first id


def test_an_id_is_one_token_the_dev_log_can_read():
    # scripts/runtime/logline.mjs reads the id at the end of the Worker's warning as \S+.
    assert re.fullmatch(r"[0-9a-f]+-[0-9]+", gateway.requestid.next_request_id())
