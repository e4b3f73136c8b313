"""The model catalog a caller sees (SPEC §12.6, §14): the declared models it may use, their kinds,
and the Gemini entry of one, for the model lists of every surface."""

from __future__ import annotations

from typing import Any

from gateway.core.chain import model_catalog
from gateway.core.clients import Caller, restrict_catalog
from gateway.core.config import Config
from gateway.core.kinds import Kind
from gateway.errors import NotFoundError
from gateway.surfaces import models

__all__ = ["caller_catalog", "catalog_kinds", "embedding_models", "gemini_model"]


def caller_catalog(config: Config, caller: Caller) -> list[tuple[str, str]]:
    """The declared models ``caller`` may use (SPEC §14), as ``(model, provider name)``: what
    the model lists show."""
    return restrict_catalog(model_catalog(config.enabled_providers), caller.models)


def catalog_kinds(config: Config) -> dict[str, Kind]:
    """Each declared model's kind (SPEC §12.6), as the first provider declaring it sets it."""
    kinds: dict[str, Kind] = {}
    for provider in config.enabled_providers:
        for model in provider.models:
            kinds.setdefault(model, provider.kind_of(model))
    return kinds


def embedding_models(config: Config) -> frozenset[str]:
    """The declared models of kind embedding (SPEC §12.6): listed with the embedding methods."""
    return frozenset(model for model, kind in catalog_kinds(config).items() if kind is Kind.EMBEDDING)


def gemini_model(config: Config, caller: Caller, model: str) -> dict[str, Any]:
    """The Gemini entry of a declared model the caller may use; 404 otherwise."""
    model = model.removeprefix("models/")
    if model not in {m for m, _ in caller_catalog(config, caller)}:
        raise NotFoundError(f"Model '{model}' is not served by this gateway.", code="model_not_found")
    return models.gemini_model(model, embedding=model in embedding_models(config))
