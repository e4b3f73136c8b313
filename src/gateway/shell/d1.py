"""D1 access: every SQL statement of the gateway, behind Python functions (SPEC §7).

``db`` is the SDK-wrapped binding (``self.env.DB``): ``None`` binds as NULL, rows come back as
dicts. A D1 failure becomes ``StorageError``; a duplicate provider name becomes ``ConflictError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyodide.ffi import JsException

from gateway.core.config import Provider, SealedKey
from gateway.errors import ConflictError, StorageError

__all__ = [
    "PROVIDER_COLUMNS",
    "claim_setting",
    "delete_provider",
    "delete_setting",
    "get_provider",
    "insert_provider",
    "key_columns",
    "load_config_rows",
    "load_providers",
    "load_settings",
    "put_setting",
    "update_provider",
]

# Columns a provider write may set (the admin layer maps its fields onto these).
PROVIDER_COLUMNS = (
    "name",
    "platform",
    "base_url",
    "encrypted_key",
    "iv",
    "auth_tag",
    "models",
    "priority",
    "timeout_ms",
    "enabled",
)
_SELECT_PROVIDERS = "SELECT * FROM providers ORDER BY priority, id"
_SELECT_SETTINGS = "SELECT key, value FROM settings"


def _models(text: str) -> tuple[str, ...]:
    """The model list of a row; a row edited by hand into something else serves no model rather
    than breaking every request (the admin listing shows it, empty, to be fixed)."""
    try:
        models = json.loads(text)
    except (TypeError, ValueError):
        return ()
    if not isinstance(models, list):
        return ()
    return tuple(m for m in models if isinstance(m, str) and m)


def _provider(row: Mapping[str, Any]) -> Provider:
    return Provider(
        id=int(row["id"]),
        name=row["name"],
        platform=row["platform"],
        base_url=row["base_url"],
        models=_models(row["models"]),
        priority=int(row["priority"]),
        timeout_ms=None if row["timeout_ms"] is None else int(row["timeout_ms"]),
        enabled=bool(row["enabled"]),
        sealed_key=SealedKey(row["encrypted_key"], row["iv"], row["auth_tag"]),
        created_at=int(row["created_at"]),
        updated_at=int(row["updated_at"]),
    )


async def _run(what: str, statement: Any, method: str = "run") -> Any:
    try:
        return await getattr(statement, method)()
    except JsException as exc:
        if "UNIQUE constraint failed: providers.name" in str(exc):
            raise ConflictError("A provider with this name already exists.", param="name") from exc
        raise StorageError(f"D1 failed to {what}.") from exc


async def load_providers(db: Any) -> list[Provider]:
    result = await _run("read providers", db.prepare(_SELECT_PROVIDERS), "all")
    return [_provider(row) for row in result["results"]]


async def load_config_rows(db: Any) -> tuple[list[Provider], dict[str, str]]:
    """Providers and settings rows in one D1 round trip."""
    try:
        providers, settings = await db.batch([db.prepare(_SELECT_PROVIDERS), db.prepare(_SELECT_SETTINGS)])
    except JsException as exc:
        raise StorageError("D1 failed to read the configuration.") from exc
    return (
        [_provider(row) for row in providers["results"]],
        {row["key"]: row["value"] for row in settings["results"]},
    )


async def get_provider(db: Any, provider_id: int) -> Provider | None:
    statement = db.prepare("SELECT * FROM providers WHERE id = ?").bind(provider_id)
    row = await _run("read a provider", statement, "first")
    return None if row is None else _provider(row)


async def load_settings(db: Any) -> dict[str, str]:
    result = await _run("read settings", db.prepare(_SELECT_SETTINGS), "all")
    return {row["key"]: row["value"] for row in result["results"]}


def _column_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    if isinstance(value, bool):
        return int(value)
    return value


def key_columns(sealed: SealedKey) -> dict[str, str]:
    """The provider columns that store a sealed key."""
    return {"encrypted_key": sealed.ciphertext, "iv": sealed.iv, "auth_tag": sealed.tag}


def _check_columns(columns: Mapping[str, Any]) -> None:
    # Column names are spliced into SQL: only the known ones may pass.
    unknown = set(columns) - set(PROVIDER_COLUMNS)
    if unknown:
        raise ValueError(f"not provider columns: {sorted(unknown)}")


async def insert_provider(db: Any, columns: Mapping[str, Any], now_ms: int) -> int:
    """Insert a provider from ``columns`` (names from ``PROVIDER_COLUMNS``); returns its id."""
    _check_columns(columns)
    names = [*columns, "created_at", "updated_at"]
    values = [_column_value(v) for v in columns.values()] + [now_ms, now_ms]
    sql = f"INSERT INTO providers ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    result = await _run("add a provider", db.prepare(sql).bind(*values))
    return int(result["meta"]["last_row_id"])


async def update_provider(db: Any, provider_id: int, columns: Mapping[str, Any], now_ms: int) -> bool:
    """Update the given columns; False when no provider has this id."""
    _check_columns(columns)
    assignments = [f"{name} = ?" for name in columns] + ["updated_at = ?"]
    values = [_column_value(v) for v in columns.values()] + [now_ms, provider_id]
    sql = f"UPDATE providers SET {', '.join(assignments)} WHERE id = ?"
    result = await _run("update a provider", db.prepare(sql).bind(*values))
    return int(result["meta"]["changes"]) > 0


async def delete_provider(db: Any, provider_id: int) -> bool:
    statement = db.prepare("DELETE FROM providers WHERE id = ?").bind(provider_id)
    result = await _run("delete a provider", statement)
    return int(result["meta"]["changes"]) > 0


async def put_setting(db: Any, key: str, value: str) -> None:
    sql = "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    await _run("save a setting", db.prepare(sql).bind(key, value))


async def claim_setting(db: Any, key: str, value: str) -> str:
    """Store ``value`` under ``key`` unless a row is there already; the value stored either way.
    One round trip: two isolates claiming at once both get the first one's value."""
    statements = [
        db.prepare("INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)").bind(key, value),
        db.prepare("SELECT value FROM settings WHERE key = ?").bind(key),
    ]
    try:
        _, selected = await db.batch(statements)
    except JsException as exc:
        raise StorageError("D1 failed to save a setting.") from exc
    return selected["results"][0]["value"]


async def delete_setting(db: Any, key: str) -> None:
    await _run("delete a setting", db.prepare("DELETE FROM settings WHERE key = ?").bind(key))
