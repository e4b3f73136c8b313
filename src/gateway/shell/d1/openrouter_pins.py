"""OpenRouter pins (SPEC §15, ``core/pinning.py``; ``migrations/0005_openrouter_pins.sql``): read
with the configuration (``config.py``), written a row at a time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gateway.core.endpoint_scores import Ranked
from gateway.core.pinning import Pin
from gateway.shell.d1.columns import json_or
from gateway.shell.d1.runner import run

__all__ = ["SELECT_PINS", "decode_pin", "load_pins", "renew_pin", "save_candidates", "save_pin"]

SELECT_PINS = "SELECT * FROM openrouter_pins ORDER BY model"
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


def decode_pin(row: Mapping[str, Any]) -> Pin:
    """A row as a ``Pin``; parts edited by hand into something else are dropped, not fatal."""
    listed = json_or(row["candidates"], [])
    ranked = tuple(r for r in map(Ranked.from_json, listed if isinstance(listed, list) else []) if r is not None)
    cooled = json_or(row["cooled"], {})
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
    result = await run("read the OpenRouter pins", db.prepare(SELECT_PINS), "all")
    return [decode_pin(row) for row in result["results"]]


async def save_pin(db: Any, pin: Pin) -> None:
    """The whole row (a lock taken or moved, a first scoring)."""
    values = (
        pin.model,
        _candidates_text(pin),
        pin.refreshed_at_ms,
        pin.lock_slug,
        pin.lock_until_ms,
        pin.failures,
        pin.switches,
        json.dumps(dict(pin.cooled), separators=(",", ":")),
    )
    await run("save an OpenRouter pin", db.prepare(_SAVE_PIN).bind(*values))


async def renew_pin(db: Any, pin: Pin) -> None:
    values = (pin.lock_until_ms, pin.failures, pin.model, pin.lock_slug)
    await run("renew an OpenRouter pin", db.prepare(_RENEW_PIN).bind(*values))


async def save_candidates(db: Any, pin: Pin) -> None:
    """Only the candidates (the cron): never the lock."""
    values = (pin.model, _candidates_text(pin), pin.refreshed_at_ms)
    await run("save OpenRouter candidates", db.prepare(_SAVE_CANDIDATES).bind(*values))
