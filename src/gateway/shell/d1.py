"""D1 access: every SQL statement of the gateway, behind Python functions (SPEC §7, §13).

``db`` is the SDK-wrapped binding (``self.env.DB``): ``None`` binds as NULL, rows come back as
dicts. A D1 failure becomes ``StorageError`` naming D1's error (and marks ``health()`` failing until
D1 answers again); a duplicate provider name becomes ``ConflictError``.
A provider's keys are ``provider_keys`` rows (``migrations/0002_provider_keys.sql``), read with
the providers in the same batch and written with them in one batch (a batch is a transaction).
Named clients (``migrations/0003_clients.sql``) and OpenRouter pins (``0005``) are read in that
batch too; a duplicate client name becomes ``ConflictError``. Rate windows (``0004``, ``0009``) take
the limiter's reports in a batch of their own. Usage (``0010``) is written by an isolate's flush, one
row per hour it changed, replacing the isolate's row of that hour (a batch), and summed by D1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyodide.ffi import JsException

from gateway.core import usage
from gateway.core.classify import redact
from gateway.core.clients import Client
from gateway.core.config import Provider, ProviderKey, SealedKey
from gateway.core.d1health import D1Health
from gateway.core.kinds import KIND_NAMES, Kind
from gateway.core.endpoint_scores import Ranked
from gateway.core.pinning import Pin
from gateway.core.subrequests import SUBREQUESTS
from gateway.errors import ConflictError, StorageError

__all__ = [
    "CLIENT_COLUMNS",
    "PROVIDER_COLUMNS",
    "USAGE_GROUPS",
    "check_config",
    "claim_setting",
    "delete_client",
    "insert_client",
    "load_clients",
    "update_client",
    "delete_key",
    "delete_provider",
    "delete_setting",
    "get_provider",
    "health",
    "insert_key",
    "insert_provider",
    "load_config_rows",
    "load_pins",
    "renew_pin",
    "save_candidates",
    "save_pin",
    "load_providers",
    "load_settings",
    "prune_usage",
    "put_setting",
    "read_events",
    "read_usage",
    "report_windows",
    "set_key_enabled",
    "sweep_windows",
    "update_provider",
    "write_usage",
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
)
_SELECT_PROVIDERS = "SELECT * FROM providers ORDER BY priority, id"
_KEY_FIELDS = "id, provider_id, encrypted_key, iv, auth_tag, enabled"
_SELECT_KEYS = f"SELECT {_KEY_FIELDS} FROM provider_keys ORDER BY provider_id, id"
_SELECT_SETTINGS = "SELECT key, value FROM settings"
_SELECT_CLIENTS = "SELECT * FROM clients ORDER BY id"
# Every write to the four configuration tables adds 1 (triggers of 0011): one row to read.
_SELECT_STAMP = "SELECT stamp FROM config_stamp"
# What a D1 error may show of itself, redacted: its first line is what tells the cause.
_ERROR_MAX_CHARS = 200
# Columns a client write may set.
CLIENT_COLUMNS = ("name", "rpm", "models", "enabled", "stream_rescue")
# Unique columns whose violation is the caller's (409), with what to tell them.
_CONFLICTS = {
    "providers.name": ("A provider with this name already exists.", "name"),
    "clients.name": ("A client with this name already exists.", "name"),
}
_INSERT_KEY = (
    "INSERT INTO provider_keys (provider_id, encrypted_key, iv, auth_tag, enabled, created_at) "
)


def _json_or(text: Any, default: Any) -> Any:
    """A JSON column's value, or ``default`` when a row edited by hand holds something else."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def _models(text: str) -> tuple[str, ...]:
    """The model list of a row; a row edited by hand into something else serves no model rather
    than breaking every request (the admin listing shows it, empty, to be fixed)."""
    models = _json_or(text, ())
    if not isinstance(models, list):
        return ()
    return tuple(m for m in models if isinstance(m, str) and m)


