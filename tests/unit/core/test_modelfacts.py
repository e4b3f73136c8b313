"""What is known about models from outside the gateway (SPEC §19): the presets' facts, their
sources, and what an OpenAI-style ``GET /models`` entry states."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from gateway.core.modelfacts import NO_FACTS, PRESET_FACTS, PRESET_SOURCES, Facts, listed_facts, preset_facts
from gateway.presets import PRESETS


def test_every_default_model_of_every_preset_has_facts():
    missing = [(p.id, m) for p in PRESETS for m in p.default_models if m not in PRESET_FACTS.get(p.id, {})]

    assert missing == []


def test_no_facts_for_a_model_or_platform_no_preset_has():
    known = {(p.id, m) for p in PRESETS for m in p.default_models}
    extra = [(p, m) for p, models in PRESET_FACTS.items() for m in models if (p, m) not in known]

    assert extra == []


def test_every_platform_with_a_figure_names_its_source_and_date():
    stated = {p for p, models in PRESET_FACTS.items() if any(f != NO_FACTS for f in models.values())}

    assert stated == set(PRESET_SOURCES)
    for date, url in PRESET_SOURCES.values():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)
        assert url.startswith("https://")


def test_every_preset_figure_is_a_positive_int_or_a_bool():
    for models in PRESET_FACTS.values():
        for facts in models.values():
            for f in fields(Facts):
                value = getattr(facts, f.name)
                if f.name in ("vision", "tools", "json"):
                    assert value is None or isinstance(value, bool)
                else:
                    assert value is None or (type(value) is int and value > 0)


@pytest.mark.parametrize(
    ("platform", "model", "expected"),
    [
        pytest.param("groq", "llama-3.3-70b-versatile",
                     Facts(context=131072, vision=False, tools=True, rpm=30, rpd=1000, tpm=12000),
                     id="groq-rate-limits-page"),
        pytest.param("groq", "llama-3.1-8b-instant",
                     Facts(context=131072, vision=False, tools=True, rpm=30, rpd=14400, tpm=6000),
                     id="groq-8b-daily-14400"),
        pytest.param("openrouter", "qwen/qwen3-coder:free", Facts(rpm=20, rpd=50), id="openrouter-free-20-50"),
        pytest.param("gemini", "gemini-2.5-pro", Facts(context=1048576, vision=True, tools=True, json=True),
                     id="gemini-no-published-caps"),
        pytest.param("cerebras", "gpt-oss-120b", NO_FACTS, id="cerebras-unconfirmed"),
        pytest.param("groq", "no-such-model", NO_FACTS, id="unknown-model"),
        pytest.param("nowhere", "llama-3.3-70b-versatile", NO_FACTS, id="unknown-platform"),
    ],
)  # fmt: skip
def test_preset_facts(platform, model, expected):
    assert preset_facts(platform, model) == expected


@pytest.mark.parametrize(
    ("mine", "theirs", "expected"),
    [
        pytest.param(Facts(context=8192), Facts(context=131072, rpm=30), Facts(context=8192, rpm=30),
                     id="mine-wins-theirs-fills"),
        pytest.param(Facts(vision=False), Facts(vision=True), Facts(vision=False), id="false-is-a-statement"),
        pytest.param(NO_FACTS, Facts(tools=True), Facts(tools=True), id="nothing-over-something"),
        pytest.param(NO_FACTS, NO_FACTS, NO_FACTS, id="nothing-over-nothing"),
    ],
)  # fmt: skip
def test_over(mine, theirs, expected):
    assert mine.over(theirs) == expected


# Shapes of real /models entries, trimmed to the fields read (openrouter.ai/api/v1/models,
# api.groq.com/openai/v1/models, api.mistral.ai/v1/models).
OPENROUTER = {
    "id": "qwen/qwen3-coder:free",
    "context_length": 262144,
    "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
    "top_provider": {"context_length": 262144, "max_completion_tokens": None, "is_moderated": False},
    "supported_parameters": ["max_tokens", "temperature", "tools", "tool_choice", "response_format"],
}
GROQ = {"id": "llama-3.3-70b-versatile", "object": "model", "owned_by": "Meta", "active": True,
        "context_window": 131072, "max_completion_tokens": 32768}  # fmt: skip
MISTRAL = {
    "id": "mistral-small-latest",
    "object": "model",
    "capabilities": {"completion_chat": True, "completion_fim": False, "function_calling": True,
                     "fine_tuning": True, "vision": True, "classification": False},
    "max_context_length": 131072,
}  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(OPENROUTER, Facts(context=262144, vision=False, tools=True, json=True), id="openrouter"),
        pytest.param({**OPENROUTER, "architecture": {"input_modalities": ["text", "image"]}},
                     Facts(context=262144, vision=True, tools=True, json=True), id="openrouter-image-input"),
        pytest.param({**OPENROUTER, "supported_parameters": ["max_tokens", "structured_outputs"]},
                     Facts(context=262144, vision=False, tools=False, json=True),
                     id="openrouter-structured-outputs-no-tools"),
        pytest.param({**OPENROUTER, "supported_parameters": ["max_tokens"]},
                     Facts(context=262144, vision=False, tools=False, json=False), id="openrouter-neither"),
        pytest.param({"id": "x", "context_length": 4096}, Facts(context=4096), id="no-lists-no-capabilities"),
        pytest.param({"id": "x", "top_provider": {"context_length": 65536}}, Facts(context=65536),
                     id="window-only-under-top-provider"),
        pytest.param(GROQ, Facts(context=131072), id="groq-context-window"),
        pytest.param(MISTRAL, Facts(context=131072, vision=True, tools=True), id="mistral"),
        pytest.param({**MISTRAL, "capabilities": {"vision": False, "function_calling": "yes"}},
                     Facts(context=131072, vision=False), id="mistral-non-bool-flag-ignored"),
        pytest.param({"id": "x", "context_length": True}, NO_FACTS, id="bool-is-not-a-window"),
        pytest.param({"id": "x", "context_window": 0}, NO_FACTS, id="zero-window-ignored"),
        pytest.param({"id": "x", "context_window": -1}, NO_FACTS, id="negative-window-ignored"),
        pytest.param({"id": "x", "context_length": "8192"}, NO_FACTS, id="string-window-ignored"),
        pytest.param({"id": "x", "context_length": 8192.0}, NO_FACTS, id="float-window-ignored"),
        pytest.param({"id": "x", "architecture": "text->text", "supported_parameters": "tools"}, NO_FACTS,
                     id="wrong-shapes-ignored"),
        pytest.param({"id": "gpt-4o", "object": "model", "owned_by": "openai"}, NO_FACTS, id="states-nothing"),
        pytest.param("gpt-4o", NO_FACTS, id="not-an-object"),
        pytest.param(None, NO_FACTS, id="none"),
    ],
)  # fmt: skip
def test_listed_facts(entry, expected):
    assert listed_facts(entry) == expected
