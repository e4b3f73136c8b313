"""``gateway.surfaces.watch`` and ``gateway.surfaces.continuation``: the cut stream as the caller was
sent it (``StreamWatch``) and the rescue's continuation joined after it (``Continuation``), SPEC §16.

The streams have the shape OpenAI-compatible upstreams send (a role-only first chunk, ``usage`` in
a last chunk with empty ``choices``). What a client would read is checked by feeding the outputs
into the real surface translators: the text is the partial, then the continuation, exactly once.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from gateway.core.counting import Tokens
from gateway.core.seam import SeamRefusal
from gateway.surfaces.anthropic import AnthropicStream
from gateway.surfaces.chat import ChatStreamDecoder, Finish, Text, ToolArgs, ToolStart, UpstreamError, Usage
from gateway.surfaces.continuation import Continuation
from gateway.surfaces.watch import StreamWatch
from gateway.surfaces.whole_events import WholeEvents

CUT_ID = "chatcmpl-cut1"
RESCUE_ID = "chatcmpl-rescue9"
CREATED = 1765000000
RESCUED_FROM = "p1/gpt-4o-mini"
MODEL = "deepseek-chat"
DONE = b"data: [DONE]\n\n"


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, *, id_: str = CUT_ID, **extra: Any) -> bytes:
    body: dict[str, Any] = {
        "id": id_,
        "object": "chat.completion.chunk",
        "created": 1764999999,
        "model": "upstream-model",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    body.update(extra)
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def _usage(prompt: int, completion: int, cached: int = 0, *, id_: str = CUT_ID) -> bytes:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}  # fmt: skip
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return _chunk(id_=id_, usage=usage)


def _r(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    """A chunk of the rescue's stream."""
    return _chunk(delta, finish, id_=RESCUE_ID, **extra)


# -- the cut stream ----------------------------------------------------------------------------

PARTIAL = "The river runs through the old town and"
CUT = b"".join(
    [
        b": OPENROUTER PROCESSING\n\n",
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"reasoning_content": "Describe the town."}),
        _chunk({"content": "The river "}),
        _chunk({"content": "runs through the old"}),
        _chunk({"content": " town and"}),
    ]
)
# Broken inside the next event: its half never reaches the caller.
CUT_RAGGED = CUT + _chunk({"content": " under the"})[:40]

# An in-band error, as OpenAI-compatible upstreams send it, and as OpenRouter does (beside
# choices, with finish_reason "error"); then more bytes the upstream sent after it.
OPENAI_ERROR = b'data: {"error":{"message":"upstream overloaded","type":"server_error"}}\n\n'
OPENROUTER_ERROR = _chunk({"content": ""}, "error", error={"code": 502, "message": "Provider returned error"})
AFTER_ERROR = _chunk({"content": " never shown"}) + DONE


def _whole_events(out: bytes) -> list[bytes]:
    assert out == b"" or out.endswith(b"\n\n"), f"not whole events: {out[-40:]!r}"
    return [e for e in out.split(b"\n\n") if e]


def _watch(stream: bytes, reads: list[int] | None = None) -> tuple[StreamWatch, list[bytes]]:
    """Feed ``stream`` cut at ``reads`` (byte offsets); each feed's output, in order."""
    watch = StreamWatch()
    cuts = [0, *(reads or []), len(stream)]
    outs = [watch.feed(stream[a:b]) for a, b in itertools.pairwise(cuts)]
    return watch, outs


# -- StreamWatch ---------------------------------------------------------------------------------


def test_the_watch_hands_on_whole_events_and_notes_the_partial():
    watch, (out,) = _watch(CUT_RAGGED)

    assert out == CUT
    assert watch.streamed.text == PARTIAL
    assert watch.streamed.reasoning is True
    assert watch.streamed.tool_call is False and watch.streamed.finish_reason is None
    assert watch.id == CUT_ID
    assert watch.error is None and watch.held == b""


@pytest.mark.parametrize("cut", range(1, len(CUT_RAGGED)))
def test_any_split_hands_on_whole_events_only_and_the_same_bytes(cut):
    watch, outs = _watch(CUT_RAGGED, [cut])

    for out in outs:
        _whole_events(out)
    assert b"".join(outs) == CUT
    assert watch.streamed.text == PARTIAL


