"""The rescue's continuation (SPEC §16), read as OpenAI chat SSE: the rescue's stream turned into the
chunks that follow what the caller was sent of the cut one (``surfaces/watch.py``).

``Continuation`` reads the rescue's stream and gives the chunks the caller gets after what it
has: the text through the seam (``core/seam.py``: never a repeat, never a restart), tool calls
and the finish as they come, reasoning left out (the caller saw the first attempt's), each chunk
marked ``x_rescued_from`` (the cut stream's ``provider/model``) and carrying the cut stream's id;
the usage chunk sums both attempts (SPEC §16, §17). ``failed`` once the seam refused the text or
the rescue's stream reported an error: the relay then ends the stream with the surface's error.

Pure: no I/O, no clock; ``created`` is given.
"""

from __future__ import annotations

from typing import Any

from gateway.core.counting import Tokens
from gateway.core.seam import Seam, SeamRefusal
from gateway.surfaces.chat import (
    LEGACY_CALL,
    ChatStreamDecoder,
    Event,
    Finish,
    Text,
    ToolArgs,
    ToolStart,
    UpstreamError,
    Usage,
)
from gateway.surfaces.contract import compact, utf8

__all__ = ["Continuation"]

_BLANK = b"\n\n"


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
        if LEGACY_CALL in data:  # a call this reader would drop: the answer would lose it
            self.error = "the rescue answered with a legacy function call"
            return b""
        out: list[str] = []
        done = self._decoder.done
        for event in self._decoder.feed(data):
            if not self._event(event, out):
                return utf8("".join(out))  # what was joined before the failure
        if self._decoder.done and not done and self._close_seam(out):
            self._say_usage(out)
            out.append("data: [DONE]\n\n")
        return utf8("".join(out))

    def close(self) -> bytes:
        """The end of the rescue's stream: a last event without its blank line, and the summed
        usage of an answer that finished without ``[DONE]``."""
        out = self.feed(_BLANK) if not self.failed else b""
        if self.complete and not self._usage_said:
            said: list[str] = []
            self._say_usage(said)
            out += utf8("".join(said))
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
