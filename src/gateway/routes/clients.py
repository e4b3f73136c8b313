"""Named clients under ``/api/admin/clients`` (SPEC §14), behind the admin token.

A client's token is drawn here, at request time (``fk-`` + ``secrets.token_urlsafe`` of
``TOKEN_BYTES``), answered once by ``POST`` and never again: D1 keeps its SHA-256 and a hint
(``core/clients.py``). Every write drops the isolate's snapshot, so this isolate honours a
revocation, a disable or a new allow-list at once; other isolates within the snapshot's age.
``rpm`` is stored and shown; it is enforced once the rate limiter lands (issue 11).
"""

from __future__ import annotations

import secrets
from typing import Any

from gateway import isolate
from gateway.answers import json_response
from gateway.call import Call
from gateway.core.clients import TOKEN_PREFIX, Client, token_hash
from gateway.core.credentials import default_client_enabled
from gateway.core.tokens import hint
from gateway.errors import NotFoundError
from gateway.serving.auth import admin_config
from gateway.serving.body import ADMIN_BODY_LIMIT, read_json, set_fields, validate
from gateway.shell import d1
from gateway.shell.http import JsResponse
from gateway.wire.admin import MAX_ID, ClientCreate, ClientUpdate

__all__ = ["TOKEN_BYTES", "client_json", "create_client", "delete_client", "list_clients", "update_client"]

# 32 random bytes: 256 bits, SPEC §14's floor.
TOKEN_BYTES = 32
# Fields that may be set to null (no limit; stream_rescue: follow the setting, SPEC §16); name and
# enabled may not.
_NULLABLE = frozenset({"rpm", "models", "stream_rescue"})


def client_json(client: Client) -> dict[str, Any]:
    """The wire ``Client``: never the token, nor its hash."""
    return {
        "id": client.id,
        "name": client.name,
        "token_hint": client.token_hint,
        "rpm": client.rpm,
        "models": None if client.models is None else list(client.models),
        "enabled": client.enabled,
        "stream_rescue": client.stream_rescue,
        "created_at": client.created_at,
    }


def _client_id(params: dict[str, str]) -> int:
    client_id = int(params["id"])
    if client_id > MAX_ID:  # no such row, and D1 could not even bind it
        raise NotFoundError(f"No client with id {params['id']}.")
    return client_id


async def list_clients(call: Call) -> JsResponse:
    """``{"clients": [Client], "default_client": {"enabled": bool}}``: ``enabled`` is false while
    the API token is unusable (``core.credentials``), when /v1 serves named clients only and the
    page says so (SPEC §14)."""
    config = await admin_config(call)
    clients = await d1.load_clients(call.env.DB)
    return json_response(
        {
            "clients": [client_json(c) for c in clients],
            "default_client": {"enabled": default_client_enabled(config.api_token)},
        }
    )


async def create_client(call: Call) -> JsResponse:
    """201 ``{"client": Client, "token": ...}``: the only answer that ever holds the token."""
    await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(ClientCreate, data)
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    client = await d1.insert_client(call.env.DB, body.model_dump(), token_hash(token), hint(token), isolate.now_ms())
    isolate.current().configs.invalidate()
    return json_response({"client": client_json(client), "token": token}, status=201)


async def update_client(call: Call) -> JsResponse:
    await admin_config(call)
    _, data = await read_json(call.request, ADMIN_BODY_LIMIT)
    body = validate(ClientUpdate, data)
    fields = set_fields(body, _NULLABLE)
    client_id = _client_id(call.params)
    client = await d1.update_client(call.env.DB, client_id, fields, isolate.now_ms())
    if client is None:
        raise NotFoundError(f"No client with id {client_id}.")
    isolate.current().configs.invalidate()
    return json_response({"client": client_json(client)})


async def delete_client(call: Call) -> JsResponse:
    await admin_config(call)
    client_id = _client_id(call.params)
    if not await d1.delete_client(call.env.DB, client_id):
        raise NotFoundError(f"No client with id {client_id}.")
    isolate.current().configs.invalidate()
    return json_response({"deleted": client_id})
