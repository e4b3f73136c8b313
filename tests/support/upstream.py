"""A scriptable fake OpenAI-compatible upstream on 127.0.0.1: the only stand-in in the tests.

Tests queue *steps*; each incoming ``POST`` takes the next step queued for its model (or for any
model), else the step set with ``answer_always`` for its model (or any model), else answers a
default completion that echoes the model (on the rest of the OpenAI surface, the path's own default:
``support.endpoints``). A step may also be a callable: it gets
the ``Recorded`` request and returns the step to answer with (a scripted model, e.g.
``support.brain.ToolBrain``). Every request is recorded (path, headers, raw body) so a test can
assert what the gateway sent, with which provider key (``Recorded.key``, ``keys_used``).
``support.answers`` builds the answers (text, tool calls, reasoning, usage, faults).

A provider may hold several keys (SPEC §13): ``PerKey`` answers each request by the key it carries
(``authorization: Bearer <key>``), e.g. ``answer_always(PerKey({k1: Json({}, 429)}))`` rate-limits
one key while the others are served.

``GET …/models`` answers the OpenAI model list set with ``serve_models`` (ids, or a ``Json`` step
such as a failure); those requests are recorded apart, in ``model_list_requests``.

Timing never relies on sleeping: a step can wait on a ``threading.Event`` the test sets, so a test
decides exactly when the upstream goes on (e.g. after it has seen the first chunk).
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from support.endpoints import default_answer, parse_form

__all__ = [
    "UPSTREAM_KEY",
    "Bytes",
    "FakeUpstream",
    "Hang",
    "Json",
    "PerKey",
    "Recorded",
    "Reset",
    "Responder",
    "Sse",
    "chunk",
    "completion",
    "delta_chunk",
    "model_list",
]

# The API key the tests register for providers pointing at the fake upstream.
UPSTREAM_KEY = "sk-fake-upstream-key-0123456789"


def completion(model: str, content: str = "hello from the fake upstream") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }


def chunk(model: str, content: str | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    return delta_chunk(model, {} if content is None else {"content": content}, finish_reason)


def delta_chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A stream chunk carrying ``delta`` (content, reasoning, tool calls …)."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def model_list(ids: list[str]) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "fake"} for i in ids]}


# What GET …/models lists until a test says otherwise.
DEFAULT_MODELS = ["fake-model"]


@dataclass
class Json:
    """Answer ``body`` (dict → JSON, str → as is) with ``status`` and ``headers``."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Sse:
    """Stream ``events`` as SSE: dicts become ``data: {json}``, strings ``data: {string}``, and
    strings starting with ``:`` are sent as comment lines.

    ``gates[i]``, if present, is waited on before event ``i`` is sent (and, with ``i`` equal to
    the number of events, before the stream ends). ``done`` appends ``data: [DONE]``. ``reset``
    ends with a connection reset instead of a proper end of the chunked body. ``pace_s`` spaces
    the events out as a model's tokens arrive (the benchmarks: one event per upstream read), and
    ``pauses[i]`` adds that many seconds of silence before event ``i`` (a model that slows).
    ``keep_open``: after the last event (``[DONE]`` included) the stream neither ends nor sends
    anything more, until the gateway closes the connection (``disconnected`` is set then) or the
    fake is reset. ``sent`` gets the monotonic time each event was written at (how long the gateway
    held it: the benchmarks, the pacing tests)."""

    events: list[Any]
    done: bool = True
    gates: dict[int, threading.Event] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    reset: bool = False
    pace_s: float = 0.0
    pauses: dict[int, float] = field(default_factory=dict)  # seconds of silence before event i
    keep_open: bool = False
    released: threading.Event = field(default_factory=threading.Event, repr=False)  # ends keep_open
    sent: list[float] = field(default_factory=list, repr=False)  # when each event went (monotonic)


@dataclass
class Hang:
    """Read the request, then answer nothing until ``release`` is set (the fake sets it when
    the test ends)."""

    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Bytes:
    """Answer ``body`` as it is, with ``status`` and ``content_type`` (audio, images)."""

    status: int
    content_type: str
    body: bytes


