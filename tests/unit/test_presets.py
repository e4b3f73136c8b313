"""The quick add's presets (SPEC §8.3) are well-formed data."""

from __future__ import annotations

import pytest

from gateway.presets import ACCOUNT_ID_PLACEHOLDER, PRESETS

# SPEC §8.3: each platform's base URL, word for word.
SPEC_BASE_URLS = {
    "groq": "https://api.groq.com/openai/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
    "openrouter": "https://openrouter.ai/api/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "zhipu": "https://open.bigmodel.cn/api/paas/v4",
    "modelscope": "https://api-inference.modelscope.cn/v1",
    "siliconflow": "https://api.siliconflow.cn/v1",
    "mistral": "https://api.mistral.ai/v1",
    "cloudflare": f"https://api.cloudflare.com/client/v4/accounts/{ACCOUNT_ID_PLACEHOLDER}/ai/v1",
}


def test_every_platform_of_the_spec_has_its_base_url_and_ids_are_unique():
    ids = [p.id for p in PRESETS]

    assert len(ids) == len(set(ids))
    assert {p.id: p.base_url for p in PRESETS if p.id in SPEC_BASE_URLS} == SPEC_BASE_URLS


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
