"""Ollama's listings (SPEC §12.5): ``GET /api/tags``, ``POST /api/show``, ``GET /api/version``.

The gateway has no model files: every model of the caller's catalog is listed with a fixed
``modified_at``, a digest derived from its name and a family read from its id, so clients that
show or check these fields accept it.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["CONTEXT_LENGTH", "MODIFIED_AT", "OLLAMA_VERSION", "show_body", "tags_body", "version_body"]

# What /api/version answers: a current Ollama release (v0.32.x, Aug 2026), so clients that check a
# minimum version (tools, thinking) accept the gateway.
OLLAMA_VERSION = "0.32.15"
# The fixed ``modified_at`` of listed models: the gateway has no model files and no clock.
MODIFIED_AT = "2025-01-01T00:00:00Z"
# The context length /api/show announces (``<arch>.context_length``); clients size prompts by it,
# and most free models take at least this much.
CONTEXT_LENGTH = 32768


def _family(model: str) -> str:
    """A family name for clients that show one: the leading letters of the id's last segment."""
    base = model.rsplit("/", 1)[-1].lower()
    end = 0
    while end < len(base) and base[end].isalpha():
        end += 1
    return base[:end] or "unknown"


def _details(model: str) -> dict[str, Any]:
    family = _family(model)
    return {
        "parent_model": "",
        "format": "gguf",
        "family": family,
        "families": [family],
        "parameter_size": "",
        "quantization_level": "",
    }


def tags_body(models: list[str], modified_at: str = MODIFIED_AT) -> dict[str, Any]:
    """``GET /api/tags``: every model, in the order given, with a digest derived from its name."""
    return {
        "models": [
            {
                "name": model,
                "model": model,
                "modified_at": modified_at,
                "size": 0,
                "digest": hashlib.sha256(model.encode()).hexdigest(),
                "details": _details(model),
            }
            for model in models
        ]
    }


def show_body(model: str, modified_at: str = MODIFIED_AT, context_length: int = CONTEXT_LENGTH) -> dict[str, Any]:
    """``POST /api/show`` for a known model. ``model_info`` is required by ollama-python's
    ``ShowResponse``; ``general.architecture`` and ``<arch>.context_length`` are what clients
    read from it."""
    details = _details(model)
    family = details["family"]
    return {
        "modelfile": f"# Served by fllmapi-worker through its provider chain\nFROM {model}\n",
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": details,
        "model_info": {
            "general.architecture": family,
            "general.basename": model,
            f"{family}.context_length": context_length,
        },
        "capabilities": ["completion", "tools"],
        "modified_at": modified_at,
    }


def version_body() -> dict[str, str]:
    """``GET /api/version``."""
    return {"version": OLLAMA_VERSION}
