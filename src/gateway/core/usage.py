"""Usage counted in isolate memory (SPEC §17, §18): hourly buckets, one D1 row per isolate and hour.

Rules:
- A bucket is one hour (UTC, ``hour_of``) of one (client, provider, key, model, surface); ``client``
  0 is the default client (the API token), ``provider`` 0 a request that nothing served (its model:
  the one asked for), ``key`` 0 no key.
- A ``Tally`` is what a bucket counts: requests, successes, failovers (requests served after at
  least one failed attempt), errors by class (SPEC §5.1), streams cut, rescues, tokens in and out
  as the upstream reported them (``cached_in``: of those in, read from a cache) and, apart, as
  estimated, and latency to the first byte and to the end in a fixed ``Histogram``. Tallies merge by
  adding.
- What a request adds to which bucket is ``core/counting.py``'s.
- ``UsageBook`` holds, per hour, everything the isolate counted in it (cumulative, never emptied by a
  write) and the hour's newest ``USAGE_EVENTS_PER_HOUR`` failure events. A write (``take``) hands over
  every hour changed since its last confirmed write as one ``Part``: the hour's whole content, to
  REPLACE the isolate's row of that hour (``migrations/0010_usage_parts.sql``). So a write repeated,
  duplicated or lost counts nothing twice and loses nothing: the next write carries the hour again.
  ``seq`` orders an isolate's writes (D1 keeps the newest it got). ``written`` confirms a write; an
  hour over and written is dropped from memory, and a count that arrives later for it (a long stream
  routed in it) goes to the oldest hour still held, never into a new part that would replace the row.
- ``take`` gives something at most once per ``interval_ms`` (the setting ``usage_flush_minutes``),
  ``force``: at once (an admin reading usage). What an isolate holds when it dies, at most its last
  interval, is lost.
- Memory is bounded: at most ``USAGE_HOURS_KEPT`` hours (while D1 fails; past it the oldest is
  dropped unwritten, and named by the next ``take``) of at most ``USAGE_BUCKETS_PER_HOUR`` buckets
  (past it a new bucket's model is ``USAGE_OTHER_MODEL``).
- A part's buckets are JSON, an array per bucket: ``[client, provider, key, model, surface, *counts]``,
  the counts in ``COLUMNS`` order without their trailing zeros (D1 sums them with ``json_each``);
  its events an array per event: ``[at_ms, client, provider, key, model, surface, class, status,
  message]``.
- Quantiles come from the histogram: linear within the bin holding the rank, the open last bin
  answering its lower edge (a latency above the last edge is only known to be above it).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.core import rules
from gateway.core.classify import FailureKind

__all__ = [
    "COLUMNS",
    "LATENCY_EDGES_MS",
    "BucketKey",
    "Event",
    "Histogram",
    "Part",
    "Taken",
    "Tally",
    "UsageBook",
    "hour_of",
]  # fmt: skip

# Upper edges of the latency bins, in ms; one more bin holds everything above the last edge.
LATENCY_EDGES_MS: tuple[int, ...] = (
    25,
    50,
    100,
    200,
    350,
    500,
    750,
    1_000,
    1_500,
    2_000,
    3_000,
    5_000,
    7_500,
    10_000,
    15_000,
    20_000,
    30_000,
    45_000,
    60_000,
)
_BINS = len(LATENCY_EDGES_MS) + 1
_COUNTERS = (
    "requests", "successes", "failovers", "streams_cut", "rescues", "tokens_in", "tokens_out", "cached_in",
    "estimated_in", "estimated_out",
)  # fmt: skip
_ERROR_COLUMNS = tuple(f"err_{kind.value}" for kind in FailureKind)
# The counts of a bucket, in ``Tally.values`` order: a part's bucket arrays hold them in this order
# after the key (migrations/0010_usage_parts.sql), and D1's sums are named by them.
COLUMNS: tuple[str, ...] = (
    *_COUNTERS,
    *_ERROR_COLUMNS,
    *(f"fb_{i}" for i in range(_BINS)),
    *(f"end_{i}" for i in range(_BINS)),
)


def hour_of(epoch_ms: int) -> int:
    """The start of the UTC hour holding ``epoch_ms``."""
    return epoch_ms - epoch_ms % rules.HOUR_MS


@dataclass(slots=True)
class Histogram:
    """Counts per latency bin (``LATENCY_EDGES_MS`` plus the open last bin)."""

    counts: list[int] = field(default_factory=lambda: [0] * _BINS)

    def add(self, ms: int) -> None:
        self.counts[bisect.bisect_left(LATENCY_EDGES_MS, ms)] += 1

    def merge(self, other: Histogram) -> None:
        for i, count in enumerate(other.counts):
            self.counts[i] += count

    @property
    def total(self) -> int:
        return sum(self.counts)

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (0 < q ≤ 1) in ms, or None with no sample (see the module rules)."""
        total = self.total
        if not total:
            return None
        rank = q * total
        seen = 0
        for i, count in enumerate(self.counts):
            if count and seen + count >= rank:
                low = LATENCY_EDGES_MS[i - 1] if i else 0
                if i == len(LATENCY_EDGES_MS):
                    return float(low)
                return low + (LATENCY_EDGES_MS[i] - low) * (rank - seen) / count
            seen += count
        return float(LATENCY_EDGES_MS[-1])  # unreachable: the ranks add up to ``total``


