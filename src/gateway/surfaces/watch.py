"""The cut stream of a rescue (SPEC §16), read as OpenAI chat SSE: what the caller was sent of it.

``StreamWatch`` stands between the upstream and whoever turns its bytes into the caller's (a
translator, or ``WholeEvents``). It hands on whole events only, notes what they carried
(``streamed``: the partial a rescue continues), and holds back the first event that reports an
error in-band (``error``): a rescue may still replace it; if none does, the relay hands it on
(``held``) and the stream ends as it would have without rescue. The rescue's own stream is joined
after it by ``surfaces/continuation.py``.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json

from gateway.core.rescue import Streamed
from gateway.core.sse import BLANK, normalized
from gateway.surfaces.chat import (
    LEGACY_CALL,
    ChatStreamDecoder,
    Finish,
    Reasoning,
    Text,
    ToolArgs,
    ToolStart,
    UpstreamError,
    Usage,
)

__all__ = ["StreamWatch"]

# What an event reporting an error in-band holds (an ``error`` member, or OpenRouter's finish
# reason): only a batch holding it is read at once. JSON escapes every quote inside a string, so
# these bytes can only be its structure.
_ERROR_MARK = b'"error"'


class StreamWatch:
    """See the module doc. ``feed(data)`` returns the whole events to hand on; ``close()`` those
    of a last event that lacked its blank line, once the stream has ended.

    A healthy stream costs it a search for the last blank line and one for an error marker per
    read: what it hands on is kept as bytes and read (``streamed``, ``id``, ``usage``) only when
    asked, once the stream broke."""

    def __init__(self) -> None:
        self.error: str | None = None  # the held in-band error's message
        self.held = b""  # the held error event and anything after it
        self._tail = b""
        self._sent: list[bytes] = []  # what was handed on, not yet read
        self._decoder = ChatStreamDecoder()
        self._streamed = Streamed()

    @property
    def streamed(self) -> Streamed:
        """What was handed on of the answer."""
        self._read_sent()
        return self._streamed

    @property
    def id(self) -> str:
        self._read_sent()
        return self._decoder.id

    @property
    def usage(self) -> Usage | None:
        self._read_sent()
        return self._decoder.usage

    @property
    def ragged(self) -> bool:
        """Bytes of an unfinished event are waiting: the stream broke inside an event."""
        return bool(self._tail.strip())

    def feed(self, data: bytes) -> bytes:
        if self.error is not None:
            self.held += data
            return b""
        buffer, hold = normalized(self._tail + data)
        end = buffer.rfind(BLANK)
        if end < 0:
            self._tail = buffer + hold
            return b""
        whole, self._tail = buffer[: end + 2], buffer[end + 2 :] + hold
        if _ERROR_MARK in whole:  # maybe an in-band error: read it
            return self._hold(whole)
        self._sent.append(whole)
        return whole

    def absorb(self, whole: bytes) -> None:
        """Whole events the relay sent on itself (SPEC §18: spliced, or passed on as they came): no
        error among them, nothing to hand on, kept as what the caller was sent."""
        self._sent.append(whole)

    def close(self) -> bytes:
        """The last event when it lacked only its blank line (the stream has ended); half an
        event, broken off inside a line, is dropped: handed on, it would reach the caller as
        broken JSON."""
        tail, self._tail = self._tail, b""
        if not tail.strip() or self.error is not None or not _whole_lines(tail):
            return b""
        return self.feed(tail + BLANK)

    def _read_sent(self) -> None:
        streamed, sent, self._sent = self._streamed, self._sent, []
        for data in sent:
            if LEGACY_CALL in data:
                streamed.tool_call = True
            for event in self._decoder.feed(data):
                if isinstance(event, Text):
                    streamed.add_text(event.text)
                elif isinstance(event, Reasoning):
                    streamed.reasoning = True
                elif isinstance(event, ToolStart | ToolArgs):
                    streamed.tool_call = True
                elif isinstance(event, Finish):
                    streamed.finish_reason = event.reason

    def _hold(self, whole: bytes) -> bytes:
        """Hand on ``whole`` up to the first event that reports an error in-band, hold that event
        and what follows (none: all of it is handed on). Rare, so each event is read on its own."""
        parts = whole.split(BLANK)
        for index, part in enumerate(parts):
            errors = [e for e in ChatStreamDecoder().feed(part + BLANK) if isinstance(e, UpstreamError)]
            if errors:
                self.error = errors[0].message
                before = b"".join(p + BLANK for p in parts[:index])
                self.held = whole[len(before) :] + self._tail
                self._tail = b""
                self._sent.append(before)
                return before
        self._sent.append(whole)
        return whole


def _whole_lines(event: bytes) -> bool:
    """Whether each data line of ``event`` is whole: ``[DONE]`` or a JSON value."""
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data == b"[DONE]":
                continue
            try:
                json.loads(data)
            except ValueError:
                return False
    return True
