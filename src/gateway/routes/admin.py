"""The admin JSON API under ``/api/admin`` (SPEC §8.2), behind the admin token.

Reads go to D1 directly (the admin sees what is stored, not a snapshot); every write
invalidates the isolate's configuration snapshot. A provider's ``base_url`` may not be this
gateway's own origin (it would loop, ``core/hop.py``); a setting is named by its D1 key or its env
var and must be valid for its kind (an integer in its range; ``model_aliases``: an alias table,
``core/aliases.py``); a new token must be usable (``core/credentials.py``).
"""

from __future__ import annotations

from typing import Any

from gateway import isolate
from gateway.core.config import SETTINGS, SETTINGS_BY_KEY, SETTINGS_BY_NAME, Config, Provider
from gateway.core.credentials import MIN_TOKEN_LENGTH, token_problem
from gateway.core.hop import same_origin
from gateway.core.tokens import hint, token_matches
from gateway.errors import CryptoError, InvalidRequestError, NotFoundError
from gateway.responses import json_response
from gateway.routes import Call
from gateway.routes.auth import require_admin
from gateway.routes.body import read_json, validate
from gateway.shell import crypto, d1
from gateway.shell.http import JsResponse
from gateway.wire.admin import MAX_ID, ProviderCreate, ProviderUpdate, TokensUpdate

__all__ = [
    "admin_config",
    "create_provider",
    "delete_provider",
    "get_settings",
    "list_providers",
    "put_settings",
    "put_tokens",
    "update_provider",
]

# Admin bodies are small; this bound is independent of the chat body limit.
ADMIN_BODY_LIMIT = 64 * 1024
# Fields of ProviderUpdate that may be set to null (timeout: back to the default; key: keep).
_NULLABLE = {"timeout_ms", "api_key"}


async def admin_config(call: Call) -> Config:
    """The configuration, once the caller proved to be the admin."""
    config = await isolate.load_config(call.env)
    require_admin(call.request, config)
    return config


def _provider_json(provider: Provider, plain_key: str | None) -> dict[str, Any]:
    return {
        "id": provider.id,
        "name": provider.name,
        "platform": provider.platform,
        "base_url": provider.base_url,
        "key_hint": hint(plain_key),
        "key_error": plain_key is None,
        "models": list(provider.models),
        "priority": provider.priority,
        "timeout_ms": provider.timeout_ms,
        "enabled": provider.enabled,
        "created_at": provider.created_at,
        "updated_at": provider.updated_at,
    }


async def _plain_key(provider: Provider, key_hex: str | None) -> str | None:
    try:
        return await crypto.open_sealed(provider.sealed_key, key_hex)
    except CryptoError:
        return None


def _provider_id(params: dict[str, str]) -> int:
    provider_id = int(params["id"])
    if provider_id > MAX_ID:  # no such row, and D1 could not even bind it
        raise NotFoundError(f"No provider with id {params['id']}.")
    return provider_id


def _refuse_own_origin(call: Call, base_url: str | None) -> None:
    if base_url is not None and same_origin(base_url, call.request.url):
        raise InvalidRequestError(
            "Invalid value for 'base_url': it is this gateway's own address, so every request sent "
            "to it would come back here. Use the upstream platform's URL.",
            param="base_url",
        )


def _changed(provider_id: int | None = None) -> None:
    """An admin write: drop the snapshot, and a touched provider's cooldowns and speed memory."""
    state = isolate.current()
    state.configs.invalidate()
    if provider_id is not None:
        state.router.forget_provider(provider_id, isolate.now_ms())


async def list_providers(call: Call) -> JsResponse:
    config = await admin_config(call)
    providers = await d1.load_providers(call.env.DB)
    listed = [_provider_json(p, await _plain_key(p, config.encryption_key)) for p in providers]
    return json_response({"providers": listed})


async def create_provider(call: Call) -> JsResponse:
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(ProviderCreate, data)
    _refuse_own_origin(call, body.base_url)
    columns = body.model_dump(exclude={"api_key"})
    columns |= d1.key_columns(await crypto.seal(body.api_key, config.encryption_key))
    provider_id = await d1.insert_provider(call.env.DB, columns, isolate.now_ms())
    _changed()
    provider = await d1.get_provider(call.env.DB, provider_id)
    return json_response({"provider": _provider_json(provider, body.api_key)}, status=201)


