"""The admin JSON API under ``/api/admin`` (SPEC §8.2), behind the admin token.

Reads go to D1 directly (the admin sees what is stored, not a snapshot); every write
invalidates the isolate's configuration snapshot. A provider's ``base_url`` may not lead back to
this gateway in any spelling of its address (it would loop, ``core/hop.py``); a provider's name is
unique whatever its case (``migrations/0007``: "Groq" and "groq" are one name, 409 as an exact
repeat is); a setting is named by its D1 key or its env var and must be valid for its kind (an
integer in its range, given as a JSON number; ``model_aliases``: an alias table,
``core/aliases.py``); a new token must be usable (``core/credentials.py``).

A provider holds one or more keys (SPEC §13): created with ``api_key`` or ``api_keys``, added,
enabled/disabled and deleted one by one under ``/providers/{id}/keys``; ``PUT /providers/{id}``
with ``api_key`` replaces them all by that one. An answer names a key by its id and hint, never
its text. Every key write drops the snapshot and that key's cooldowns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gateway import isolate
from gateway.answers import json_response
from gateway.call import Call
from gateway.core.capabilities import LISTED_FIELDS, facts_json, facts_sources, learned_window
from gateway.core.config import Config
from gateway.core.credentials import MIN_TOKEN_LENGTH, token_problem
from gateway.core.hop import own_address_refusal
from gateway.core.providers import Provider, ProviderKey, SealedKey
from gateway.core.settings import SETTINGS, SETTINGS_BY_KEY, SETTINGS_BY_NAME, ChoiceSetting, Setting, SettingValue
from gateway.core.tokens import hint, token_matches
from gateway.errors import ConflictError, CryptoError, InvalidRequestError, NotFoundError, StorageError
from gateway.serving.auth import admin_config
from gateway.serving.body import ADMIN_BODY_LIMIT, read_json, set_fields, validate
from gateway.shell import crypto, d1
from gateway.shell.http import JsResponse
from gateway.wire.admin import (
    MAX_ID,
    MAX_KEYS,
    KeyCreate,
    KeyUpdate,
    ProviderCreate,
    ProviderUpdate,
    TokensUpdate,
)

__all__ = [
    "add_key",
    "create_provider",
    "delete_key",
    "delete_provider",
    "get_settings",
    "list_providers",
    "put_settings",
    "put_tokens",
    "update_key",
    "update_provider",
]

# Fields of ProviderUpdate that may be set to null (timeout: back to the default; key: keep).
_NULLABLE = frozenset({"timeout_ms", "api_key", "caps"})


def _key_json(provider: Provider, key: ProviderKey, plain: str | None, now_ms: int) -> dict[str, Any]:
    """A key's hint and state, and what it sent each model it has a free-tier cap for (SPEC §19):
    this isolate's counts in the UTC minute and day against its caps."""
    router = isolate.current().router
    usage = []
    for model in provider.models:
        caps = router.free_tier.caps(key.id, model, provider.facts_of(model))
        if not caps.capped:
            continue
        count = router.free_tier.usage(key.id, model, now_ms)
        usage.append(
            {
                "model": model,
                "minute": count.minute_requests,
                "day": count.day_requests,
                "minute_tokens": count.minute_tokens,
                "rpm": caps.rpm,
                "rpd": caps.rpd,
                "tpm": caps.tpm,
            }
        )
    return {
        "id": key.id,
        "hint": hint(plain),
        "enabled": key.enabled,
        "key_error": plain is None,
        "cooling_until_ms": router.ledger.key_cooling_until(key.id, now_ms),
        "caps": usage,
    }


def _capabilities_json(provider: Provider) -> dict[str, Any]:
    """Each model's facts as routing uses them, and where each came from (SPEC §19)."""
    windows = isolate.current().router.windows
    shown: dict[str, Any] = {}
    for model in provider.models:
        facts, sources = facts_sources(provider, model, learned_window(provider, model, windows))
        shown[model] = {**facts_json(facts), "sources": sources}
    return shown


def _provider_json(provider: Provider, plains: Mapping[int, str | None]) -> dict[str, Any]:
    """The wire ``Provider``: ``keys`` lists every key (hint, state, this isolate's cooldown end);
    ``key_hint`` and ``key_error`` are the first key's (SPEC §13)."""
    now_ms = isolate.now_ms()
    keys = [_key_json(provider, k, plains.get(k.id), now_ms) for k in provider.keys]
    first = keys[0] if keys else {"hint": None, "key_error": True}
    return {
        "id": provider.id,
        "name": provider.name,
        "platform": provider.platform,
        "base_url": provider.base_url,
        "key_hint": first["hint"],
        "key_error": first["key_error"],
        "keys": keys,
        "models": _model_entries(provider),
        "kinds": {model: provider.kind_of(model) for model in provider.models},
        "caps": facts_json(provider.caps) or None,
        "capabilities": _capabilities_json(provider),
        "priority": provider.priority,
        "timeout_ms": provider.timeout_ms,
        "enabled": provider.enabled,
        "created_at": provider.created_at,
        "updated_at": provider.updated_at,
    }


