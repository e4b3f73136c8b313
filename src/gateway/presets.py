"""The platform presets of the config page's quick add (SPEC §8.3): data, not branches.

A preset fills the add form; nothing is stored from it but what the user submits, so a preset
can change (a retired model, a new platform) without touching any provider already added.

Rules:
- ``base_url`` is what the gateway appends ``/chat/completions`` to. Where it holds
  ``ACCOUNT_ID_PLACEHOLDER`` (Cloudflare Workers AI) the page asks for the account id and puts it
  there before submitting.
- ``models_url`` is the platform's OpenAI-style model list, always ``{base_url}/models`` (what
  ``POST /api/admin/models/fetch`` calls), or None where the platform serves no such list: the
  page then offers only the default models.
- ``default_models`` are ids the platform serves on its free tier, ticked by default.

To add a platform, append a ``Preset`` to ``PRESETS``; ``tests/unit/test_presets.py`` checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACCOUNT_ID_PLACEHOLDER", "PRESETS", "Preset"]

ACCOUNT_ID_PLACEHOLDER = "{account_id}"


@dataclass(frozen=True, slots=True)
class Preset:
    id: str  # stored as the provider's ``platform``
    name: str
    base_url: str
    models_url: str | None
    default_models: tuple[str, ...]

    @property
    def needs_account_id(self) -> bool:
        return ACCOUNT_ID_PLACEHOLDER in self.base_url


def _listed(id_: str, name: str, base_url: str, *default_models: str) -> Preset:
    """A platform that serves ``GET {base_url}/models``."""
    return Preset(id_, name, base_url, f"{base_url}/models", default_models)


def _unlisted(id_: str, name: str, base_url: str, *default_models: str) -> Preset:
    """A platform with no OpenAI-style model list."""
    return Preset(id_, name, base_url, None, default_models)


PRESETS: tuple[Preset, ...] = (
    _listed(
        "groq",
        "Groq",
        "https://api.groq.com/openai/v1",
        "llama-3.3-70b-versatile",
        "llama-3.1-8b-instant",
        "openai/gpt-oss-120b",
        "openai/gpt-oss-20b",
        "qwen/qwen3-32b",
        "meta-llama/llama-4-scout-17b-16e-instruct",
    ),
    _listed(
        "gemini",
        "Google Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-2.5-pro",
    ),
    _listed(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "deepseek/deepseek-chat-v3.1:free",
        "qwen/qwen3-coder:free",
        "z-ai/glm-4.5-air:free",
        "openai/gpt-oss-120b:free",
        "meta-llama/llama-3.3-70b-instruct:free",
    ),
    _listed(
        "cerebras",
        "Cerebras",
        "https://api.cerebras.ai/v1",
        "gpt-oss-120b",
        "qwen-3-235b-a22b-instruct-2507",
        "qwen-3-32b",
        "llama-3.3-70b",
        "llama3.1-8b",
    ),
    _listed(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        "deepseek-chat",
        "deepseek-reasoner",
    ),
    # Zhipu documents no model-list endpoint; its free models are the "-flash" ones.
    _unlisted(
        "zhipu",
        "Zhipu GLM",
        "https://open.bigmodel.cn/api/paas/v4",
        "glm-4.5-flash",
        "glm-4-flash-250414",
        "glm-4.1v-thinking-flash",
    ),
    _listed(
        "modelscope",
        "ModelScope",
        "https://api-inference.modelscope.cn/v1",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        "Qwen/Qwen3-235B-A22B-Instruct-2507",
        "deepseek-ai/DeepSeek-V3.1",
        "ZhipuAI/GLM-4.5",
    ),
    _listed(
        "siliconflow",
        "SiliconFlow",
        "https://api.siliconflow.cn/v1",
        "Qwen/Qwen3-8B",
        "THUDM/GLM-4-9B-0414",
        "deepseek-ai/DeepSeek-R1-0528-Qwen3-8B",
        "THUDM/GLM-Z1-9B-0414",
    ),
    _listed(
        "mistral",
        "Mistral",
        "https://api.mistral.ai/v1",
        "mistral-small-latest",
        "mistral-medium-latest",
        "mistral-large-latest",
        "codestral-latest",
        "magistral-medium-latest",
    ),
    # Workers AI lists its models only in Cloudflare's own format (/ai/models/search).
    _unlisted(
        "cloudflare",
        "Cloudflare Workers AI",
        f"https://api.cloudflare.com/client/v4/accounts/{ACCOUNT_ID_PLACEHOLDER}/ai/v1",
        "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
        "@cf/openai/gpt-oss-120b",
        "@cf/openai/gpt-oss-20b",
        "@cf/zai-org/glm-4.7-flash",
        "@cf/meta/llama-3.1-8b-instruct",
    ),
)