@dataclass(frozen=True, slots=True)
class BucketKey:
    hour_ms: int
    client: int
    provider: int
    key: int
    model: str
    surface: str


@dataclass(slots=True)
class Tally:
    """What a bucket counts; see the module rules."""

    requests: int = 0
    successes: int = 0
    failovers: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    streams_cut: int = 0
    rescues: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached_in: int = 0
    estimated_in: int = 0
    estimated_out: int = 0
    first_byte: Histogram = field(default_factory=Histogram)
    ends: Histogram = field(default_factory=Histogram)  # the latency to the end of the answer

    def merge(self, other: Tally) -> None:
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, count in other.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + count
        self.first_byte.merge(other.first_byte)
        self.ends.merge(other.ends)

    def values(self) -> list[int]:
        """The counts in ``COLUMNS`` order."""
        errors = self.errors
        return [
            *(getattr(self, name) for name in _COUNTERS),
            *(errors.get(kind.value, 0) for kind in FailureKind),
            *self.first_byte.counts,
            *self.ends.counts,
        ]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Tally:
        """The tally of a row holding every name of ``COLUMNS`` (a missing or NULL one is 0)."""
        tally = cls(**{name: int(row.get(name) or 0) for name in _COUNTERS})
        for kind, column in zip(FailureKind, _ERROR_COLUMNS, strict=True):
            if count := int(row.get(column) or 0):
                tally.errors[kind.value] = count
        tally.first_byte.counts = [int(row.get(f"fb_{i}") or 0) for i in range(_BINS)]
        tally.ends.counts = [int(row.get(f"end_{i}") or 0) for i in range(_BINS)]
        return tally

    def as_json(self) -> dict[str, Any]:
        """The counts as the admin API shows them (``GET /api/admin/usage``)."""
        return {
            "requests": self.requests,
            "successes": self.successes,
            "failovers": self.failovers,
            "errors": dict(sorted(self.errors.items())),
            "error_count": sum(self.errors.values()),
            "streams_cut": self.streams_cut,
            "rescues": self.rescues,
            "tokens": {
                "input": self.tokens_in,
                "output": self.tokens_out,
                "cached_input": self.cached_in,
                "estimated_input": self.estimated_in,
                "estimated_output": self.estimated_out,
            },
            "latency_ms": {
                "first_byte": _quantiles(self.first_byte),
                "end": _quantiles(self.ends),
            },
        }


def _quantiles(histogram: Histogram) -> dict[str, float | None]:
    p50, p95 = histogram.quantile(0.5), histogram.quantile(0.95)
    return {"p50": None if p50 is None else round(p50, 1), "p95": None if p95 is None else round(p95, 1)}


@dataclass(frozen=True, slots=True)
class Event:
    """One failure, as ``GET /api/admin/events`` lists it (``message`` already redacted)."""

    at_ms: int
    client: int
    provider: int
    key: int
    model: str
    surface: str
    kind: str
    status: int | None
    message: str


Dims = tuple[int, int, int, str, str]  # a bucket's key within its hour: client, provider, key, model, surface


@dataclass(frozen=True, slots=True)
class Part:
    """One hour of one isolate as a write replaces its row: the whole hour, encoded (module rules)."""

    hour_ms: int
    buckets: str
    events: str
    changes: int  # the hour's count of changes it holds (``UsageBook.written`` reads it back)


@dataclass(frozen=True, slots=True)
class Taken:
    """What one write sends: the changed hours, the write's ``seq``, and the hours dropped unwritten
    (``USAGE_HOURS_KEPT``) since the last ``take``, for the log."""

    seq: int
    parts: tuple[Part, ...]
    dropped: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.parts)


@dataclass(slots=True)
class _Hour:
    buckets: dict[Dims, Tally] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    changes: int = 0  # counts made (``bucket`` and ``note`` calls)
    written: int = 0  # ``changes`` as of the newest write D1 confirmed


def _trimmed(values: list[int]) -> list[int]:
    end = len(values)
    while end and not values[end - 1]:
        end -= 1
    return values[:end]