def _model_entry(provider: Provider, model: str, kinds: Mapping[str, str]) -> str | dict[str, Any]:
    entry: dict[str, Any] = {"id": model}
    if model in kinds:
        entry["kind"] = kinds[model]
    if model in provider.declared:
        entry.update(facts_json(provider.declared[model]))
    if model in provider.listed:
        entry["listed"] = facts_json(provider.listed[model], LISTED_FIELDS)
    return entry if len(entry) > 1 else model


def _model_entries(provider: Provider) -> list[str | dict[str, Any]]:
    """The provider's models as they were given (SPEC §12.6, §19): an id, or ``{"id", …}`` with
    the kind, facts and listing that were set; what a ``PUT`` of them keeps as it is."""
    kinds = dict(provider.kinds)
    return [_model_entry(provider, model, kinds) for model in provider.models]


async def _plain_keys(config: Config, keys: Iterable[ProviderKey]) -> dict[int, str | None]:
    """Each key's plain text (None: it cannot be decrypted), for hints and the duplicate check
    only; decrypted once and remembered in the snapshot's ``key_memo`` (``core/keyring.py``:
    about 0.3 ms of CPU per key, and a listing shows every key of every provider)."""

    async def opener(sealed: SealedKey) -> str | None:
        try:
            return await crypto.open_sealed(sealed, config.encryption_key)
        except CryptoError:
            return None

    return await config.key_memo.open(keys, opener)


def _provider_id(params: dict[str, str]) -> int:
    provider_id = int(params["id"])
    if provider_id > MAX_ID:  # no such row, and D1 could not even bind it
        raise NotFoundError(f"No provider with id {params['id']}.")
    return provider_id


def _key_id(params: dict[str, str]) -> int:
    key_id = int(params["key_id"])
    if key_id > MAX_ID:
        raise NotFoundError(f"No key with id {params['key_id']}.")
    return key_id


def _refuse_own_address(call: Call, base_url: str | None) -> None:
    """400 for a ``base_url`` that leads back here in any spelling (``core/hop.py``)."""
    problem = None if base_url is None else own_address_refusal(base_url, call.request.url)
    if problem is not None:
        raise InvalidRequestError(
            f"Invalid value for 'base_url': {problem}. Use the upstream platform's URL.", param="base_url"
        )


def _changed(provider_id: int | None = None) -> None:
    """An admin write: drop the snapshot, and a touched provider's cooldowns and speed memory."""
    state = isolate.current()
    state.configs.invalidate()
    if provider_id is not None:
        state.router.forget_provider(provider_id, isolate.now_ms())


def _key_changed(key_id: int) -> None:
    """A key write: drop the snapshot and that key's cooldowns, ladder and probe state."""
    state = isolate.current()
    state.configs.invalidate()
    state.router.forget_key(key_id, isolate.now_ms())


async def list_providers(call: Call) -> JsResponse:
    config = await admin_config(call)
    try:
        providers = list(await d1.load_providers(call.env.DB))
    except StorageError:
        providers = list(config.providers)  # D1 fails: what this isolate serves (status says so)
    listed = [_provider_json(p, await _plain_keys(config, p.keys)) for p in providers]
    return json_response({"providers": listed})


async def create_provider(call: Call) -> JsResponse:
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(ProviderCreate, data)
    keys = body.keys
    if keys is None:
        raise InvalidRequestError(
            "Give exactly one of 'api_key' (one key) or 'api_keys' (a list of keys).", param="api_key"
        )
    _refuse_own_address(call, body.base_url)
    columns = body.model_dump(exclude={"api_key", "api_keys"})
    sealed = [await crypto.seal(key, config.encryption_key) for key in keys]
    provider_id = await d1.insert_provider(call.env.DB, columns, sealed, isolate.now_ms())
    _changed()
    provider = await _stored_provider(call, provider_id)
    for key, plain in zip(provider.keys, keys, strict=False):
        config.key_memo.remember(key, plain)  # the next snapshot inherits it: no decrypt
    plains = dict(zip((k.id for k in provider.keys), keys, strict=False))
    return json_response({"provider": _provider_json(provider, plains)}, status=201)


async def _stored_provider(call: Call, provider_id: int) -> Provider:
    provider = await d1.get_provider(call.env.DB, provider_id)
    if provider is None:
        raise NotFoundError(f"No provider with id {provider_id}.")
    return provider


