"""Model lists in the OpenAI, Anthropic and Gemini shapes (SPEC §12.1, §12.4).

Rules:

- The caller gives the models in chain order, ``auto`` first; a model listed twice is kept once,
  at its first place, with its first owner (SPEC §12.1: "once, in chain order").
- OpenAI (``openai.types.Model``): ``{"object":"list","data":[{"id","object":"model","created",
  "owned_by","x_kind"}]}``; ``created`` is Unix seconds; ``x_kind`` the model's kind (SPEC §12.6),
  absent for ``auto``.
- Anthropic (``anthropic.types.ModelInfo``): ``{"data":[{"type":"model","id","display_name",
  "created_at", "lifecycle"}],"has_more":false,"first_id","last_id"}``. ``created_at`` is RFC 3339;
  ``display_name`` is the id; ``lifecycle: "active"`` because anthropic ≥ 2.14 requires the field
  (its strict validation fails without it). ``first_id``/``last_id`` are null for an empty list;
  ``has_more`` false ends the SDK's pagination.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = [
    "EMBEDDING_METHODS",
    "GENERATION_METHODS",
    "anthropic_model",
    "anthropic_models",
    "gemini_model",
    "gemini_models",
    "openai_model",
    "openai_models",
]

# What a Gemini model entry says it supports (``supportedGenerationMethods``).
GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
# What an embedding model supports instead (SPEC §12.6).
EMBEDDING_METHODS = ["embedContent", "batchEmbedContents"]


def openai_model(entry: tuple[str, str], created: int, kind: str | None = None) -> dict[str, Any]:
    """``GET /v1/models/{id}``: ``entry`` is (model id, the name of the first provider serving it);
    ``kind`` (SPEC §12.6) goes into our own field ``x_kind`` (None: none, as for ``auto``)."""
    model_id, owner = entry
    model = {"id": model_id, "object": "model", "created": created, "owned_by": owner}
    if kind is not None:
        model["x_kind"] = kind
    return model


def openai_models(entries: list[tuple[str, str]], created: int, kinds: Mapping[str, str] = {}) -> dict[str, Any]:
    """``GET /v1/models``: every entry once, in the order given, with its kind from ``kinds``."""
    seen: set[str] = set()
    data = []
    for entry in entries:
        if entry[0] not in seen:
            seen.add(entry[0])
            data.append(openai_model(entry, created, kinds.get(entry[0])))
    return {"object": "list", "data": data}


def anthropic_model(model_id: str, created_at_iso: str) -> dict[str, Any]:
    """``GET /v1/models/{id}`` with ``anthropic-version``: one ``ModelInfo``."""
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id,
        "created_at": created_at_iso,
        "lifecycle": "active",
    }


def anthropic_models(ids: list[str], created_at_iso: str) -> dict[str, Any]:
    """``GET /v1/models`` with ``anthropic-version``: one page holding every model."""
    data = [anthropic_model(model_id, created_at_iso) for model_id in dict.fromkeys(ids)]
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def gemini_model(
    model_id: str,
    input_token_limit: int | None = None,
    output_token_limit: int | None = None,
    embedding: bool = False,
) -> dict[str, Any]:
    """A ``Model`` as ``GET /v1beta/models/{id}`` answers it (google-genai reads
    ``supportedGenerationMethods`` as ``supported_actions``; token limits are optional); an
    ``embedding`` model supports the embedding methods instead of generation."""
    entry: dict[str, Any] = {
        "name": "models/" + model_id,
        "baseModelId": model_id,
        "version": "001",
        "displayName": model_id,
        "description": f"{model_id} through this gateway's fallback chain",
        "supportedGenerationMethods": list(EMBEDDING_METHODS if embedding else GENERATION_METHODS),
    }
    if input_token_limit is not None:
        entry["inputTokenLimit"] = input_token_limit
    if output_token_limit is not None:
        entry["outputTokenLimit"] = output_token_limit
    return entry


def gemini_models(ids: list[str], embedding: Collection[str] = ()) -> dict[str, Any]:
    """``GET /v1beta/models``: every id once, in the given order; those in ``embedding`` as
    embedding models."""
    return {"models": [gemini_model(model_id, embedding=model_id in embedding) for model_id in ids]}
