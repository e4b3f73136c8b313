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

from gateway.shell.http import fulfilled, plain
from gateway.shell.stream import STALL_CHECKS, OpenedStream
from gateway.surfaces.contract import StreamTranslator

__all__ = ["TranslatedRelay"]


# (reader, head, feed, finish, probe) -> [stream, done]. ``feed(chunk)`` and ``finish(ok)`` return
# the bytes to send or undefined; ``done`` settles when the stream ended or the caller cancelled
# it. ``probe`` is shared with Python: ``reads`` counts upstream reads, ``waiting`` says a read
# is pending (a slow caller is not a stalled upstream), ``over`` that Python wrote the last bytes.
_GLUE = """(reader, head, feed, finish, probe) => {
    let settle;
    const done = new Promise((resolve) => { settle = resolve; });
    const close = (controller) => {
        controller.close();
        settle();
        reader.cancel().catch(() => {});
    };
    const stream = new ReadableStream({
        start(controller) {
            controller.enqueue(head);
            if (probe.over) close(controller);
        },
        async pull(controller) {
            try {
                // A pull that enqueues nothing is not called again: read until there is output.
                for (;;) {
                    let result = null;
                    probe.waiting = true;
                    try { result = await reader.read(); } catch {}
                    probe.waiting = false;
                    if (result !== null && !result.done) {
                        probe.reads++;
                        const out = feed(result.value);
                        if (out !== undefined) controller.enqueue(out);
                        if (probe.over) { close(controller); return; }
                        if (out !== undefined) return;
                        continue;
                    }
                    const last = finish(result !== null);
                    if (last !== undefined) controller.enqueue(last);
                    controller.close();
                    settle();
                    return;
                }
            } catch (error) {  // a bug on the Python side: end everything, never hang
                settle();
                reader.cancel().catch(() => {});
                throw error;
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

    def __init__(
        self, opened: OpenedStream, stall_ms: int, label: str, translator: StreamTranslator, secret: str | None = None
    ) -> None:
        """``secret``: the provider key the upstream was sent; never passed on, should the
        upstream echo it in an error the translator turns into the surface's own event."""
        global _glue
        if _glue is None:
            _glue = run_js(_GLUE)
        self._reader = opened.reader
        self._translator = translator
        self._stall_s = stall_ms / 1000
        self._label = label
        self._stalled = False
        self._broken = False
        self._secret = secret.encode() if secret else b""
        self._probe = plain({"reads": 0, "waiting": False, "over": False})
        self._feed = create_proxy(self._on_read)
        self._finish = create_proxy(self._on_end)
        head = self._translate(opened.head)
        pair = _glue(opened.reader, to_js(head), self._feed, self._finish, self._probe)
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
        if self._broken:
            return None
        out = self._translate(chunk.to_bytes())
        return to_js(out) if out else None

    def _scrubbed(self, out: bytes) -> bytes:
        # One substring search per read: the translator re-encodes upstream text, so the key
        # can only be there if the upstream echoed it.
        return out.replace(self._secret, b"[redacted]") if self._secret and self._secret in out else out

    def _translate(self, data: bytes) -> bytes:
        """The translation of one read; after ``[DONE]`` also the surface's end, and the stream
        is over (an upstream that keeps its connection open must not stall a finished answer)."""
        translator = self._translator
        try:
            out = translator.feed(data)
            if translator.done:
                out += translator.end()
                self._probe.over = True
        except Exception:  # noqa: BLE001 - a bug here must still end the caller's stream honestly
            self._broken = True
            self._probe.over = True
            out = translator.fail(f"{self._label}: the gateway failed while relaying the stream")
        return self._scrubbed(out)

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
        out = self._scrubbed(out)
        return to_js(out) if out else None

    async def _watch(self) -> None:
        """A read pending for a whole stall period with no upstream bytes cancels the upstream;
        the stream then ends as stalled (``_on_end``). A caller that reads slowly leaves no read
        pending, so it is never taken for a stalled upstream."""
        probe = self._probe
        seen, last_progress = probe.reads, time.monotonic()
        while True:
            await asyncio.sleep(self._stall_s / STALL_CHECKS)
            reads = probe.reads
            if reads != seen or not probe.waiting:
                seen, last_progress = reads, time.monotonic()
            elif time.monotonic() - last_progress >= self._stall_s:
                self._stalled = True
                await fulfilled(self._reader.cancel())
                return
