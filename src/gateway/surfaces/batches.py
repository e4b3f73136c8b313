"""A translated stream batch by batch (SPEC §12, §18): what the relay does with the bytes, without
its I/O (``shell/translation.py`` holds the stream; ``shell/paced.mjs`` the loop).

- ``translate(data)``: a batch through the rescue's watch (when rescue is on: whole events only,
  an in-band error held back) and the translator; after ``[DONE]`` also the surface's end, and
  the answer is ``over`` (an upstream that keeps its connection open must not hold a finished
  answer).
- ``absorb(record, raw)``: what the loop spliced instead (``contract.Spliced``'s record, and the
  events as they came), into the translator's state and the watch's, as if fed.
- ``state()``: what the loop needs to go on, as JSON: the translator's plan (none once the answer
  is over or broke in-band), ``over``, ``complete`` (the finish reason is in: nothing is held any
  more), ``halt`` (rescue is on and the upstream reported an error: stop reading), ``raw`` (hand
  the events back as they came: the watch keeps them), ``ended`` (the relay has ended the stream:
  the loop need not call back at its end).
- Every output goes through ``scrubbed``: the provider's key never reaches the caller, should the
  upstream echo it.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json

from gateway.surfaces.contract import Spliced, StreamTranslator
from gateway.surfaces.watch import StreamWatch

__all__ = ["TranslatedBatches"]


class TranslatedBatches:
    """See the module doc. ``secrets``: the keys to keep out of the caller's bytes."""

    def __init__(self, translator: StreamTranslator, watch: StreamWatch | None, secrets: list[str]) -> None:
        self.translator = translator
        self.watch = watch
        self.over = False
        self._secrets = [secret.encode() for secret in secrets]

    @property
    def broke_in_band(self) -> bool:
        return self.watch is not None and self.watch.error is not None

    def add_secret(self, secret: str) -> None:
        self._secrets.append(secret.encode())

    def translate(self, data: bytes) -> bytes:
        translator = self.translator
        if self.watch is not None:
            data = self.watch.feed(data)
        out = translator.feed(data)
        if translator.done:
            out += translator.end()
            self.over = True
        return self.scrubbed(out)

    def absorb(self, record: str, raw: str) -> None:
        spliced = Spliced.from_json(json.loads(record))
        events = raw.encode()
        if self.watch is not None and events:
            self.watch.absorb(events)
        if spliced.units or spliced.args or spliced.texts or spliced.reasonings or events:
            self.translator.absorb(spliced, events)

    def state(self, ended: bool = False) -> str:
        halt = self.broke_in_band
        plan = None if self.over or halt else self.translator.plan()
        return json.dumps(
            {
                "plan": None if plan is None else plan.as_json(),
                "over": self.over,
                "complete": self.translator.complete,
                "halt": halt,
                "raw": self.watch is not None,
                "ended": ended,
            }
        )

    def scrubbed(self, out: bytes) -> bytes:
        # One substring search per output and key: the translator re-encodes upstream text, so a
        # key can only be there if the upstream echoed it.
        for secret in self._secrets:
            if secret in out:
                out = out.replace(secret, b"[redacted]")
        return out
