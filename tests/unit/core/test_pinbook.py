"""core/pinbook.py: the isolate's pins merged with a snapshot's D1 rows (SPEC §15); and
core/pinning.with_provider_member, the splice of the pin into a forwarded body."""

from __future__ import annotations

import json

import pytest

from gateway.core import rules
from gateway.core.endpoint_scores import Ranked
from gateway.core.pinbook import PinBook, merge_pin
from gateway.core.pinning import Pin, provider_field, with_provider_member

T0 = 1_800_000_000_000
A = Ranked("a", 10.0, 1e-6, 2e-6, 1e-7, True, 50.0)
B = Ranked("b", 5.0, 1e-6, 2e-6, 1e-7, False, 50.0)


def test_a_model_first_seen_in_d1_is_taken_as_stored():
    book = PinBook()
    stored = Pin("m", (A, B), T0, "a", T0 + 1000)

    book.merge_stored([stored])

    assert book.get("m") == stored
    assert book.written("m") == T0 + 1000


def test_the_same_lock_keeps_the_later_end_and_the_isolates_fault_count():
    local = Pin("m", (A,), T0, "a", T0 + 9000, failures=2)
    stored = Pin("m", (A,), T0, "a", T0 + 5000, failures=0, switches=1)

    merged = merge_pin(local, stored)

    assert (merged.lock_until_ms, merged.failures, merged.switches) == (T0 + 9000, 2, 1)


def test_newer_candidates_win_whichever_side_holds_them():
    local = Pin("m", (A,), T0, "a", T0 + 9000)
    stored = Pin("m", (B, A), T0 + 60_000, "a", T0 + 5000)

    assert merge_pin(local, stored).candidates == (B, A)
    assert merge_pin(stored, local).candidates == (B, A)


def test_a_lock_another_isolate_took_or_moved_wins_unless_ours_moved_more():
    ours = Pin("m", (A, B), T0, "a", T0 + 9000)
    theirs = Pin("m", (A, B), T0, "b", T0 + 5000, switches=1)

    assert merge_pin(ours, theirs).lock_slug == "b"
    assert merge_pin(Pin("m", (A, B), T0, "a", T0 + 9000, switches=2), theirs).lock_slug == "a"


def test_a_failed_scoring_is_not_retried_for_a_while():
    book = PinBook()
    book.note_scoring_failed("m", T0)

    assert book.scoring_failed("m", T0 + 1)
    assert not book.scoring_failed("m", T0 + rules.OPENROUTER_CANDIDATES_FRESH_MS)
    assert not book.scoring_failed("other", T0)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model":"m","messages":[]}',
        b'  \n{ "model" : "m" }',
        b"{}",
        b'{"messages":[{"content":"{not a brace}"}]}',
    ],
)
def test_the_pin_is_spliced_in_and_the_rest_is_forwarded_as_sent(raw):
    spliced = with_provider_member(raw, provider_field("a"))

    assert json.loads(spliced) == {"provider": {"order": ["a"], "allow_fallbacks": False}, **json.loads(raw)}
    assert spliced.endswith(raw[raw.index(b"{") + 1 :])


def test_a_row_without_a_lock_never_takes_the_isolates_away():
    local = Pin("m", (A, B), T0, "a", T0 + 9000)
    stored = Pin("m", (A, B), T0)  # the lock's write is still on its way

    assert merge_pin(local, stored).lock_slug == "a"
