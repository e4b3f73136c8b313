"""Embeddings in Gemini's and Ollama's shapes, to and from OpenAI's ``/v1/embeddings`` (SPEC §12.6).

Rules:
- Gemini ``:embedContent`` (``{"content": {"parts": [{"text"}]}, "outputDimensionality"}``) and
  ``:batchEmbedContents`` (``{"requests": [that, …]}``, what google-genai's ``embed_content``
  calls) → ``{"model", "input"}``: a content's text parts joined by a line break, one input per
  request; ``outputDimensionality`` → ``dimensions``; ``taskType`` and ``title`` are ignored (an
  OpenAI-compatible upstream has no such fields). Answers: ``{"embedding": {"values"}}`` and
  ``{"embeddings": [{"values"}, …]}``.
- Ollama ``/api/embed`` (``{"model", "input": text or texts, "dimensions"}``) →
  ``{"embeddings": [[…]], "model", "prompt_eval_count", durations 0}``; the older
  ``/api/embeddings`` (``{"model", "prompt"}``) → ``{"embedding": […]}``. ``:latest`` is dropped
  from a model name; ``truncate``, ``options`` and ``keep_alive`` are ignored.
- The upstream's vectors are read in ``index`` order; a vector sent as base64 (little-endian
  float32, as OpenAI sends it when asked) is decoded. A request never asks for base64.
- Field names in Gemini requests may be camelCase or snake_case (``gemini.canonical``).
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from gateway.errors import InvalidRequestError
from gateway.surfaces.gemini import canonical

__all__ = [
    "Vectors",
    "gemini_batch_answer",
    "gemini_batch_request",
    "gemini_embed_answer",
    "gemini_embed_request",
    "ollama_embed_answer",
    "ollama_embed_request",
    "ollama_embeddings_answer",
    "ollama_embeddings_request",
    "read_vectors",
]

_LATEST = ":latest"


@dataclass(frozen=True, slots=True)
class Vectors:
    """An upstream's embeddings answer: one vector per input, in order, and its prompt tokens."""

    vectors: list[list[float]]
    prompt_tokens: int


def read_vectors(answer: Any) -> Vectors:
    """The vectors of an OpenAI embeddings answer. Raises ``ValueError`` for another shape."""
    if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
        raise ValueError("not an embeddings answer")
    items = sorted(answer["data"], key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
    vectors = [_vector(item.get("embedding") if isinstance(item, dict) else None) for item in items]
    usage = answer.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return Vectors(vectors, tokens if isinstance(tokens, int) else 0)


def _vector(value: Any) -> list[float]:
    if isinstance(value, str):
        raw = base64.b64decode(value)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if isinstance(value, list):
        return value
    raise ValueError("an embedding is neither a list nor base64")


# ----------------------------------------------------------------------------------------------
# Gemini


def _content_text(content: Any, param: str) -> str:
    if not isinstance(content, dict):
        raise InvalidRequestError(f"{param} must be an object with parts", param=param)
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise InvalidRequestError(f"{param}.parts must be a non-empty list", param=f"{param}.parts")
    texts = []
    for i, part in enumerate(parts):
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            raise InvalidRequestError(
                f"{param}.parts[{i}] must be a text part (only text can be embedded here)",
                param=f"{param}.parts[{i}]",
            )
        texts.append(text)
    return "\n".join(texts)


def _openai_body(model: str, inputs: str | list[str], dimensions: Any, param: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "input": inputs}
    if dimensions is not None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise InvalidRequestError(f"{param} must be a positive integer", param=param)
        body["dimensions"] = dimensions
    return body


def gemini_embed_request(body: Any, model: str) -> dict[str, Any]:
    """``:embedContent``'s body for ``model`` (the URL's) → an OpenAI embeddings body."""
    body = canonical(_object(body))
    text = _content_text(body.get("content"), "content")
    return _openai_body(model.removeprefix("models/"), text, body.get("outputDimensionality"), "outputDimensionality")


def gemini_batch_request(body: Any, model: str) -> dict[str, Any]:
    """``:batchEmbedContents``'s body → one OpenAI embeddings body with an input per request."""
    body = canonical(_object(body))
    requests = body.get("requests")
    if not isinstance(requests, list) or not requests:
        raise InvalidRequestError("requests must be a non-empty list", param="requests")
    texts = []
    dimensions = None
    for i, request in enumerate(requests):
        request = canonical(_object(request, f"requests[{i}]"))
        texts.append(_content_text(request.get("content"), f"requests[{i}].content"))
        dimensions = request.get("outputDimensionality", dimensions)
    return _openai_body(model.removeprefix("models/"), texts, dimensions, "requests[].outputDimensionality")


def gemini_embed_answer(vectors: Vectors) -> dict[str, Any]:
    """The answer to ``:embedContent`` (one input, so ``vectors`` holds one vector)."""
    return {"embedding": {"values": vectors.vectors[0]}}


def gemini_batch_answer(vectors: Vectors) -> dict[str, Any]:
    return {"embeddings": [{"values": vector} for vector in vectors.vectors]}


# ----------------------------------------------------------------------------------------------
# Ollama


def _ollama_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("model is required", param="model")
    return model.removesuffix(_LATEST)


def ollama_embed_request(body: Any) -> dict[str, Any]:
    """``/api/embed``'s body → an OpenAI embeddings body."""
    body = _object(body)
    inputs = body.get("input")
    if isinstance(inputs, list):
        if not inputs or not all(isinstance(text, str) for text in inputs):
            raise InvalidRequestError("input must be a string or a non-empty list of strings", param="input")
    elif not isinstance(inputs, str):
        raise InvalidRequestError("input must be a string or a non-empty list of strings", param="input")
    return _openai_body(_ollama_model(body), inputs, body.get("dimensions"), "dimensions")


def ollama_embeddings_request(body: Any) -> dict[str, Any]:
    """The older ``/api/embeddings``'s body (one ``prompt``) → an OpenAI embeddings body."""
    body = _object(body)
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidRequestError("prompt must be a string", param="prompt")
    return _openai_body(_ollama_model(body), prompt, None, "dimensions")


def ollama_embed_answer(vectors: Vectors, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "embeddings": vectors.vectors,
        "total_duration": 0,
        "load_duration": 0,
        "prompt_eval_count": vectors.prompt_tokens,
    }


def ollama_embeddings_answer(vectors: Vectors) -> dict[str, Any]:
    """The answer to ``/api/embeddings`` (one prompt, so ``vectors`` holds one vector)."""
    return {"embedding": vectors.vectors[0]}


def _object(value: Any, param: str = "body") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{param} must be a JSON object", param=param)
    return value
