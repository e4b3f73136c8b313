"""Counting a routed request into the usage buckets (SPEC §17, core/counting.py)."""

from __future__ import annotations

import pytest

from gateway.core.attempt import Candidate, Observed
from gateway.core.classify import Failure, FailureKind
from gateway.core.counting import (
    MODEL_MAX_CHARS,
    TOKENS_MAX,
    RequestCount,
    Tokens,
    estimate_answer,
    estimate_output,
    surface_of,
    usage_of,
)
from gateway.core.outcome import CallerError, Exhausted, Served
from gateway.core.trail import TrailEntry
from gateway.core.usage import BucketKey, Event, Tally, UsageBook, hour_of
from support.factories import T0, provider
from support.usage_parts import decode_buckets, decode_events


def written(book: UsageBook) -> tuple[dict[BucketKey, Tally], list[Event]]:
    """What the book's next write carries: every bucket and event of its hours, decoded."""
    buckets: dict[BucketKey, Tally] = {}
    events: list[Event] = []
    for part in book.take(T0, force=True).parts:
        buckets |= decode_buckets(part.hour_ms, part.buckets)
        events += decode_events(part.events)
    return buckets, events


def failed(provider_id: int, key_id: int, kind: FailureKind = FailureKind.RATE_LIMITED, at: int = T0) -> TrailEntry:
    failure = Failure(kind, "key", "heuristic", 0, status=429, reason="slow down, sk-live-abcdefghijklmnop")
    return TrailEntry(f"p{provider_id}", "m", failure, None, provider_id, key_id, at)


def served_by(provider_id: int = 2, *trail: TrailEntry) -> Served:
    serving = provider(provider_id)
    return Served(Candidate(serving, "m", serving.keys[0]), None, 10, trail, None)


def test_a_request_counts_once_where_it_was_served_and_each_failed_attempt_where_it_failed():
    book = UsageBook()
    count = RequestCount(book, 7, "chat", T0, input_estimate=40)
    count.routed(served_by(2, failed(1, 101)), "m", T0 + 120)
    count.report(Tokens(30, 12, 8))
    count.end(T0 + 900)
    count.end(T0 + 950)  # a second end counts nothing

    buckets = written(book)[0]
    serving = buckets[BucketKey(hour_of(T0), 7, 2, 201, "m", "chat")]
    assert (serving.requests, serving.successes, serving.failovers) == (1, 1, 1)
    assert (serving.tokens_in, serving.tokens_out, serving.cached_in, serving.estimated_in) == (30, 12, 8, 0)
    # 120 ms to the first byte and 900 ms to the end: the (100, 200] and (750, 1000] bins
    assert serving.first_byte.quantile(1) == 200 and serving.ends.quantile(1) == 1_000
    failing = buckets[BucketKey(hour_of(T0), 7, 1, 101, "m", "chat")]
    assert (failing.requests, failing.errors) == (0, {"rate_limited": 1})


def test_an_answer_without_usage_counts_its_estimates_apart():
    book = UsageBook()
    count = RequestCount(book, 0, "anthropic", T0, input_estimate=40)
    count.routed(served_by(), "m", T0)
    count.report(None, output_estimate=9)
    count.end(T0, cut=True)

    [tally] = written(book)[0].values()
    assert (tally.tokens_in, tally.tokens_out, tally.estimated_in, tally.estimated_out) == (0, 0, 40, 9)
    assert tally.streams_cut == 1


def test_a_refusal_is_a_caller_error_of_the_provider_that_refused():
    book = UsageBook()
    refusing = provider(3)
    observed = Observed(400, {}, '{"error": {"message": "messages must not be empty"}}')
    count = RequestCount(book, 0, "chat", T0, input_estimate=5)
    count.routed(CallerError(Candidate(refusing, "m", refusing.keys[0]), observed, (failed(1, 101),)), "m", T0)
    count.end(T0)

    taken = written(book)
    tally = taken[0][BucketKey(hour_of(T0), 0, 3, 301, "m", "chat")]
    assert (tally.requests, tally.successes, tally.failovers, tally.errors) == (1, 0, 0, {"caller_error": 1})
    assert tally.estimated_in == 0  # no answer, no tokens
    assert [(e.kind, e.status, e.message) for e in taken[1]][-1] == ("caller_error", 400, "messages must not be empty")


def test_a_request_nothing_served_counts_under_provider_0_and_the_model_asked():
    book = UsageBook()
    count = RequestCount(book, 0, "gemini", T0, input_estimate=5)
    exhausted = Exhausted(503, "server_error", "all_failed", "…", None, (), (failed(1, 101), failed(2, 201)))
    count.routed(exhausted, "auto", T0)
    count.end(T0)

    buckets = written(book)[0]
    nothing = buckets[BucketKey(hour_of(T0), 0, 0, 0, "auto", "gemini")]
    assert (nothing.requests, nothing.successes, nothing.errors) == (1, 0, {})
    assert sum(t.errors.get("rate_limited", 0) for t in buckets.values()) == 2


def test_failures_are_events_with_their_messages_redacted():
    book = UsageBook()
    RequestCount(book, 4, "chat", T0, 0).routed(served_by(2, failed(1, 101, at=T0 + 5)), "m", T0 + 10)

    [event] = written(book)[1]
    assert event == Event(T0 + 5, 4, 1, 101, "m", "chat", "rate_limited", 429, event.message)
    assert "sk-live" not in event.message and event.message.startswith("slow down")


