"""Providers and their keys (SPEC §7, §13; ``migrations/0002_provider_keys.sql``).

A provider's keys are ``provider_keys`` rows, read with the providers in the same batch and written
with them in one batch (a batch is a transaction). Every key write touches its provider's
``updated_at``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.core.capabilities import CAP_FIELDS, entry_facts, static_facts
from gateway.core.kinds import KIND_NAMES, Kind
from gateway.core.modelfacts import NO_FACTS, Facts
from gateway.core.providers import Provider, ProviderKey, SealedKey
from gateway.shell.d1.columns import column_value, json_or
from gateway.shell.d1.runner import batch

__all__ = [
    "PROVIDER_COLUMNS",
    "SELECT_KEYS",
    "SELECT_PROVIDERS",
    "decode_providers",
    "delete_key",
    "delete_provider",
    "get_provider",
    "insert_key",
    "insert_provider",
    "load_providers",
    "set_key_enabled",
    "update_provider",
]

# Columns a provider write may set (the admin layer maps its fields onto these).
PROVIDER_COLUMNS = (
    "name",
    "platform",
    "base_url",
    "models",
    "priority",
    "timeout_ms",
    "enabled",
    "caps",
)
SELECT_PROVIDERS = "SELECT * FROM providers ORDER BY priority, id"
_KEY_FIELDS = "id, provider_id, encrypted_key, iv, auth_tag, enabled"
SELECT_KEYS = f"SELECT {_KEY_FIELDS} FROM provider_keys ORDER BY provider_id, id"
_INSERT_KEY = "INSERT INTO provider_keys (provider_id, encrypted_key, iv, auth_tag, enabled, created_at) "


@dataclass(frozen=True, slots=True)
class _Entries:
    """A provider row's models, and what their entries set: kinds (SPEC §12.6), the admin's facts
    and the listing's (SPEC §19)."""

    models: tuple[str, ...] = ()
    kinds: tuple[tuple[str, Kind], ...] = ()
    declared: dict[str, Facts] = field(default_factory=dict)
    listed: dict[str, Facts] = field(default_factory=dict)


def _model_entries(text: str) -> _Entries:
    """A provider row's ``models``: each ``"id"`` or ``{"id", …}``; an entry edited by hand into
    anything else is left out, and so is a field of the wrong type."""
    entries = json_or(text, ())
    if not isinstance(entries, list):
        return _Entries()
    models: list[str] = []
    kinds: list[tuple[str, Kind]] = []
    declared: dict[str, Facts] = {}
    listed: dict[str, Facts] = {}
    for entry in entries:
        model = entry.get("id") if isinstance(entry, dict) else entry
        if not isinstance(model, str) or not model:
            continue
        models.append(model)
        if not isinstance(entry, dict):
            continue
        if entry.get("kind") in KIND_NAMES:
            kinds.append((model, Kind(entry["kind"])))
        admins, listing = entry_facts(entry)
        if admins != NO_FACTS:
            declared[model] = admins
        if listing != NO_FACTS:
            listed[model] = listing
    return _Entries(tuple(models), tuple(kinds), declared, listed)


def _keys_by_provider(rows: Any) -> dict[int, list[ProviderKey]]:
    keys: dict[int, list[ProviderKey]] = {}
    for row in rows:
        sealed = SealedKey(row["encrypted_key"], row["iv"], row["auth_tag"])
        key = ProviderKey(int(row["id"]), sealed, bool(row["enabled"]))
        keys.setdefault(int(row["provider_id"]), []).append(key)
    return keys


def decode_providers(rows: Any, key_rows: Any) -> list[Provider]:
    """The providers of ``rows``, each with its keys from ``key_rows``, in the rows' order."""
    keys = _keys_by_provider(key_rows)
    return [_provider(row, keys.get(int(row["id"]), ())) for row in rows]


def _provider(row: Mapping[str, Any], keys: Any) -> Provider:
    entries = _model_entries(row["models"])
    caps = json_or(row.get("caps"), None)
    caps = entry_facts({name: caps.get(name) for name in CAP_FIELDS})[0] if isinstance(caps, dict) else NO_FACTS
    return Provider(
        id=int(row["id"]),
        name=row["name"],
        platform=row["platform"],
        base_url=row["base_url"],
        models=entries.models,
        kinds=entries.kinds,
        declared=entries.declared,
        listed=entries.listed,
        caps=caps,
        facts=static_facts(row["platform"], entries.models, entries.declared, entries.listed, caps),
        priority=int(row["priority"]),
        timeout_ms=None if row["timeout_ms"] is None else int(row["timeout_ms"]),
        enabled=bool(row["enabled"]),
        keys=tuple(sorted(keys, key=lambda k: k.id)),
        created_at=int(row["created_at"]),
        updated_at=int(row["updated_at"]),
    )


async def load_providers(db: Any) -> list[Provider]:
    """Every provider with its keys, in priority order (one round trip)."""
    providers, keys = await batch("read providers", db, [db.prepare(SELECT_PROVIDERS), db.prepare(SELECT_KEYS)])
    return decode_providers(providers["results"], keys["results"])


async def get_provider(db: Any, provider_id: int) -> Provider | None:
    statements = [
        db.prepare("SELECT * FROM providers WHERE id = ?").bind(provider_id),
        db.prepare(f"SELECT {_KEY_FIELDS} FROM provider_keys WHERE provider_id = ? ORDER BY id").bind(provider_id),
    ]
    provider, keys = await batch("read a provider", db, statements)
    rows = provider["results"]
    return decode_providers(rows, keys["results"])[0] if rows else None


