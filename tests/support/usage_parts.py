"""Usage parts read back (``core/usage.py``'s encoding of an isolate's hour): buckets as D1's sums
read them, in ``COLUMNS`` order, and events as ``GET /api/admin/events`` lists them."""

from __future__ import annotations

import json

from gateway.core.usage import COLUMNS, BucketKey, Event, Tally


def decode_buckets(hour_ms: int, text: str) -> dict[BucketKey, Tally]:
    """A part's buckets as tallies."""
    buckets: dict[BucketKey, Tally] = {}
    for row in json.loads(text):
        client, provider, key, model, surface, *counts = row
        buckets[BucketKey(hour_ms, client, provider, key, model, surface)] = Tally.from_row(
            dict(zip(COLUMNS, counts, strict=False))
        )
    return buckets


def decode_events(text: str) -> list[Event]:
    """A part's events, oldest first."""
    return [Event(*row) for row in json.loads(text)]
