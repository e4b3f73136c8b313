"""What the config page's quick add needs (SPEC §8.2, §8.3), behind the admin token.

- ``GET /api/admin/platforms``: the presets, ``{"platforms": [{id, name, base_url, models_url,
  default_models}]}``.
- ``POST /api/admin/models/fetch`` with ``{base_url, api_key}`` or ``{provider_id}`` (a stored
  provider, with its stored key): the platform's ``GET {base_url}/models``, answered as
  ``{"models": [ids, sorted], "facts": {id: {context, vision, tools, json}}}``, ``facts`` holding
  what the listing states of a model (SPEC §19, ``core/modelfacts.listed_facts``), for the page to
  store as the entry's ``listed``. 400 names the invalid field, 404 for an unknown provider, 502
  when the platform fails or answers something that is not an OpenAI model list; the platform's
  text is redacted and the key never appears in an answer.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.answers import json_response
from gateway.call import Call
from gateway.core import rules
from gateway.core.attempt import Defect
from gateway.core.capabilities import LISTED_FIELDS, facts_json
from gateway.core.classify import redact, scrub
from gateway.core.config import Config
from gateway.core.modelfacts import listed_facts
from gateway.errors import NotFoundError, ProviderError
from gateway.presets import PRESETS, Preset
from gateway.serving.auth import admin_config
from gateway.serving.body import ADMIN_BODY_LIMIT, read_json, validate
from gateway.shell import crypto, d1, http
from gateway.shell.http import JsResponse
from gateway.wire.admin import ModelsFetchByProvider, ModelsFetchByUrl

__all__ = ["MODEL_LIST_TIMEOUT_MS", "fetch_models", "list_platforms"]

# To the end of the body: some platforms list hundreds of models with descriptions.
MODEL_LIST_TIMEOUT_MS = 10 * rules.SECOND_MS
# Gemini's OpenAI-compatible list names models "models/<id>"; its chat endpoint takes "<id>".
_RESOURCE_PREFIX = "models/"


def _platform_json(preset: Preset) -> dict[str, Any]:
    return {
        "id": preset.id,
        "name": preset.name,
        "base_url": preset.base_url,
        "models_url": preset.models_url,
        "default_models": list(preset.default_models),
    }


async def list_platforms(call: Call) -> JsResponse:
    await admin_config(call)
    return json_response({"platforms": [_platform_json(p) for p in PRESETS]})


async def _target(call: Call, config: Config, data: Any) -> tuple[str, str]:
    """``(base_url, api_key)`` the list is fetched from: as given, or a stored provider's."""
    if not (isinstance(data, dict) and "provider_id" in data):
        given = validate(ModelsFetchByUrl, data)
        return given.base_url, given.api_key
    provider_id = validate(ModelsFetchByProvider, data).provider_id
    provider = await d1.get_provider(call.env.DB, provider_id)
    if provider is None:
        raise NotFoundError(f"No provider with id {provider_id}.")
    key = provider.default_key
    if key is None:
        raise NotFoundError(f"Provider {provider_id} has no key.")
    return provider.base_url, await crypto.open_sealed(key.sealed, config.encryption_key)


def _failed(url: str, what: str) -> ProviderError:
    return ProviderError(f"Fetching the model list from {url} failed: {what}")


def _model_list(text: str) -> dict[str, Any] | None:
    """The sorted ids of an OpenAI model list ``{"data": [{"id": …}, …]}`` and what it states of
    each; None if it is not one."""
    try:
        listed = json.loads(text).get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(listed, list):
        return None
    facts: dict[str, dict[str, object]] = {}
    ids: set[str] = set()
    for entry in listed:
        model = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(model, str) or not model:
            continue
        model = model.removeprefix(_RESOURCE_PREFIX)
        ids.add(model)
        stated = facts_json(listed_facts(entry), LISTED_FIELDS)
        if stated:
            facts[model] = stated
    return {"models": sorted(ids), "facts": facts}


async def fetch_models(call: Call) -> JsResponse:
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    base_url, api_key = await _target(call, config, data)
    url = f"{base_url}/models"
    headers = {"authorization": f"Bearer {api_key}", "accept": "application/json"}
    answer = await http.send("GET", url, headers, MODEL_LIST_TIMEOUT_MS)
    if isinstance(answer, Defect):
        reason = "no answer in time" if answer is Defect.TIMEOUT else "the platform could not be reached"
        raise _failed(url, reason)
    text = await answer.text()
    answer.disarm()
    if answer.timed_out:
        raise _failed(url, "the answer did not arrive in time")
    if not 200 <= answer.status < 300:
        detail = redact(scrub(text, api_key))
        raise _failed(url, f"the platform answered HTTP {answer.status}" + (f": {detail}" if detail else ""))
    models = _model_list(text)
    if models is None:
        raise _failed(url, f"the answer (HTTP {answer.status}) is not an OpenAI model list")
    return json_response(models)
