"""The rest of the OpenAI surface's JSON requests (SPEC §12.6), validated only as far as routing
needs, as ``wire/chat.py`` does for chat: ``model`` a string (absent or ``"auto"``: the first model
of the endpoint's kind), the field each endpoint cannot do without, ``stream`` a boolean. Every
other field is forwarded untouched.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompletionRequest", "EmbeddingsRequest", "ImageRequest", "OpenAIRequest", "SpeechRequest"]


class OpenAIRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    model: str | None = Field(default=None, min_length=1)

    @property
    def streaming(self) -> bool:
        return False


class EmbeddingsRequest(OpenAIRequest):
    """``POST /v1/embeddings``: ``input`` a string, a list of strings, or token arrays."""

    input: str | list[Any] = Field(min_length=1)


class CompletionRequest(OpenAIRequest):
    """``POST /v1/completions`` (legacy text completions)."""

    prompt: str | list[Any] = Field(min_length=1)
    stream: bool | None = None

    @property
    def streaming(self) -> bool:
        return bool(self.stream)


class SpeechRequest(OpenAIRequest):
    """``POST /v1/audio/speech``: the text to speak."""

    input: str = Field(min_length=1)


class ImageRequest(OpenAIRequest):
    """``POST /v1/images/generations``."""

    prompt: str = Field(min_length=1)
