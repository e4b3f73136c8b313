"""Usage counted in isolate memory (SPEC §17): hourly buckets, merged, flushed at most once a minute.

Rules:
- A bucket is one hour (UTC, ``hour_of``) of one (client, provider, key, model, surface); ``client``
  0 is the default client (the API token), ``key`` 0 a request that chose no key.
- A ``Tally`` is what one request, or one attempt of it, adds to its bucket: requests, successes,
  failovers (requests served after at least one failed attempt), errors by class (SPEC §5.1),
  streams cut, rescues, tokens in and out as the upstream reported them and, apart, as estimated,
  and latency to the first byte and to the end in a fixed ``Histogram``. Tallies merge by adding.
- ``UsageBook`` holds the isolate's buckets. ``take`` hands them all over for one flush and empties
  the book, at most once per ``FLUSH_INTERVAL_MS``; a flush that fails gives them back with
  ``give_back`` (merged into what came meanwhile), so nothing is counted twice or lost but what an
  isolate holds when it dies: at most its last minute.
- Quantiles come from the histogram: linear within the bin holding the rank, the open last bin
  answering its lower edge (a latency above the last edge is only known to be above it).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.core import rules

__all__ = ["FLUSH_INTERVAL_MS", "LATENCY_EDGES_MS", "BucketKey", "Histogram", "Tally", "UsageBook", "hour_of"]

# Upper edges of the latency bins, in ms; one more bin holds everything above the last edge.
LATENCY_EDGES_MS: tuple[int, ...] = (
    25, 50, 100, 200, 350, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000, 15_000, 20_000,
    30_000, 45_000, 60_000,
)
# An isolate writes its buckets at most this often (SPEC §17: no D1 write per request).
FLUSH_INTERVAL_MS = rules.MINUTE_MS


def hour_of(epoch_ms: int) -> int:
    """The start of the UTC hour holding ``epoch_ms``."""
    return epoch_ms - epoch_ms % rules.HOUR_MS


@dataclass(slots=True)
class Histogram:
    """Counts per latency bin (``LATENCY_EDGES_MS`` plus the open last bin)."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_EDGES_MS) + 1))

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
    """What a request (or an attempt) adds to its bucket; see the module rules."""

    requests: int = 0
    successes: int = 0
    failovers: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    streams_cut: int = 0
    rescues: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    estimated_in: int = 0
    estimated_out: int = 0
    first_byte: Histogram = field(default_factory=Histogram)
    total: Histogram = field(default_factory=Histogram)

    def merge(self, other: Tally) -> None:
        self.requests += other.requests
        self.successes += other.successes
        self.failovers += other.failovers
        for kind, count in other.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + count
        self.streams_cut += other.streams_cut
        self.rescues += other.rescues
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.estimated_in += other.estimated_in
        self.estimated_out += other.estimated_out
        self.first_byte.merge(other.first_byte)
        self.total.merge(other.total)


class UsageBook:
    """The isolate's buckets (see the module rules); the clock is the caller's ``now_ms``."""

    __slots__ = ("_buckets", "_taken_ms")

    def __init__(self) -> None:
        self._buckets: dict[BucketKey, Tally] = {}
        self._taken_ms: int | None = None

    def add(self, key: BucketKey, tally: Tally) -> None:
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = tally
        else:
            bucket.merge(tally)

    def due(self, now_ms: int) -> bool:
        """True when there is something to flush and the last flush is a minute old."""
        return bool(self._buckets) and (self._taken_ms is None or now_ms - self._taken_ms >= FLUSH_INTERVAL_MS)

    def take(self, now_ms: int) -> Mapping[BucketKey, Tally]:
        """Every bucket, for one flush (the book is then empty), or nothing when not ``due``."""
        if not self.due(now_ms):
            return {}
        taken, self._buckets = self._buckets, {}
        self._taken_ms = now_ms
        return taken

    def give_back(self, taken: Mapping[BucketKey, Tally]) -> None:
        """Buckets a flush could not write, merged back with what was counted meanwhile."""
        for key, tally in taken.items():
            self.add(key, tally)

    def __len__(self) -> int:
        return len(self._buckets)
