"""The relay's splice against the Python translators (SPEC §18, issue 39): the same events in give
the same bytes out, on one corpus (tests/support/stream_corpus.py), every surface, with and without
rescue's watch, however the stream is split into batches.

The relay's loop (src/gateway/shell/paced.mjs) frames each batch and splices it with
src/gateway/surfaces/splice.mjs, or hands it to Python (``TranslatedBatches``) with what it spliced
before; here the splice runs in Node (tests/support/splice_driver.mjs) and the rest is what the
relay does with its answers. Beside it, the translators are fed every batch as they were before
the splice existed. Each batch must give the same bytes both ways, and the end the same usage and,
under rescue, the same record of what the caller was sent.
"""

from __future__ import annotations

import base64
import json
import random
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.core.sse import first_event_size, whole_events
from gateway.surfaces.anthropic import AnthropicStream
from gateway.surfaces.batches import TranslatedBatches
from gateway.surfaces.contract import StreamTranslator
from gateway.surfaces.gemini import GeminiStream
from gateway.surfaces.ollama_stream import OllamaStream
from gateway.surfaces.responses_stream import ResponsesStream
from gateway.surfaces.watch import StreamWatch
from gateway.surfaces.whole_events import WholeEvents
from support.stream_corpus import SECRET, STREAMS

DRIVER = Path(__file__).resolve().parents[2] / "support" / "splice_driver.mjs"

SURFACES: dict[str, Callable[[], StreamTranslator]] = {
    "anthropic": lambda: AnthropicStream("m", 17),
    "responses": lambda: ResponsesStream("m", 1765000000, {"mcp__fs__read": ("mcp__fs__", "read")}),
    "gemini-sse": lambda: GeminiStream("m", sse=True),
    "gemini-array": lambda: GeminiStream("m", sse=False),
    "ollama-chat": lambda: OllamaStream("m", "2026-12-06T00:00:00Z", "chat"),
    "ollama-generate": lambda: OllamaStream("m", "2026-12-06T00:00:00Z", "generate"),
    "whole-events": WholeEvents,
}


