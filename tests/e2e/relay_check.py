"""Drives ``gateway.shell.stream.Relay`` (the OpenAI pass-through relay) inside Pyodide against
JS streams and prints one JSON report per scenario (run by test_relay.py through run-python.mjs;
argv[1] is the folder holding the Worker's modules).

The upstream is a JS byte ``ReadableStream`` fed as a fetch body is, by the network: its chunks
arrive every few milliseconds whether or not anyone reads, then it closes, fails or stays open.
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

STALL_MS = 200

_upstream = run_js(
    """(chunks, end) => {
        const state = { cancelled: false };
        const stream = new ReadableStream({
            start(c) {
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
            type: "bytes",  // as a fetch body is
        });
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


def _event(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    chunk = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def _run(chunks: list[bytes], *, end: str, pause_ms: int) -> dict:
    pair = _upstream(to_js([js.Uint8Array.new(to_js(c)) for c in chunks]), end)
    stream, state = pair[0], pair[1]
    reader = stream.getReader()
    head = (await reader.read()).value.to_bytes()
    answer = SimpleNamespace(body=stream)  # what Relay reads of an UpstreamResponse
    relay = Relay(OpenedStream(answer, reader, head, first_event(head)), STALL_MS, "p/m")
    task = asyncio.ensure_future(relay.run())
    text = await asyncio.wait_for(_caller(relay.readable, pause_ms), 20)
    await asyncio.wait_for(task, 10)
    return {"text": text, "upstream_cancelled": bool(state.cancelled)}


async def main() -> None:
    words = [_event(f"w{i} ") for i in range(12)]
    answer = [_event(""), *words, _event(None, "stop"), b"data: [DONE]\n\n"]
    report = {
        "complete": await _run(answer, end="close", pause_ms=0),
        # A caller that pauses longer than the stall period between reads is not a stalled upstream.
        "slow_caller": await _run(answer, end="close", pause_ms=2 * STALL_MS),
        # No more bytes and no end: a real stall.
        "stalled": await _run(answer[:5], end="open", pause_ms=0),
        # Closed without [DONE] or a finish_reason: a truncated answer.
        "truncated": await _run(answer[:5], end="close", pause_ms=0),
        # The connection fails mid-answer.
        "failed": await _run(answer[:5], end="error", pause_ms=0),
    }
    print(json.dumps(report))


await main()  # noqa: F704 - run-python.mjs runs this file with runPythonAsync
