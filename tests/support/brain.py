"""A scripted model for the agents' tool round trips, as a callable step of the fake upstream.

``ToolBrain`` reads each OpenAI chat request the gateway sends: while the request's last turn holds
no tool result, it calls the first tool the request offers that it knows (a tool name → arguments
table, one entry per agent: ``read_file_calls``); once a tool result has come back, it answers with
text that quotes the result. A test then asserts that the agent's final output holds a word that
only the file it read contains, and (``tool_results``) that the upstream saw that result.

Each answer follows the request: streamed when it asked for a stream, JSON otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from support.answers import Call, answer
from support.upstream import Json, Recorded, Sse

__all__ = ["ToolBrain", "offered_tools", "pending_results", "read_file_calls", "tool_results"]


def read_file_calls(path: str) -> dict[str, dict[str, Any]]:
    """How each agent's own tool reads ``path`` (names and argument keys as the agents send them):
    Claude Code ``Read {file_path}``, Codex CLI ``exec_command {cmd}`` (older Codex: ``shell
    {command: [argv]}``), Gemini CLI ``read_file {file_path}``."""
    return {
        "Read": {"file_path": path},
        "exec_command": {"cmd": f"cat {path}"},
        "shell": {"command": ["cat", path]},
        "read_file": {"file_path": path},
    }


def offered_tools(body: dict[str, Any]) -> list[str]:
    """The function names a chat request offers."""
    return [t.get("function", {}).get("name", "") for t in body.get("tools") or [] if t.get("type") == "function"]


def _bare(name: str) -> str:
    """A tool's own name when a namespace prefixes it (``ns.fn``, ``ns__fn``, ``ns/fn``)."""
    return re.split(r"[./:]|__", name)[-1]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def pending_results(messages: list[dict[str, Any]]) -> list[str]:
    """The tool results after the last assistant message (the gateway may put a user message of the
    same turn after them)."""
    results = []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            break
        if message.get("role") == "tool":
            results.insert(0, _text(message.get("content")))
    return results


def tool_results(requests: list[Recorded]) -> list[str]:
    """Every tool result (as text) in the chat requests the upstream received."""
    return [_text(m.get("content")) for r in requests for m in r.json.get("messages", []) if m.get("role") == "tool"]


@dataclass
class ToolBrain:
    """Call a known tool, then quote what it returned (see the module docstring).

    ``calls``: tool name → arguments, tried in the order the request offers its tools.
    ``reply``: the final text; ``{result}`` is replaced by the tool results, joined.
    ``asked``: the tool names of each request, for a test's failure message."""

    calls: dict[str, dict[str, Any]]
    reply: str = "The tool returned: {result}"
    pieces: int = 3
    asked: list[list[str]] = field(default_factory=list)

    def __call__(self, request: Recorded) -> Json | Sse:
        body = request.json
        model = body.get("model") or "fake-model"
        stream = body.get("stream") is True
        offered = offered_tools(body)
        self.asked.append(offered)
        results = pending_results(body.get("messages") or [])
        if results:
            return answer(model, stream=stream, text=self.reply.format(result="\n".join(results)), pieces=self.pieces)
        known = [name for name in offered if _bare(name) in self.calls]
        if not known:
            return answer(model, stream=stream, text="No tool I know was offered.", pieces=self.pieces)
        return answer(model, stream=stream, calls=[Call(known[0], self.calls[_bare(known[0])])], pieces=self.pieces)