def test_one_byte_per_read_gives_what_one_read_gives():
    watch = StreamWatch()
    outs = [watch.feed(CUT_RAGGED[i : i + 1]) for i in range(len(CUT_RAGGED))]

    for out in outs:
        _whole_events(out)
    assert b"".join(outs) == CUT
    assert watch.streamed.text == PARTIAL
    assert watch.ragged


def test_a_crlf_stream_is_handed_on_in_whole_events_whatever_the_split():
    crlf = CUT_RAGGED.replace(b"\n", b"\r\n")
    one, (whole,) = _watch(crlf)
    watch = StreamWatch()
    outs = [watch.feed(crlf[i : i + 1]) for i in range(len(crlf))]

    for out in outs:
        _whole_events(out)
    assert b"".join(outs) == whole
    assert one.streamed.text == watch.streamed.text == PARTIAL
    # What is handed on reads as the same events as the stream itself.
    assert ChatStreamDecoder().feed(whole) == ChatStreamDecoder().feed(CUT)


def test_a_crlf_split_between_cr_and_lf_is_not_taken_for_an_event_end():
    event = _chunk({"content": "one"}).replace(b"\n", b"\r\n")
    watch = StreamWatch()

    first = watch.feed(event[:-1])  # "...\r\n\r": the last "\r" may be half of a "\r\n"
    second = watch.feed(event[-1:])

    assert b"".join([first, second]) == _chunk({"content": "one"})
    assert watch.streamed.text == "one"
    assert not watch.ragged


def test_a_tool_call_and_the_finish_are_noted():
    stream = b"".join(
        [
            _chunk({"role": "assistant", "content": "Looking."}),
            _chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "Read", "arguments": ""}}
                    ]
                }
            ),
            _chunk({}, "tool_calls"),
            _usage(31, 12),
            DONE,
        ]
    )
    watch, (out,) = _watch(stream)

    assert out == stream
    assert watch.streamed.text == "Looking."
    assert watch.streamed.tool_call is True
    assert watch.streamed.finish_reason == "tool_calls"
    assert watch.usage == Usage(31, 12)


@pytest.mark.parametrize("reason", ["stop", "length", "content_filter"])
def test_a_finish_reason_is_noted(reason):
    watch, _ = _watch(_chunk({"content": "Hi"}) + _chunk({}, reason))

    assert watch.streamed.finish_reason == reason


@pytest.mark.parametrize("error", [OPENAI_ERROR, OPENROUTER_ERROR], ids=["openai", "openrouter"])
def test_an_in_band_error_and_all_after_it_is_held(error):
    watch, (out,) = _watch(CUT + error + AFTER_ERROR)

    assert out == CUT
    assert watch.held == error + AFTER_ERROR
    assert watch.error is not None
    assert watch.streamed.text == PARTIAL  # nothing of the held events is noted
    # More bytes of the broken upstream are held too, never handed on.
    assert watch.feed(_chunk({"content": " late"})) == b""
    assert watch.held.endswith(_chunk({"content": " late"}))
    assert watch.close() == b""


def test_text_in_the_chunk_that_reports_the_error_is_not_taken_as_sent():
    # A chunk with content and finish_reason "error": it is held (the caller never gets it), so
    # its text is no part of the partial a rescue continues — else the caller loses those words.
    error = _chunk({"content": " under the"}, "error")
    watch, (out,) = _watch(CUT + error)

    assert out == CUT and watch.held == error
    assert watch.streamed.text == PARTIAL


def test_a_held_error_keeps_the_unfinished_event_read_with_it():
    half = _chunk({"content": " never shown"})[:30]
    watch, (out,) = _watch(CUT + OPENAI_ERROR + half)

    assert out == CUT
    assert watch.held == OPENAI_ERROR + half


def test_the_held_error_names_the_upstreams_message():
    watch, _ = _watch(CUT + OPENAI_ERROR)

    assert watch.error == "upstream overloaded"


def test_openrouters_error_finish_without_an_error_object_is_held():
    error = _chunk({"content": ""}, "error")
    watch, (out,) = _watch(CUT + error)

    assert out == CUT and watch.held == error and watch.error is not None
    assert watch.streamed.finish_reason is None


@pytest.mark.parametrize("error", [OPENAI_ERROR, OPENROUTER_ERROR], ids=["openai", "openrouter"])
@pytest.mark.parametrize("cut", [1, 100, len(CUT) - 1, len(CUT), len(CUT) + 5, len(CUT) + 60])
def test_any_split_holds_the_same_error_event(error, cut):
    stream = CUT + error + AFTER_ERROR
    watch, outs = _watch(stream, [cut])

    assert b"".join(outs) == CUT
    assert watch.held == error + AFTER_ERROR


