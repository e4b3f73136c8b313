"""HTTP at the edge of the isolate: reading the caller's request and calling an upstream.

``IncomingRequest`` reads single headers straight from the JS request (the SDK's ``headers``
property rebuilds a whole ``HTTPMessage`` on every access). ``post`` sends one upstream request
with a timeout to the response headers and returns ``UpstreamResponse`` or a ``Defect``; it
never raises for a network problem.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import JsException, jsnull, to_js

from gateway.core.attempt import Defect

if TYPE_CHECKING:
    from js import ReadableStream
    from workers import Request

__all__ = ["IncomingRequest", "UpstreamResponse", "post"]


def _str_or_none(value: Any) -> str | None:
    return None if value is None or value is jsnull else str(value)


class IncomingRequest:
    """A view of the caller's request; each value is read from JS at most once."""

    def __init__(self, request: Request) -> None:
        self._js = request.js_object
        self.method: str = str(self._js.method)
        self.path: str = urlsplit(str(self._js.url)).path

    def header(self, name: str) -> str | None:
        return _str_or_none(self._js.headers.get(name))

    async def read_body(self) -> bytes:
        """The whole body; raises ``OSError`` if the caller's stream fails."""
        try:
            return (await self._js.arrayBuffer()).to_bytes()
        except JsException as exc:
            raise OSError("the request body could not be read") from exc


class UpstreamResponse:
    """An upstream answer whose headers have arrived; the body is still a JS stream."""

    def __init__(self, js_response: Any) -> None:
        self._js = js_response
        self.status: int = int(js_response.status)

    def header(self, name: str) -> str | None:
        return _str_or_none(self._js.headers.get(name))

    def headers(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in self._js.headers.entries()}

    @property
    def body(self) -> ReadableStream | None:
        body = self._js.body
        return None if body is None or body is jsnull else body

    async def text(self) -> str:
        """The body as text ('' if it cannot be read)."""
        try:
            return str(await self._js.text())
        except JsException:
            return ""


async def post(
    url: str, headers: dict[str, str], body: str | bytes, timeout_ms: int
) -> UpstreamResponse | Defect:
    """POST ``body`` to ``url``; the upstream's answer once its headers arrive, or the defect
    (``TIMEOUT`` after ``timeout_ms`` without headers, ``NETWORK`` for any transport failure)."""
    controller = js.AbortController.new()
    options = to_js(
        {"method": "POST", "headers": headers, "body": body, "signal": controller.signal},
        dict_converter=js.Object.fromEntries,
    )
    try:
        js_response = await asyncio.wait_for(js.fetch(url, options), timeout_ms / 1000)
    except TimeoutError:
        controller.abort()
        return Defect.TIMEOUT
    except JsException:
        return Defect.NETWORK
    return UpstreamResponse(js_response)
