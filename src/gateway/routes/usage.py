"""Usage and health under ``/api/admin`` (SPEC §17): the hourly buckets and the recent failures.

Both first write this isolate's unflushed counts (``meter.flush(force=True)``), so what the serving
isolate counted is there at once; other isolates' counts arrive with their next flush, within
``usage_flush_minutes`` of their traffic. D1 sums the isolates' parts (``d1.read_usage``). Names
come from the configuration and the clients table as they are now:
a deleted provider or client is shown by its id (``#7``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway import isolate, meter
from gateway.answers import json_response
from gateway.call import Call
from gateway.core import rules
from gateway.core.config import Config
from gateway.core.usage import Tally
from gateway.errors import InvalidRequestError
from gateway.serving.auth import admin_config
from gateway.shell import d1
from gateway.shell.http import JsResponse

__all__ = ["events", "prune", "usage"]

# Labels of the id 0 rows (core/usage.py): the API token, a request nothing served, no key.
_DEFAULT_CLIENT = "(api token)"
_NONE = "(none)"


def _time_param(call: Call, name: str, default: int) -> int:
    """``name`` as epoch ms: an integer, or an ISO 8601 time (UTC unless it says otherwise)."""
    text = call.request.query_param(name)
    if text is None or not text.strip():
        return default
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequestError(
            f"'{name}' must be epoch milliseconds or an ISO 8601 time, such as 2026-12-01T00:00:00Z.", param=name
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


class _Names:
    """Group labels as the configuration names them now."""

    def __init__(self, config: Config, clients: dict[int, str]) -> None:
        self._providers = {p.id: p.name for p in config.providers}
        self._clients = clients

    def provider(self, provider_id: int) -> str:
        return _NONE if not provider_id else self._providers.get(provider_id, f"#{provider_id}")

    def client(self, client_id: int) -> str:
        return _DEFAULT_CLIENT if not client_id else self._clients.get(client_id, f"#{client_id}")

    def key(self, provider_id: int, key_id: int) -> str:
        return _NONE if not key_id else f"{self.provider(provider_id)}#{key_id}"

    def group(self, by: str, row: dict[str, Any]) -> tuple[str, int | None]:
        """The label of ``row``'s group and its id (None for groups that have none)."""
        if by == "provider":
            return self.provider(int(row["provider_id"])), int(row["provider_id"])
        if by == "key":
            return self.key(int(row["provider_id"]), int(row["key_id"])), int(row["key_id"])
        if by == "client":
            return self.client(int(row["client_id"])), int(row["client_id"])
        return str(row[by]), None


async def _names(call: Call, config: Config) -> _Names:
    return _Names(config, {c.id: c.name for c in await d1.load_clients(call.env.DB)})


def _labelled(label: str, group_id: int | None, tally: Tally) -> dict[str, Any]:
    head: dict[str, Any] = {"group": label}
    if group_id is not None:
        head["id"] = group_id
    return head | tally.as_json()


async def usage(call: Call) -> JsResponse:
    """``GET /api/admin/usage?from&to&by=provider|model|client|key|surface``: per hour and group
    the buckets that had traffic, per group the range's totals (most requests first), and the
    totals of everything. ``from``/``to``: epoch ms or ISO 8601 (default: the last 24 hours)."""
    config = await admin_config(call)
    by = call.request.query_param("by") or "provider"
    if by not in d1.USAGE_GROUPS:
        raise InvalidRequestError(f"'by' must be one of: {', '.join(d1.USAGE_GROUPS)}.", param="by")
    now_ms = isolate.now_ms()
    to_ms = _time_param(call, "to", now_ms)
    from_ms = _time_param(call, "from", to_ms - rules.DAY_MS)
    if from_ms >= to_ms:
        raise InvalidRequestError("'from' must be before 'to'.", param="from")
    await meter.flush(call.env.DB, force=True)
    # A bucket is counted when its hour starts in the range: the hour holding ``from`` included.
    rows = await d1.read_usage(call.env.DB, from_ms - from_ms % rules.HOUR_MS, to_ms, by)
    names = await _names(call, config)
    buckets: list[tuple[int, str, int | None, Tally]] = []
    groups: dict[tuple[str, int | None], Tally] = {}
    total = Tally()
    for row in rows:
        label, group_id = names.group(by, row)
        tally = Tally.from_row(row)
        buckets.append((int(row["hour_ms"]), label, group_id, tally))
        groups.setdefault((label, group_id), Tally()).merge(tally)
        total.merge(tally)
    buckets.sort(key=lambda b: (b[0], b[1]))
    ranked = sorted(groups.items(), key=lambda item: (-item[1].requests, item[0][0]))
    return json_response(
        {
            "from": from_ms,
            "to": to_ms,
            "by": by,
            "buckets": [{"hour": hour} | _labelled(label, gid, tally) for hour, label, gid, tally in buckets],
            "groups": [_labelled(label, gid, tally) for (label, gid), tally in ranked],
            "totals": total.as_json(),
        }
    )


async def events(call: Call) -> JsResponse:
    """``GET /api/admin/events?limit=N``: the newest failures (at most ``USAGE_EVENTS_KEPT``) of
    the last ``USAGE_EVENTS_READ_MS``, newest first, their messages redacted when they were counted
    (an isolate keeps its newest ``USAGE_EVENTS_PER_HOUR`` of an hour)."""
    config = await admin_config(call)
    text = call.request.query_param("limit")
    kept = rules.USAGE_EVENTS_KEPT
    if text is not None and not (text.isdigit() and 1 <= int(text) <= kept):
        raise InvalidRequestError(f"'limit' must be a whole number from 1 to {kept}.", param="limit")
    await meter.flush(call.env.DB, force=True)
    since_ms = isolate.now_ms() - rules.USAGE_EVENTS_READ_MS
    rows = await d1.read_events(call.env.DB, since_ms - since_ms % rules.HOUR_MS, int(text) if text else kept)
    names = await _names(call, config)
    return json_response(
        {
            "events": [
                {
                    "time": int(row["at_ms"]),
                    "client": names.client(int(row["client_id"])),
                    "client_id": int(row["client_id"]),
                    "provider": names.provider(int(row["provider_id"])),
                    "provider_id": int(row["provider_id"]),
                    "key": names.key(int(row["provider_id"]), int(row["key_id"])) if row["key_id"] else None,
                    "key_id": int(row["key_id"]),
                    "model": row["model"],
                    "surface": row["surface"],
                    "class": row["class"],
                    "status": None if row["status"] is None else int(row["status"]),
                    "message": row["message"],
                }
                for row in rows
            ]
        }
    )


async def prune(db: Any) -> None:
    """The cron's part (SPEC §17): the parts of hours older than ``USAGE_KEEP_MS`` go."""
    await d1.prune_usage(db, isolate.now_ms() - rules.USAGE_KEEP_MS)