class Driver:
    """The splice in Node, one command at a time (tests/support/splice_driver.mjs)."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node is not None, "scripts/test puts node_modules/.bin on PATH"
        self._process = subprocess.Popen(
            [node, str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def ask(self, **command: object) -> dict:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        return json.loads(self._process.stdout.readline())

    def close(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=10)


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    running = Driver()
    yield running
    running.close()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


@dataclass
class Run:
    """What the caller got, batch by batch, and what the translator and watch hold at the end."""

    outputs: list[bytes]
    usage: object
    streamed: object
    held: bytes


def _ending(batches: TranslatedBatches) -> bytes:
    """The relay's end (``TranslatedRelay._ending``, after a rescue that finds no other candidate):
    the watch's last event handed on, then the surface's end or its error."""
    if batches.over or batches.broke_in_band:
        return b""
    translator = batches.translator
    out = b""
    if batches.watch is not None:
        out += translator.feed(batches.watch.close())
    out += translator.feed(b"\n\n")
    out += translator.end() if translator.complete else translator.fail("the upstream stream failed")
    return batches.scrubbed(out)


def _finish(batches: TranslatedBatches, outputs: list[bytes]) -> Run:
    outputs.append(_ending(batches))
    watch = batches.watch
    return Run(
        outputs,
        batches.translator.usage,
        None if watch is None else watch.streamed,
        b"" if watch is None else watch.held,
    )


def fed(make: Callable[[], StreamTranslator], rescue: bool, head: bytes, rest: list[bytes]) -> Run:
    """Every batch fed to the translator, as the relay did before the splice."""
    batches = TranslatedBatches(make(), StreamWatch() if rescue else None, [SECRET])
    outputs = [batches.translate(head)]
    for data in rest:
        if batches.over or batches.broke_in_band:
            break
        outputs.append(batches.translate(data))
    return _finish(batches, outputs)


def spliced(driver: Driver, make: Callable[[], StreamTranslator], rescue: bool, head: bytes, rest: list[bytes]) -> Run:
    """The relay's way: the head's whole events fed, then each batch framed and spliced in Node,
    or fed after what was spliced before it; at the end what was spliced, then the last
    unfinished event."""
    batches = TranslatedBatches(make(), StreamWatch() if rescue else None, [SECRET])
    whole, unfinished = whole_events(head)
    outputs = [batches.translate(whole)]
    driver.ask(op="new", secrets=[SECRET], tail=_b64(unfinished))

    def plan() -> None:
        state = json.loads(batches.state())
        driver.ask(op="plan", plan=state["plan"], raw=state["raw"])

    plan()
    for data in rest:
        if batches.over or batches.broke_in_band:
            break
        answer = driver.ask(op="batch", bytes=_b64(data))
        out, rest = _bytes(answer["out"]) or b"", _bytes(answer["rest"])
        if rest is not None:
            taken = driver.ask(op="take")
            batches.absorb(taken["record"], taken["raw"])
            out += batches.translate(rest)
            plan()
        outputs.append(out)
    taken = driver.ask(op="take")
    batches.absorb(taken["record"], taken["raw"])
    tail = _bytes(driver.ask(op="tail")["tail"]) or b""
    if tail and not batches.over:
        if batches.watch is not None:
            batches.watch.feed(tail)
        else:
            outputs[-1] += batches.scrubbed(batches.translator.feed(tail))
    return _finish(batches, outputs)


def splits(writes: list[bytes]) -> Iterator[tuple[str, bytes, list[bytes]]]:
    """The stream as a head (up to its first data event, as ``open_stream`` reads it, sometimes a
    little more) and batches: one per upstream write, all at once, fixed sizes, seeded random."""
    data = b"".join(writes)
    first = first_event_size(data)
    yield "per write", data[:first], _rest_per_write(writes, first)
    for extra, size in ((0, 7), (5, 64)):
        head, rest = data[: first + extra], data[first + extra :]
        yield f"whole +{extra}", head, [rest]
        yield f"size {size} +{extra}", head, [rest[i : i + size] for i in range(0, len(rest), size)]
    for seed in range(2):
        draw = random.Random(seed)
        head, rest = data[:first], data[first:]
        cuts = sorted(draw.sample(range(1, len(rest)), min(len(rest) - 1, 12))) if len(rest) > 1 else []
        yield f"random {seed}", head, [rest[a:b] for a, b in zip([0, *cuts], [*cuts, len(rest)], strict=True)]


def _rest_per_write(writes: list[bytes], first: int) -> list[bytes]:
    rest, seen = [], 0
    for write in writes:
        if seen + len(write) > first:
            rest.append(write[max(0, first - seen) :])
        seen += len(write)
    return rest


@pytest.mark.parametrize("rescue", [False, True], ids=["plain", "rescue"])
@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("stream", STREAMS)
def test_the_splice_gives_the_translators_bytes(driver: Driver, stream: str, surface: str, rescue: bool) -> None:
    if surface == "whole-events" and not rescue:
        pytest.skip("the chat stream is translated in whole events only under rescue")
    make = SURFACES[surface]
    for name, head, rest in splits(STREAMS[stream]):
        expected = fed(make, rescue, head, rest)
        got = spliced(driver, make, rescue, head, rest)
        assert got.outputs == expected.outputs, name
        assert (got.usage, got.streamed, got.held) == (expected.usage, expected.streamed, expected.held), name


def test_a_long_answer_is_spliced_with_a_python_call_only_where_its_structure_changes(driver: Driver) -> None:
    """The point of the splice: a 60-word answer sent one word per batch goes to Python for its
    head (the role chunk), its first word (which opens the text block) and its end (the finish,
    usage and [DONE]); the other 59 words are spliced."""
    writes = STREAMS["long text"]
    data = b"".join(writes)
    first = first_event_size(data)
    batches = TranslatedBatches(AnthropicStream("m", 17), None, [])
    whole, unfinished = whole_events(data[:first])
    batches.translate(whole)
    driver.ask(op="new", secrets=[], tail=_b64(unfinished))
    driver.ask(op="plan", plan=json.loads(batches.state())["plan"], raw=False)
    rest = _rest_per_write(writes, first)
    fed_to_python = []
    for index, write in enumerate(rest):
        python = _bytes(driver.ask(op="batch", bytes=_b64(write))["rest"])
        if python is not None:
            fed_to_python.append(index)
            taken = driver.ask(op="take")
            batches.absorb(taken["record"], taken["raw"])
            batches.translate(python)
            driver.ask(op="plan", plan=json.loads(batches.state())["plan"], raw=False)
    assert fed_to_python == [0, len(rest) - 3, len(rest) - 2, len(rest) - 1]
