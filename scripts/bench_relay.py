"""The Worker's own work per streamed event, measured inside Pyodide (run by scripts/bench.py
through scripts/profile; argv[1] is the folder holding the Worker's modules).

A JS ``ReadableStream`` plays the upstream (its chunks made in JS beforehand) and a JS reader
drains the caller's side, so the CPU time measured is the relay's: Python and the JS it calls, not
a socket's. CPU, not wall time: the event loop of Pyodide under Node waits on timers between
turns (workerd's does not), and waiting is not work.
For each surface: 1,000 OpenAI events, one per read (a model typing) and all in 16 KiB reads; and
with stream rescue on (SPEC §16: the chat stream relayed in whole events, a ``StreamWatch`` before
the translator), a stream that does not break. Prints one JSON object.
"""

import json
import sys

import js
from pyodide.code import run_js
from pyodide.ffi import to_js

sys.path.insert(0, sys.argv[1])

from gateway.core.sse import first_event
from gateway.shell.stream import OpenedStream, Relay
from gateway.shell.translation import TranslatedRelay
from gateway.surfaces import anthropic, gemini, responses
from gateway.surfaces.ollama_stream import OllamaStream
from gateway.surfaces.whole_events import WholeEvents

EVENTS = 1000
ROUNDS = 5
BULK_READ = 16 * 1024

_make_stream = run_js(
    """(chunks) => {
        let i = 0;
        return new ReadableStream({
            pull(controller) {
                if (i < chunks.length) controller.enqueue(chunks[i++]);
                else controller.close();
            },
            type: "bytes",  // as a fetch body is (the pass-through relay reads a tee of it by BYOB)
        }, { highWaterMark: 0 });
    }"""
)
_drain = run_js(
    """async (readable) => {
        const reader = readable.getReader();
        let bytes = 0;
        for (;;) {
            const { done, value } = await reader.read();
            if (done) return bytes;
            bytes += value.byteLength;
        }
    }"""
)


def _events() -> list[bytes]:
    def event(delta: dict, finish: str | None = None) -> bytes:
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    body = [event({"role": "assistant", "content": ""})]
    body += [event({"content": f" word{i}"}) for i in range(EVENTS - 2)]
    body += [event({}, "stop"), b"data: [DONE]\n\n"]
    return body


def _reads(events: list[bytes], bulk: bool) -> list[bytes]:
    if not bulk:
        return events
    whole = b"".join(events)
    return [whole[i : i + BULK_READ] for i in range(0, len(whole), BULK_READ)]


def _cpu_ms() -> float:
    usage = js.process.cpuUsage()
    return (usage.user + usage.system) / 1000


class _Answer:
    def __init__(self, body: object) -> None:
        self.body = body
        self.aborter = js.AbortController.new()  # the relay stops an upstream still open after [DONE]

    def abort(self) -> None:
        """This upstream has no request behind it."""


class _Rescuer:
    """Rescue on: the relay keeps a watch; a stream that does not break never asks the rescuer."""

    body: dict = {}


async def _relay_once(reads: list[bytes], translator: object, rescue: bool = False) -> float:
    stream = _make_stream(to_js([js.Uint8Array.new(to_js(r)) for r in reads]))
    reader = stream.getReader()
    first = await reader.read()
    head = first.value.to_bytes()
    if translator is None:  # the pass-through path reads the rest through a tee of the body
        reader.releaseLock()
        reader = stream.getReader()
    opened = OpenedStream(_Answer(stream), reader, head, first_event(head))
    start = _cpu_ms()
    if translator is None:
        readable, done = await Relay(opened, 60_000, "bench/m").start()
    else:
        relay = TranslatedRelay(opened, 60_000, "bench/m", translator, rescuer=_Rescuer() if rescue else None)
        readable, done = relay.readable, await relay.start()
    size = await _drain(readable)
    await done
    elapsed = _cpu_ms() - start
    assert size > 0
    return elapsed


SURFACES = {
    "openai (pass-through)": lambda: None,
    "anthropic /v1/messages": lambda: anthropic.AnthropicStream("m"),
    "responses /v1/responses": lambda: responses.ResponsesStream("m", created_at=1_700_000_000),
    "gemini :streamGenerateContent": lambda: gemini.GeminiStream("m", sse=True),
    "ollama /api/chat": lambda: OllamaStream("m", created_at="2026-01-01T00:00:00Z", mode="chat"),
}
# With rescue on (the chat stream is then relayed as a translated one, by WholeEvents).
RESCUE_ON = {
    "openai, rescue on": WholeEvents,
    "anthropic /v1/messages, rescue on": lambda: anthropic.AnthropicStream("m"),
}


async def main() -> None:
    events = _events()
    report: dict[str, dict[str, float]] = {}
    runs = [(name, make, False) for name, make in SURFACES.items()]
    runs += [(name, make, True) for name, make in RESCUE_ON.items()]
    for name, make, rescue in runs:
        row = {}
        for label, bulk in (("one_event_per_read", False), ("16KiB_reads", True)):
            reads = _reads(events, bulk)
            await _relay_once(reads, make(), rescue)  # warm: imports, JIT of the JS side
            best = min([await _relay_once(reads, make(), rescue) for _ in range(ROUNDS)])
            row[f"{label}_ms_per_{EVENTS}_events"] = round(best, 2)
            row[f"{label}_us_per_event"] = round(best * 1000 / EVENTS, 2)
        report[name] = row
    print(json.dumps(report, indent=2))


await main()  # noqa: F704 - scripts/profile runs this file with runPythonAsync
