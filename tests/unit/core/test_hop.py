"""The loop guard's ``X-Fllmapi-Hop`` (issue 8): reading it, refusing a loop, marking a forward,
and the admin API's own-origin check."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.hop import Hops, forward_value, loop_refusal, read_hops, same_origin

OWN = "0123456789abcdef"
OTHER = "fedcba9876543210"


@pytest.mark.parametrize(
    ("value", "entries"),
    [
        pytest.param(None, (), id="absent"),
        pytest.param("", (), id="empty"),
        pytest.param(OTHER, (OTHER,), id="one"),
        pytest.param(f"{OTHER}, {OWN}", (OTHER, OWN), id="two"),
        pytest.param(f" {OTHER} ,, {OWN} ,", (OTHER, OWN), id="blanks-and-spaces-skipped"),
        pytest.param("a;b, c", ("a;b", "c"), id="odd-entries-kept-as-sent"),
    ],
)
def test_read_hops(value, entries):
    assert read_hops(value) == Hops(entries)


@pytest.mark.parametrize(
    ("entries", "refused"),
    [
        pytest.param((), False, id="no-mark"),
        pytest.param((OTHER,), False, id="another-deployment"),
        pytest.param((OWN,), True, id="own-mark"),
        pytest.param((OTHER, OWN, "x"), True, id="own-mark-anywhere"),
        pytest.param(("a", "b", "c", "d"), False, id="four-hops"),
        pytest.param(("a", "b", "c", "d", "e"), True, id="five-hops"),
        pytest.param(("?",) * 5, True, id="odd-entries-count"),
    ],
)
def test_loop_refusal(entries, refused):
    refusal = loop_refusal(Hops(entries), OWN)

    assert (refusal is not None) is refused
    if refusal:
        assert "X-Fllmapi-Hop" in refusal and "loop" in refusal


def test_the_hop_limit_is_four():
    # The number itself, not rules.MAX_HOPS: changing the limit must change this test.
    assert rules.MAX_HOPS == 4


def test_without_an_own_id_only_the_count_refuses():
    assert loop_refusal(Hops((OWN,)), None) is None
    assert loop_refusal(Hops(("a",) * 5), None) is not None


@pytest.mark.parametrize(
    ("entries", "own", "value"),
    [
        pytest.param((), OWN, OWN, id="first-hop"),
        pytest.param((OTHER,), OWN, f"{OTHER}, {OWN}", id="another-deployment-then-this"),
        pytest.param(("a;b", OTHER, "x" * 65), OWN, f"{OTHER}, {OWN}", id="odd-entries-not-forwarded"),
        pytest.param((OTHER,), None, f"{OTHER}, unknown", id="no-own-id-still-a-hop"),
    ],
)
def test_forward_value(entries, own, value):
    assert forward_value(Hops(entries), own) == value


def test_a_forwarded_mark_is_refused_when_it_comes_back():
    sent = forward_value(read_hops(OTHER), OWN)

    assert loop_refusal(read_hops(sent), OWN) is not None
    assert loop_refusal(read_hops(sent), "1111111111111111") is None


@pytest.mark.parametrize(
    ("url", "other", "same"),
    [
        pytest.param("http://127.0.0.1:8787/v1", "http://127.0.0.1:8787/api/admin/providers", True, id="same"),
        pytest.param("HTTP://LOCALHOST:8787/v1", "http://localhost:8787/x", True, id="case"),
        pytest.param("https://gw.example.workers.dev/v1", "https://gw.example.workers.dev:443/", True,
                     id="default-port"),
        pytest.param("http://localhost:8787/v1", "http://127.0.0.1:8787/x", False, id="other-host-name"),
        pytest.param("http://127.0.0.1:8788/v1", "http://127.0.0.1:8787/x", False, id="other-port"),
        pytest.param("https://127.0.0.1:8787/v1", "http://127.0.0.1:8787/x", False, id="other-scheme"),
        pytest.param("http://127.0.0.1:99999/v1", "http://127.0.0.1:8787/x", False, id="bad-port"),
    ],
)  # fmt: skip
def test_same_origin(url, other, same):
    assert same_origin(url, other) is same
