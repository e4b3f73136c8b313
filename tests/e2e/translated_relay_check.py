"""Drives ``gateway.shell.translation.TranslatedRelay`` inside Pyodide against JS streams and
prints one JSON report per scenario (run by test_translated_relay.py through run-python.mjs;
argv[1] is the folder holding the Worker's modules).

The upstream is a JS ``ReadableStream`` that can be left open after its last chunk; the caller
is a JS reader that can pause between reads. The stall setting is 200 ms.
"""

import asyncio
import json
import sys

import js
from pyodide.code import run_js
from pyodide.ffi import to_js

sys.path.insert(0, sys.argv[1])

from gateway.core.sse import first_event  # noqa: E402
from gateway.shell.stream import OpenedStream  # noqa: E402
from gateway.shell.translation import TranslatedRelay  # noqa: E402
from gateway.surfaces.anthropic import AnthropicStream  # noqa: E402

STALL_MS = 200

_upstream = run_js(
    """(chunks, keepOpen) => {
        let i = 0;
        const state = { cancelled: false };
        const stream = new ReadableStream({
            pull(c) {
                if (i < chunks.length) c.enqueue(chunks[i++]);
                else if (!keepOpen) c.close();
                else return new Promise(() => {});  // an upstream that never closes
            },
            cancel() { state.cancelled = true; },
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


async def _run(chunks: list[bytes], *, keep_open: bool, pause_ms: int) -> dict:
    pair = _upstream(to_js([js.Uint8Array.new(to_js(c)) for c in chunks]), keep_open)
    stream, state = pair[0], pair[1]
    reader = stream.getReader()
    head = (await reader.read()).value.to_bytes()
    relay = TranslatedRelay(OpenedStream(None, reader, head, first_event(head)), STALL_MS, "p/m", AnthropicStream("m"))
    task = asyncio.ensure_future(relay.run())
    text = await asyncio.wait_for(_caller(relay.readable, pause_ms), 10)
    await asyncio.wait_for(task, 10)
    return {"text": text, "upstream_cancelled": bool(state.cancelled)}


async def main() -> None:
    words = [_event({"content": f"w{i} "}) for i in range(12)]
    answer = [_event({"role": "assistant"}), *words, _event({}, "stop"), b"data: [DONE]\n\n"]
    report = {
        # A caller that pauses longer than the stall period between reads is not a stalled upstream.
        "slow_caller": await _run(answer, keep_open=False, pause_ms=3 * STALL_MS),
        # [DONE], then the upstream keeps its connection open: the answer is finished all the same.
        "done_then_open": await _run(answer, keep_open=True, pause_ms=0),
        # No [DONE] and no more bytes: a real stall.
        "stalled": await _run(answer[:5], keep_open=True, pause_ms=0),
    }
    print(json.dumps(report))


await main()  # noqa: F704 - run-python.mjs runs this file with runPythonAsync
