"""The whole configuration in one read (SPEC §7, §13): providers with their keys, settings,
clients, OpenRouter pins and the configuration's stamp (``migrations/0011_config_stamp.sql``),
one batch; and the cheap check of a cached snapshot, the stamp and the pins."""

from __future__ import annotations

from typing import Any

from gateway.core.clients import Client
from gateway.core.pinning import Pin
from gateway.core.providers import Provider
from gateway.shell.d1.clients import SELECT_CLIENTS, decode_client
from gateway.shell.d1.openrouter_pins import SELECT_PINS, decode_pin
from gateway.shell.d1.providers import SELECT_KEYS, SELECT_PROVIDERS, decode_providers
from gateway.shell.d1.runner import batch
from gateway.shell.d1.settings import SELECT_SETTINGS

__all__ = ["check_config", "load_config_rows"]

# Every write to the four configuration tables adds 1 (triggers of 0011): one row to read.
_SELECT_STAMP = "SELECT stamp FROM config_stamp"


async def load_config_rows(db: Any) -> tuple[list[Provider], dict[str, str], list[Client], list[Pin], int]:
    """Providers (with their keys), settings rows, clients, OpenRouter pins and the configuration's
    stamp (``migrations/0011_config_stamp.sql``) in one D1 round trip."""
    statements = [
        db.prepare(SELECT_PROVIDERS),
        db.prepare(SELECT_KEYS),
        db.prepare(SELECT_SETTINGS),
        db.prepare(SELECT_CLIENTS),
        db.prepare(SELECT_PINS),
        db.prepare(_SELECT_STAMP),
    ]
    providers, keys, settings, clients, pins, stamp = await batch("read the configuration", db, statements)
    return (
        decode_providers(providers["results"], keys["results"]),
        {row["key"]: row["value"] for row in settings["results"]},
        [decode_client(row) for row in clients["results"]],
        [decode_pin(row) for row in pins["results"]],
        _stamp(stamp),
    )


async def check_config(db: Any) -> tuple[int, list[Pin]]:
    """The configuration's stamp and the OpenRouter pins, in one round trip of a row per pin and
    one more: a snapshot whose stamp is unchanged is still the configuration."""
    stamp, pins = await batch("read the configuration", db, [db.prepare(_SELECT_STAMP), db.prepare(SELECT_PINS)])
    return _stamp(stamp), [decode_pin(row) for row in pins["results"]]


def _stamp(result: Any) -> int:
    rows = result["results"]
    return int(rows[0]["stamp"]) if rows else 0