def test_one_byte_per_read_holds_the_same_error_event():
    stream = CUT + OPENROUTER_ERROR + AFTER_ERROR
    watch = StreamWatch()
    out = b"".join(watch.feed(stream[i : i + 1]) for i in range(len(stream)))

    assert out == CUT
    assert watch.held == OPENROUTER_ERROR + AFTER_ERROR


def test_ragged_says_the_stream_broke_inside_an_event():
    watch = StreamWatch()
    assert not watch.ragged

    watch.feed(CUT)
    assert not watch.ragged
    watch.feed(b": comment\n")  # an unfinished comment line: still part of an event
    assert watch.ragged

    watch = StreamWatch()
    watch.feed(CUT + b" \n")  # whitespace after whole events is no event begun
    assert not watch.ragged


def test_close_hands_on_a_last_event_that_lacked_its_blank_line():
    last = _chunk({}, "stop")
    watch, (out,) = _watch(CUT + last[:-2])

    assert out == CUT and watch.ragged and watch.streamed.finish_reason is None
    assert watch.close() == last
    assert not watch.ragged
    assert watch.streamed.finish_reason == "stop"
    assert watch.close() == b""


def test_close_with_nothing_pending_gives_nothing():
    watch, _ = _watch(CUT)

    assert watch.close() == b""


def test_close_holds_a_last_error_event_that_lacked_its_blank_line():
    watch, (out,) = _watch(CUT + OPENAI_ERROR[:-2])

    assert out == CUT and watch.error is None
    assert watch.close() == b""
    assert watch.error == "upstream overloaded"
    assert watch.held.strip() == OPENAI_ERROR.strip()


# -- Continuation ----------------------------------------------------------------------------------

BEFORE = Tokens(31, 12, 0)
RESCUE = b"".join(
    [
        _r({"role": "assistant", "content": ""}),
        _r({"reasoning_content": "Continue after 'town and'."}),
        _r({"content": " past"}),
        _r({"content": " the mill."}),
        _r({}, "stop"),
        _usage(40, 5, 8, id_=RESCUE_ID),
        DONE,
    ]
)
REST = " past the mill."


def _continuation(partial: str = PARTIAL, before: Tokens = BEFORE) -> Continuation:
    return Continuation(partial, RESCUED_FROM, CUT_ID, MODEL, CREATED, before)


def _run(stream: bytes, reads: list[int] | None = None, partial: str = PARTIAL) -> tuple[Continuation, bytes]:
    """Feed ``stream`` cut at ``reads``, then close it, as the relay does."""
    continuation = _continuation(partial)
    cuts = [0, *(reads or []), len(stream)]
    out = b"".join(continuation.feed(stream[a:b]) for a, b in itertools.pairwise(cuts))
    return continuation, out + continuation.close()


def _data(out: bytes) -> list[Any]:
    """Each event's data, parsed (``[DONE]`` as the string)."""
    found = []
    for event in _whole_events(out):
        assert event.startswith(b"data: "), event
        data = event[6:]
        found.append("[DONE]" if data == b"[DONE]" else json.loads(data))
    return found


def _text(out: bytes) -> str:
    return "".join(e.text for e in ChatStreamDecoder().feed(out) if isinstance(e, Text))


def test_the_continuation_joins_its_text_after_the_partial():
    continuation, out = _run(RESCUE)

    assert _text(out) == REST
    assert continuation.complete and continuation.done and not continuation.failed
    assert continuation.refused is None and continuation.error is None


def test_every_chunk_says_it_was_rescued_and_carries_the_cut_streams_id():
    _, out = _run(RESCUE)
    chunks = [c for c in _data(out) if c != "[DONE]"]

    assert chunks
    for chunk in chunks:
        assert chunk["x_rescued_from"] == RESCUED_FROM
        assert chunk["id"] == CUT_ID
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["created"] == CREATED and chunk["model"] == MODEL
    assert RESCUE_ID.encode() not in out


def test_the_rescues_reasoning_and_role_are_left_out():
    _, out = _run(RESCUE)

    assert b"reasoning" not in out
    assert b'"role"' not in out
    assert b"Continue after" not in out


