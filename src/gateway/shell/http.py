"""HTTP at the edge of the isolate: reading the caller's request and calling an upstream.

``IncomingRequest`` reads single headers straight from the JS request (the SDK's ``headers``
property rebuilds a whole ``HTTPMessage`` on every access). ``send`` sends one upstream request
with a timeout to the response headers and returns ``UpstreamResponse`` or a ``Defect``; it
never raises for a network problem. The JS globals they call are read once per isolate (``_js``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import js
from pyodide.ffi import JsException, jsnull, to_js

from gateway.core.attempt import Defect
from gateway.core.subrequests import SUBREQUESTS

if TYPE_CHECKING:
    from js import ReadableStream
    from js import Response as JsResponse
    from workers import Request
else:
    JsResponse = Any

__all__ = [
    "NOSNIFF",
    "IncomingRequest",
    "JsResponse",
    "UpstreamResponse",
    "add_headers",
    "fulfilled",
    "plain",
    "respond",
    "send",
    "settled",
    "tail_bytes",
    "unawaited",
    "without_body",
]

# Every answer, JSON, stream or page, says its content type is the truth (SPEC §14).
NOSNIFF = {"x-content-type-options": "nosniff"}


@dataclass(frozen=True, slots=True)
class _Globals:
    """The JS globals this module calls, by their names in snake case (``from_entries``:
    ``Object.fromEntries``)."""

    fetch: Any
    response: Any
    abort_controller: Any
    set_timeout: Any
    clear_timeout: Any
    array_buffer: Any
    blob: Any
    uint8_array: Any
    from_entries: Any


@cache
def _js() -> _Globals:
    """The JS globals, read from ``js`` once per isolate, at the first request (never at import:
    the deploy snapshot holds no JS object, PLATFORM-NOTES §3.3). Each ``js.X`` crosses into the
    global scope and makes a new proxy: on workerd, 50 rounds of the globals an upstream call
    reads (``AbortController``, ``setTimeout``, ``clearTimeout``, ``Object.fromEntries``) cost
    0.9 ms more of isolate CPU read from ``js`` each time than read once (issue 39)."""
    return _Globals(
        js.fetch,
        js.Response,
        js.AbortController,
        js.setTimeout,
        js.clearTimeout,
        js.ArrayBuffer,
        js.Blob,
        js.Uint8Array,
        js.Object.fromEntries,
    )


def _str_or_none(value: Any) -> str | None:
    return None if value is None or value is jsnull else str(value)


class IncomingRequest:
    """A view of the caller's request: method and path read once, headers read when asked."""

    def __init__(self, request: Request) -> None:
        self._js = request.js_object
        self._headers = self._js.headers  # one crossing per header read, not two
        self.method: str = str(self._js.method)
        self.url: str = str(self._js.url)
        url = urlsplit(self.url)
        self.path: str = url.path
        self.query: str = url.query

    def header(self, name: str) -> str | None:
        return _str_or_none(self._headers.get(name))

    def query_param(self, name: str) -> str | None:
        """The first value of ``name`` in the query string (routing never reads the query)."""
        values = parse_qs(self.query).get(name) if self.query else None
        return values[0] if values else None

    async def read_body(self, limit: int) -> bytes | None:
        """The whole body, or None when it is longer than ``limit`` bytes (``read_buffer``).
        Raises ``OSError`` if the caller's stream fails."""
        buffer = await self.read_buffer(limit)
        return None if buffer is None else buffer.to_bytes()

    async def read_buffer(self, limit: int) -> Any:
        """The whole body as a JS ``ArrayBuffer`` (nothing copied into Python: an upload of many
        megabytes stays in JS), or None when it is longer than ``limit`` bytes: known from the
        Content-Length before anything is read, else as soon as the chunks read pass it (the
        rest is left unread, so an oversized upload is never held in memory). Raises ``OSError``
        if the caller's stream fails."""
        declared = self.header("content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                return None
            # The runtime rejects a failed request body with an Error, which Pyodide raises (the
            # readers of other streams may reject with anything: ``settled``).
            try:
                buffer = await self._js.arrayBuffer()
            except JsException as exc:
                raise OSError("the request body could not be read") from exc
            return buffer if int(buffer.byteLength) <= limit else None
        stream = self._js.body
        if stream is None or stream is jsnull:
            return _js().array_buffer.new(0)
        reader = stream.getReader()
        chunks: list[Any] = []
        size = 0
        while True:
            ok, result = await settled(reader.read())
            if not ok:
                raise OSError("the request body could not be read")
            if result.done:
                return await _js().blob.new(to_js(chunks)).arrayBuffer()
            size += int(result.value.byteLength)
            if size > limit:
                await fulfilled(reader.cancel())
                return None
            chunks.append(result.value)


class UpstreamResponse:
    """An upstream answer whose headers have arrived; the body is still a JS stream.

    The attempt timer is still armed: it aborts the body too, until ``disarm()``. The caller
    disarms once the attempt counts as answered (after the headers for JSON, after the first
    event for a stream), so a timeout also covers "headers, then nothing"."""

    def __init__(self, js_response: Any, controller: Any, timer: Any) -> None:
        self._js = js_response
        self._controller = controller
        self._timer = timer
        self.status: int = int(js_response.status)

    def disarm(self) -> None:
        _js().clear_timeout(self._timer)

    def abort(self) -> None:
        """Abort the request: the body errors, a read already waiting on it included. (workerd
        lets a ``pipeTo`` of the body wait out a pending read whatever its own abort signal says,
        so a stalled stream is stopped here, at its source.)"""
        self._controller.abort()

    async def discard(self) -> None:
        """Give up on the body: disarm the timer and cancel the stream (frees the connection)."""
        self.disarm()
        body = self.body
        if body is not None:
            await fulfilled(body.cancel())

    @property
    def timed_out(self) -> bool:
        return bool(self._controller.signal.aborted)

    @property
    def aborter(self) -> Any:
        """The request's ``AbortController``, for a relay that stops it from JavaScript."""
        return self._controller

    def header(self, name: str) -> str | None:
        return _str_or_none(self._js.headers.get(name))

    def headers(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in self._js.headers.entries()}

    @property
    def body(self) -> ReadableStream | None:
        body = self._js.body
        return None if body is None or body is jsnull else body

    async def buffered(self) -> tuple[Any, int] | None:
        """The whole body as a JS ArrayBuffer (it stays in JS) and its size; None when it cannot
        be read."""
        ok, buffer = await settled(self._js.arrayBuffer())
        return (buffer, int(buffer.byteLength)) if ok else None

    async def text(self) -> str:
        """The body as text ('' if it cannot be read)."""
        ok, text = await settled(self._js.text())
        return str(text) if ok else ""


def tail_bytes(buffer: Any, size: int, count: int) -> bytes:
    """The last ``count`` bytes of a JS ArrayBuffer of ``size`` bytes, copied into Python."""
    return _js().uint8_array.new(buffer, max(0, size - count)).to_bytes()


async def settled(promise: Any) -> tuple[bool, Any]:
    """Wait for a JS promise: (True, value), or (False, None) if it rejects. Pyodide hands every
    promise a JS call returns to Python as a Future already; each turn of its event loop that
    such a Future costs (one per done callback) is a wake of the isolate, so it is awaited as it
    is, not wrapped in another promise."""
    try:
        return True, await promise
    except Exception:  # noqa: BLE001 - a rejection, whatever the JS value (an Error, an AbortError)
        return False, None


async def fulfilled(promise: Any) -> bool:
    """Wait for a JS promise; True if it fulfilled (see ``settled``)."""
    return (await settled(promise))[0]


def unawaited(promise: Any) -> None:
    """Let the promise a JS call returned (a Future, see ``settled``) run its course without
    awaiting it; a rejection is retrieved, so it is never reported as unhandled. One done
    callback is the cheapest way (``catch`` would chain another Future, and with it more turns of
    the event loop)."""
    promise.add_done_callback(_retrieve)


def _retrieve(future: Any) -> None:
    if not future.cancelled():
        future.exception()


def js_bytes(data: bytes) -> Any:
    """``data`` as a Uint8Array of its own. (Pyodide converts ``b""`` to an empty view of its own
    memory, which a later growth of that memory detaches.)"""
    return to_js(data) if data else _js().uint8_array.new(0)


def plain(entries: dict[str, Any]) -> Any:
    """A plain JS object, nested dicts included, in one conversion."""
    return to_js(entries, dict_converter=_js().from_entries)


async def send(
    method: str, url: str, headers: dict[str, str], timeout_ms: int, body: str | bytes | None = None
) -> UpstreamResponse | Defect:
    """Send one upstream request; the answer once its headers arrive (timer still armed, see
    ``UpstreamResponse``), or the defect: ``TIMEOUT`` after ``timeout_ms`` without headers,
    ``NETWORK`` for any transport failure. Counted as a subrequest of the current request."""
    SUBREQUESTS.get().used += 1
    globals_ = _js()
    controller = globals_.abort_controller.new()
    # The timer is JS's own (abort bound to the controller): no Python callback per request.
    timer = globals_.set_timeout(controller.abort.bind(controller), timeout_ms)
    init = {"method": method, "headers": headers, "signal": controller.signal}
    if body is not None:
        init["body"] = body
    try:
        js_response = await globals_.fetch(url, plain(init))
    except JsException:
        globals_.clear_timeout(timer)
        return Defect.TIMEOUT if controller.signal.aborted else Defect.NETWORK
    return UpstreamResponse(js_response, controller, timer)


def respond(body: str | ReadableStream | None, status: int, headers: dict[str, str]) -> JsResponse:
    """A JS ``Response``, built directly (the SDK's ``Response`` converts headers item by item);
    the SDK hands a JS Response back to the runtime as it is. Every answer is built here, so
    ``NOSNIFF`` is added here."""
    return _js().response.new(body, plain({"status": status, "headers": NOSNIFF | headers}))


def without_body(response: JsResponse) -> JsResponse:
    """``response``'s status and headers with no body: the answer to a ``HEAD`` (RFC 9110
    §9.3.2). A streamed body is cancelled, so its source stops."""
    body = response.body
    if body is not None and body is not jsnull:
        unawaited(body.cancel())
    return _js().response.new(None, plain({"status": response.status, "headers": response.headers}))


def add_headers(response: JsResponse, headers: dict[str, str]) -> JsResponse:
    """``response`` with ``headers`` set (a Response built by ``respond`` has mutable headers)."""
    for name, value in headers.items():
        response.headers.set(name, value)
    return response
