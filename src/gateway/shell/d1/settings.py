"""Settings rows (SPEC §7): a key and its text value each; the config layer resolves them."""

from __future__ import annotations

from typing import Any

from gateway.shell.d1.runner import batch, run

__all__ = ["SELECT_SETTINGS", "claim_setting", "delete_setting", "load_settings", "put_setting"]

SELECT_SETTINGS = "SELECT key, value FROM settings"


async def load_settings(db: Any) -> dict[str, str]:
    result = await run("read settings", db.prepare(SELECT_SETTINGS), "all")
    return {row["key"]: row["value"] for row in result["results"]}


async def put_setting(db: Any, key: str, value: str) -> None:
    sql = "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    await run("save a setting", db.prepare(sql).bind(key, value))


async def claim_setting(db: Any, key: str, value: str) -> str:
    """Store ``value`` under ``key`` unless a row is there already; the value stored either way.
    One round trip: two isolates claiming at once both get the first one's value."""
    statements = [
        db.prepare("INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)").bind(key, value),
        db.prepare("SELECT value FROM settings WHERE key = ?").bind(key),
    ]
    _, selected = await batch("save a setting", db, statements)
    return selected["results"][0]["value"]


async def delete_setting(db: Any, key: str) -> None:
    await run("delete a setting", db.prepare("DELETE FROM settings WHERE key = ?").bind(key))
