"""The chat completion request, validated only as far as routing needs (SPEC §2.2).

``model`` a string (absent or ``"auto"``: any provider), ``messages`` a non-empty list of message
objects, ``stream`` a boolean; types are strict (``"yes"`` is not a boolean). Every other field,
OpenAI's or a provider's own such as ``top_k``, is not looked at here and is forwarded untouched.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AUTO_MODEL", "ChatRequest"]

AUTO_MODEL = "auto"


class ChatRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    model: str | None = Field(default=None, min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool | None = None

    @property
    def is_auto(self) -> bool:
        return self.model is None or self.model.lower() == AUTO_MODEL

    @property
    def streaming(self) -> bool:
        return bool(self.stream)
