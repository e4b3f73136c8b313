"""What is known about a model from outside the gateway: its capabilities and free-tier caps
(SPEC §19).

Rules:
- ``None`` means unknown, and unknown means "may": a candidate is never skipped for a fact nobody
  stated. A figure goes into ``PRESET_FACTS`` only where the platform documents it;
  ``PRESET_SOURCES`` names the page and the date its figures were relied on.
- Sources combine field by field with ``Facts.over``, the first that states a field wins (SPEC
  §19: the admin's setting, the provider's ``/models`` answer, the presets, learned).
- Caps are per key and model: ``rpm`` and ``rpd`` are requests per minute and per UTC day, ``tpm``
  tokens per minute. A platform whose caps are per account (OpenRouter's ``:free`` models) is
  listed with the same figure on each model: counting them per model can only be looser, and a
  429 that states the account's limit lowers it (``stated.stated_caps``).
- ``listed_facts`` reads one element of an OpenAI-style ``GET /models`` list as OpenRouter, Groq
  and Mistral shape it; a field of the wrong type, or a window that is not a positive int, is
  ignored rather than guessed at (a bool is not an int).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

__all__ = ["NO_FACTS", "PRESET_FACTS", "PRESET_SOURCES", "Facts", "listed_facts", "preset_facts"]


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known about one model on one platform; ``None`` is unknown."""

    context: int | None = None  # context window, tokens
    vision: bool | None = None  # accepts image input
    tools: bool | None = None  # function/tool calling
    json: bool | None = None  # JSON output (response_format json_object / json_schema)
    rpm: int | None = None  # free-tier requests per minute (per key)
    rpd: int | None = None  # free-tier requests per day
    tpm: int | None = None  # free-tier tokens per minute

    @property
    def capped(self) -> bool:
        """Some free-tier cap is known."""
        return self.rpm is not None or self.rpd is not None or self.tpm is not None

    def over(self, other: Facts) -> Facts:
        """Each field: self's when not None, else other's."""
        return Facts(
            **{
                f.name: mine if (mine := getattr(self, f.name)) is not None else getattr(other, f.name)
                for f in fields(Facts)
            }
        )


NO_FACTS = Facts()

# Groq, console.groq.com/docs/rate-limits (free plan table: RPM, RPD, TPM; its TPD has no field
# here) and console.groq.com/docs/models (context windows). Llama 4 Scout is Groq's vision model.
_GROQ = {
    "llama-3.3-70b-versatile": Facts(context=131072, vision=False, tools=True, rpm=30, rpd=1000, tpm=12000),
    "llama-3.1-8b-instant": Facts(context=131072, vision=False, tools=True, rpm=30, rpd=14400, tpm=6000),
    "openai/gpt-oss-120b": Facts(context=131072, vision=False, tools=True, rpm=30, rpd=1000, tpm=8000),
    "openai/gpt-oss-20b": Facts(context=131072, vision=False, tools=True, rpm=30, rpd=1000, tpm=8000),
    "qwen/qwen3-32b": Facts(context=131072, vision=False, tools=True, rpm=60, rpd=1000, tpm=6000),
    "meta-llama/llama-4-scout-17b-16e-instruct": Facts(
        context=131072, vision=True, tools=True, rpm=30, rpd=1000, tpm=30000
    ),
}

# Gemini 2.5 take text, images, function calling and structured output with a 1,048,576-token
# window. Google no longer publishes free-tier figures (only AI Studio shows a project's own), so
# the caps are left to the 429s, which state them (``stated.stated_caps``).
_GEMINI_25 = Facts(context=1048576, vision=True, tools=True, json=True)

# OpenRouter, openrouter.ai/docs (free variant): every ``:free`` request counts against one
# account-wide 20 per minute and 50 per day (1000 once 10 credits were ever bought; the lower
# figure is kept, a 429 states the real one). Windows and capabilities come from its /models list.
_OPENROUTER_FREE = Facts(rpm=20, rpd=50)