@pytest.mark.parametrize(
    ("path", "surface"),
    [
        ("/v1/chat/completions", "chat"),
        ("/v1/messages", "anthropic"),
        ("/v1/responses", "responses"),
        ("/v1beta/models/m:streamGenerateContent", "gemini"),
        ("/v1/models/m:generateContent", "gemini"),
        ("/api/chat", "ollama"),
        ("/api/embed", "ollama"),
        ("/v1/embeddings", "embeddings"),
        ("/v1/completions", "completions"),
        ("/v1/audio/transcriptions", "transcriptions"),
        ("/v1/audio/speech", "speech"),
        ("/v1/images/edits", "images"),
    ],
)
def test_each_front_door_is_its_own_surface(path, surface):
    assert surface_of(path) == surface


@pytest.mark.parametrize(
    ("data", "tokens"),
    [
        (b'{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}', Tokens(12, 3)),
        (
            b'{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":6},"completion_tokens":1}}',
            Tokens(9, 1, 6),
        ),
        (b'{"object":"list","data":[],"usage":{"prompt_tokens":4,"total_tokens":4}}', Tokens(4, 0)),  # embeddings
        (
            b'data: {"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n'
            b'data: {"choices":[],"usage":null}\n\ndata: [DONE]\n\n',
            Tokens(1, 1),
        ),  # a null usage is passed over
        (b'data: {"x_groq":{"usage":{"prompt_tokens":5,"completion_tokens":2}}}\n\ndata: [DONE]\n\n', Tokens(5, 2)),
        (b'data: {"choices":[{"delta":{"content":"the word \\"usage\\": {"}}]}\n\ndata: [DONE]\n\n', None),
        (b'tokens":3}}\n\ndata: [DONE]\n\n', None),  # cut off by the tail's start
        (b'{"usage":{"input_tokens":3}}', None),  # not OpenAI's counts
    ],
)
def test_usage_is_the_last_openai_usage_object(data, tokens):
    assert usage_of(data) == tokens


def test_a_stream_without_usage_is_estimated_at_one_token_per_event():
    assert estimate_output(stream_bytes=1_600, event_bytes=160) == 10
    assert estimate_output(stream_bytes=100, event_bytes=0) == 100


@pytest.mark.parametrize(
    ("data", "tokens"),
    [
        (b'{"choices":[{"message":{"role":"assistant","content":"' + b"x" * 40 + b'"}}]}', 10),
        (b'{"choices":[{"message":{"content":"abcd","reasoning_content":"efgh"}},{"text":"ijkl"}]}', 3),
        (b'{"object":"list","data":[{"embedding":"AAAA"}]}', 0),  # no text out
        (b"not json at all!", 4),
    ],
)
def test_an_answer_without_usage_is_estimated_by_its_text_not_its_envelope(data, tokens):
    assert estimate_answer(data) == tokens


def test_an_answer_the_gateway_could_not_use_is_not_a_success():
    book = UsageBook()
    count = RequestCount(book, 0, "anthropic", T0, input_estimate=5)
    count.routed(served_by(), "m", T0)
    count.end(T0, broken=True)

    [tally] = written(book)[0].values()
    assert (tally.requests, tally.successes) == (1, 0)


def test_a_bucket_keeps_at_most_200_characters_of_a_model_it_was_asked_for():
    book = UsageBook()
    count = RequestCount(book, 0, "chat", T0, input_estimate=5)
    count.routed(Exhausted(502, "provider_error", "all_failed", "…", None, (), ()), "x" * 10_000, T0)
    count.end(T0)

    [key] = written(book)[0]
    assert key.model == "x" * MODEL_MAX_CHARS


def test_token_counts_are_clamped():
    huge = b'{"usage":{"prompt_tokens":1' + b"0" * 400 + b',"completion_tokens":-5}}'
    assert usage_of(huge) == Tokens(TOKENS_MAX, 0)


def test_every_stated_count_is_a_whole_number_within_bounds():
    # The translators' and the Messages answer's counts come through here too (not only usage_of).
    assert Tokens.stated(-3, 10**40, True) == Tokens(0, TOKENS_MAX, 0)
    assert Tokens.stated(12, "7", 3) == Tokens(12, 0, 3)


def test_a_rescued_stream_counts_as_cut_and_rescued_with_the_rescues_failed_attempts():
    book = UsageBook()
    count = RequestCount(book, 0, "chat", T0, input_estimate=5)
    count.routed(served_by(), "m", T0)
    count.failed((failed(1, 101),))  # the rescue's own failed attempt (SPEC §16)
    count.report(Tokens(30, 12))
    count.end(T0 + 900, cut=True, rescued=True)

    buckets = written(book)[0]
    serving = buckets[BucketKey(hour_of(T0), 0, 2, 201, "m", "chat")]
    assert (serving.requests, serving.successes, serving.streams_cut, serving.rescues) == (1, 1, 1, 1)
    assert buckets[BucketKey(hour_of(T0), 0, 1, 101, "m", "chat")].errors == {"rate_limited": 1}
