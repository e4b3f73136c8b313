"""Streams (SPEC §2.6): before the first event a bad stream fails over; after it, the caller
never gets a truncated answer that looks complete."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from support.runtime import logged
from support.upstream import Hang, Json, Sse, chunk

STREAM = {"model": "auto", "messages": [{"role": "user", "content": "x"}], "stream": True}


def stream(api) -> tuple[int, dict, list[str]]:
    with api.stream("POST", "/chat/completions", json=STREAM) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
        return response.status_code, dict(response.headers), events


@pytest.fixture
def pair(add_provider):
    return add_provider(name="A", priority=1, models=["m"], timeout_ms=1000), add_provider(
        name="B", priority=2, models=["m"]
    )


def good_stream() -> Sse:
    return Sse([chunk("m", "from B"), chunk("m", None, "stop")])


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        pytest.param(
            Sse([{"error": {"message": "overloaded", "code": 503}}], done=False),
            "upstream_error",
            id="first-event-is-an-error",
        ),
        pytest.param(Sse([], done=False), "invalid_stream", id="empty-stream"),
        pytest.param(Sse([], done=True), "invalid_stream", id="done-without-content"),
        pytest.param(Json({"choices": []}), "invalid_stream", id="200-not-sse"),
        pytest.param(Json({"error": {"message": "busy"}}, 503), "upstream_error", id="503"),
        # Steps that hold a request are made per run (a factory): each run of the test needs its own.
        pytest.param(Hang, "timeout", id="no-headers-in-time"),
        pytest.param(
            lambda: Sse([chunk("m", "late")], gates={0: threading.Event()}), "timeout", id="no-first-chunk-in-time"
        ),
    ],
)
def test_bad_start_fails_over_invisibly(api, pair, upstream, bad, kind):
    upstream.queue(bad() if callable(bad) else bad, good_stream())

    status, headers, events = stream(api)

    assert status == 200
    assert headers["x-routed-via"] == "B/m"
    assert headers["x-fallback-trail"] == f"A/m: {kind}"
    assert json.loads(events[0])["choices"][0]["delta"]["content"] == "from B"
    assert events[-1] == "[DONE]"
    assert not any('"stream_error"' in e for e in events)


def test_keep_alive_comments_before_the_first_event_are_forwarded(api, pair, upstream):
    upstream.queue(Sse([": OPENROUTER PROCESSING", chunk("m", "hi"), chunk("m", None, "stop")]))

    with api.stream("POST", "/chat/completions", json=STREAM) as response:
        lines = [line for line in response.iter_lines() if line]

    assert response.headers["x-routed-via"] == "A/m"
    assert lines[0] == ": OPENROUTER PROCESSING"
    assert lines[-1] == "data: [DONE]"


@pytest.mark.parametrize(
    ("upstream_end", "code", "reason"),
    [
        pytest.param({"done": False}, "stream_truncated", "truncated", id="closed-without-done"),
        pytest.param({"done": False, "reset": True}, "stream_interrupted", "cut", id="connection-reset"),
    ],
)
def test_cut_after_the_first_chunk_ends_with_a_stream_error(gateway, api, pair, upstream, upstream_end, code, reason):
    upstream.queue(Sse([chunk("m", "partial"), chunk("m", " answ")], **upstream_end))

    status, headers, events = stream(api)

    assert status == 200
    assert headers["x-routed-via"] == "A/m"  # no failover once the stream has started
    assert json.loads(events[0])["choices"][0]["delta"]["content"] == "partial"
    error = json.loads(events[-1])["error"]
    assert (error["type"], error["code"]) == ("stream_error", code)
    assert "[DONE]" not in events
    # One warning for `wrangler tail`, naming the answer's request id.
    assert logged(gateway, f"stream failed: {reason} (via A/m, request {headers['x-request-id']})")


def test_finish_reason_without_done_is_complete(api, pair, upstream):
    upstream.queue(Sse([chunk("m", "all"), chunk("m", None, "stop")], done=False))

    _, _, events = stream(api)

    assert json.loads(events[-1])["choices"][0]["finish_reason"] == "stop"
    assert not any('"stream_error"' in e for e in events)


def test_stall_ends_the_stream_with_a_stream_error(gateway, api, admin, pair, upstream):
    admin.put("/settings", json={"stream_stall_ms": 300}).raise_for_status()
    never = threading.Event()
    upstream.queue(Sse([chunk("m", "start"), chunk("m", "never sent")], gates={1: never}))

    _, headers, events = stream(api)

    error = json.loads(events[-1])["error"]
    assert (error["type"], error["code"]) == ("stream_error", "stream_stalled")
    assert len(events) == 2
    assert logged(gateway, f"stream failed: stalled (via A/m, request {headers['x-request-id']})")


def test_a_stalled_upstream_is_cancelled(api, admin, pair, upstream):
    admin.put("/settings", json={"stream_stall_ms": 300}).raise_for_status()
    # A first event, then nothing more and no end: the upstream holds its connection open.
    upstream.queue(Sse([chunk("m", "start")], done=False, keep_open=True))

    _, _, events = stream(api)

    assert json.loads(events[-1])["error"]["code"] == "stream_stalled"
    assert upstream.disconnected.wait(timeout=5)  # the gateway closed the upstream's connection


def test_done_ends_the_answer_even_if_the_upstream_keeps_its_connection_open(api, admin, pair, upstream):
    admin.put("/settings", json={"stream_stall_ms": 300}).raise_for_status()
    # [DONE], then nothing more and no end: the answer is whole, so its end at the stall period
    # is no stall (never an error after a complete answer).
    upstream.queue(Sse([chunk("m", "all"), chunk("m", None, "stop")], keep_open=True))

    _, _, events = stream(api)

    assert events[-1] == "[DONE]"
    assert not any('"stream_error"' in e for e in events)
    assert upstream.disconnected.wait(timeout=5)  # the gateway closed the upstream's connection


@pytest.mark.parametrize("keep_open", [False, True], ids=["upstream-ends", "upstream-stays-open"])
def test_a_caller_reading_slowly_gets_the_whole_answer_not_a_stall(api, admin, pair, upstream, keep_open):
    admin.put("/settings", json={"stream_stall_ms": 300}).raise_for_status()
    # ~8 MB, more than the connection to the caller buffers: while the caller pauses, the gateway
    # cannot send the answer on, though the upstream has sent it all. An upstream that keeps its
    # connection open after it is closed at the stall period, while most of the answer still waits
    # for the caller, which must get all of it all the same.
    pieces = [f"{i:03d}{'x' * 10_000}" for i in range(800)]
    upstream.queue(Sse([chunk("m", piece) for piece in pieces] + [chunk("m", None, "stop")], keep_open=keep_open))

    reads = []
    with api.stream("POST", "/chat/completions", json=STREAM) as response:
        for data in response.iter_bytes():
            reads.append(data)
            if len(reads) <= 3:
                time.sleep(0.6)  # the caller's own pace: twice the stall period between reads
    events = [line[6:] for line in b"".join(reads).decode().splitlines() if line.startswith("data: ")]

    assert events[-1] == "[DONE]"
    assert not any('"stream_error"' in e for e in events)
    assert [json.loads(e)["choices"][0]["delta"].get("content") for e in events[:-1]] == [*pieces, None]


def test_every_stream_failing_before_the_first_chunk_is_an_honest_error(api, pair, upstream):
    upstream.queue(Sse([], done=False), Sse([], done=False))

    with api.stream("POST", "/chat/completions", json=STREAM) as response:
        response.read()

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_failed"


def test_a_key_echoed_in_a_first_error_event_never_reaches_the_caller(api, add_provider, upstream):
    # Keys of no known shape (no sk-like prefix, no long random run): redact() cannot see them,
    # only scrubbing the provider's own key can.
    keys = ["acct.7:opal-harbor.42", "team/ruby.lantern:9"]
    for priority, (name, key) in enumerate(zip("AB", keys), 1):
        add_provider(name=name, priority=priority, models=["m"], api_key=key)
        upstream.queue(Sse([{"error": {"message": f"key {key} may not use this model", "code": 503}}], done=False))

    response = api.post("/chat/completions", json=STREAM)

    assert response.status_code == 502
    trail = response.headers["x-fallback-trail"]
    assert trail == "A/m: upstream_error; B/m: upstream_error"
    message = response.json()["error"]["message"]
    assert message.count("may not use this model") == 2  # the upstream's reason is shown, scrubbed
    assert [r.headers["authorization"] for r in upstream.requests] == [f"Bearer {key}" for key in keys]
    for key in keys:
        assert key not in trail
        assert key not in message
        assert key not in response.text


def test_caller_going_away_cancels_the_upstream(api, pair, upstream):
    release = threading.Event()
    # Far more than socket buffers hold (~20 MB): writes only go on while someone reads, so the
    # fake sees the connection close rather than finishing into buffers before the cancel lands.
    padding = "x" * 1000
    upstream.queue(Sse([chunk("m", f"t{i}{padding}") for i in range(20_000)], gates={1: release}))

    with api.stream("POST", "/chat/completions", json=STREAM) as response:
        next(line for line in response.iter_lines() if line.startswith("data: "))
    # The caller has closed its connection after the first event.
    release.set()

    assert upstream.disconnected.wait(timeout=20)


def test_a_key_echoed_in_a_mid_stream_error_of_a_translated_stream_never_reaches_the_caller(
    gateway, add_provider, upstream
):
    # The translated surfaces turn the upstream's error into their own event (SPEC §12), so they
    # scrub the provider's key themselves; a key of no known shape, as above.
    key = "acct.7:opal-harbor.42"
    add_provider(name="K", models=["m"], api_key=key)
    upstream.queue(Sse([chunk("m", "Hel"), {"error": {"message": f"key {key} is over its quota"}}], done=False))
    headers = {"authorization": f"Bearer {gateway.api_token}", "anthropic-version": "2023-06-01"}
    body = {"model": "m", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

    text = httpx.post(f"{gateway.url}/v1/messages", json=body, headers=headers, timeout=30).text

    assert "event: error" in text and "message_stop" not in text
    assert "over its quota" in text  # the upstream's reason is shown, scrubbed
    assert key not in text
    assert upstream.requests[0].headers["authorization"] == f"Bearer {key}"
