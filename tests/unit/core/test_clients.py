"""core/clients.py: token hashing and lookup, the model allow-list (SPEC §14)."""

from __future__ import annotations

import hashlib

import pytest

from gateway.core.chain import build_chain
from gateway.core.clients import (
    Caller,
    Client,
    clients_by_hash,
    find_client,
    model_refused,
    restrict_catalog,
    restrict_providers,
    token_hash,
)
from gateway.core.config import build_config
from gateway.core.state import RouterState
from support.factories import T0, provider

TOKEN = "fk-" + "a" * 43


def client(id_: int = 1, token: str = TOKEN, *, enabled: bool = True, models=None, stream_rescue=None) -> Client:
    return Client(id_, f"c{id_}", token_hash(token), "fk-a...aaaa", None, models, enabled, 0, 0, stream_rescue)


def test_the_hash_is_hex_sha256_of_the_text():
    assert token_hash(TOKEN) == hashlib.sha256(TOKEN.encode()).hexdigest()
    assert TOKEN not in token_hash(TOKEN)


@pytest.mark.parametrize(
    ("presented", "found"),
    [
        pytest.param(TOKEN, 1, id="its-token"),
        pytest.param(TOKEN + "x", None, id="longer"),
        pytest.param(TOKEN[:-1], None, id="shorter"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="missing"),
        pytest.param("fk-other", 2, id="another-client"),
    ],
)
def test_find_client(presented, found):
    table = clients_by_hash([client(1), client(2, "fk-other")])

    result = find_client(table, presented)

    assert (result.id if result else None) == found


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        pytest.param(Caller(), None, id="api-token"),
        pytest.param(Caller(client=client()), None, id="client-following-the-setting"),
        pytest.param(Caller(client=client(stream_rescue=True)), True, id="client-on"),
        pytest.param(Caller(client=client(stream_rescue=False)), False, id="client-off"),
    ],
)
def test_a_callers_own_stream_rescue_switch(caller, expected):
    # SPEC §16: a client's own switch, None: the setting decides (always, for the API token).
    assert caller.stream_rescue is expected


def test_a_disabled_client_is_not_in_the_table():
    table = clients_by_hash([client(1, enabled=False)])

    assert table == {}
    assert find_client(table, TOKEN) is None


def test_the_snapshot_holds_enabled_clients_by_hash():
    config = build_config([], {}, {}, T0, [client(1), client(2, "fk-x", enabled=False)])

    assert list(config.clients) == [token_hash(TOKEN)]


@pytest.mark.parametrize(
    ("allowed", "model", "auto", "refused"),
    [
        pytest.param(None, "any", False, False, id="no-list"),
        pytest.param(("a",), "a", False, False, id="in-list"),
        pytest.param(("a",), "b", False, True, id="outside"),
        pytest.param(("a",), None, True, False, id="auto"),
    ],
)
def test_model_refused(allowed, model, auto, refused):
    assert model_refused(allowed, model, auto) is refused


def test_restrict_providers_keeps_only_allowed_models():
    providers = [provider(1, models=("a", "b")), provider(2, models=("c",))]

    restricted = restrict_providers(providers, ("b", "c"))

    assert [p.models for p in restricted] == [("b",), ("c",)]
    assert restrict_providers(providers, None) == providers


def test_auto_chain_of_a_restricted_caller_uses_only_allowed_models():
    providers = [provider(1, models=("a", "b")), provider(2, models=("c", "d"))]

    chain = build_chain(restrict_providers(providers, ("b", "d")), None, RouterState(), T0)

    assert [(s.candidate.provider.id, s.candidate.model) for s in chain.steps] == [(1, "b"), (2, "d")]


def test_a_named_model_degrades_only_to_allowed_models():
    providers = [provider(1, models=("a", "b")), provider(2, models=("c",))]

    chain = build_chain(restrict_providers(providers, ("a", "c")), "a", RouterState(), T0)

    assert [s.candidate.model for s in chain.steps] == ["a", "c"]


def test_restrict_catalog():
    catalog = [("a", "p1"), ("b", "p1"), ("c", "p2")]

    assert restrict_catalog(catalog, ("c", "a")) == [("a", "p1"), ("c", "p2")]
    assert restrict_catalog(catalog, None) == catalog


def test_the_default_caller_has_no_list():
    assert Caller().models is None
    assert Caller(client=client(models=("a",))).models == ("a",)