def _model_entries(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, Kind], ...]]:
    """A provider row's models and the kinds its entries declare (SPEC §12.6: ``"id"`` or
    ``{"id", "kind"}``); an entry edited by hand into anything else is left out, as in ``_models``."""
    entries = _json_or(text, ())
    if not isinstance(entries, list):
        return (), ()
    models: list[str] = []
    kinds: list[tuple[str, Kind]] = []
    for entry in entries:
        model = entry.get("id") if isinstance(entry, dict) else entry
        if not isinstance(model, str) or not model:
            continue
        models.append(model)
        if isinstance(entry, dict) and entry.get("kind") in KIND_NAMES:
            kinds.append((model, Kind(entry["kind"])))
    return tuple(models), tuple(kinds)


def _keys_by_provider(rows: Any) -> dict[int, list[ProviderKey]]:
    keys: dict[int, list[ProviderKey]] = {}
    for row in rows:
        sealed = SealedKey(row["encrypted_key"], row["iv"], row["auth_tag"])
        key = ProviderKey(int(row["id"]), sealed, bool(row["enabled"]))
        keys.setdefault(int(row["provider_id"]), []).append(key)
    return keys


def _providers(rows: Any, key_rows: Any) -> list[Provider]:
    keys = _keys_by_provider(key_rows)
    return [_provider(row, keys.get(int(row["id"]), ())) for row in rows]


def _provider(row: Mapping[str, Any], keys: Any) -> Provider:
    models, kinds = _model_entries(row["models"])
    return Provider(
        id=int(row["id"]),
        name=row["name"],
        platform=row["platform"],
        base_url=row["base_url"],
        models=models,
        kinds=kinds,
        priority=int(row["priority"]),
        timeout_ms=None if row["timeout_ms"] is None else int(row["timeout_ms"]),
        enabled=bool(row["enabled"]),
        keys=tuple(sorted(keys, key=lambda k: k.id)),
        created_at=int(row["created_at"]),
        updated_at=int(row["updated_at"]),
    )


def health() -> D1Health:
    """What this isolate saw of D1 (``core/d1health.py``), made at the first query (never at
    import: the deploy snapshot holds no state)."""
    global _health
    if _health is None:
        _health = D1Health()
    return _health


_health: D1Health | None = None


def _failed(what: str, exc: JsException) -> Exception:
    for column, (message, param) in _CONFLICTS.items():
        if f"UNIQUE constraint failed: {column}" in str(exc):
            health().answered()
            return ConflictError(message, param=param)
    error = redact(str(exc))[:_ERROR_MAX_CHARS]
    health().failed(int(time.time() * 1000), error)
    return StorageError(f"D1 failed to {what}: {error}")


async def _run(what: str, target: Any, method: str = "run", *args: Any) -> Any:
    """``target.method(*args)`` (a statement's ``run``/``all``, a binding's ``batch``): one round
    trip, one subrequest (SPEC §18); a failure becomes ours and marks D1 failing, an answer marks
    it answering."""
    SUBREQUESTS.get().used += 1
    try:
        result = await getattr(target, method)(*args)
    except JsException as exc:
        raise _failed(what, exc) from exc
    health().answered()
    return result


async def _batch(what: str, db: Any, statements: list[Any]) -> list[Any]:
    return list(await _run(what, db, "batch", statements))


async def load_providers(db: Any) -> list[Provider]:
    """Every provider with its keys, in priority order (one round trip)."""
    providers, keys = await _batch("read providers", db, [db.prepare(_SELECT_PROVIDERS), db.prepare(_SELECT_KEYS)])
    return _providers(providers["results"], keys["results"])


async def load_config_rows(db: Any) -> tuple[list[Provider], dict[str, str], list[Client], list[Pin], int]:
    """Providers (with their keys), settings rows, clients, OpenRouter pins and the configuration's
    stamp (``migrations/0011_config_stamp.sql``) in one D1 round trip."""
    statements = [
        db.prepare(_SELECT_PROVIDERS),
        db.prepare(_SELECT_KEYS),
        db.prepare(_SELECT_SETTINGS),
        db.prepare(_SELECT_CLIENTS),
        db.prepare(_SELECT_PINS),
        db.prepare(_SELECT_STAMP),
    ]
    providers, keys, settings, clients, pins, stamp = await _batch("read the configuration", db, statements)
    return (
        _providers(providers["results"], keys["results"]),
        {row["key"]: row["value"] for row in settings["results"]},
        [_client(row) for row in clients["results"]],
        [_pin(row) for row in pins["results"]],
        _stamp(stamp),
    )


