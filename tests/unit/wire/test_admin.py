"""Admin request bodies (SPEC §8.2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.wire.admin import (
    ClientCreate,
    ClientUpdate,
    KeyUpdate,
    ModelsFetchByProvider,
    ProviderCreate,
    ProviderUpdate,
    TokensUpdate,
)
from gateway.wire.validation import describe

VALID = {"name": "groq", "base_url": "https://api.groq.com/openai/v1/", "api_key": "k", "models": [" a ", "b", "a"]}


def test_provider_defaults_and_normalisation():
    body = ProviderCreate.model_validate(VALID)

    assert body.base_url == "https://api.groq.com/openai/v1"
    assert body.models == ["a", "b"]
    assert (body.platform, body.priority, body.timeout_ms, body.enabled) == ("custom", 100, None, True)


@pytest.mark.parametrize(
    "change",
    [
        {"base_url": "api.groq.com"},
        {"base_url": "https://"},
        {"models": ["ok", " "]},
        {"enabled": "true"},
        {"timeout_ms": -5},
        {"name": ""},
    ],
)
def test_invalid_provider_fields(change):
    with pytest.raises(ValidationError):
        ProviderCreate.model_validate({**VALID, **change})


def test_update_knows_which_fields_were_sent():
    body = ProviderUpdate.model_validate({"timeout_ms": None, "priority": 3})

    assert body.model_fields_set == {"timeout_ms", "priority"}


@pytest.mark.parametrize(
    ("change", "says"),
    [
        pytest.param({"base_url": "http://me:s3cr3t@host/v1"}, "api_key", id="password-in-url"),
        pytest.param({"base_url": "https://s3cr3t@host/v1"}, "api_key", id="user-in-url"),
        pytest.param({"name": "a\r\nX-Injected: 1"}, "control characters", id="crlf-in-name"),
        pytest.param({"name": "a\tb"}, "control characters", id="tab-in-name"),
    ],
)
def test_refused_provider_fields_say_why(change, says):
    with pytest.raises(ValidationError) as raised:
        ProviderCreate.model_validate({**VALID, **change})

    param, message = describe(raised.value)
    assert param == next(iter(change)) and says in message
    assert "s3cr3t" not in message


def test_an_at_sign_in_the_path_is_not_userinfo():
    assert (
        ProviderCreate.model_validate({**VALID, "base_url": "https://host/v1/@scope"}).base_url
        == "https://host/v1/@scope"
    )


def test_a_semicolon_in_a_name_is_allowed():
    # The trail escapes it (core/trail.py); only control characters are refused.
    assert ProviderCreate.model_validate({**VALID, "name": "a;b"}).name == "a;b"


def test_token_length_is_not_judged_here():
    # The route applies core.credentials' rule (placeholder, 16+ characters): one place.
    assert TokensUpdate.model_validate({"api_token": "short"}).api_token == "short"


def test_models_may_set_their_kind():
    body = ProviderCreate.model_validate(
        {**VALID, "models": ["a", {"id": " v ", "kind": "embedding"}, {"id": "a", "kind": "image"}]}
    )

    assert body.models == ["a", {"id": "v", "kind": "embedding"}]


def test_a_model_entry_keeps_its_facts_and_listing_and_drops_nulls():
    entry = {"id": " m ", "context": 8192, "vision": False, "rpm": 30, "tools": None, "listed": {"context": 131072}}
    body = ProviderCreate.model_validate({**VALID, "models": [entry, {"id": "bare"}]})

    assert body.models == [
        {"id": "m", "context": 8192, "vision": False, "rpm": 30, "listed": {"context": 131072}},
        "bare",
    ]


@pytest.mark.parametrize(
    "entry",
    [
        {"id": "v", "kind": "video"},
        {"id": "v", "kind": "chat", "extra": 1},
        {"id": 5, "kind": "chat"},
        5,
        {"id": " ", "kind": "chat"},
        {"kind": "chat"},
        {"id": "v", "context": 0},
        {"id": "v", "context": "8192"},
        {"id": "v", "context": 8192.0},
        {"id": "v", "vision": "yes"},
        {"id": "v", "tools": 1},
        {"id": "v", "rpm": -1},
        {"id": "v", "tpm": True},
        {"id": "v", "listed": {"rpm": 30}},
        {"id": "v", "listed": {"context": "big"}},
        {"id": "v", "listed": []},
    ],
)
def test_a_model_entry_that_is_not_an_id_or_an_entry_of_known_fields_is_refused(entry):
    with pytest.raises(ValidationError) as raised:
        ProviderCreate.model_validate({**VALID, "models": [entry]})

    assert describe(raised.value)[0] == "models"


# Every integer and boolean field of the admin bodies (SPEC §8.2, §13, §14): a number or a boolean
# given as a string, a boolean for a number, a number for a boolean, a whole-valued float: each
# refused like any other wrong type, naming the field.
STRICT_CASES = [
    (ProviderCreate, VALID, "priority", ["5", "1e2", 5.0, True]),
    (ProviderCreate, VALID, "timeout_ms", ["5000", 5000.0, False]),
    (ProviderCreate, VALID, "enabled", ["true", 1, 0, "1"]),
    (ProviderUpdate, {}, "priority", ["5", 5.0]),
    (ProviderUpdate, {}, "timeout_ms", ["5000"]),
    (ProviderUpdate, {}, "enabled", ["false", 0]),
    (KeyUpdate, {}, "enabled", ["true", 1]),
    (ClientCreate, {"name": "c"}, "rpm", ["5", 5.0, True]),
    (ClientUpdate, {}, "rpm", ["5"]),
    (ClientUpdate, {}, "enabled", ["true", 1]),
    (ModelsFetchByProvider, {}, "provider_id", ["1", 1.0]),
]


@pytest.mark.parametrize(
    ("model", "base", "field", "value"),
    [
        pytest.param(model, base, field, value, id=f"{model.__name__}-{field}-{value!r}")
        for model, base, field, values in STRICT_CASES
        for value in values
    ],
)
def test_numbers_and_booleans_are_json_numbers_and_booleans(model, base, field, value):
    with pytest.raises(ValidationError) as caught:
        model.model_validate({**base, field: value})

    assert describe(caught.value)[0] == field


@pytest.mark.parametrize(
    ("caps", "ok"),
    [
        ({"rpm": 30, "rpd": 1000, "tpm": 6000}, True),
        ({"rpm": 30}, True),
        ({}, True),
        ({"rpm": 0}, False),
        ({"rpm": "30"}, False),
        ({"rpm": True}, False),
        ({"context": 8192}, False),  # a window is a model's, not a provider's
    ],
)
def test_a_providers_caps_are_positive_integers_of_rpm_rpd_tpm(caps, ok):
    if ok:
        assert ProviderCreate.model_validate({**VALID, "caps": caps}).caps is not None
        return
    with pytest.raises(ValidationError) as raised:
        ProviderCreate.model_validate({**VALID, "caps": caps})
    assert describe(raised.value)[0].startswith("caps")
