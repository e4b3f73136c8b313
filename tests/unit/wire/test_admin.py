"""Admin request bodies (SPEC §8.2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.wire.admin import ProviderCreate, ProviderUpdate, TokensUpdate

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


@pytest.mark.parametrize("token", ["short", "x" * 15])
def test_tokens_need_sixteen_characters(token):
    with pytest.raises(ValidationError):
        TokensUpdate.model_validate({"api_token": token})