def test_the_finish_usage_and_done_come_in_order_and_usage_sums_both_attempts():
    continuation, out = _run(RESCUE)
    data = _data(out)

    assert data[-1] == "[DONE]"
    usage_chunk = data[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"] == {
        "prompt_tokens": 31 + 40, "completion_tokens": 12 + 5, "total_tokens": 31 + 40 + 12 + 5,
        "prompt_tokens_details": {"cached_tokens": 8},
    }  # fmt: skip
    assert data[-3]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert continuation.usage == Tokens(71, 17, 8)
    assert out.count(b"[DONE]") == 1


def test_no_usage_chunk_when_the_rescue_reported_none():
    stream = RESCUE.replace(_usage(40, 5, 8, id_=RESCUE_ID), b"")
    continuation, out = _run(stream)

    assert b'"usage"' not in out
    assert continuation.usage is None
    assert _data(out)[-1] == "[DONE]"
    assert continuation.complete and continuation.done


def test_no_cached_tokens_detail_when_neither_attempt_read_a_cache():
    stream = RESCUE.replace(_usage(40, 5, 8, id_=RESCUE_ID), _usage(40, 5, id_=RESCUE_ID))
    _, out = _run(stream)

    assert _data(out)[-2]["usage"] == {"prompt_tokens": 71, "completion_tokens": 17, "total_tokens": 88}


def test_no_done_unless_the_rescue_sent_it():
    continuation, out = _run(RESCUE.replace(DONE, b""))

    assert b"[DONE]" not in out
    assert _text(out) == REST
    assert continuation.complete and not continuation.done


def test_a_rescue_that_ends_with_a_finish_but_no_done_still_says_the_summed_usage():
    # SPEC §16: "the answer's usage sums both attempts". A rescue upstream that closes its
    # stream after finish_reason and usage, without [DONE] (as several do), must not lose it.
    continuation, out = _run(RESCUE.replace(DONE, b""))

    assert continuation.usage == Tokens(71, 17, 8)
    assert b'"usage"' in out, "the summed usage never reaches the caller when the rescue sends no [DONE]"


def test_a_rescue_cut_before_its_end_is_not_complete():
    stream = _r({"content": " past"}) + _r({"content": " the mill."})
    continuation, out = _run(stream)

    assert not continuation.complete and not continuation.done and not continuation.failed
    assert b"[DONE]" not in out and b'finish_reason":"stop' not in out


def test_an_exact_repeat_of_the_partials_end_is_trimmed():
    stream = _r({"content": "the old town"}) + _r({"content": " and past the mill."}) + _r({}, "stop") + DONE
    continuation, out = _run(stream)

    assert _text(out) == REST
    assert continuation.complete and not continuation.failed


def test_a_rescue_that_repeats_the_whole_partial_first_is_trimmed():
    # Some platforms' prefix mode sends the prefix back before the continuation.
    stream = _r({"content": PARTIAL[:25]}) + _r({"content": PARTIAL[25:] + REST}) + _r({}, "stop") + DONE
    continuation, out = _run(stream)

    assert _text(out) == REST
    assert continuation.complete and not continuation.failed


@pytest.mark.parametrize(
    "restart",
    [
        pytest.param("The river runs through the old town, where", id="restart-inexact"),
        pytest.param("The River runs, through an old town", id="restart"),
        pytest.param("The river runs through the old", id="short-repeat"),
    ],
)
def test_a_restart_is_refused_and_nothing_of_it_is_sent(restart):
    stream = b"".join(_r({"content": w + " "}) for w in restart.split(" ")) + _r({}, "stop") + _usage(1, 1) + DONE
    continuation, out = _run(stream)

    assert continuation.refused is not None
    assert continuation.failed and not continuation.complete and not continuation.done
    assert _text(out) == ""
    assert b"[DONE]" not in out and b'"finish_reason":"stop"' not in out
    assert continuation.feed(_r({"content": " more"})) == b"" and continuation.close() == b""


def test_a_restart_is_refused_whatever_the_split():
    stream = _r({"content": "The river runs through the old town, where"}) + _r({}, "stop") + DONE
    for cut in range(1, len(stream)):
        continuation, out = _run(stream, [cut])
        assert continuation.refused is not None, cut
        assert _text(out) == "" and b"[DONE]" not in out, cut


# A repeat of earlier text short enough to be held until the text ends: the seam decides at the
# end of the text. The rescue's [DONE] (no finish_reason before it) ends the text here.
HELD_REPEAT = _r({"content": "runs through the old"}) + DONE


