"""The SSE edges (SPEC §2.6): the first event decides failover, the tail decides truncation."""

from __future__ import annotations

import json

import pytest

from gateway.core.sse import First, ended_properly, first_event, first_event_size, stream_error_event

CHUNK = b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
FINAL = b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'
DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    ("buffer", "kind"),
    [
        pytest.param(CHUNK, First.DATA, id="content"),
        pytest.param(b": OPENROUTER PROCESSING\n\n" + CHUNK, First.DATA, id="comment-first"),
        pytest.param(b"event: message\r\ndata: {}\r\n\r\n", First.DATA, id="crlf"),
        pytest.param(DONE, First.DONE, id="done-at-once"),
        pytest.param(b'data: {"error":{"message":"overloaded","code":503}}\n\n', First.ERROR, id="error-object"),
        pytest.param(b'data: {"error": "quota"}\n\n' + CHUNK, First.ERROR, id="error-string"),
        pytest.param(b'data: {"choices":[],"error":null}\n\n', First.DATA, id="choices-with-error-key"),
        pytest.param(
            b'data: {"id":"x","error":{"code":"server_error","message":"Provider disconnected"},'
            b'"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n',
            First.ERROR,
            id="openrouter-error-beside-choices",
        ),
        pytest.param(b'data: {"content":"the word \\"error\\""}\n\n', First.DATA, id="error-in-text"),
    ],
)
def test_first_event(buffer, kind):
    assert first_event(buffer).kind is kind


@pytest.mark.parametrize(
    "buffer",
    [b"", b": keep-alive\n\n", b'data: {"choices":', b"data: [DONE]"],
    ids=["nothing", "only-comments", "partial-event", "no-blank-line-yet"],
)
def test_first_event_needs_more(buffer):
    assert first_event(buffer) is None


def test_error_event_data_is_kept_for_classification():
    found = first_event(b'data: {"error":{"message":"Rate limit","code":429}}\n\n')

    assert json.loads(found.data)["error"]["code"] == 429


@pytest.mark.parametrize(
    ("tail", "complete"),
    [
        pytest.param(CHUNK + FINAL + DONE, True, id="done"),
        pytest.param(CHUNK + FINAL, True, id="finish-reason-without-done"),
        pytest.param(FINAL + b'data: {"choices":[],"usage":{"total_tokens":9}}\n\n', True, id="usage-after-final"),
        pytest.param(CHUNK, False, id="cut-after-content"),
        pytest.param(CHUNK + b'data: {"choices":[{"delta":{"content":"tru', False, id="cut-mid-event"),
        pytest.param(CHUNK + b'data: {"error":{"message":"upstream died"}}\n\n', True, id="upstream-reported-error"),
        pytest.param(b"", False, id="nothing"),
    ],
)
def test_ended_properly(tail, complete):
    assert ended_properly(tail) is complete


def test_stream_error_event_is_one_sse_event():
    event = stream_error_event('upstream "x" stalled', "stream_stalled")

    assert event.startswith(b"data: ") and event.endswith(b"\n\n")
    assert json.loads(event[6:]) == {
        "error": {"message": 'upstream "x" stalled', "type": "stream_error", "code": "stream_stalled"}
    }


@pytest.mark.parametrize(
    ("head", "size"),
    [
        (b'data: {"a":1}\n\n', 15),
        (b': OPENROUTER PROCESSING\n\ndata: {"a":1}\n\n', 15),  # a comment first: not the event
        (b'data: {"a":1}\r\n\r\ndata: {"b":2}\r\n\r\n', 17),
        (b'data: {"a":1}\r\rdata: {"b":2}\r\r', 15),  # lines ended by \r alone
        (b'data: {"a":1}\n\r\ndata: {"b":2}\n\n', 16),  # mixed endings: still one blank line
        (b'data: {"a":', 11),  # no whole event yet
    ],
)
def test_the_first_event_is_the_first_data_event(head, size):
    assert first_event_size(head) == size