def _json(rows: list[list[Any]]) -> str:
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def _encode(hour: _Hour) -> tuple[str, str]:
    buckets = _json([[*dims, *_trimmed(tally.values())] for dims, tally in hour.buckets.items()])
    events = _json(
        [[e.at_ms, e.client, e.provider, e.key, e.model, e.surface, e.kind, e.status, e.message] for e in hour.events]
    )
    return buckets, events


class UsageBook:
    """The isolate's hours of counts and events (see the module rules); the clock is the caller's.
    ``interval_ms``: how often it is written (the routed request's setting sets it)."""

    __slots__ = ("_closed_before", "_dropped", "_hours", "_seq", "_taken_ms", "interval_ms")

    def __init__(self, interval_ms: int = rules.DEFAULT_USAGE_FLUSH_MINUTES * rules.MINUTE_MS) -> None:
        self._hours: dict[int, _Hour] = {}
        self._closed_before = 0  # the hours before it that are not held were written (or dropped)
        self._dropped: list[int] = []
        self._seq = 0
        self._taken_ms: int | None = None
        self.interval_ms = interval_ms

    def _hour(self, hour_ms: int) -> _Hour:
        hour = self._hours.get(hour_ms)
        if hour is None:
            if hour_ms < self._closed_before:
                return self._hour(self._closed_before)  # a new part would replace the written row
            hour = self._hours[hour_ms] = _Hour()
            while len(self._hours) > rules.USAGE_HOURS_KEPT:
                oldest = min(self._hours)
                del self._hours[oldest]
                self._dropped.append(oldest)
                self._closed_before = max(self._closed_before, oldest + rules.HOUR_MS)
        hour.changes += 1
        return hour

    def bucket(self, key: BucketKey) -> Tally:
        """The bucket of ``key``, to count into at once (made empty when new): every count goes
        through here or ``note``, so the hour is known to have changed."""
        hour = self._hour(key.hour_ms)
        dims = (key.client, key.provider, key.key, key.model, key.surface)
        tally = hour.buckets.get(dims)
        if tally is None:
            if len(hour.buckets) >= rules.USAGE_BUCKETS_PER_HOUR:
                dims = (*dims[:3], rules.USAGE_OTHER_MODEL, dims[4])
                tally = hour.buckets.get(dims)
            if tally is None:
                tally = hour.buckets[dims] = Tally()
        return tally

    def add(self, key: BucketKey, tally: Tally) -> None:
        self.bucket(key).merge(tally)

    def note(self, event: Event) -> None:
        """Keep ``event`` in its hour; past ``USAGE_EVENTS_PER_HOUR`` the hour's oldest goes."""
        events = self._hour(hour_of(event.at_ms)).events
        events.append(event)
        if len(events) > rules.USAGE_EVENTS_PER_HOUR:
            del events[0]

    def _changed(self) -> list[tuple[int, _Hour]]:
        return [(hour_ms, hour) for hour_ms, hour in sorted(self._hours.items()) if hour.changes > hour.written]

    def due(self, now_ms: int) -> bool:
        """True when an hour changed since its last write and the last write is ``interval_ms`` old."""
        return (self._taken_ms is None or now_ms - self._taken_ms >= self.interval_ms) and bool(self._changed())

    def take(self, now_ms: int, force: bool = False) -> Taken:
        """Every changed hour as a ``Part``, for one write; nothing when not ``due`` (``force``:
        whenever an hour changed). The book keeps everything: ``written`` confirms the write."""
        changed = self._changed()
        if not changed or not (force or self.due(now_ms)):
            return Taken(self._seq, ())
        self._seq += 1
        self._taken_ms = now_ms
        dropped, self._dropped = tuple(self._dropped), []
        return Taken(self._seq, tuple(Part(h, *_encode(hour), hour.changes) for h, hour in changed), dropped)

    def written(self, taken: Taken, now_ms: int) -> None:
        """D1 holds ``taken``: its hours are written up to what it carried; hours over
        (before ``now_ms``'s) and written since their last change are dropped."""
        for part in taken.parts:
            hour = self._hours.get(part.hour_ms)
            if hour is not None:
                hour.written = max(hour.written, part.changes)
        current = hour_of(now_ms)
        for hour_ms, hour in list(self._hours.items()):
            if hour_ms < current and hour.written == hour.changes:
                del self._hours[hour_ms]
                self._closed_before = max(self._closed_before, hour_ms + rules.HOUR_MS)

    def hours(self) -> list[int]:
        """The hours held, oldest first."""
        return sorted(self._hours)

    def __len__(self) -> int:
        return sum(len(hour.buckets) for hour in self._hours.values())