def test_a_refusal_at_the_finish_sends_no_finish():
    continuation, out = _run(_r({"content": "runs through the old"}) + _r({}, "stop") + DONE)

    assert continuation.refused is SeamRefusal.REPEAT
    assert out == b""


def test_a_refusal_at_the_seams_end_sends_no_done():
    continuation, out = _run(HELD_REPEAT)

    assert continuation.refused is SeamRefusal.REPEAT
    assert continuation.failed and not continuation.done
    assert b"[DONE]" not in out, "a refused continuation still sends [DONE]: the caller sees a normal end"


def test_tool_calls_pass_after_the_held_text():
    stream = b"".join(
        [
            _r({"content": " past the mill."}),
            _r(
                {
                    "tool_calls": [
                        {"index": 0, "id": "call_9", "type": "function", "function": {"name": "Map", "arguments": ""}}
                    ]
                }
            ),
            _r({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": "mill"}'}}]}),
            _r({}, "tool_calls"),
            DONE,
        ]
    )
    continuation, out = _run(stream)
    events = ChatStreamDecoder().feed(out)

    assert events == [
        Text(REST),
        ToolStart(0, "call_9", "Map"),
        ToolArgs(0, '{"q": "mill"}'),
        Finish("tool_calls"),
    ]
    assert continuation.complete and continuation.done


def test_a_restart_before_a_tool_call_is_refused_and_the_call_not_sent():
    stream = _r({"content": "The river runs"}) + _r(
        {"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "Map", "arguments": "{}"}}]}
    ) + _r({}, "tool_calls") + DONE  # fmt: skip
    continuation, out = _run(stream)

    assert continuation.refused is not None
    assert b"tool_calls" not in out and b"[DONE]" not in out


@pytest.mark.parametrize("error", [OPENAI_ERROR, _r({"content": ""}, "error")], ids=["openai", "openrouter"])
def test_an_error_in_the_rescue_fails_it_after_what_was_joined(error):
    stream = _r({"content": REST + " And then the long stretch of the valley floor begins."}) + error + AFTER_ERROR
    continuation, out = _run(stream)

    assert continuation.error is not None
    assert continuation.failed and not continuation.complete and not continuation.done
    assert _text(out) == REST + " And then the long stretch of the valley floor begins."
    assert b"[DONE]" not in out and b"never shown" not in out
    assert b"error" not in out


SPLIT_STREAMS = {
    "plain": RESCUE,
    "trimmed": _r({"content": "the old town"}) + _r({"content": " and past the mill."}) + _r({}, "stop") + DONE,
    "crlf": RESCUE.replace(b"\n", b"\r\n"),
    "tools": _r({"content": " past"})
    + _r({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    + _r({}, "tool_calls")
    + _usage(2, 3, id_=RESCUE_ID)
    + DONE,
}


@pytest.mark.parametrize("name", SPLIT_STREAMS)
def test_any_split_of_the_rescue_gives_the_same_output(name):
    stream = SPLIT_STREAMS[name]
    _, whole = _run(stream)
    for cut in range(1, len(stream)):
        _, out = _run(stream, [cut])
        assert out == whole, cut


@pytest.mark.parametrize("name", SPLIT_STREAMS)
def test_one_byte_per_read_of_the_rescue_gives_the_same_output(name):
    stream = SPLIT_STREAMS[name]
    _, whole = _run(stream)

    _, out = _run(stream, list(range(1, len(stream))))

    assert out == whole


# -- what a client reads: the cut stream and the rescue through the real translators ---------------


def _relay_anthropic(cut: bytes, rescue: bytes) -> tuple[bytes, Continuation]:
    """As the relay does: the cut stream through a watch into the translator, the continuation's
    chunks into the same translator, then its end (or error)."""
    watch = StreamWatch()
    translator = AnthropicStream("claude-sonnet-4")
    out = translator.feed(watch.feed(cut)) + translator.feed(watch.close())
    continuation = Continuation(watch.streamed.text, RESCUED_FROM, watch.id, MODEL, CREATED, BEFORE)
    for i in range(0, len(rescue), 7):
        out += translator.feed(continuation.feed(rescue[i : i + 7]))
    out += translator.feed(continuation.close())
    out += translator.end() if translator.complete else translator.fail("cut")
    return out, continuation


def _anthropic_events(out: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in _whole_events(out):
        lines = block.decode().split("\n")
        name = lines[0].removeprefix("event: ")
        events.append((name, json.loads(lines[1].removeprefix("data: "))))
    return events


def _anthropic_text(events: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        e["delta"]["text"] for name, e in events if name == "content_block_delta" and e["delta"]["type"] == "text_delta"
    )


@pytest.mark.parametrize("broke", [CUT_RAGGED, CUT + OPENAI_ERROR + AFTER_ERROR], ids=["cut", "in-band-error"])
def test_an_anthropic_client_reads_the_partial_then_the_rest_once(broke):
    out, continuation = _relay_anthropic(broke, RESCUE)
    events = _anthropic_events(out)
    names = [name for name, _ in events]

    assert _anthropic_text(events) == PARTIAL + REST
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("message_start") == 1 and names.count("message_stop") == 1
    assert "error" not in names
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert events[-2][1]["usage"]["output_tokens"] == 12 + 5
    assert continuation.complete


def test_an_anthropic_client_reads_a_trimmed_repeat_once():
    rescue = _r({"content": "through the old town and"}) + _r({"content": " past the mill."}) + _r({}, "stop") + DONE
    out, _ = _relay_anthropic(CUT, rescue)

    assert _anthropic_text(_anthropic_events(out)) == PARTIAL + REST


def test_an_anthropic_client_reads_a_refused_rescue_as_the_surfaces_error():
    rescue = _r({"content": "The river runs through the old town, where"}) + _r({}, "stop") + DONE
    out, continuation = _relay_anthropic(CUT, rescue)
    events = _anthropic_events(out)
    names = [name for name, _ in events]

    assert continuation.refused is not None
    assert _anthropic_text(events) == PARTIAL
    assert names[-1] == "error" and "message_stop" not in names


def test_an_anthropic_client_reads_a_refusal_at_the_rescues_done_as_the_surfaces_error():
    out, continuation = _relay_anthropic(CUT, HELD_REPEAT)
    names = [name for name, _ in _anthropic_events(out)]

    assert continuation.refused is SeamRefusal.REPEAT
    assert names[-1] == "error" and "message_stop" not in names


def test_a_chat_client_reads_the_partial_then_the_rest_once_through_the_pass_through():
    watch = StreamWatch()
    relay = WholeEvents()
    out = relay.feed(watch.feed(CUT_RAGGED)) + relay.feed(watch.close())
    continuation = Continuation(watch.streamed.text, RESCUED_FROM, watch.id, MODEL, CREATED, BEFORE)
    out += relay.feed(continuation.feed(RESCUE)) + relay.feed(continuation.close())

    decoder = ChatStreamDecoder()
    events = decoder.feed(out)
    assert "".join(e.text for e in events if isinstance(e, Text)) == PARTIAL + REST
    assert decoder.id == CUT_ID and decoder.done
    assert [e for e in events if isinstance(e, Finish)] == [Finish("stop")]
    assert [e for e in events if isinstance(e, UpstreamError)] == []
    assert relay.complete and relay.done
    assert relay.usage == Tokens(71, 17, 8)
    assert relay.fail("late") == b""


# -- the edges a review found ----------------------------------------------------------------------


def test_half_an_event_broken_off_inside_a_line_is_never_handed_on():
    half = _chunk({"content": " under the bridge"})[:40]
    watch, (out,) = _watch(CUT + half)

    assert out == CUT and watch.ragged
    assert watch.close() == b""  # handed on, it would reach the caller as broken JSON
    assert watch.streamed.text == PARTIAL


def test_a_legacy_function_call_counts_as_a_tool_call():
    call = _chunk({"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": ""}})
    watch, _ = _watch(call + _chunk({"function_call": {"arguments": '{"ci'}}))

    assert watch.streamed.tool_call is True


def test_a_word_function_call_in_the_text_is_plain_text():
    watch, _ = _watch(_chunk({"content": 'Use "function_call" here.'}))

    assert watch.streamed.tool_call is False and watch.streamed.text == 'Use "function_call" here.'


def test_a_rescue_that_answers_with_a_legacy_function_call_fails():
    continuation = _continuation()
    out = continuation.feed(
        _r({"function_call": {"name": "weather", "arguments": "{}"}}) + _r({}, "function_call") + DONE
    )

    assert out == b"" and continuation.failed and continuation.error is not None
