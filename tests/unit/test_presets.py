"""The quick add's presets (SPEC §8.3) are well-formed data."""

from __future__ import annotations

import pytest

from gateway.presets import ACCOUNT_ID_PLACEHOLDER, PRESETS

# SPEC §8.3, in its order.
SPEC_PLATFORMS = {
    "groq", "gemini", "openrouter", "cerebras", "deepseek",
    "zhipu", "modelscope", "siliconflow", "mistral", "cloudflare",
}


def test_every_platform_of_the_spec_has_a_preset_and_ids_are_unique():
    ids = [p.id for p in PRESETS]

    assert len(ids) == len(set(ids))
    assert SPEC_PLATFORMS <= set(ids)


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.id)
def test_preset_is_well_formed(preset):
    assert preset.base_url.startswith("https://")
    assert not preset.base_url.endswith("/")
    assert preset.models_url in (None, f"{preset.base_url}/models")
    assert preset.name
    assert preset.default_models
    assert len(set(preset.default_models)) == len(preset.default_models)
    assert all(m == m.strip() and m for m in preset.default_models)


def test_only_cloudflare_needs_an_account_id():
    needing = {p.id for p in PRESETS if p.needs_account_id}

    assert needing == {"cloudflare"}
    [cloudflare] = [p for p in PRESETS if p.id == "cloudflare"]
    assert cloudflare.base_url.count(ACCOUNT_ID_PLACEHOLDER) == 1
