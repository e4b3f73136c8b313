"""Model kinds (SPEC §12.6): inferred from the id unless a provider sets them, and the routing
views they make: chat never sees an embedding model, embeddings keep one model."""

from __future__ import annotations

import pytest

from gateway.core.chain import build_chain, one_model
from gateway.core.config import build_config
from gateway.core.kinds import Kind, infer_kind, single_model
from gateway.core.state import RouterState
from support.factories import T0, provider


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("llama-3.3-70b-versatile", Kind.CHAT),
        ("gpt-5", Kind.CHAT),
        ("claude-3-5-haiku", Kind.CHAT),
        ("qwen2.5-72b-instruct", Kind.CHAT),
        ("text-embedding-3-small", Kind.EMBEDDING),
        ("nomic-embed-text", Kind.EMBEDDING),
        ("gemini-embedding-001", Kind.EMBEDDING),
        ("BAAI/bge-m3", Kind.EMBEDDING),
        ("intfloat/multilingual-e5-large", Kind.EMBEDDING),
        ("whisper-large-v3-turbo", Kind.TRANSCRIPTION),
        ("gpt-4o-mini-transcribe", Kind.TRANSCRIPTION),
        ("tts-1", Kind.SPEECH),
        ("playai-tts", Kind.SPEECH),
        ("dall-e-3", Kind.IMAGE),
        ("black-forest-labs/FLUX.1-schnell", Kind.IMAGE),
    ],
)
def test_kinds_are_inferred_from_the_id(model, kind):
    assert infer_kind(model) is kind


def test_a_declared_kind_wins_over_the_inferred_one():
    p = provider(
        models=("house-vectors", "text-embedding-3-small"),
        kinds=(("text-embedding-3-small", Kind.CHAT), ("house-vectors", Kind.EMBEDDING)),
    )

    assert [p.kind_of(m) for m in p.models] == [Kind.EMBEDDING, Kind.CHAT]


def test_only_embeddings_keep_one_model():
    assert [k for k in Kind if single_model(k)] == [Kind.EMBEDDING]


def test_routing_views_hold_only_models_of_their_kind():
    config = build_config(
        [provider(1, models=("chat-a", "text-embedding-3-small", "whisper-1", "tts-1"))], {}, {}, now_ms=0
    )

    views = {kind: config.providers_for(None, kind)[0].models for kind in Kind}

    assert views == {
        Kind.CHAT: ("chat-a",),
        Kind.EMBEDDING: ("text-embedding-3-small",),
        Kind.TRANSCRIPTION: ("whisper-1",),
        Kind.SPEECH: ("tts-1",),
        Kind.IMAGE: (),
    }
    assert config.providers_for(None, Kind.CHAT) is config.providers_for(None, Kind.CHAT)  # once per snapshot
    assert config.providers_for(("tts-1",), Kind.SPEECH)[0].models == ("tts-1",)
    assert config.providers_for(("chat-a",), Kind.SPEECH)[0].models == ()


PROVIDERS = (
    provider(1, models=("emb-a",), priority=1),
    provider(2, models=("emb-b", "emb-a"), priority=2),
    provider(3, models=("emb-c",), priority=3),
)


def models_of(chain) -> list[tuple[int, str]]:
    return [(s.candidate.provider.id, s.candidate.model) for s in chain.steps]


def test_one_model_keeps_the_model_asked_for_across_providers():
    chain = one_model(build_chain(PROVIDERS, "emb-a", RouterState(), T0))

    assert models_of(chain) == [(1, "emb-a"), (2, "emb-a")]
    assert not any(step.degraded for step in chain.steps)


def test_one_model_for_auto_keeps_the_first_steps_model():
    chain = one_model(build_chain(PROVIDERS, "auto", RouterState(), T0))

    assert models_of(chain) == [(1, "emb-a"), (2, "emb-a")]


def test_one_model_of_an_empty_chain_is_empty():
    chain = one_model(build_chain((), "auto", RouterState(), T0))

    assert chain.steps == ()
