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
- A request (``Visit``) counts once, in the bucket of what answered it, when its answer ends (a
  stream's end, not its start): a request, a success when an upstream served it, a failover when
  an attempt failed before, the class ``caller_error`` when the upstream refused it (SPEC §4), its
  tokens, its latencies; nothing served: a request of provider 0. Each failed attempt counts an
  error of its class in its own bucket, and is kept as an ``Event``.
- ``UsageBook`` holds the isolate's buckets and its newest ``USAGE_EVENTS_KEPT`` events. ``take``
  hands them all over for one flush and empties the book, at most once per
  ``USAGE_FLUSH_INTERVAL_MS`` (``force``: at once, for an admin reading usage); a flush that fails
  gives them back with ``give_back`` (merged into what came meanwhile), so nothing is counted twice
  or lost but what an isolate holds when it dies: at most its last minute.
- Quantiles come from the histogram: linear within the bin holding the rank, the open last bin
  answering its lower edge (a latency above the last edge is only known to be above it).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.core import rules
from gateway.core.classify import FailureKind, error_message, redact
from gateway.core.outcome import CallerError, LoopResult, Served
from gateway.core.trail import TrailEntry

__all__ = [
    "COLUMNS",
    "LATENCY_EDGES_MS",
    "BucketKey",
    "Event",
    "Histogram",
    "Tally",
    "Taken",
    "Tokens",
    "UsageBook",
    "Visit",
    "estimate_answer",
    "estimate_output",
    "estimate_text",
    "hour_of",
    "surface_of",
    "usage_of",
]

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
# A token is about this many bytes of text (the estimate of answers that report no usage).
_BYTES_PER_TOKEN = 4


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


# --- Counting one request ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tokens:
    """An upstream's usage: ``input`` includes ``cached`` (read from a cache)."""

    input: int
    output: int
    cached: int = 0


# The front door of a path, for the ``surface`` of a bucket (SPEC §12); None: not routed.
_SURFACES = (
    ("/v1/chat/completions", "chat"),
    ("/v1/messages", "anthropic"),
    ("/v1/responses", "responses"),
    ("/v1/embeddings", "embeddings"),
    ("/v1/completions", "completions"),
    ("/v1/audio/transcriptions", "transcriptions"),
    ("/v1/audio/translations", "translations"),
    ("/v1/audio/speech", "speech"),
    ("/v1/images/", "images"),
    ("/v1beta/", "gemini"),
    ("/v1/models/", "gemini"),
    ("/api/", "ollama"),
)


def surface_of(path: str) -> str:
    """The surface a routed request came in by: ``chat``, ``anthropic``, ``responses``, ``gemini``,
    ``ollama``, ``embeddings``, ``completions``, ``transcriptions``, ``translations``, ``speech``
    or ``images``."""
    for prefix, surface in _SURFACES:
        if path.startswith(prefix):
            return surface
    return "chat"


_DECODER = json.JSONDecoder()


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_of(data: bytes) -> Tokens | None:
    """The last ``"usage"`` object in ``data`` (an OpenAI answer, or its stream's tail) with a
    ``prompt_tokens`` or ``completion_tokens`` count; None when there is none (a ``null`` usage, or
    one cut off by the tail's start, is passed over)."""
    end = len(data)
    while (at := data.rfind(b'"usage"', 0, end)) >= 0:
        end = at
        rest = data[at + 7 :].lstrip()
        if not rest.startswith(b":"):
            continue
        rest = rest[1:].lstrip()
        if not rest.startswith(b"{"):
            continue
        try:
            usage, _ = _DECODER.raw_decode(rest.decode("utf-8", "replace"))
        except ValueError:
            continue
        if "prompt_tokens" not in usage and "completion_tokens" not in usage:
            continue
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
        return Tokens(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), cached)
    return None


def estimate_output(stream_bytes: int, event_bytes: int) -> int:
    """The output tokens of a stream that reported no usage: one per event, the events taken to be
    as long as its first (``event_bytes``)."""
    return stream_bytes // max(event_bytes, 1)


def estimate_text(size: int) -> int:
    """The tokens of ``size`` bytes of text."""
    return size // _BYTES_PER_TOKEN


