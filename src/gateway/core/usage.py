"""Usage counted in isolate memory (SPEC §17): hourly buckets, merged, flushed at most once a minute.

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
- ``UsageBook`` holds the isolate's buckets and its newest ``USAGE_EVENTS_KEPT`` events. ``take``
  hands them all over for one flush and empties the book, at most once per
  ``USAGE_FLUSH_INTERVAL_MS`` (``force``: at once, for an admin reading usage); a flush that fails
  gives them back with ``give_back`` (merged into what came meanwhile): what an isolate holds when
  it dies (at most its last minute) is lost, and a batch that D1 committed but whose answer was
  lost is counted again (at least once, never dropped on a failed write).
- Quantiles come from the histogram: linear within the bin holding the rank, the open last bin
  answering its lower edge (a latency above the last edge is only known to be above it).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.core import rules
from gateway.core.classify import FailureKind

__all__ = ["COLUMNS", "LATENCY_EDGES_MS", "BucketKey", "Event", "Histogram", "Tally", "Taken", "UsageBook", "hour_of"]

# Upper edges of the latency bins, in ms; one more bin holds everything above the last edge.
LATENCY_EDGES_MS: tuple[int, ...] = (
    25, 50, 100, 200, 350, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000, 15_000, 20_000,
    30_000, 45_000, 60_000,
)
_BINS = len(LATENCY_EDGES_MS) + 1
_COUNTERS = (
    "requests", "successes", "failovers", "streams_cut", "rescues", "tokens_in", "tokens_out", "cached_in",
    "estimated_in", "estimated_out",
)  # fmt: skip
_ERROR_COLUMNS = tuple(f"err_{kind.value}" for kind in FailureKind)
# The counts of a bucket as D1 stores them (migrations/0006_usage.sql), in ``Tally.values`` order.
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
    total: Histogram = field(default_factory=Histogram)

    def merge(self, other: Tally) -> None:
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, count in other.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + count
        self.first_byte.merge(other.first_byte)
        self.total.merge(other.total)

    def values(self) -> list[int]:
        """The counts in ``COLUMNS`` order."""
        errors = self.errors
        return [
            *(getattr(self, name) for name in _COUNTERS),
            *(errors.get(kind.value, 0) for kind in FailureKind),
            *self.first_byte.counts,
            *self.total.counts,
        ]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Tally:
        """The tally of a row holding every name of ``COLUMNS`` (a missing or NULL one is 0)."""
        tally = cls(**{name: int(row.get(name) or 0) for name in _COUNTERS})
        for kind, column in zip(FailureKind, _ERROR_COLUMNS, strict=True):
            if count := int(row.get(column) or 0):
                tally.errors[kind.value] = count
        tally.first_byte.counts = [int(row.get(f"fb_{i}") or 0) for i in range(_BINS)]
        tally.total.counts = [int(row.get(f"end_{i}") or 0) for i in range(_BINS)]
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
                "end": _quantiles(self.total),
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


@dataclass(frozen=True, slots=True)
class Taken:
    """What one flush writes."""

    buckets: Mapping[BucketKey, Tally]
    events: tuple[Event, ...]

    def __bool__(self) -> bool:
        return bool(self.buckets or self.events)


class UsageBook:
    """The isolate's buckets and events (see the module rules); the clock is the caller's."""

    __slots__ = ("_buckets", "_events", "_taken_ms")

    def __init__(self) -> None:
        self._buckets: dict[BucketKey, Tally] = {}
        self._events: list[Event] = []
        self._taken_ms: int | None = None

    def bucket(self, key: BucketKey) -> Tally:
        """The bucket of ``key``, to count into (made empty when new)."""
        tally = self._buckets.get(key)
        if tally is None:
            tally = self._buckets[key] = Tally()
        return tally

    def add(self, key: BucketKey, tally: Tally) -> None:
        self.bucket(key).merge(tally)

    def note(self, event: Event) -> None:
        """Keep ``event``; past ``USAGE_EVENTS_KEPT`` the oldest goes (D1 keeps no more)."""
        self._events.append(event)
        if len(self._events) > rules.USAGE_EVENTS_KEPT:
            del self._events[0]

    def due(self, now_ms: int) -> bool:
        """True when there is something to flush and the last flush is a minute old."""
        return bool(self._buckets or self._events) and (
            self._taken_ms is None or now_ms - self._taken_ms >= rules.USAGE_FLUSH_INTERVAL_MS
        )

    def take(self, now_ms: int, force: bool = False) -> Taken:
        """Every bucket and event, for one flush (the book is then empty); nothing when not
        ``due`` (``force``: whenever there is something)."""
        if not (self.due(now_ms) or (force and (self._buckets or self._events))):
            return Taken({}, ())
        taken = Taken(self._buckets, tuple(self._events))
        self._buckets, self._events = {}, []
        self._taken_ms = now_ms
        return taken

    def give_back(self, taken: Taken) -> None:
        """What a flush could not write, merged back with what was counted meanwhile."""
        for key, tally in taken.buckets.items():
            self.add(key, tally)
        events, self._events = self._events, []
        for event in (*taken.events, *events):
            self.note(event)

    def __len__(self) -> int:
        return len(self._buckets)
