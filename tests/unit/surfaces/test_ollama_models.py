"""Ollama's listings (SPEC §12.5): /api/tags, /api/show, /api/version."""

from __future__ import annotations

from gateway.surfaces.ollama_models import OLLAMA_VERSION, show_body, tags_body, version_body


def test_tags_body():
    body = tags_body(["auto", "meta-llama/llama-3.3-70b"], "2025-01-01T00:00:00Z")

    first, second = body["models"]
    assert first["name"] == first["model"] == "auto"
    assert second["details"]["family"] == "llama"
    assert second["details"]["families"] == ["llama"]
    assert {m["size"] for m in body["models"]} == {0}
    assert len(first["digest"]) == 64 and first["digest"] != second["digest"]
    assert tags_body(["auto"])["models"][0]["digest"] == first["digest"]  # deterministic


def test_show_body():
    body = show_body("gpt-4o", context_length=8192)

    assert body["capabilities"] == ["completion", "tools"]
    assert body["model_info"]["general.architecture"] == "gpt"
    assert body["model_info"]["gpt.context_length"] == 8192
    assert body["details"]["format"] == "gguf"


def test_version_body():
    assert version_body() == {"version": OLLAMA_VERSION}
    assert all(part.isdigit() for part in OLLAMA_VERSION.split("."))
