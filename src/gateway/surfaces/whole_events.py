"""An OpenAI chat stream relayed as it came, in whole events, by the relay of the translated
surfaces (the native pass-through, ``stream.Relay``, never splits it into events): how
``/v1/chat/completions`` streams when rescue is on (SPEC §16). ``StreamWatch`` hands it whole
events, so a rescue's chunks never follow half an event; after a rescue, the ``Continuation``'s
chunks come through it too. What it says of the answer's end comes from its last bytes, as
``stream.Relay`` judges them (``core/sse.py``); its error is ``stream.Relay``'s ``stream_error``.
The relay sends its events on itself (``plan``: verbatim), handing back what it sent (``absorb``).
"""

from __future__ import annotations

from gateway.core.counting import Tokens, usage_of
from gateway.core.sse import TAIL_BYTES, ended_properly, stream_error_event
from gateway.surfaces.contract import Plan, Spliced

# Its events go out as they came: the relay sends on all but those that say how the answer ends.
_VERBATIM = Plan("verbatim")

__all__ = ["WholeEvents"]


class WholeEvents:
    media_type = "text/event-stream"

    def __init__(self) -> None:
        self._tail = b""
        self._over = False

    @property
    def complete(self) -> bool:
        """The answer ended properly: ``[DONE]``, a ``finish_reason``, or the upstream's own error
        event (passed on as it came)."""
        return ended_properly(self._tail)

    @property
    def done(self) -> bool:
        return self._tail.rstrip().endswith(b"data: [DONE]")

    @property
    def usage(self) -> Tokens | None:
        return usage_of(self._tail)

    def feed(self, data: bytes) -> bytes:
        if data:
            self._tail = (self._tail + data)[-TAIL_BYTES:]
        return data

    def end(self) -> bytes:
        return b""

    def plan(self) -> Plan | None:
        return None if self._over else _VERBATIM

    def absorb(self, spliced: Spliced, raw: bytes) -> None:
        self.feed(raw)

    def keep_alive(self) -> bytes:
        return b": keep-alive\n\n"

    def fail(self, message: str, code: str = "stream_interrupted") -> bytes:
        if self._over or self.complete:
            return b""
        self._over = True
        return stream_error_event(message, code)
