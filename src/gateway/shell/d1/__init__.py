"""D1 access: every SQL statement of the gateway, behind Python functions (SPEC §7, §13).

One module per table or concern, this package's face re-exporting what callers use:
- ``runner.py``: how a statement is sent (one round trip, one subrequest), D1's failures mapped to
  ``StorageError`` / ``ConflictError``, and ``health()``;
- ``config.py``: the configuration in one batch (providers, keys, settings, clients, pins, stamp);
- ``providers.py`` (with their keys), ``settings.py``, ``clients.py``, ``rate_windows.py``,
  ``openrouter_pins.py``, ``usage_parts.py``: each table's reads and writes;
- ``columns.py``: column values both ways, shared by the tables' modules.
"""

from __future__ import annotations

from gateway.shell.d1.clients import CLIENT_COLUMNS, delete_client, insert_client, load_clients, update_client
from gateway.shell.d1.config import check_config, load_config_rows
from gateway.shell.d1.openrouter_pins import load_pins, renew_pin, save_candidates, save_pin
from gateway.shell.d1.providers import (
    PROVIDER_COLUMNS,
    delete_key,
    delete_provider,
    get_provider,
    insert_key,
    insert_provider,
    load_providers,
    set_key_enabled,
    update_provider,
)
from gateway.shell.d1.rate_windows import report_windows, sweep_windows
from gateway.shell.d1.runner import health
from gateway.shell.d1.settings import claim_setting, delete_setting, load_settings, put_setting
from gateway.shell.d1.usage_parts import USAGE_GROUPS, prune_usage, read_events, read_usage, write_usage

__all__ = [
    "CLIENT_COLUMNS",
    "PROVIDER_COLUMNS",
    "USAGE_GROUPS",
    "check_config",
    "claim_setting",
    "delete_client",
    "delete_key",
    "delete_provider",
    "delete_setting",
    "get_provider",
    "health",
    "insert_client",
    "insert_key",
    "insert_provider",
    "load_clients",
    "load_config_rows",
    "load_pins",
    "load_providers",
    "load_settings",
    "prune_usage",
    "put_setting",
    "read_events",
    "read_usage",
    "renew_pin",
    "report_windows",
    "save_candidates",
    "save_pin",
    "set_key_enabled",
    "sweep_windows",
    "update_client",
    "update_provider",
    "write_usage",
]