async def check_config(db: Any) -> tuple[int, list[Pin]]:
    """The configuration's stamp and the OpenRouter pins, in one round trip of a row per pin and
    one more: a snapshot whose stamp is unchanged is still the configuration."""
    stamp, pins = await _batch("read the configuration", db, [db.prepare(_SELECT_STAMP), db.prepare(_SELECT_PINS)])
    return _stamp(stamp), [_pin(row) for row in pins["results"]]


def _stamp(result: Any) -> int:
    rows = result["results"]
    return int(rows[0]["stamp"]) if rows else 0


# --- Named clients (SPEC §14) ------------------------------------------------------------------


def _client_models(text: str | None) -> tuple[str, ...] | None:
    """A client's allow-list; NULL is every model, and a row edited by hand into something that
    is not a list allows none (failing closed: the listing shows it, empty, to be fixed)."""
    return None if text is None else _models(text)


def _client(row: Mapping[str, Any]) -> Client:
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
    return [None if v is None else _column_value(v) for v in columns.values()]


async def load_clients(db: Any) -> list[Client]:
    result = await _run("read clients", db.prepare(_SELECT_CLIENTS), "all")
    return [_client(row) for row in result["results"]]


async def insert_client(
    db: Any, columns: Mapping[str, Any], token_hash: str, token_hint: str, now_ms: int
) -> Client:
    """Insert a client (``columns`` from ``CLIENT_COLUMNS``) with its token's hash and hint."""
    values = _client_values(columns)
    names = [*columns, "token_hash", "token_hint", "created_at", "updated_at"]
    sql = f"INSERT INTO clients ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    statements = [
        db.prepare(sql).bind(*values, token_hash, token_hint, now_ms, now_ms),
        db.prepare("SELECT * FROM clients WHERE token_hash = ?").bind(token_hash),
    ]
    _, selected = await _batch("add a client", db, statements)
    return _client(selected["results"][0])


async def update_client(db: Any, client_id: int, columns: Mapping[str, Any], now_ms: int) -> Client | None:
    """Update the given columns; the stored client, or None when no client has this id."""
    values = _client_values(columns)
    assignments = [f"{name} = ?" for name in columns] + ["updated_at = ?"]
    statements = [
        db.prepare(f"UPDATE clients SET {', '.join(assignments)} WHERE id = ?").bind(*values, now_ms, client_id),
        db.prepare("SELECT * FROM clients WHERE id = ?").bind(client_id),
    ]
    _, selected = await _batch("update a client", db, statements)
    rows = selected["results"]
    return _client(rows[0]) if rows else None


async def delete_client(db: Any, client_id: int) -> bool:
    result = await _run("delete a client", db.prepare("DELETE FROM clients WHERE id = ?").bind(client_id))
    return int(result["meta"]["changes"]) > 0


async def get_provider(db: Any, provider_id: int) -> Provider | None:
    statements = [
        db.prepare("SELECT * FROM providers WHERE id = ?").bind(provider_id),
        db.prepare(f"SELECT {_KEY_FIELDS} FROM provider_keys WHERE provider_id = ? ORDER BY id").bind(provider_id),
    ]
    provider, keys = await _batch("read a provider", db, statements)
    rows = provider["results"]
    return _providers(rows, keys["results"])[0] if rows else None


async def load_settings(db: Any) -> dict[str, str]:
    result = await _run("read settings", db.prepare(_SELECT_SETTINGS), "all")
    return {row["key"]: row["value"] for row in result["results"]}


def _column_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    if isinstance(value, bool):
        return int(value)
    return value


def _check_columns(columns: Mapping[str, Any]) -> None:
    # Column names are spliced into SQL: only the known ones may pass.
    unknown = set(columns) - set(PROVIDER_COLUMNS)
    if unknown:
        raise ValueError(f"not provider columns: {sorted(unknown)}")


def _sealed_values(sealed: SealedKey) -> tuple[str, str, str]:
    return sealed.ciphertext, sealed.iv, sealed.tag


