"""Counting one routed request into the usage book (SPEC §17; the buckets are ``core/usage.py``'s).

Rules:
- A request (``RequestCount``) counts once, in the bucket of what answered it, when its answer ends (a
  stream's end, not its start): a request, a success when an upstream served an answer the
  gateway could use, a failover when it was served after a failed attempt, the class
  ``caller_error`` when the upstream refused it (SPEC §4), its tokens, its latencies; nothing
  served: a request of provider 0 under the model asked (cut to ``MODEL_MAX_CHARS``).
- Each failed attempt counts an error of its class in its own bucket, and is kept as an ``Event``
  (its message redacted).
- Tokens are the upstream's (``usage_of``: the last OpenAI ``usage`` object of an answer or a
  stream's tail, or a translator's), each count clamped to ``TOKENS_MAX`` (``Tokens.stated``); an
  answer that states none is estimated,
  counted apart: the prompt by its size, a stream at one token per event (``estimate_output``), a
  non-streamed answer by its text (``estimate_answer``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gateway.core import rules
from gateway.core.classify import FailureKind, error_message, redact
from gateway.core.outcome import CallerError, LoopResult, Served
from gateway.core.trail import Trail, TrailEntry
from gateway.core.usage import BucketKey, Event, UsageBook, hour_of

__all__ = [
    "MODEL_MAX_CHARS",
    "TOKENS_MAX",
    "USAGE_TAIL_BYTES",
    "RequestCount",
    "Tokens",
    "estimate_answer",
    "estimate_output",
    "estimate_text",
    "surface_of",
    "usage_of",
]

# An answer's usage is looked for in its last bytes (OpenAI puts it last).
USAGE_TAIL_BYTES = 4096
# A model name a caller asked for, as far as a bucket keeps it (a bucket key is not the caller's
# to make arbitrarily large).
MODEL_MAX_CHARS = 200
# An upstream's token count above this is taken as this (a count is an SQLite integer, summed).
TOKENS_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Tokens:
    """An upstream's usage: ``input`` includes ``cached`` (read from a cache)."""

    input: int
    output: int
    cached: int = 0

    @classmethod
    def stated(cls, input: object, output: object, cached: object = 0) -> Tokens:
        """The counts an upstream stated, each a whole number from 0 to ``TOKENS_MAX`` (anything
        else is 0): every path that reads an upstream's usage makes its ``Tokens`` here."""
        return cls(_count(input), _count(output), _count(cached))


# The front door of a path, for the ``surface`` of a bucket (SPEC §12).
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
    """A token count as stated: a whole number from 0 to ``TOKENS_MAX``, else 0."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return 0
    return min(value, TOKENS_MAX)


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
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        return Tokens.stated(usage.get("prompt_tokens"), usage.get("completion_tokens"), cached)
    return None


def estimate_output(stream_bytes: int, event_bytes: int) -> int:
    """The output tokens of a stream that reported no usage: one per event, the events taken to be
    as long as its first (``event_bytes``)."""
    return stream_bytes // max(event_bytes, 1)


def estimate_text(size: int) -> int:
    """The tokens of ``size`` bytes of text."""
    return size // rules.CHARS_PER_TOKEN


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


class RequestCount:
    """One routed request, from its routing to the end of its answer (see the module rules).
    ``routed`` takes the fallback loop's result (the failed attempts count at once); ``report``
    keeps what the answer said of its tokens; ``end`` counts the request itself, once."""

    __slots__ = (
        "_book", "_client", "_ended", "_first_byte_ms", "_input_estimate", "_key", "_outcome", "_reported",
        "_started_ms", "deferred", "surface",
    )  # fmt: skip

    def __init__(self, book: UsageBook, client: int, surface: str, started_ms: int, input_estimate: int) -> None:
        self._book = book
        self._client = client
        self.surface = surface
        self._started_ms = started_ms
        self._input_estimate = input_estimate
        self._key: BucketKey | None = None
        self._first_byte_ms: int | None = None
        self._outcome: tuple[bool, bool, bool] = (False, False, False)  # served, failover, refused
        self._reported: tuple[Tokens | None, int] = (None, 0)
        self._ended = False
        # True once the answer's end is another's to report (a stream's relay): not the handler's.
        self.deferred = False

    def routed(self, result: LoopResult, asked: str | None, now_ms: int) -> None:
        book, client, surface = self._book, self._client, self.surface
        self.failed(result.trail)
        if isinstance(result, Served | CallerError):
            candidate = result.candidate
            key_id = candidate.key.id if candidate.key is not None else 0
            self._key = BucketKey(hour_of(now_ms), client, candidate.provider.id, key_id, candidate.model, surface)
            self._first_byte_ms = now_ms - self._started_ms
            refused = isinstance(result, CallerError)
            self._outcome = (not refused, bool(result.trail) and not refused, refused)
            if refused:
                observed = result.observed
                book.note(
                    Event(
                        now_ms,
                        client,
                        candidate.provider.id,
                        key_id,
                        candidate.model,
                        surface,
                        FailureKind.CALLER_ERROR.value,
                        observed.status,
                        redact(error_message(observed.body) or observed.body),
                    )
                )
        else:
            asked = (asked or "auto")[:MODEL_MAX_CHARS]
            self._key = BucketKey(hour_of(now_ms), client, 0, 0, asked, surface)

    def failed(self, trail: Trail) -> None:
        """Count the failed attempts of ``trail`` (the routing's, or a rescue's, SPEC §16)."""
        for entry in trail:
            _count_failure(self._book, self._client, self.surface, entry)

    def report(self, tokens: Tokens | None, output_estimate: int = 0) -> None:
        """What the answer says of its tokens (None: nothing; then ``output_estimate``), for ``end``."""
        self._reported = (tokens, output_estimate)

    def end(self, now_ms: int, cut: bool = False, broken: bool = False, rescued: bool = False) -> None:
        """Count the request with its reported tokens (else the input estimate and the output
        estimate reported); ``cut``: its stream broke (ended with an error of the relay's, or was
        rescued); ``rescued``: another candidate finished it (SPEC §16); ``broken``: the answer
        served could not be used (not a success)."""
        if self._ended or self._key is None:
            return
        self._ended = True
        served, failover, refused = self._outcome
        tally = self._book.bucket(self._key)
        tally.requests += 1
        if self._key.provider == 0:
            return
        tally.successes += served and not broken
        tally.failovers += failover
        if refused:
            errors = tally.errors
            errors["caller_error"] = errors.get("caller_error", 0) + 1
        else:
            tally.streams_cut += cut
            tally.rescues += rescued
            tokens, output_estimate = self._reported
            if tokens is not None:
                tally.tokens_in += tokens.input
                tally.tokens_out += tokens.output
                tally.cached_in += tokens.cached
            else:
                tally.estimated_in += self._input_estimate
                tally.estimated_out += output_estimate
        if self._first_byte_ms is not None:
            tally.first_byte.add(self._first_byte_ms)
        tally.ends.add(now_ms - self._started_ms)


def _count_failure(book: UsageBook, client: int, surface: str, entry: TrailEntry) -> None:
    failure = entry.failure
    kind = failure.kind.value
    key = BucketKey(hour_of(entry.at_ms), client, entry.provider_id, entry.used_key_id, entry.model, surface)
    errors = book.bucket(key).errors
    errors[kind] = errors.get(kind, 0) + 1
    book.note(
        Event(
            entry.at_ms,
            client,
            entry.provider_id,
            entry.used_key_id,
            entry.model,
            surface,
            kind,
            failure.status,
            redact(failure.reason),
        )
    )
