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

from gateway.errors import InvalidRequestError
from gateway.shell.http import plain

__all__ = ["FormBody", "parse_form", "require_multipart"]

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


def require_multipart(content_type: str | None) -> str:
    """The request's content type if it is ``multipart/form-data`` (checked before the body is
    read); 400 otherwise."""
    content_type = content_type or ""
    if content_type.split(";", 1)[0].strip().lower() != _MEDIA_TYPE:
        raise InvalidRequestError(
            f"The request body must be {_MEDIA_TYPE} (a file upload), not '{content_type or 'none'}'.",
            param="body",
        )
    return content_type


async def parse_form(buffer: Any, content_type: str) -> FormBody:
    """The caller's upload (``buffer``, read by the route within its limit, of the
    ``require_multipart`` content type); 400 for a body that does not parse."""
    try:
        form = await js.Response.new(buffer, plain({"headers": {"content-type": content_type}})).formData()
    except JsException as exc:
        raise InvalidRequestError(f"The request body is not valid {_MEDIA_TYPE}.", param="body") from exc
    return FormBody(buffer, content_type, form)