async def insert_provider(
    db: Any, columns: Mapping[str, Any], keys: Sequence[SealedKey], now_ms: int
) -> int:
    """Insert a provider from ``columns`` (names from ``PROVIDER_COLUMNS``) with ``keys`` (at
    least one), in one transaction; returns its id."""
    _check_columns(columns)
    names = [*columns, "created_at", "updated_at"]
    values = [_column_value(v) for v in columns.values()] + [now_ms, now_ms]
    sql = f"INSERT INTO providers ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    # The provider's id inside the batch: its name is unique (last_insert_rowid() would change
    # with every key inserted).
    key_sql = _INSERT_KEY + "VALUES ((SELECT id FROM providers WHERE name = ?), ?, ?, ?, 1, ?)"
    statements = [db.prepare(sql).bind(*values)]
    statements += [db.prepare(key_sql).bind(columns["name"], *_sealed_values(k), now_ms) for k in keys]
    statements.append(db.prepare("SELECT id FROM providers WHERE name = ?").bind(columns["name"]))
    results = await _batch("add a provider", db, statements)
    return int(results[-1]["results"][0]["id"])


async def update_provider(
    db: Any, provider_id: int, columns: Mapping[str, Any], now_ms: int, key: SealedKey | None = None
) -> bool:
    """Update the given columns and, with ``key``, replace all the provider's keys by that one
    (one transaction); False when no provider has this id."""
    _check_columns(columns)
    assignments = [f"{name} = ?" for name in columns] + ["updated_at = ?"]
    values = [_column_value(v) for v in columns.values()] + [now_ms, provider_id]
    sql = f"UPDATE providers SET {', '.join(assignments)} WHERE id = ?"
    statements = [db.prepare(sql).bind(*values)]
    if key is not None:
        statements += [
            db.prepare("DELETE FROM provider_keys WHERE provider_id = ?").bind(provider_id),
            db.prepare(
                _INSERT_KEY + "SELECT id, ?, ?, ?, 1, ? FROM providers WHERE id = ?"
            ).bind(*_sealed_values(key), now_ms, provider_id),
        ]
    results = await _batch("update a provider", db, statements)
    return int(results[0]["meta"]["changes"]) > 0


async def delete_provider(db: Any, provider_id: int) -> bool:
    # The keys go explicitly too: ON DELETE CASCADE needs foreign keys on, which D1 has, but a
    # hand-run sqlite3 may not.
    statements = [
        db.prepare("DELETE FROM provider_keys WHERE provider_id = ?").bind(provider_id),
        db.prepare("DELETE FROM providers WHERE id = ?").bind(provider_id),
    ]
    results = await _batch("delete a provider", db, statements)
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
    inserted, _ = await _batch("add a key", db, statements)
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
    updated, _ = await _batch("change a key", db, statements)
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
    deleted, _ = await _batch("delete a key", db, statements)
    return int(deleted["meta"]["changes"]) > 0


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
    _, selected = await _batch("save a setting", db, statements)
    return selected["results"][0]["value"]


async def delete_setting(db: Any, key: str) -> None:
    await _run("delete a setting", db.prepare("DELETE FROM settings WHERE key = ?").bind(key))


# --- Rate windows (SPEC §14, ``core/limits.py``; ``migrations/0004_rate_windows.sql``) ---------

# Add ?3 units to the key's count in the window beginning at ?2: a row of an older window starts
# again. A report stamped with an older window than the row's (an isolate whose clock is behind,
# at a minute's turn) counts in the row's window rather than resetting it. RETURNING yields the
# window's count across isolates. No index: the cron's sweep reads the whole (small) table rather
# than every report writing an index row.
_REPORT_WINDOW = (
    "INSERT INTO rate_windows (key, window_start, count) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (key) DO UPDATE SET "
    "count = CASE WHEN excluded.window_start > window_start THEN ?3 ELSE count + ?3 END, "
    "window_start = MAX(window_start, excluded.window_start) "
    "RETURNING count"
)
_SWEEP_WINDOWS = "DELETE FROM rate_windows WHERE window_start < ?1"


async def report_windows(db: Any, start: int, reports: Sequence[tuple[str, int]]) -> list[int]:
    """Add each ``(key, units)`` of ``reports`` to its count in the window beginning at
    ``start``, in one round trip (a batch is one transaction); each window's count after it."""
    statements = [db.prepare(_REPORT_WINDOW).bind(key, start, units) for key, units in reports]
    results = await _batch("count requests", db, statements)
    return [int(r["results"][0]["count"]) for r in results]


