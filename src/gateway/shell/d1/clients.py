"""Named clients (SPEC §14; ``migrations/0003_clients.sql``): a duplicate name becomes
``ConflictError`` (``runner.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.clients import Client
from gateway.shell.d1.columns import column_value, json_or
from gateway.shell.d1.runner import batch, run

__all__ = [
    "CLIENT_COLUMNS",
    "SELECT_CLIENTS",
    "decode_client",
    "delete_client",
    "insert_client",
    "load_clients",
    "update_client",
]

SELECT_CLIENTS = "SELECT * FROM clients ORDER BY id"
# Columns a client write may set.
CLIENT_COLUMNS = ("name", "rpm", "models", "enabled", "stream_rescue")


def _models(text: str) -> tuple[str, ...]:
    """The model list of a row; a row edited by hand into something else serves no model rather
    than breaking every request (the admin listing shows it, empty, to be fixed)."""
    models = json_or(text, ())
    if not isinstance(models, list):
        return ()
    return tuple(m for m in models if isinstance(m, str) and m)


def _client_models(text: str | None) -> tuple[str, ...] | None:
    """A client's allow-list; NULL is every model, and a row edited by hand into something that
    is not a list allows none (failing closed: the listing shows it, empty, to be fixed)."""
    return None if text is None else _models(text)


def decode_client(row: Mapping[str, Any]) -> Client:
    """A ``clients`` row as a ``Client``."""
    return Client(
        id=int(row["id"]),
        name=row["name"],
        token_hash=row["token_hash"],
        token_hint=row["token_hint"],
        rpm=None if row["rpm"] is None else int(row["rpm"]),
        models=_client_models(row["models"]),
        enabled=bool(row["enabled"]),
        created_at=int(row["created_at"]),
        updated_at=int(row["updated_at"]),
        stream_rescue=None if row["stream_rescue"] is None else bool(row["stream_rescue"]),
    )


def _client_values(columns: Mapping[str, Any]) -> list[Any]:
    unknown = set(columns) - set(CLIENT_COLUMNS)
    if unknown:  # column names are spliced into SQL: only the known ones may pass
        raise ValueError(f"not client columns: {sorted(unknown)}")
    return [None if v is None else column_value(v) for v in columns.values()]


async def load_clients(db: Any) -> list[Client]:
    result = await run("read clients", db.prepare(SELECT_CLIENTS), "all")
    return [decode_client(row) for row in result["results"]]


async def insert_client(db: Any, columns: Mapping[str, Any], token_hash: str, token_hint: str, now_ms: int) -> Client:
    """Insert a client (``columns`` from ``CLIENT_COLUMNS``) with its token's hash and hint."""
    values = _client_values(columns)
    names = [*columns, "token_hash", "token_hint", "created_at", "updated_at"]
    sql = f"INSERT INTO clients ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    statements = [
        db.prepare(sql).bind(*values, token_hash, token_hint, now_ms, now_ms),
        db.prepare("SELECT * FROM clients WHERE token_hash = ?").bind(token_hash),
    ]
    _, selected = await batch("add a client", db, statements)
    return decode_client(selected["results"][0])


async def update_client(db: Any, client_id: int, columns: Mapping[str, Any], now_ms: int) -> Client | None:
    """Update the given columns; the stored client, or None when no client has this id."""
    values = _client_values(columns)
    assignments = [f"{name} = ?" for name in columns] + ["updated_at = ?"]
    statements = [
        db.prepare(f"UPDATE clients SET {', '.join(assignments)} WHERE id = ?").bind(*values, now_ms, client_id),
        db.prepare("SELECT * FROM clients WHERE id = ?").bind(client_id),
    ]
    _, selected = await batch("update a client", db, statements)
    rows = selected["results"]
    return decode_client(rows[0]) if rows else None


async def delete_client(db: Any, client_id: int) -> bool:
    result = await run("delete a client", db.prepare("DELETE FROM clients WHERE id = ?").bind(client_id))
    return int(result["meta"]["changes"]) > 0