async def update_provider(call: Call) -> JsResponse:
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(ProviderUpdate, data)
    fields = set_fields(body, _NULLABLE)
    _refuse_own_address(call, fields.get("base_url"))
    api_key = fields.pop("api_key", None)
    sealed = await crypto.seal(api_key, config.encryption_key) if api_key else None
    provider_id = _provider_id(call.params)
    if not await d1.update_provider(call.env.DB, provider_id, fields, isolate.now_ms(), sealed):
        raise NotFoundError(f"No provider with id {provider_id}.")
    _changed(provider_id)
    provider = await _stored_provider(call, provider_id)
    if api_key and len(provider.keys) == 1:  # the one key that replaced them all
        config.key_memo.remember(provider.keys[0], api_key)
    plains = await _plain_keys(config, provider.keys)
    return json_response({"provider": _provider_json(provider, plains)})


async def delete_provider(call: Call) -> JsResponse:
    await admin_config(call)
    provider_id = _provider_id(call.params)
    if not await d1.delete_provider(call.env.DB, provider_id):
        raise NotFoundError(f"No provider with id {provider_id}.")
    _changed(provider_id)
    return json_response({"deleted": provider_id})


# --- Keys of a provider (SPEC §13) ----------------------------------------------------------


def _key_answer(key_id: int, plain: str | None, enabled: bool) -> dict[str, Any]:
    return {"key": {"id": key_id, "hint": hint(plain), "enabled": enabled}}


async def add_key(call: Call) -> JsResponse:
    """One more key for a provider: 201 ``{"key": {id, hint, enabled}}``; 404 for an unknown
    provider, 409 for a key it already holds or beyond ``MAX_KEYS``."""
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(KeyCreate, data)
    provider = await _stored_provider(call, _provider_id(call.params))
    if len(provider.keys) >= MAX_KEYS:
        raise ConflictError(f"A provider holds at most {MAX_KEYS} keys.", param="api_key")
    plains = await _plain_keys(config, provider.keys)  # remembered ones are not decrypted again
    if body.api_key in plains.values():
        raise ConflictError("This provider already holds this key.", param="api_key")
    sealed = await crypto.seal(body.api_key, config.encryption_key)
    key_id = await d1.insert_key(call.env.DB, provider.id, sealed, isolate.now_ms())
    if key_id is None:  # deleted meanwhile
        raise NotFoundError(f"No provider with id {provider.id}.")
    isolate.current().configs.invalidate()
    config.key_memo.remember(ProviderKey(key_id, sealed), body.api_key)
    return json_response(_key_answer(key_id, body.api_key, True), status=201)


async def update_key(call: Call) -> JsResponse:
    """Enable or disable one key: ``{"key": {id, hint, enabled}}``, 404 when the provider has no
    such key. Disabling a provider's last enabled key is allowed: the provider then serves
    nothing (it is left out of every chain) until a key is enabled or added."""
    config = await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(KeyUpdate, data)
    provider_id, key_id = _provider_id(call.params), _key_id(call.params)
    if not await d1.set_key_enabled(call.env.DB, provider_id, key_id, body.enabled, isolate.now_ms()):
        raise NotFoundError(f"Provider {provider_id} has no key with id {key_id}.")
    _key_changed(key_id)
    provider = await _stored_provider(call, provider_id)
    key = next(k for k in provider.keys if k.id == key_id)
    plains = await _plain_keys(config, [key])
    return json_response(_key_answer(key_id, plains[key_id], key.enabled))


async def delete_key(call: Call) -> JsResponse:
    """Delete one key: ``{"deleted": key_id}``; 404 when the provider has no such key, 409 for
    its last key (delete the provider instead)."""
    await admin_config(call)
    provider_id, key_id = _provider_id(call.params), _key_id(call.params)
    if not await d1.delete_key(call.env.DB, provider_id, key_id, isolate.now_ms()):
        provider = await _stored_provider(call, provider_id)
        if any(k.id == key_id for k in provider.keys):
            raise ConflictError(
                "This is the provider's last key: add another first, or delete the provider.",
                param="key_id",
            )
        raise NotFoundError(f"Provider {provider_id} has no key with id {key_id}.")
    _key_changed(key_id)
    return json_response({"deleted": key_id})


def _setting_json(key: str, value: SettingValue) -> dict[str, Any]:
    """A setting's effective value and its source; an integer's bounds too (the page checks a
    value in its own unit before sending it), a choice's names."""
    setting = SETTINGS_BY_KEY[key]
    shown: dict[str, Any] = {"value": setting.to_json(value.value), "source": value.source}  # type: ignore[arg-type]
    if isinstance(setting, Setting):
        shown["minimum"], shown["maximum"] = setting.bounds
    elif isinstance(setting, ChoiceSetting):
        shown["choices"] = list(setting.choices)
    return shown


def _settings_json(config: Config) -> dict[str, Any]:
    return {"settings": {key: _setting_json(key, v) for key, v in config.setting_values.items()}}


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
        if value is None:
            parsed[setting.key] = 0 if setting.null_is_off else None
            continue
        parsed[setting.key] = setting.accept(value)
        if parsed[setting.key] is None:
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
