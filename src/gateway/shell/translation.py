"""Relaying a stream that a surface translates (SPEC §12): OpenAI SSE in, the surface's bytes out.

Like ``stream.Relay`` it takes over after the first upstream event (a bad start has already failed
over) and never lets a cut, failed or stalled upstream look like a finished answer: the
translator's ``fail`` ends the stream instead of its ``end``.

The read loop is JS: the caller's body is a ``ReadableStream`` whose ``pull`` reads the upstream
and hands each read to the translator with one synchronous call, so the Python work per read is
one ``feed`` and no ``await`` (a Python await of a JS promise, and every extra stream stage, costs
more than the translation itself; measured in ``scripts/bench_relay.py``). Python awaits once per
stream, for its end; the stall watchdog wakes a few times per stall period, never per read.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pyodide.code import run_js
from pyodide.ffi import create_proxy, to_js

from gateway.shell.stream import OpenedStream
from gateway.surfaces.contract import StreamTranslator

__all__ = ["TranslatedRelay"]

# The watchdog looks this many times per stall period, so a stall is seen within 1.25 periods.
_STALL_CHECKS = 4

# (reader, head, feed, finish) -> [stream, done]. ``feed(chunk)`` and ``finish(ok)`` return the
# bytes to send or undefined; ``done`` settles when the stream ended or the caller cancelled it.
_GLUE = """(reader, head, feed, finish) => {
    let settle;
    const done = new Promise((resolve) => { settle = resolve; });
    const stream = new ReadableStream({
        start(controller) { controller.enqueue(head); },
        async pull(controller) {
            // A pull that enqueues nothing is not called again: read until there is output.
            for (;;) {
                let result = null;
                try { result = await reader.read(); } catch {}
                if (result !== null && !result.done) {
                    const out = feed(result.value);
                    if (out !== undefined) { controller.enqueue(out); return; }
                    continue;
                }
                const last = finish(result !== null);
                if (last !== undefined) controller.enqueue(last);
                controller.close();
                settle();
                return;
            }
        },
        cancel(reason) { settle(); return reader.cancel(reason); },
    }, { highWaterMark: 1 });
    return [stream, done];
}"""
_glue: Any = None  # made on first use: no JS object may exist while the Worker is snapshotted


class TranslatedRelay:
    """The caller's side of a translated stream is ``readable``; ``run()`` watches it to its end
    (give it to waitUntil)."""

    def __init__(self, opened: OpenedStream, stall_ms: int, label: str, translator: StreamTranslator) -> None:
        global _glue
        if _glue is None:
            _glue = run_js(_GLUE)
        self._reader = opened.reader
        self._translator = translator
        self._stall_s = stall_ms / 1000
        self._label = label
        self._reads = 0
        self._stalled = False
        self._broken = False
        self._feed = create_proxy(self._on_read)
        self._finish = create_proxy(self._on_end)
        pair = _glue(opened.reader, to_js(translator.feed(opened.head)), self._feed, self._finish)
        self.readable, self._done = pair[0], pair[1]

    async def run(self) -> None:
        watchdog = asyncio.ensure_future(self._watch())
        try:
            await self._done
        finally:
            watchdog.cancel()
            self._feed.destroy()
            self._finish.destroy()

    def _on_read(self, chunk: Any) -> Any:
        self._reads += 1
        if self._broken:
            return None
        try:
            out = self._translator.feed(chunk.to_bytes())
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._broken = True
            out = self._translator.fail(f"{self._label}: the gateway failed while relaying the stream")
        return to_js(out) if out else None

    def _on_end(self, closed: bool) -> Any:
        """The upstream ended: ``closed`` when it closed, False when it failed."""
        if self._broken:
            return None
        translator = self._translator
        try:
            if self._stalled:
                out = translator.fail(f"{self._label}: no data from the upstream for {round(self._stall_s)}s")
            elif not closed:
                out = translator.fail(f"{self._label}: the upstream stream failed")
            else:
                out = translator.feed(b"\n\n")  # a last event may lack its blank line
                if translator.complete:
                    out += translator.end()
                else:
                    out += translator.fail(f"{self._label}: the upstream stream ended before the answer was complete")
        except Exception:  # noqa: BLE001 - as in _on_read
            out = translator.fail(f"{self._label}: the gateway failed while relaying the stream")
        return to_js(out) if out else None

    async def _watch(self) -> None:
        """No upstream read for a whole stall period cancels the upstream; the stream then ends
        as stalled (``_on_end``)."""
        seen, last_progress = self._reads, time.monotonic()
        while True:
            await asyncio.sleep(self._stall_s / _STALL_CHECKS)
            if self._reads != seen:
                seen, last_progress = self._reads, time.monotonic()
            elif time.monotonic() - last_progress >= self._stall_s:
                self._stalled = True
                self._reader.cancel()
                return