_PRESET_FACTS: dict[str, dict[str, Facts]] = {
    "groq": _GROQ,
    "gemini": dict.fromkeys(("gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.5-pro"), _GEMINI_25),
    "openrouter": dict.fromkeys(
        (
            "deepseek/deepseek-chat-v3.1:free",
            "qwen/qwen3-coder:free",
            "z-ai/glm-4.5-air:free",
            "openai/gpt-oss-120b:free",
            "meta-llama/llama-3.3-70b-instruct:free",
        ),
        _OPENROUTER_FREE,
    ),
    # Cerebras: copies of its rate-limits page disagree (30 RPM / 14.4K RPD / 60K TPM for all five
    # in one; 5 RPM / 30K TPM for gpt-oss-120b alone, the others retired, in a later one), so no
    # figure is kept; its x-ratelimit-limit-*-day/-minute headers state the real ones.
    "cerebras": dict.fromkeys(
        ("gpt-oss-120b", "qwen-3-235b-a22b-instruct-2507", "qwen-3-32b", "llama-3.3-70b", "llama3.1-8b"),
        NO_FACTS,
    ),
    # DeepSeek documents JSON Output and Function Calling for deepseek-chat; both take text only.
    "deepseek": {
        "deepseek-chat": Facts(vision=False, tools=True, json=True),
        "deepseek-reasoner": Facts(vision=False),
    },
    "zhipu": dict.fromkeys(("glm-4.5-flash", "glm-4-flash-250414", "glm-4.1v-thinking-flash"), NO_FACTS),
    "modelscope": dict.fromkeys(
        (
            "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            "Qwen/Qwen3-235B-A22B-Instruct-2507",
            "deepseek-ai/DeepSeek-V3.1",
            "ZhipuAI/GLM-4.5",
        ),
        NO_FACTS,
    ),
    "siliconflow": dict.fromkeys(
        ("Qwen/Qwen3-8B", "THUDM/GLM-4-9B-0414", "deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", "THUDM/GLM-Z1-9B-0414"),
        NO_FACTS,
    ),
    # Mistral publishes no free-tier figures; its /models list states windows and capabilities.
    "mistral": dict.fromkeys(
        (
            "mistral-small-latest",
            "mistral-medium-latest",
            "mistral-large-latest",
            "codestral-latest",
            "magistral-medium-latest",
        ),
        NO_FACTS,
    ),
    "cloudflare": dict.fromkeys(
        (
            "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
            "@cf/openai/gpt-oss-120b",
            "@cf/openai/gpt-oss-20b",
            "@cf/zai-org/glm-4.7-flash",
            "@cf/meta/llama-3.1-8b-instruct",
        ),
        NO_FACTS,
    ),
}

PRESET_FACTS: Mapping[str, Mapping[str, Facts]] = MappingProxyType(
    {platform: MappingProxyType(models) for platform, models in _PRESET_FACTS.items()}
)

# Platform id -> (the date its figures were relied on, the page they come from). Only platforms
# with at least one stated figure are here.
PRESET_SOURCES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "groq": ("2026-12-03", "https://console.groq.com/docs/rate-limits"),
        "gemini": ("2026-12-03", "https://ai.google.dev/gemini-api/docs/models"),
        "openrouter": ("2026-12-03", "https://openrouter.ai/docs/guides/routing/model-variants/free"),
        "deepseek": ("2026-12-03", "https://api-docs.deepseek.com/quick_start/pricing"),
    }
)


def preset_facts(platform: str, model: str) -> Facts:
    """The presets' facts for ``model`` on ``platform``; ``NO_FACTS`` when either is unknown."""
    return PRESET_FACTS.get(platform, {}).get(model, NO_FACTS)


def _window(value: Any) -> int | None:
    # A bool is an int to Python; a window of 0 or less is no window.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _strings(value: Any) -> list[str] | None:
    """A list of strings as given, or None when ``value`` is not a list (no statement)."""
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, str)]


def _openrouter(entry: Mapping[str, Any]) -> Facts:
    architecture = entry.get("architecture")
    inputs = _strings(architecture.get("input_modalities")) if isinstance(architecture, dict) else None
    params = _strings(entry.get("supported_parameters"))
    return Facts(
        vision=None if inputs is None else "image" in inputs,
        tools=None if params is None else "tools" in params,
        json=None if params is None else ("response_format" in params or "structured_outputs" in params),
    )


def _mistral(entry: Mapping[str, Any]) -> Facts:
    capabilities = entry.get("capabilities")
    if not isinstance(capabilities, dict):
        return NO_FACTS
    return Facts(vision=_flag(capabilities.get("vision")), tools=_flag(capabilities.get("function_calling")))


def listed_facts(entry: object) -> Facts:
    """What one element of an OpenAI-style ``GET /models`` ``data`` list states; ``NO_FACTS``
    when it states nothing (or is not an object).

    Windows: OpenRouter's ``context_length``, Groq's ``context_window``, Mistral's
    ``max_context_length``, else a ``context_window``/``context_length`` under ``top_provider``.
    Capabilities: OpenRouter's ``architecture.input_modalities`` and ``supported_parameters``
    (a present list without the entry means False), Mistral's ``capabilities`` flags.
    """
    if not isinstance(entry, dict):
        return NO_FACTS
    context = None
    for key in ("context_length", "context_window", "max_context_length"):
        context = _window(entry.get(key))
        if context is not None:
            break
    top = entry.get("top_provider")
    if context is None and isinstance(top, dict):
        context = _window(top.get("context_length"))
    return Facts(context=context).over(_openrouter(entry)).over(_mistral(entry))