def estimate_answer(data: bytes) -> int:
    """The output tokens of a non-streamed OpenAI answer that reported no usage: its choices' text
    (message content and reasoning, or a completion's text) by its size; an answer that is not
    such JSON, by its whole size."""
    try:
        answer = json.loads(data)
    except ValueError:
        return estimate_text(len(data))
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list):
        return 0 if isinstance(answer, dict) else estimate_text(len(data))
    size = 0
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        parts = [choice.get("text")]
        if isinstance(message, dict):
            parts += [message.get("content"), message.get("reasoning_content"), message.get("reasoning")]
        size += sum(len(part.encode()) for part in parts if isinstance(part, str))
    return estimate_text(size)


class Visit:
    """One routed request, from its routing to the end of its answer (see the module rules).
    ``routed`` takes the fallback loop's result (the failed attempts count at once); ``end``
    counts the request itself, once."""

    __slots__ = ("_book", "_client", "_ended", "_first_byte_ms", "_input_estimate", "_key", "_started_ms",
                 "_surface", "_outcome", "deferred")

    def __init__(self, book: UsageBook, client: int, surface: str, started_ms: int, input_estimate: int) -> None:
        self._book = book
        self._client = client
        self._surface = surface
        self._started_ms = started_ms
        self._input_estimate = input_estimate
        self._key: BucketKey | None = None
        self._first_byte_ms: int | None = None
        self._outcome: tuple[bool, bool, bool] = (False, False, False)  # served, failover, refused
        self._ended = False
        # True once the answer's end is another's to report (a stream's relay): not the handler's.
        self.deferred = False

    def routed(self, result: LoopResult, asked: str | None, now_ms: int) -> None:
        book, client, surface = self._book, self._client, self._surface
        for entry in result.trail:
            _count_failure(book, client, surface, entry)
        if isinstance(result, Served | CallerError):
            candidate = result.candidate
            key_id = candidate.key.id if candidate.key is not None else 0
            self._key = BucketKey(hour_of(now_ms), client, candidate.provider.id, key_id, candidate.model, surface)
            self._first_byte_ms = now_ms - self._started_ms
            refused = isinstance(result, CallerError)
            self._outcome = (not refused, bool(result.trail), refused)
            if refused:
                observed = result.observed
                book.note(Event(now_ms, client, candidate.provider.id, key_id, candidate.model, surface,
                                FailureKind.CALLER_ERROR.value, observed.status,
                                redact(error_message(observed.body) or observed.body)))
        else:
            self._key = BucketKey(hour_of(now_ms), client, 0, 0, asked or "auto", surface)

    def end(self, now_ms: int, tokens: Tokens | None = None, output_estimate: int = 0, cut: bool = False) -> None:
        """Count the request: ``tokens`` as the upstream reported them, else the input estimate
        and ``output_estimate``; ``cut``: its stream ended with an error of the relay's."""
        if self._ended or self._key is None:
            return
        self._ended = True
        served, failover, refused = self._outcome
        tally = self._book.bucket(self._key)
        tally.requests += 1
        if self._key.provider == 0:
            return
        tally.successes += served
        tally.failovers += failover
        if refused:
            errors = tally.errors
            errors["caller_error"] = errors.get("caller_error", 0) + 1
        else:
            tally.streams_cut += cut
            if tokens is not None:
                tally.tokens_in += tokens.input
                tally.tokens_out += tokens.output
                tally.cached_in += tokens.cached
            else:
                tally.estimated_in += self._input_estimate
                tally.estimated_out += output_estimate
        if self._first_byte_ms is not None:
            tally.first_byte.add(self._first_byte_ms)
        tally.total.add(now_ms - self._started_ms)


def _count_failure(book: UsageBook, client: int, surface: str, entry: TrailEntry) -> None:
    failure = entry.failure
    kind = failure.kind.value
    key = BucketKey(hour_of(entry.at_ms), client, entry.provider_id, entry.used_key_id, entry.model, surface)
    errors = book.bucket(key).errors
    errors[kind] = errors.get(kind, 0) + 1
    book.note(Event(entry.at_ms, client, entry.provider_id, entry.used_key_id, entry.model, surface, kind,
                    failure.status, redact(failure.reason)))

