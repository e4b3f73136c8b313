"""The two streams of a rescue (SPEC §16), read as OpenAI chat SSE: what the caller was sent of the
cut one, and the rescue's continuation turned into the chunks that follow it.

- ``StreamWatch`` stands between the upstream and whoever turns its bytes into the caller's (a
  translator, or ``ChatPassThrough``). It hands on whole events only, notes what they carried
  (``streamed``: the partial a rescue continues), and holds back the first event that reports an
  error in-band (``error``): a rescue may still replace it; if none does, the relay hands it on
  (``held``) and the stream ends as it would have without rescue.
- ``Continuation`` reads the rescue's stream and gives the chunks the caller gets after what it
  has: the text through the seam (``core/seam.py``: never a repeat, never a restart), tool calls
  and the finish as they come, reasoning left out (the caller saw the first attempt's), each chunk
  marked ``x_rescued_from`` (the cut stream's ``provider/model``) and carrying the cut stream's id;
  the usage chunk sums both attempts (SPEC §16, §17). ``failed`` once the seam refused the text or
  the rescue's stream reported an error: the relay then ends the stream with the surface's error.

Pure: no I/O, no clock; ``created`` is given.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.core.counting import Tokens
from gateway.core.rescue import Streamed
from gateway.core.seam import Seam, SeamRefusal
from gateway.surfaces.chat import (
    ChatStreamDecoder,
    Event,
    Finish,
    Reasoning,
    Text,
    ToolArgs,
    ToolStart,
    UpstreamError,
    Usage,
)
from gateway.surfaces.contract import compact

__all__ = ["Continuation", "StreamWatch"]

_BLANK = b"\n\n"
# A legacy function call (``functions``/``function_call``), which the chat decoder does not read:
# as JSON escapes every quote inside a string, these bytes can only be the key (or the finish
# reason that ends such a call).
_LEGACY_CALL = b'"function_call"'
# What an event reporting an error in-band holds (an ``error`` member, or OpenRouter's finish
# reason): only a batch holding it is read at once. As above, these are JSON's structure.
_ERROR_MARK = b'"error"'


def _normalized(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


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
        buffer = self._tail + data
        if buffer.endswith(b"\r"):  # maybe half of a "\r\n": decide when the next bytes come
            self._tail = buffer
            return b""
        buffer = _normalized(buffer)
        end = buffer.rfind(_BLANK)
        if end < 0:
            self._tail = buffer
            return b""
        whole, self._tail = buffer[: end + 2], buffer[end + 2 :]
        if _ERROR_MARK in whole:  # maybe an in-band error: read it
            return self._hold(whole)
        self._sent.append(whole)
        return whole

    def close(self) -> bytes:
        """The last event when it lacked only its blank line (the stream has ended); half an
        event, broken off inside a line, is dropped: handed on, it would reach the caller as
        broken JSON."""
        tail, self._tail = self._tail, b""
        if not tail.strip() or self.error is not None or not _whole_lines(tail):
            return b""
        return self.feed(tail + _BLANK)

    def _read_sent(self) -> None:
        streamed, sent, self._sent = self._streamed, self._sent, []
        for data in sent:
            if _LEGACY_CALL in data:
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
        parts = whole.split(_BLANK)
        for index, part in enumerate(parts):
            errors = [e for e in ChatStreamDecoder().feed(part + _BLANK) if isinstance(e, UpstreamError)]
            if errors:
                self.error = errors[0].message
                before = b"".join(p + _BLANK for p in parts[:index])
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


class Continuation:
    """See the module doc. ``feed(data)`` takes the rescue stream's bytes (any split) and returns
    the caller's chunks; ``close()`` when it has ended. ``partial``: the text the caller has;
    ``rescued_from``: the cut stream's ``provider/model``; ``chunk_id``: the cut stream's id;
    ``model``: the model the rescue asked for; ``before``: the cut attempt's tokens."""

    def __init__(
        self, partial: str, rescued_from: str, chunk_id: str, model: str, created: int, before: Tokens
    ) -> None:
        self._seam: Seam | None = Seam(partial)
        self._decoder = ChatStreamDecoder()
        self._before = before
        self._frame = {"id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": model}
        self._rescued_from = rescued_from
        self.refused: SeamRefusal | None = None
        self.error: str | None = None  # the rescue stream's own in-band error
        self._usage: Usage | None = None
        self._usage_said = False

    @property
    def failed(self) -> bool:
        return self.refused is not None or self.error is not None

    @property
    def complete(self) -> bool:
        return self._decoder.finished and not self.failed

    @property
    def done(self) -> bool:
        return self._decoder.done and not self.failed

    @property
    def usage(self) -> Tokens | None:
        """Both attempts' tokens, once the rescue's stream reported its own."""
        usage = self._usage
        if usage is None:
            return None
        before = self._before
        return Tokens.stated(
            before.input + usage.input_tokens, before.output + usage.output_tokens, before.cached + usage.cached_tokens
        )

    def feed(self, data: bytes) -> bytes:
        if self.failed:
            return b""
        if _LEGACY_CALL in data:  # a call this reader would drop: the answer would lose it
            self.error = "the rescue answered with a legacy function call"
            return b""
        out: list[str] = []
        done = self._decoder.done
        for event in self._decoder.feed(data):
            if not self._event(event, out):
                return "".join(out).encode()  # what was joined before the failure
        if self._decoder.done and not done and self._close_seam(out):
            self._say_usage(out)
            out.append("data: [DONE]\n\n")
        return "".join(out).encode()

    def close(self) -> bytes:
        """The end of the rescue's stream: a last event without its blank line, and the summed
        usage of an answer that finished without ``[DONE]``."""
        out = self.feed(_BLANK) if not self.failed else b""
        if self.complete and not self._usage_said:
            said: list[str] = []
            self._say_usage(said)
            out += "".join(said).encode()
        return out

    def _say_usage(self, out: list[str]) -> None:
        """The usage chunk, summing both attempts, once the rescue stated its usage."""
        if not self._usage_said and (tokens := self.usage) is not None:
            self._usage_said = True
            out.append(self._chunk([], usage=_usage_json(tokens)))

    def _event(self, event: Event, out: list[str]) -> bool:
        """Add ``event``'s chunk to ``out``; False once the continuation failed."""
        if isinstance(event, Text):
            text = event.text
            if self._seam is not None:
                step = self._seam.feed(text)
                if step.refused is not None:
                    self.refused = step.refused
                    return False
                text = step.text
            if text:
                out.append(self._chunk([{"index": 0, "delta": {"content": text}, "finish_reason": None}]))
        elif isinstance(event, ToolStart | ToolArgs):
            if not self._close_seam(out):
                return False
            if isinstance(event, ToolStart):
                call = {"index": event.index, "id": event.call_id, "type": "function",
                        "function": {"name": event.name, "arguments": ""}}  # fmt: skip
            else:
                call = {"index": event.index, "function": {"arguments": event.fragment}}
            out.append(self._chunk([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]))
        elif isinstance(event, Finish):
            if not self._close_seam(out):
                return False
            out.append(self._chunk([{"index": 0, "delta": {}, "finish_reason": event.reason}]))
        elif isinstance(event, Usage):
            self._usage = event
        elif isinstance(event, UpstreamError):
            self.error = event.message
            return False
        return True  # Reasoning: the caller has the first attempt's

    def _close_seam(self, out: list[str]) -> bool:
        """End the seam (the text is over): send what it held. False when it refused."""
        seam, self._seam = self._seam, None
        if seam is None:
            return True
        step = seam.end()
        if step.refused is not None:
            self.refused = step.refused
            return False
        if step.text:
            out.append(self._chunk([{"index": 0, "delta": {"content": step.text}, "finish_reason": None}]))
        return True

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> str:
        chunk: dict[str, Any] = {**self._frame, "choices": choices}
        if usage is not None:
            chunk["usage"] = usage
        chunk["x_rescued_from"] = self._rescued_from
        return f"data: {compact(chunk)}\n\n"


def _usage_json(tokens: Tokens) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": tokens.input,
        "completion_tokens": tokens.output,
        "total_tokens": tokens.input + tokens.output,
    }
    if tokens.cached:
        usage["prompt_tokens_details"] = {"cached_tokens": tokens.cached}
    return usage