async def sweep_windows(db: Any, start: int) -> None:
    """Delete the rows of windows that ended before ``start`` (the cron)."""
    await _run("sweep rate windows", db.prepare(_SWEEP_WINDOWS).bind(start))


# --- OpenRouter pins (SPEC §15, ``core/pinning.py``; ``migrations/0005_openrouter_pins.sql``) -----

_SELECT_PINS = "SELECT * FROM openrouter_pins ORDER BY model"
_PIN_COLUMNS = "model, candidates, refreshed_at, lock_slug, lock_until, failures, switches, cooled"
_SAVE_PIN = (
    f"INSERT INTO openrouter_pins ({_PIN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (model) DO UPDATE SET candidates = excluded.candidates, "
    "refreshed_at = excluded.refreshed_at, lock_slug = excluded.lock_slug, "
    "lock_until = excluded.lock_until, failures = excluded.failures, switches = excluded.switches, "
    "cooled = excluded.cooled"
)
# A renewal only extends the lock it renews: another isolate may have moved it meanwhile.
_RENEW_PIN = "UPDATE openrouter_pins SET lock_until = ?, failures = ? WHERE model = ? AND lock_slug = ?"
_SAVE_CANDIDATES = (
    "INSERT INTO openrouter_pins (model, candidates, refreshed_at) VALUES (?, ?, ?) "
    "ON CONFLICT (model) DO UPDATE SET candidates = excluded.candidates, refreshed_at = excluded.refreshed_at"
)


def _pin(row: Mapping[str, Any]) -> Pin:
    """A row as a ``Pin``; parts edited by hand into something else are dropped, not fatal."""
    listed = _json_or(row["candidates"], [])
    ranked = tuple(r for r in map(Ranked.from_json, listed if isinstance(listed, list) else []) if r is not None)
    cooled = _json_or(row["cooled"], {})
    return Pin(
        model=row["model"],
        candidates=ranked,
        refreshed_at_ms=None if row["refreshed_at"] is None else int(row["refreshed_at"]),
        lock_slug=row["lock_slug"],
        lock_until_ms=None if row["lock_until"] is None else int(row["lock_until"]),
        failures=int(row["failures"]),
        switches=int(row["switches"]),
        cooled={s: int(t) for s, t in cooled.items() if isinstance(t, int)} if isinstance(cooled, dict) else {},
    )


def _candidates_text(pin: Pin) -> str:
    return json.dumps([c.as_json() for c in pin.candidates], separators=(",", ":"))


async def load_pins(db: Any) -> list[Pin]:
    return [_pin(row) for row in (await _run("read the OpenRouter pins", db.prepare(_SELECT_PINS), "all"))["results"]]


async def save_pin(db: Any, pin: Pin) -> None:
    """The whole row (a lock taken or moved, a first scoring)."""
    values = (
        pin.model, _candidates_text(pin), pin.refreshed_at_ms, pin.lock_slug, pin.lock_until_ms,
        pin.failures, pin.switches, json.dumps(dict(pin.cooled), separators=(",", ":")),
    )
    await _run("save an OpenRouter pin", db.prepare(_SAVE_PIN).bind(*values))


async def renew_pin(db: Any, pin: Pin) -> None:
    values = (pin.lock_until_ms, pin.failures, pin.model, pin.lock_slug)
    await _run("renew an OpenRouter pin", db.prepare(_RENEW_PIN).bind(*values))


async def save_candidates(db: Any, pin: Pin) -> None:
    """Only the candidates (the cron): never the lock."""
    values = (pin.model, _candidates_text(pin), pin.refreshed_at_ms)
    await _run("save OpenRouter candidates", db.prepare(_SAVE_CANDIDATES).bind(*values))


# --- Usage (SPEC §17, §18, ``core/usage.py``; ``migrations/0010_usage_parts.sql``) ---------------