def _check_columns(columns: Mapping[str, Any]) -> None:
    # Column names are spliced into SQL: only the known ones may pass.
    unknown = set(columns) - set(PROVIDER_COLUMNS)
    if unknown:
        raise ValueError(f"not provider columns: {sorted(unknown)}")


def _sealed_values(sealed: SealedKey) -> tuple[str, str, str]:
    return sealed.ciphertext, sealed.iv, sealed.tag


async def insert_provider(db: Any, columns: Mapping[str, Any], keys: Sequence[SealedKey], now_ms: int) -> int:
    """Insert a provider from ``columns`` (names from ``PROVIDER_COLUMNS``) with ``keys`` (at
    least one), in one transaction; returns its id."""
    _check_columns(columns)
    names = [*columns, "created_at", "updated_at"]
    values = [column_value(v) for v in columns.values()] + [now_ms, now_ms]
    sql = f"INSERT INTO providers ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    # The provider's id inside the batch: its name is unique (last_insert_rowid() would change
    # with every key inserted).
    key_sql = _INSERT_KEY + "VALUES ((SELECT id FROM providers WHERE name = ?), ?, ?, ?, 1, ?)"
    statements = [db.prepare(sql).bind(*values)]
    statements += [db.prepare(key_sql).bind(columns["name"], *_sealed_values(k), now_ms) for k in keys]
    statements.append(db.prepare("SELECT id FROM providers WHERE name = ?").bind(columns["name"]))
    results = await batch("add a provider", db, statements)
    return int(results[-1]["results"][0]["id"])


async def update_provider(
    db: Any, provider_id: int, columns: Mapping[str, Any], now_ms: int, key: SealedKey | None = None
) -> bool:
    """Update the given columns and, with ``key``, replace all the provider's keys by that one
    (one transaction); False when no provider has this id."""
    _check_columns(columns)
    assignments = [f"{name} = ?" for name in columns] + ["updated_at = ?"]
    values = [column_value(v) for v in columns.values()] + [now_ms, provider_id]
    sql = f"UPDATE providers SET {', '.join(assignments)} WHERE id = ?"
    statements = [db.prepare(sql).bind(*values)]
    if key is not None:
        statements += [
            db.prepare("DELETE FROM provider_keys WHERE provider_id = ?").bind(provider_id),
            db.prepare(_INSERT_KEY + "SELECT id, ?, ?, ?, 1, ? FROM providers WHERE id = ?").bind(
                *_sealed_values(key), now_ms, provider_id
            ),
        ]
    results = await batch("update a provider", db, statements)
    return int(results[0]["meta"]["changes"]) > 0


async def delete_provider(db: Any, provider_id: int) -> bool:
    # The keys go explicitly too: ON DELETE CASCADE needs foreign keys on, which D1 has, but a
    # hand-run sqlite3 may not.
    statements = [
        db.prepare("DELETE FROM provider_keys WHERE provider_id = ?").bind(provider_id),
        db.prepare("DELETE FROM providers WHERE id = ?").bind(provider_id),
    ]
    results = await batch("delete a provider", db, statements)
    return int(results[1]["meta"]["changes"]) > 0


def _touch(db: Any, provider_id: int, now_ms: int) -> Any:
    return db.prepare("UPDATE providers SET updated_at = ? WHERE id = ?").bind(now_ms, provider_id)


async def insert_key(db: Any, provider_id: int, key: SealedKey, now_ms: int) -> int | None:
    """Add a key to a provider; its id, or None when no provider has ``provider_id``."""
    statements = [
        db.prepare(_INSERT_KEY + "SELECT id, ?, ?, ?, 1, ? FROM providers WHERE id = ?").bind(
            *_sealed_values(key), now_ms, provider_id
        ),
        _touch(db, provider_id, now_ms),
    ]
    inserted, _ = await batch("add a key", db, statements)
    if int(inserted["meta"]["changes"]) == 0:
        return None
    return int(inserted["meta"]["last_row_id"])


async def set_key_enabled(db: Any, provider_id: int, key_id: int, enabled: bool, now_ms: int) -> bool:
    """Enable or disable one key of a provider; False when the provider has no such key."""
    statements = [
        db.prepare("UPDATE provider_keys SET enabled = ? WHERE id = ? AND provider_id = ?").bind(
            int(enabled), key_id, provider_id
        ),
        _touch(db, provider_id, now_ms),
    ]
    updated, _ = await batch("change a key", db, statements)
    return int(updated["meta"]["changes"]) > 0


async def delete_key(db: Any, provider_id: int, key_id: int, now_ms: int) -> bool:
    """Delete one key of a provider unless it is the provider's last; False when nothing was
    deleted (no such key, or the last one: the caller tells which)."""
    statements = [
        db.prepare(
            "DELETE FROM provider_keys WHERE id = ? AND provider_id = ? "
            "AND (SELECT COUNT(*) FROM provider_keys WHERE provider_id = ?) > 1"
        ).bind(key_id, provider_id, provider_id),
        _touch(db, provider_id, now_ms),
    ]
    deleted, _ = await batch("delete a key", db, statements)
    return int(deleted["meta"]["changes"]) > 0
