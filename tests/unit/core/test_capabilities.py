"""What a request needs of a model, and which models cannot give it (SPEC §19)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.core import rules
from gateway.core.capabilities import (
    Needs,
    Windows,
    entry_facts,
    facts_sources,
    learned_window,
    needs_of,
    static_facts,
    unfit,
)
from gateway.core.modelfacts import NO_FACTS, Facts, preset_facts
from support.factories import provider

DEFAULT_OUT = rules.OUTPUT_ESTIMATE_DEFAULT


def user(content: object) -> dict[str, object]:
    return {"role": "user", "content": content}


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 40_000}}


@pytest.mark.parametrize(
    ("body", "size", "needs"),
    [
        ({"messages": [user("hi")]}, 400, Needs(100 + DEFAULT_OUT)),
        ({"messages": [user("hi")], "max_tokens": 50}, 400, Needs(150)),
        ({"messages": [user("hi")], "max_completion_tokens": 50}, 400, Needs(150)),
        # A large max_tokens is a ceiling, not what the answer uses (the original's #470).
        ({"messages": [user("hi")], "max_tokens": 32_000}, 400, Needs(100 + rules.OUTPUT_ESTIMATE_MAX)),
        ({"messages": [user("hi")], "max_tokens": True}, 400, Needs(100 + DEFAULT_OUT)),
        ({"messages": [user("hi")], "tools": [{"type": "function"}]}, 400, Needs(100 + DEFAULT_OUT, tools=True)),
        ({"messages": [user("hi")], "tools": []}, 400, Needs(100 + DEFAULT_OUT)),
        ({"messages": [user("hi")], "functions": [{"name": "f"}]}, 400, Needs(100 + DEFAULT_OUT, tools=True)),
        ({"messages": [user("hi")], "response_format": {"type": "json_object"}}, 400, Needs(1100, json=True)),
        ({"messages": [user("hi")], "response_format": {"type": "json_schema"}}, 400, Needs(1100, json=True)),
        ({"messages": [user("hi")], "response_format": {"type": "text"}}, 400, Needs(1100)),
        # The image's data is not text: it is left out of the estimate.
        (
            {"messages": [user([{"type": "text", "text": "what?"}, IMAGE])]},
            40_422,
            Needs(100 + DEFAULT_OUT, vision=True),
        ),
        (
            {"messages": [user([{"type": "input_image", "image_url": "https://x/y.png"}])]},
            400,
            Needs(1096, vision=True),
        ),
    ],
)
def test_needs_of_a_chat_body(body, size, needs):
    assert replace(needs_of(body, size), ceiling=0) == needs


@pytest.mark.parametrize(
    ("extra", "ceiling"),
    [({}, 100 + DEFAULT_OUT), ({"max_tokens": 50}, 150), ({"max_tokens": 200_000}, 200_100)],
)
def test_the_ceiling_counts_the_whole_max_tokens(extra, ceiling):
    assert needs_of({"messages": [user("hi")], **extra}, 400).ceiling == ceiling


@pytest.mark.parametrize(
    ("facts", "needs", "learned", "lacking"),
    [
        (Facts(context=8192), Needs(21_000), None, ("context", "context 8192 < ~21000")),
        (Facts(context=8192), Needs(8192), None, None),
        (NO_FACTS, Needs(10**6, vision=True, tools=True, json=True), None, None),  # unknown means "may"
        (Facts(vision=False), Needs(10, vision=True), None, ("vision", "no vision")),
        (Facts(vision=False), Needs(10), None, None),
        (Facts(tools=False), Needs(10, tools=True), None, ("tools", "no tools")),
        (Facts(json=False), Needs(10, json=True), None, ("json", "no json output")),
        (Facts(tools=True, vision=True), Needs(10, vision=True, tools=True), None, None),
        # A learned bound under the stated window wins; one above it does not.
        (Facts(context=131_072), Needs(21_000), 20_999, ("context", "context 20999 < ~21000")),
        (Facts(context=8192), Needs(9000), 20_999, ("context", "context 8192 < ~9000")),
        (NO_FACTS, Needs(21_000), 16_384, ("context", "context 16384 < ~21000")),
        # The window is checked first: it is what the trail names.
        (Facts(context=100, vision=False), Needs(200, vision=True), None, ("context", "context 100 < ~200")),
        # Larger than the free tier's minute: no key can ever send it.
        (Facts(context=131_072, tpm=6000), Needs(21_000), None, ("context", "tpm 6000 < ~21000")),
        (Facts(tpm=6000), Needs(6000), None, None),
    ],
)
def test_unfit(facts, needs, learned, lacking):
    lack = unfit(facts, needs, learned)

    assert (lack.need, lack.reason) == lacking if lack else lacking is None
    if lack is not None and lack.need == "context":
        assert lack.window == int(lack.reason.split()[1])


def test_a_learned_window_never_bounds_the_admins():
    known = replace(provider(1, facts={"m": Facts(context=131_072)}), listed={"n": Facts(context=131_072)})
    windows = Windows()
    windows.learn(1, "m", 16_000)
    windows.learn(1, "n", 16_000)

    assert learned_window(known, "m", windows) is None
    assert facts_sources(known, "m", learned_window(known, "m", windows))[0].context == 131_072
    assert facts_sources(known, "n", learned_window(known, "n", windows))[0].context == 16_000


def test_the_admin_wins_over_the_listing_which_wins_over_the_presets():
    preset = preset_facts("groq", "llama-3.1-8b-instant")
    assert preset.context is not None and preset.rpm is not None
    declared = {"llama-3.1-8b-instant": Facts(context=8192)}
    listed = {"llama-3.1-8b-instant": Facts(context=65_536, vision=True)}

    facts = static_facts("groq", ("llama-3.1-8b-instant", "unknown"), declared, listed)

    assert facts == {
        "llama-3.1-8b-instant": Facts(8192, True, preset.tools, preset.json, preset.rpm, preset.rpd, preset.tpm)
    }


def test_facts_sources_name_where_each_field_came_from_and_a_smaller_learned_window_wins():
    listed = {"m": Facts(context=32_768, tools=True)}
    known = replace(provider(1, facts={"m": Facts(rpm=5)}), listed=listed, caps=Facts(rpm=9, rpd=100))

    facts, sources = facts_sources(known, "m", 16_000)

    assert facts == Facts(context=16_000, tools=True, rpm=5, rpd=100)
    assert sources == {"context": "learned", "tools": "listed", "rpm": "admin", "rpd": "provider"}
    assert facts_sources(known, "m", 64_000)[1]["context"] == "listed"


def test_a_providers_caps_come_after_a_models_own_and_before_the_listing_and_presets():
    preset = preset_facts("groq", "llama-3.1-8b-instant")
    models = ("llama-3.1-8b-instant", "other")
    declared = {"llama-3.1-8b-instant": Facts(rpm=2)}

    facts = static_facts("groq", models, declared, {}, Facts(rpm=100, rpd=5000))

    assert facts["llama-3.1-8b-instant"].rpm == 2
    assert facts["llama-3.1-8b-instant"].rpd == 5000 != preset.rpd
    assert facts["other"] == Facts(rpm=100, rpd=5000)


def test_a_stored_entry_edited_by_hand_keeps_only_fields_of_the_right_type():
    entry = {
        "id": "m",
        "context": "8192",
        "vision": False,
        "rpm": 0,
        "tpm": 6000,
        "listed": {"context": 4096, "rpm": 3},
    }

    assert entry_facts(entry) == (Facts(vision=False, tpm=6000), Facts(context=4096))


def test_windows_keep_the_smallest_bound_per_provider_and_model_and_forget_a_provider():
    windows = Windows()
    windows.learn(1, "m", 20_000)
    windows.learn(1, "m", 30_000)
    windows.learn(2, "m", 8_000)
    windows.learn(1, "n", 0)  # nothing to learn

    assert (windows.bound(1, "m"), windows.bound(2, "m"), windows.bound(1, "n")) == (20_000, 8_000, None)
    windows.forget_provider(1)
    assert (windows.bound(1, "m"), windows.bound(2, "m")) == (None, 8_000)


def test_windows_are_bounded():
    windows = Windows()
    for n in range(rules.LEARNED_WINDOWS_KEPT + 5):
        windows.learn(1, f"m{n}", 1000)

    assert windows.bound(1, "m0") is None
    assert windows.bound(1, f"m{rules.LEARNED_WINDOWS_KEPT + 4}") == 1000
