"""Rate windows (SPEC §14, ``core/limits.py``; ``migrations/0004_rate_windows.sql``, ``0009``): the
limiter's reports, in a batch of their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.shell.d1.runner import batch, run

__all__ = ["report_windows", "sweep_windows"]

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
    results = await batch("count requests", db, statements)
    return [int(r["results"][0]["count"]) for r in results]


async def sweep_windows(db: Any, start: int) -> None:
    """Delete the rows of windows that ended before ``start`` (the cron)."""
    await run("sweep rate windows", db.prepare(_SWEEP_WINDOWS).bind(start))