async def update_provider(call: Call) -> JsResponse:
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(ProviderUpdate, data)
    fields = body.model_dump(include=body.model_fields_set)
    for name, value in fields.items():
        if value is None and name not in _NULLABLE:
            raise InvalidRequestError(f"Invalid value for '{name}': must not be null", param=name)
    _refuse_own_origin(call, fields.get("base_url"))
    api_key = fields.pop("api_key", None)
    if api_key:
        fields |= d1.key_columns(await crypto.seal(api_key, config.encryption_key))
    provider_id = _provider_id(call.params)
    if not await d1.update_provider(call.env.DB, provider_id, fields, isolate.now_ms()):
        raise NotFoundError(f"No provider with id {provider_id}.")
    _changed(provider_id)
    provider = await d1.get_provider(call.env.DB, provider_id)
    plain = api_key or await _plain_key(provider, config.encryption_key)
    return json_response({"provider": _provider_json(provider, plain)})


async def delete_provider(call: Call) -> JsResponse:
    await admin_config(call)
    provider_id = _provider_id(call.params)
    if not await d1.delete_provider(call.env.DB, provider_id):
        raise NotFoundError(f"No provider with id {provider_id}.")
    _changed(provider_id)
    return json_response({"deleted": provider_id})


def _settings_json(config: Config) -> dict[str, Any]:
    values = config.setting_values
    return {
        "settings": {
            key: {"value": SETTINGS_BY_KEY[key].to_json(v.value), "source": v.source}  # type: ignore[arg-type]
            for key, v in values.items()
        }
    }


async def get_settings(call: Call) -> JsResponse:
    config = await admin_config(call)
    return json_response(_settings_json(config))


async def put_settings(call: Call) -> JsResponse:
    await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    if not isinstance(data, dict):
        raise InvalidRequestError("The request body must be a JSON object.", param="body")
    parsed: dict[str, Any] = {}
    for name, value in data.items():
        setting = SETTINGS_BY_NAME.get(name)
        if setting is None:
            known = ", ".join(f"{s.key} ({s.env})" for s in SETTINGS)
            raise InvalidRequestError(f"Unknown setting '{name}'. The settings are: {known}.", param=name)
        if setting.key in parsed:
            raise InvalidRequestError(
                f"The setting '{setting.key}' is given twice (as {setting.key} and {setting.env}).",
                param=name,
            )
        parsed[setting.key] = None if value is None else setting.accept(value)
        if value is not None and parsed[setting.key] is None:
            raise InvalidRequestError(f"Invalid value for '{name}': {setting.refusal(value)}.", param=name)
    for key, value in parsed.items():
        if value is None:
            await d1.delete_setting(call.env.DB, key)
        else:
            await d1.put_setting(call.env.DB, key, SETTINGS_BY_KEY[key].to_row(value))
    _changed()
    return json_response(_settings_json(await isolate.load_config(call.env)))


async def put_tokens(call: Call) -> JsResponse:
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(TokensUpdate, data)
    for field, value in (("api_token", body.api_token), ("admin_token", body.admin_token)):
        problem = None if value is None else token_problem(value)
        if problem is not None:
            raise InvalidRequestError(
                f"Invalid value for '{field}': the new token {problem}; use a random secret of "
                f"{MIN_TOKEN_LENGTH}+ characters.",
                param=field,
            )
    api_token = body.api_token or config.api_token
    admin_token = body.admin_token or config.admin_token
    if token_matches(api_token, admin_token):
        raise InvalidRequestError("The API token and the admin token must differ.", param="api_token")
    for key, value in (("api_token", body.api_token), ("admin_token", body.admin_token)):
        if value is not None:
            await d1.put_setting(call.env.DB, key, value)
    _changed()
    return json_response({"api_token_hint": hint(api_token), "admin_token_hint": hint(admin_token)})
