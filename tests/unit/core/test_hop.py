"""The loop guard's ``X-Fllmapi-Hop`` (issue 8): reading it, refusing a loop, marking a forward,
and the admin API's own-address check."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.hop import Hops, forward_value, loop_refusal, own_address_refusal, read_hops

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


DEV = "http://127.0.0.1:8787/api/admin/providers"  # the gateway on the developer's machine
DEPLOYED = "https://gw.example.com/api/admin/providers"


@pytest.mark.parametrize(
    ("base_url", "own_url", "says"),
    [
        # On the developer's machine: its own port, in every loopback spelling.
        pytest.param("http://127.0.0.1:8787/v1", DEV, "own address", id="dev-same"),
        pytest.param("http://localhost:8787/v1", DEV, "own address", id="dev-localhost"),
        pytest.param("http://127.1:8787", DEV, "own address", id="dev-127.1"),
        pytest.param("http://[::1]:8787/v1", DEV, "own address", id="dev-ipv6"),
        pytest.param("http://0.0.0.0:8787/v1", DEV, "own address", id="dev-unspecified"),
        pytest.param("http://2130706433:8787/v1", DEV, "own address", id="dev-decimal"),
        pytest.param("https://127.0.0.1:8787/v1", DEV, "own address", id="dev-other-scheme-same-port"),
        pytest.param("http://localhost:8787/v1", "http://localhost:8787/x", "own address", id="dev-by-name"),
        pytest.param("http://127.0.0.1:9000/v1", DEV, None, id="dev-another-local-server"),
        pytest.param("http://localhost:11434/v1", DEV, None, id="dev-local-model-server"),
        pytest.param("https://api.groq.com/openai/v1", DEV, None, id="dev-real-upstream"),
        # Deployed: no loopback spelling, and its own host on any port or scheme.
        pytest.param("http://127.0.0.1:9000/v1", DEPLOYED, "loopback", id="deployed-127.0.0.1"),
        pytest.param("http://127.1/v1", DEPLOYED, "loopback", id="deployed-127.1"),
        pytest.param("http://0x7f000001/v1", DEPLOYED, "loopback", id="deployed-hex"),
        pytest.param("http://0177.0.0.1/v1", DEPLOYED, "loopback", id="deployed-octal"),
        pytest.param("http://[::ffff:127.0.0.1]/v1", DEPLOYED, "loopback", id="deployed-v4-mapped"),
        pytest.param("http://[::]/v1", DEPLOYED, "loopback", id="deployed-ipv6-unspecified"),
        pytest.param("http://app.localhost/v1", DEPLOYED, "loopback", id="deployed-localhost-subdomain"),
        pytest.param("https://gw.example.com/v1", DEPLOYED, "own address", id="deployed-same"),
        pytest.param("https://GW.Example.COM.:443/v1", DEPLOYED, "own address", id="deployed-case-dot-port"),
        pytest.param("http://gw.example.com:8080/v1", DEPLOYED, "own address", id="deployed-other-port"),
        pytest.param("https://gw%2Eexample%2Ecom/v1", DEPLOYED, "own address", id="deployed-percent-encoded"),
        pytest.param("https://api.groq.com/openai/v1", DEPLOYED, None, id="deployed-real-upstream"),
        pytest.param("https://other.example.com/v1", DEPLOYED, None, id="deployed-sibling-host"),
        # Not a URL fetch takes.
        pytest.param("http://127.0.0.1:99999/v1", DEV, "not a URL", id="bad-port"),
        pytest.param("http://127.0.0.256/v1", DEPLOYED, "not a URL", id="bad-ipv4"),
    ],
)  # fmt: skip
def test_own_address_refusal(base_url, own_url, says):
    refusal = own_address_refusal(base_url, own_url)

    if says is None:
        assert refusal is None
    else:
        assert refusal is not None and says in refusal
