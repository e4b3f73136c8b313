"""A ``multipart/form-data`` upload (SPEC §12.6: audio transcriptions, image edits), kept in JS.

The upload is read once into a JS ``ArrayBuffer`` and parsed by the runtime's own ``formData()``
only to learn its ``model`` and which fields it holds; Python never copies its bytes. For the
model the caller named, the very bytes it sent go upstream with its content type (boundary
included); for another model (``auto``, an alias, degradation within the kind) the parsed form is
sent again with ``model`` replaced, which the runtime encodes with a boundary of its own (the
files' bytes unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import js
from pyodide.ffi import JsException

from gateway.errors import BodyTooLargeError, InvalidRequestError
from gateway.shell.http import IncomingRequest, plain

__all__ = ["FormBody", "read_form"]

_MEDIA_TYPE = "multipart/form-data"


class FormBody:
    """One upload: ``model`` (None when the form has no text field of that name), ``has(field)``;
    ``payload(model)`` is the ``upstream.openai.Body`` contract."""

    data: Mapping[str, Any] = {}  # no JSON fields: nothing for OpenRouter pinning to read

    def __init__(self, buffer: Any, content_type: str, form: Any) -> None:
        self._buffer = buffer
        self._content_type = content_type
        self._form = form
        model = form.get("model")
        self.model: str | None = model if isinstance(model, str) else None

    def has(self, field: str) -> bool:
        return bool(self._form.has(field))

    def payload(self, model: str) -> tuple[Any, str | None]:
        if model == self.model:
            return self._buffer, self._content_type
        form = js.FormData.new()
        for entry in self._form.entries():
            name, value = entry[0], entry[1]
            if name != "model":
                form.append(name, value)
        form.append("model", model)
        return form, None  # fetch writes the content type with the new form's boundary


async def read_form(request: IncomingRequest, limit: int) -> FormBody:
    """The caller's ``multipart/form-data`` body, within ``limit`` bytes: 413 above it, 400 for
    another content type or a body that does not parse."""
    content_type = request.header("content-type") or ""
    if content_type.split(";", 1)[0].strip().lower() != _MEDIA_TYPE:
        raise InvalidRequestError(
            f"The request body must be {_MEDIA_TYPE} (a file upload), not '{content_type or 'none'}'.",
            param="body",
        )
    try:
        buffer = await request.read_buffer(limit)
    except OSError as exc:
        raise InvalidRequestError("The request body could not be read.") from exc
    if buffer is None:
        raise BodyTooLargeError(f"Request body is larger than the limit of {limit} bytes.")
    try:
        form = await js.Response.new(buffer, plain({"headers": {"content-type": content_type}})).formData()
    except JsException as exc:
        raise InvalidRequestError(f"The request body is not valid {_MEDIA_TYPE}.", param="body") from exc
    return FormBody(buffer, content_type, form)