# A part replaces the isolate's row of its hour, unless D1 already holds a newer write of it (a
# write whose answer was lost, overtaken by the next): a write repeated or reordered counts once.
_UPSERT_PARTS = (
    "INSERT INTO usage_parts (hour_ms, isolate, seq, buckets, events) VALUES %s "
    "ON CONFLICT (hour_ms, isolate) DO UPDATE SET seq = excluded.seq, buckets = excluded.buckets, "
    "events = excluded.events WHERE excluded.seq > usage_parts.seq"
)
# D1 binds at most this many parameters per statement; hour and seq are integers of ours and go
# inline, the texts are bound: 3 per part.
_D1_MAX_PARAMS = 100
_PARTS_PER_STATEMENT = _D1_MAX_PARAMS // 3
_PRUNE = "DELETE FROM usage_parts WHERE hour_ms < ?1"
# The buckets of the parts whose hour is in [?1, ?2), a row each: its key's columns and ``v``, its
# counts from index 5 on (a count past the array's end, a trailing zero left out, is NULL: SUM
# skips it).
_BUCKETS = (
    "SELECT p.hour_ms AS hour_ms, b.value ->> 0 AS client_id, b.value ->> 1 AS provider_id, "
    "b.value ->> 2 AS key_id, b.value ->> 3 AS model, b.value ->> 4 AS surface, b.value AS v "
    "FROM usage_parts p, json_each(p.buckets) b WHERE p.hour_ms >= ?1 AND p.hour_ms < ?2"
)
_SUMS = ", ".join(f"COALESCE(SUM(v ->> {i}), 0) AS {c}" for i, c in enumerate(usage.COLUMNS, start=5))
# What ``GET /api/admin/usage?by=`` groups by.
USAGE_GROUPS = {
    "provider": "provider_id",
    "key": "provider_id, key_id",
    "client": "client_id",
    "model": "model",
    "surface": "surface",
}
# The events of the parts whose hour starts at ?1 or later, newest first (ties: an isolate's later
# event first), at most ?2.
_EVENTS = (
    "SELECT e.value ->> 0 AS at_ms, e.value ->> 1 AS client_id, e.value ->> 2 AS provider_id, "
    "e.value ->> 3 AS key_id, e.value ->> 4 AS model, e.value ->> 5 AS surface, e.value ->> 6 AS class, "
    "e.value ->> 7 AS status, e.value ->> 8 AS message "
    "FROM usage_parts p, json_each(p.events) e WHERE p.hour_ms >= ?1 "
    "ORDER BY at_ms DESC, p.isolate, e.key DESC LIMIT ?2"
)


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


async def write_usage(db: Any, isolate: str, taken: usage.Taken) -> None:
    """Replace ``isolate``'s rows of ``taken``'s hours with its parts: one batch (one
    transaction), one row written per part (none for a part D1 holds a newer write of)."""
    statements = []
    for parts in _chunks(taken.parts, _PARTS_PER_STATEMENT):
        values = ",".join(f"({int(p.hour_ms)},?,{int(taken.seq)},?,?)" for p in parts)
        texts = [text for p in parts for text in (isolate, p.buckets, p.events)]
        statements.append(db.prepare(_UPSERT_PARTS % values).bind(*texts))
    await _batch("write usage", db, statements)


async def read_usage(db: Any, from_ms: int, to_ms: int, by: str) -> list[dict[str, Any]]:
    """The sums of the buckets whose hour starts in [``from_ms``, ``to_ms``), per hour and group
    (``by``: a key of ``USAGE_GROUPS``), summed by D1 over every isolate's part, each row with
    ``hour_ms``, the group's columns and every name of ``usage.COLUMNS``."""
    group = USAGE_GROUPS[by]
    sql = f"SELECT hour_ms, {group}, {_SUMS} FROM ({_BUCKETS}) GROUP BY hour_ms, {group} ORDER BY hour_ms"
    return list((await _run("read usage", db.prepare(sql).bind(from_ms, to_ms), "all"))["results"])


async def read_events(db: Any, since_ms: int, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` events of the parts of the hours from ``since_ms`` on, newest first."""
    return list((await _run("read events", db.prepare(_EVENTS).bind(since_ms, limit), "all"))["results"])


async def prune_usage(db: Any, before_ms: int) -> None:
    """Delete the parts of the hours before ``before_ms`` (one statement)."""
    await _run("prune usage", db.prepare(_PRUNE).bind(before_ms))
