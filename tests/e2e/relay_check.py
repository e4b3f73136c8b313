"""Drives both relays inside Pyodide against JS streams and prints one JSON report, a section per
relay and an entry per scenario (run by test_relay.py through run-python.mjs; argv[1] is the folder
holding the Worker's modules):

- ``pass_through``: ``gateway.shell.stream.Relay``. Its upstream is a JS byte ``ReadableStream`` fed
  as a fetch body is, by the network: chunks arrive every few milliseconds whether or not anyone
  reads, then it closes, fails or stays open; aborting the request errors it.
- ``translated``: ``gateway.shell.translation.TranslatedRelay`` (Anthropic). Its upstream is a byte
  stream that yields a chunk per pull and can be left open after its last chunk.

The caller is a JS reader that can pause between reads. The stall setting is 200 ms.
"""

import asyncio
import json
import sys
from types import SimpleNamespace

import js
from pyodide.code import run_js
from pyodide.ffi import to_js

sys.path.insert(0, sys.argv[1])

from gateway.core.sse import first_event  # noqa: E402
from gateway.shell.stream import OpenedStream, Relay  # noqa: E402
from gateway.shell.translation import TranslatedRelay  # noqa: E402
from gateway.surfaces.anthropic import AnthropicStream  # noqa: E402

STALL_MS = 200

_pushed_upstream = run_js(
    """(chunks, end, bytes) => {
        const state = { cancelled: false };
        const stream = new ReadableStream({
            start(c) {
                // A fetch's abort errors its body and tears the connection down.
                state.abort = () => { state.cancelled = true; c.error(new Error("aborted")); };
                // The network pushes: chunks arrive every 5 ms whether or not anyone reads.
                let i = 0;
                const timer = setInterval(() => {
                    if (state.cancelled) { clearInterval(timer); return; }
                    if (i < chunks.length) { c.enqueue(chunks[i++]); return; }
                    clearInterval(timer);
                    if (end === "close") c.close();
                    else if (end === "error") c.error(new Error("connection reset"));
                }, 5);
            },
            cancel() { state.cancelled = true; },
            type: bytes ? "bytes" : undefined,  // a fetch body is a byte stream
        });
        return [stream, state];
    }"""
)
_pulled_upstream = run_js(
    """(chunks, keepOpen) => {
        let i = 0;
        const state = { cancelled: false };
        const stream = new ReadableStream({
            start(c) {
                state.abort = () => { state.cancelled = true; c.error(new Error("aborted")); };
            },
            pull(c) {
                if (i < chunks.length) c.enqueue(chunks[i++]);
                else if (!keepOpen) {
                    c.close();
                    c.byobRequest?.respond(0);  // a waiting BYOB read ends with the stream (the spec's rule)
                }
                else return new Promise(() => {});  // an upstream that never closes
            },
            cancel() { state.cancelled = true; },
            type: "bytes",  // a fetch body is a byte stream: the relay reads it in BYOB batches
        }, { highWaterMark: 0 });
        return [stream, state];
    }"""
)
_caller = run_js(
    """async (readable, pauseMs) => {
        const reader = readable.getReader();
        const decoder = new TextDecoder();
        let text = "";
        for (;;) {
            const { done, value } = await reader.read();
            if (done) return text;
            text += decoder.decode(value);
            if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
        }
    }"""
)


def _event(delta: dict, finish: str | None = None) -> bytes:
    chunk = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def _run(pair, make_relay, pause_ms: int) -> dict:
    """Open ``pair`` (``[stream, state]``) up to its first event, relay it with ``make_relay`` and
    read the caller's side."""
    stream, state = pair[0], pair[1]
    reader = stream.getReader()
    head = (await reader.read()).value.to_bytes()
    # The upstream answer as the relays use it: its body, and abort() as a fetch's.
    opened = OpenedStream(SimpleNamespace(body=stream, abort=state.abort), reader, head, first_event(head))
    relay = make_relay(opened)
    task = asyncio.ensure_future(relay.run())
    text = await asyncio.wait_for(_caller(relay.readable, pause_ms), 20)
    await asyncio.wait_for(task, 10)
    return {"text": text, "upstream_cancelled": bool(state.cancelled)}


def _js_chunks(chunks: list[bytes]):
    return to_js([js.Uint8Array.new(to_js(c)) for c in chunks])


async def _pass_through(chunks: list[bytes], *, end: str, pause_ms: int, byte_stream: bool = True) -> dict:
    pair = _pushed_upstream(_js_chunks(chunks), end, byte_stream)
    return await _run(pair, lambda opened: Relay(opened, STALL_MS, "p/m"), pause_ms)


async def _translated(chunks: list[bytes], *, keep_open: bool, pause_ms: int) -> dict:
    pair = _pulled_upstream(_js_chunks(chunks), keep_open)
    return await _run(pair, lambda opened: TranslatedRelay(opened, STALL_MS, "p/m", AnthropicStream("m")), pause_ms)


async def main() -> None:
    words = [_event({"content": f"w{i} "}) for i in range(12)]
    answer = [_event({"role": "assistant"}), *words, _event({}, "stop"), b"data: [DONE]\n\n"]
    report = {
        "pass_through": {
            "complete": await _pass_through(answer, end="close", pause_ms=0),
            # A caller that pauses longer than the stall period between reads is not a stalled upstream.
            "slow_caller": await _pass_through(answer, end="close", pause_ms=2 * STALL_MS),
            # No more bytes and no end: a real stall.
            "stalled": await _pass_through(answer[:5], end="open", pause_ms=0),
            # Closed without [DONE] or a finish_reason: a truncated answer.
            "truncated": await _pass_through(answer[:5], end="close", pause_ms=0),
            # The connection fails mid-answer.
            "failed": await _pass_through(answer[:5], end="error", pause_ms=0),
            # Not a byte stream: the relay's own BYOB read of it fails, as a bug of the relay would.
            "relay_failed": await _pass_through(answer, end="close", pause_ms=0, byte_stream=False),
        },
        "translated": {
            "slow_caller": await _translated(answer, keep_open=False, pause_ms=3 * STALL_MS),
            # [DONE], then the upstream keeps its connection open: the answer is finished all the same.
            "done_then_open": await _translated(answer, keep_open=True, pause_ms=0),
            # No [DONE] and no more bytes: a real stall.
            "stalled": await _translated(answer[:5], keep_open=True, pause_ms=0),
        },
    }
    print(json.dumps(report))


await main()  # noqa: F704 - run-python.mjs runs this file with runPythonAsync
