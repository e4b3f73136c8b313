"""Model lists in the OpenAI and Anthropic shapes (SPEC §12.1); Gemini's lives with its surface.

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

from collections.abc import Mapping
from typing import Any

__all__ = ["anthropic_model", "anthropic_models", "openai_model", "openai_models"]


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