@dataclass
class Reset:
    """Read the request, then reset the connection (RST) without answering."""


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def form(self) -> dict[str, tuple[str | None, bytes]]:
        """A ``multipart/form-data`` body's fields (``support.endpoints.parse_form``); {} otherwise."""
        content_type = self.headers.get("content-type", "")
        return parse_form(content_type, self.body) if content_type.startswith("multipart/form-data") else {}

    @property
    def model(self) -> str | None:
        """The model asked for: the JSON body's ``model``, or an upload's ``model`` field."""
        form = self.form
        if form:
            value = form.get("model")
            return value[1].decode() if value else None
        try:
            data = json.loads(self.body)
        except ValueError:
            return None
        return data.get("model") if isinstance(data, dict) else None

    @property
    def key(self) -> str | None:
        """The provider key the gateway sent (``authorization: Bearer <key>``); None without one."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return token.strip() or None


def _is_callable_step(step: Any) -> bool:
    return callable(step) and not isinstance(step, (Json, Sse, Hang, Reset, Bytes))


# A step computed from the request it answers.
Responder = Callable[[Recorded], Any]


@dataclass
class PerKey:
    """A step chosen by the key of the request (``Recorded.key``): ``answers[key]``, else
    ``default``, else the fake's default answer for the path. A chosen step may itself be callable (it gets
    the request); a ``Json`` is copied for each use, so one ``PerKey`` can answer many times."""

    answers: dict[str, Any]
    default: Any = None

    def __call__(self, request: Recorded) -> Any:
        step = self.answers.get(request.key or "", self.default)
        if step is None:
            return None
        if _is_callable_step(step):
            step = step(request)
        return replace(step, headers=dict(step.headers)) if isinstance(step, Json) else step

    def held(self) -> list[Hang | Sse]:
        """The steps among the answers that wait on an event (released when the fake resets)."""
        return [s for s in (*self.answers.values(), self.default) if _is_held(s)]


def _is_held(step: Any) -> bool:
    return isinstance(step, Hang) or (isinstance(step, Sse) and (bool(step.gates) or step.keep_open))


def _held_steps(steps: tuple[Any, ...]) -> list[Hang | Sse]:
    held: list[Hang | Sse] = []
    for step in steps:
        held.extend(step.held() if isinstance(step, PerKey) else [step] if _is_held(step) else [])
    return held


class ScriptedServer:
    """What every scripted fake shares: a threaded HTTP server on 127.0.0.1 (``_handler_class``
    gives its handler), the steps queued per key and the steps set for always, the held steps and
    ``disconnected``, set when the fake could not write to a connection (the gateway closed it)."""

    def __init__(self) -> None:
        self._steps: dict[str | None, deque[Any]] = defaultdict(deque)
        self._always: dict[str | None, Any] = {}
        self._held: list[Hang | Sse] = []
        self.disconnected = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release_all()
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        """Let every held step go on and forget the scripted steps (subclasses forget the rest)."""
        self._release_all()
        with self._lock:
            self._steps.clear()
            self._always.clear()
            self.disconnected.clear()

    def _release_all(self) -> None:
        """Let every held step go on: a test never leaves the fake's threads waiting."""
        with self._lock:
            for step in self._held:
                for event in (step.release,) if isinstance(step, Hang) else (*step.gates.values(), step.released):
                    event.set()
            self._held.clear()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError


