"""What a model does: its kind, and which endpoints may route to it (SPEC §12.6).

Rules:
- Every declared model has one kind: ``chat`` (the default), ``embedding``, ``transcription``,
  ``speech`` or ``image``. A provider's ``models`` entry may set it (``{"id", "kind"}``); else it is
  inferred from the id by ``KIND_PATTERNS``, the first pattern found (case-insensitive) in the
  id's last path segment deciding (``BAAI/bge-m3`` is read as ``bge-m3``).
- An endpoint routes only to models of its kind: chat routing never picks an embedding model.
- Only embeddings are ``single_model``: vectors of two models do not mix, so a request fails over
  across the providers and keys of one model and never degrades to another.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

__all__ = ["KIND_NAMES", "KIND_PATTERNS", "Kind", "infer_kind", "kind_of", "single_model"]


class Kind(StrEnum):
    CHAT = "chat"
    EMBEDDING = "embedding"
    TRANSCRIPTION = "transcription"
    SPEECH = "speech"
    IMAGE = "image"


# The kinds as a provider's ``models`` entry names them (D1 rows, the admin API).
KIND_NAMES = frozenset(kind.value for kind in Kind)

# Substrings of a model id that tell its kind, checked in this order (docs/client-protocols.md,
# "Model kinds").
KIND_PATTERNS: tuple[tuple[str, Kind], ...] = (
    ("embed", Kind.EMBEDDING),  # text-embedding-3-small, nomic-embed-text, gemini-embedding-001
    ("bge-", Kind.EMBEDDING),  # BAAI/bge-m3
    ("gte-", Kind.EMBEDDING),  # thenlper/gte-large
    ("e5-", Kind.EMBEDDING),  # intfloat/multilingual-e5-large
    ("whisper", Kind.TRANSCRIPTION),  # whisper-1, whisper-large-v3-turbo
    ("transcribe", Kind.TRANSCRIPTION),  # gpt-4o-transcribe
    ("tts", Kind.SPEECH),  # tts-1, gpt-4o-mini-tts, playai-tts
    ("dall-e", Kind.IMAGE),
    ("gpt-image", Kind.IMAGE),
    ("flux", Kind.IMAGE),  # black-forest-labs/FLUX.1-schnell
    ("stable-diffusion", Kind.IMAGE),
    ("sdxl", Kind.IMAGE),
    ("imagen-", Kind.IMAGE),
)


def infer_kind(model: str) -> Kind:
    """The kind ``model``'s id suggests (``KIND_PATTERNS``), else chat."""
    name = model.rsplit("/", 1)[-1].lower()
    return next((kind for pattern, kind in KIND_PATTERNS if pattern in name), Kind.CHAT)


def kind_of(model: str, declared: Mapping[str, Kind]) -> Kind:
    """``model``'s kind: the one its provider declared for it, else the inferred one."""
    return declared.get(model) or infer_kind(model)


def single_model(kind: Kind) -> bool:
    """True when a request of this kind never degrades to another model."""
    return kind is Kind.EMBEDDING
