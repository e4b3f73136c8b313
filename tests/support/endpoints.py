"""What the fake upstream answers on the rest of the OpenAI surface (SPEC §12.6) when a test queued
nothing: embeddings, legacy completions, transcriptions, speech and images, each shaped as OpenAI
answers it and made from the request, so a test can tell which model served and what arrived.

- Embeddings: one vector per input, ``fake_vector(model, text)``; base64 (little-endian float32)
  when the request asks for ``encoding_format: "base64"``, as OpenAI does (the openai SDK asks).
- Transcriptions and translations: ``{"text": "<model> heard <n> bytes"}``, n the file's size.
- Speech: ``speech_bytes(model, input)`` as ``audio/mpeg``.
- Images: one ``b64_json`` image whose bytes are ``image_bytes(model, prompt)``.
"""

from __future__ import annotations

import base64
import json
import struct
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

__all__ = ["default_answer", "fake_vector", "image_bytes", "parse_form", "speech_bytes", "text_completion"]


def fake_vector(model: str, text: str) -> list[float]:
    """The fake's vector of ``text`` by ``model``: exact in float32, and different per model."""
    return [float(len(text)), float(sum(map(ord, model)) % 997), 0.25]


def speech_bytes(model: str, text: str) -> bytes:
    return b"ID3fake-audio:" + f"{model}:{text}".encode() + bytes(range(256))


def image_bytes(model: str, prompt: str) -> bytes:
    return b"\x89PNG\r\n\x1a\nfake-image:" + f"{model}:{prompt}".encode()


def text_completion(model: str, text: str = "once upon a time") -> dict[str, Any]:
    return {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8},
    }


def parse_form(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A ``multipart/form-data`` body's fields: name → (file name or None, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        assert isinstance(part, EmailMessage)
        name = part.get_param("name", header="content-disposition")
        fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


def _embeddings(request: dict[str, Any]) -> dict[str, Any]:
    model = request.get("model", "")
    inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
    data = []
    for index, text in enumerate(inputs):
        vector = fake_vector(model, text if isinstance(text, str) else json.dumps(text))
        if request.get("encoding_format") == "base64":
            encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        else:
            encoded = vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(len(str(text)) for text in inputs)
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def default_answer(
    path: str, model: str | None, json_body: Any, form: dict[str, tuple[str | None, bytes]]
) -> tuple[int, str, bytes] | None:
    """(status, content type, body) for a request to ``path`` of the rest of the surface; None for
    chat completions (the fake's own default)."""
    model = model or "unknown"
    endpoint = path.split("?")[0].rsplit("/v1", 1)[-1]
    if endpoint == "/embeddings":
        return 200, "application/json", json.dumps(_embeddings(json_body)).encode()
    if endpoint == "/completions":
        return 200, "application/json", json.dumps(text_completion(model)).encode()
    if endpoint in ("/audio/transcriptions", "/audio/translations"):
        size = len(form.get("file", (None, b""))[1])
        return 200, "application/json", json.dumps({"text": f"{model} heard {size} bytes"}).encode()
    if endpoint == "/audio/speech":
        return 200, "audio/mpeg", speech_bytes(model, json_body.get("input", ""))
    if endpoint in ("/images/generations", "/images/edits", "/images/variations"):
        prompt = json_body.get("prompt") if isinstance(json_body, dict) else form.get("prompt", (None, b""))[1].decode()
        image = base64.b64encode(image_bytes(model, prompt or "")).decode()
        return 200, "application/json", json.dumps({"created": 1_700_000_000, "data": [{"b64_json": image}]}).encode()
    return None