class FakeUpstream(ScriptedServer):
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.model_list_requests: list[Recorded] = []
        self._model_list = Json(model_list(DEFAULT_MODELS))
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.requests.clear()
            self.model_list_requests.clear()
            self._model_list = Json(model_list(DEFAULT_MODELS))

    def requests_for(self, model: str) -> list[Recorded]:
        return [r for r in self.requests if r.model == model]

    def keys_used(self, model: str | None = None) -> list[str | None]:
        """The provider key of each chat request (for ``model``; None: every model), in order."""
        return [r.key for r in (self.requests if model is None else self.requests_for(model))]

    def queue(self, *steps: Any, model: str | None = None) -> None:
        """Answer the next requests for ``model`` (None: any model) with ``steps``, in order."""
        with self._lock:
            self._steps[model].extend(steps)
            self._held.extend(_held_steps(steps))

    def answer_always(self, step: Any, model: str | None = None) -> None:
        """Answer every request for ``model`` (None: any model) that finds no queued step with
        ``step`` (a ``Json``/``Sse``/``Reset`` step, copied for each use, or a callable step)."""
        with self._lock:
            self._always[model] = step
            self._held.extend(_held_steps((step,)))

    def serve_models(self, answer: list[str] | Json) -> None:
        """Answer every ``GET …/models`` from now on with these ids, or with this step."""
        with self._lock:
            self._model_list = answer if isinstance(answer, Json) else Json(model_list(answer))

    def _next_step(self, model: str | None, request: Recorded) -> Any:
        with self._lock:
            step = next((self._steps[key].popleft() for key in (model, None) if self._steps.get(key)), None)
            if step is None:
                step = next((self._always[key] for key in (model, None) if key in self._always), None)
                # A copy: _json consumes a Json step's headers.
                step = replace(step, headers=dict(step.headers)) if isinstance(step, Json) else step
        if step is None:
            return None  # the path's default answer
        return step(request) if _is_callable_step(step) else step

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # small writes go out at once, as a real server's would

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if not self.path.split("?")[0].endswith("/models"):
                    self._json(Json({"error": {"message": "no such route"}}, 404))
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                with upstream._lock:
                    upstream.model_list_requests.append(Recorded(self.path, headers, b""))
                    step = upstream._model_list
                # A copy: _json consumes the step's headers.
                self._json(Json(step.body, step.status, dict(step.headers)))

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                recorded = Recorded(self.path, headers, body)
                with upstream._lock:
                    upstream.requests.append(recorded)
                model = recorded.model
                step = upstream._next_step(model, recorded)
                if step is None:
                    try:
                        data = json.loads(body)
                    except ValueError:
                        data = None
                    made = default_answer(self.path, model, data, recorded.form)
                    step = Json(completion(model or "unknown")) if made is None else Bytes(*made)
                self._answer(step)

            def _answer(self, step: Any) -> None:
                """Write one step: JSON, bytes, SSE, a hang until released, or a reset connection."""
                if isinstance(step, Json):
                    self._json(step)
                elif isinstance(step, Bytes):
                    self._bytes(step)
                elif isinstance(step, Sse):
                    self._sse(step)
                elif isinstance(step, Hang):
                    step.release.wait(timeout=60)
                    self.close_connection = True
                elif isinstance(step, Reset):
                    self._reset()
                else:
                    raise TypeError(f"unknown step {step!r}")

            def _reset(self) -> None:
                # SO_LINGER 0: close() sends RST, as a crashed upstream would.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True

            def _json(self, step: Json) -> None:
                raw = step.body if isinstance(step.body, str) else json.dumps(step.body)
                data = raw.encode()
                self.send_response(step.status)
                self.send_header("content-type", step.headers.pop("content-type", "application/json"))
                for name, value in step.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _bytes(self, step: Bytes) -> None:
                self.send_response(step.status)
                self.send_header("content-type", step.content_type)
                self.send_header("content-length", str(len(step.body)))
                self.end_headers()
                self.wfile.write(step.body)

            def _sse(self, step: Sse) -> None:
                self.send_response(200)
                self.send_header("content-type", step.content_type)
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                events = list(step.events) + (["[DONE]"] if step.done else [])
                for i, event in enumerate(events):
                    if i in step.gates:
                        step.gates[i].wait(timeout=60)
                    if step.pace_s and i:
                        time.sleep(step.pace_s)  # the upstream's own pace, not a test's timing
                    if i in step.pauses:
                        time.sleep(step.pauses[i])  # a model that slows: the upstream's own silence
                    step.sent.append(time.monotonic())
                    if isinstance(event, str) and event.startswith(":"):
                        self._chunk(f"{event}\n\n".encode())  # an SSE comment, e.g. a keep-alive
                        continue
                    text = event if isinstance(event, str) else json.dumps(event)
                    self._chunk(f"data: {text}\n\n".encode())
                if len(events) in step.gates:
                    step.gates[len(events)].wait(timeout=60)
                if step.keep_open:
                    self._hold_open(step.released)
                elif step.reset:
                    self._reset()
                else:
                    self._chunk(b"")

            def _hold_open(self, released: threading.Event) -> None:
                """Send nothing and keep the connection until the gateway closes it (it sends
                nothing more on it: the socket turns readable at its close) or ``released``."""
                self.close_connection = True
                deadline = time.monotonic() + 60
                while not released.is_set() and time.monotonic() < deadline:
                    # A short wait per look, so that a reset of the fake ends the hold.
                    if not select.select([self.connection], [], [], 0.05)[0]:
                        continue
                    try:
                        closed = self.connection.recv(1, socket.MSG_PEEK) == b""
                    except OSError:  # a reset
                        closed = True
                    if closed:
                        upstream.disconnected.set()
                    return

            def _chunk(self, data: bytes) -> None:
                try:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                except OSError:
                    upstream.disconnected.set()

        return Handler
