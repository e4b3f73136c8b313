"""``gateway.surfaces.whole_events``: an OpenAI chat stream relayed as it came (SPEC §16), with the
answer's end and usage read from its last bytes and the pass-through ``stream_error`` as its error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.core.counting import Tokens
from gateway.core.sse import TAIL_BYTES
from gateway.surfaces.whole_events import WholeEvents


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "created": 1765000000,
        "model": "gpt-4o-mini",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    body.update(extra)
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
USAGE = _chunk(usage={"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43,
                      "prompt_tokens_details": {"cached_tokens": 8}})  # fmt: skip
TEXT = _chunk({"role": "assistant", "content": ""}) + _chunk({"content": "Hel"}) + _chunk({"content": "lo ✓"})
UPSTREAM_ERROR = b'data: {"error":{"message":"upstream overloaded","type":"server_error"}}\n\n'


def _relay(stream: bytes, step: int | None = None) -> tuple[WholeEvents, bytes]:
    relay = WholeEvents()
    step = step or max(len(stream), 1)
    out = b"".join(relay.feed(stream[i : i + step]) for i in range(0, len(stream), step))
    return relay, out


@pytest.mark.parametrize("step", [None, 1, 7])
def test_bytes_pass_unchanged(step):
    stream = b": keep-alive\n\n" + TEXT.replace(b"\n", b"\r\n") + _chunk({}, "stop") + USAGE + DONE
    _, out = _relay(stream, step)

    assert out == stream


def test_an_empty_read_passes_nothing():
    relay = WholeEvents()

    assert relay.feed(b"") == b""
    assert not relay.complete and not relay.done and relay.usage is None


def test_the_media_type_is_sse():
    assert WholeEvents.media_type == "text/event-stream"


@pytest.mark.parametrize(
    ("stream", "complete", "done"),
    [
        pytest.param(TEXT, False, False, id="cut-mid-answer"),
        pytest.param(TEXT + _chunk({}, "stop"), True, False, id="finish-no-done"),
        pytest.param(TEXT + _chunk({}, "stop") + USAGE, True, False, id="finish-then-usage"),
        pytest.param(TEXT + _chunk({}, "stop") + USAGE + DONE, True, True, id="done"),
        pytest.param(TEXT + DONE, True, True, id="done-without-finish"),
        pytest.param(TEXT + UPSTREAM_ERROR, True, False, id="upstreams-own-error"),
    ],
)
def test_complete_and_done_come_from_the_tail(stream, complete, done):
    relay, _ = _relay(stream, 5)

    assert relay.complete is complete
    assert relay.done is done


def test_done_followed_by_trailing_whitespace_is_done():
    relay, _ = _relay(TEXT + DONE + b"\n")

    assert relay.done and relay.complete


def test_the_usage_comes_from_the_tail():
    relay, _ = _relay(TEXT + _chunk({}, "stop") + USAGE + DONE, 3)

    assert relay.usage == Tokens(31, 12, 8)


def test_no_usage_when_the_stream_reported_none():
    relay, _ = _relay(TEXT + _chunk({}, "stop", usage=None) + DONE)

    assert relay.usage is None


def test_only_the_tail_is_kept_yet_the_end_is_still_read():
    long = TEXT + b"".join(_chunk({"content": "x" * 100}) for _ in range(60))
    relay, out = _relay(long + _chunk({}, "stop") + USAGE + DONE, 64)

    assert len(long) > TAIL_BYTES
    assert out.endswith(DONE)
    assert relay.done and relay.usage == Tokens(31, 12, 8)


def test_fail_gives_the_pass_through_stream_error_with_the_code():
    relay, _ = _relay(TEXT)

    failed = relay.fail("the stream from p1/m stalled", "stream_stalled")

    assert failed.startswith(b"data: ") and failed.endswith(b"\n\n")
    assert json.loads(failed[6:]) == {
        "error": {"message": "the stream from p1/m stalled", "type": "stream_error", "code": "stream_stalled"}
    }
    assert b"[DONE]" not in failed


def test_fail_defaults_to_stream_interrupted():
    relay, _ = _relay(TEXT)

    assert json.loads(relay.fail("cut")[6:])["error"]["code"] == "stream_interrupted"


def test_fail_ends_the_stream_once():
    relay, _ = _relay(TEXT)

    assert relay.fail("cut")
    assert relay.fail("cut again") == b""


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(TEXT + _chunk({}, "stop") + USAGE + DONE, id="done"),
        pytest.param(TEXT + _chunk({}, "stop"), id="finish"),
        pytest.param(TEXT + UPSTREAM_ERROR, id="upstreams-own-error"),
    ],
)
def test_nothing_after_a_proper_end_or_the_upstreams_own_error(stream):
    relay, _ = _relay(stream)

    assert relay.fail("cut", "stream_interrupted") == b""


def test_end_adds_nothing():
    relay, _ = _relay(TEXT + _chunk({}, "stop") + DONE)

    assert relay.end() == b""


def test_keep_alive_is_an_sse_comment():
    keep_alive = WholeEvents().keep_alive()

    assert keep_alive.startswith(b":") and keep_alive.endswith(b"\n\n")
    assert b"data:" not in keep_alive
