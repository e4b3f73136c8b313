"""Usage (SPEC §17, §18, ``core/usage.py``; ``migrations/0010_usage_parts.sql``): written by an
isolate's flush, one row per hour it changed, replacing the isolate's row of that hour (a batch),
and summed by D1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.core import usage
from gateway.shell.d1.runner import batch, run

__all__ = ["USAGE_GROUPS", "prune_usage", "read_events", "read_usage", "write_usage"]

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
    await batch("write usage", db, statements)


async def read_usage(db: Any, from_ms: int, to_ms: int, by: str) -> list[dict[str, Any]]:
    """The sums of the buckets whose hour starts in [``from_ms``, ``to_ms``), per hour and group
    (``by``: a key of ``USAGE_GROUPS``), summed by D1 over every isolate's part, each row with
    ``hour_ms``, the group's columns and every name of ``usage.COLUMNS``."""
    group = USAGE_GROUPS[by]
    sql = f"SELECT hour_ms, {group}, {_SUMS} FROM ({_BUCKETS}) GROUP BY hour_ms, {group} ORDER BY hour_ms"
    return list((await run("read usage", db.prepare(sql).bind(from_ms, to_ms), "all"))["results"])


async def read_events(db: Any, since_ms: int, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` events of the parts of the hours from ``since_ms`` on, newest first."""
    return list((await run("read events", db.prepare(_EVENTS).bind(since_ms, limit), "all"))["results"])


async def prune_usage(db: Any, before_ms: int) -> None:
    """Delete the parts of the hours before ``before_ms`` (one statement)."""
    await run("prune usage", db.prepare(_PRUNE).bind(before_ms))
