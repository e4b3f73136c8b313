"""Admin API request bodies (SPEC §8.2). Unknown fields are refused so a typo is reported, not
silently ignored; types are strict."""

from __future__ import annotations

import unicodedata
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from gateway.core.capabilities import FACT_FIELDS, facts_problem
from gateway.core.kinds import KIND_NAMES, Kind

__all__ = [
    "MAX_ID",
    "MAX_KEYS",
    "ClientCreate",
    "ClientUpdate",
    "KeyCreate",
    "KeyUpdate",
    "ModelsFetchByProvider",
    "ModelsFetchByUrl",
    "ProviderCaps",
    "ProviderCreate",
    "ProviderUpdate",
    "TokensUpdate",
]

MAX_ID = 2**53 - 1  # the largest integer a JS number holds exactly
# Keys one provider may hold: rotation walks them on every attempt, and the page lists them all.
MAX_KEYS = 50


def _base_url(value: str) -> str:
    value = value.strip().rstrip("/")
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or any(c.isspace() for c in rest):
        raise ValueError("must be an http:// or https:// URL")
    # A password in the URL would be shown wherever the URL is (listing, page); keys are sealed.
    if "@" in urlsplit(value).netloc:
        raise ValueError(
            "must not contain a user name or password (user:pass@host); put the credential in the api_key field"
        )
    return value


def _name(value: str) -> str:
    # A name goes into headers (X-Routed-Via, X-Fallback-Trail): no line breaks or other controls.
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError("must not contain control characters (line breaks, tabs)")
    return value


def _models(value: list[str]) -> list[str]:
    cleaned = [m.strip() for m in value]
    if any(not m for m in cleaned):
        raise ValueError("model ids must not be empty")
    return list(dict.fromkeys(cleaned))  # drop repeats, keep the user's order


_KINDS = ", ".join(Kind)


_ENTRY_FIELDS = frozenset({"id", "kind", "listed", *FACT_FIELDS})
_ENTRY_SHAPE = f'an id or {{"id": …}} with any of "kind" (one of {_KINDS}), ' + ", ".join(
    f'"{name}"' for name in (*FACT_FIELDS, "listed")
)


def _model_entry(entry: dict[str, object]) -> tuple[str, dict[str, object]]:
    """A ``{"id", …}`` entry (SPEC §12.6, §19) as stored: its id, kind, facts and listing, the
    nulls left out."""
    model = str(entry["id"]).strip()
    if "kind" in entry and entry["kind"] not in KIND_NAMES:
        raise ValueError(f"the kind of '{model}' must be one of {_KINDS}")
    problem = facts_problem(entry)
    if problem is not None:
        raise ValueError(f"model '{model}': {problem}")
    kept: dict[str, object] = {"id": model}
    kept.update((name, value) for name, value in entry.items() if name != "id" and value is not None)
    if isinstance(kept.get("listed"), dict):
        kept["listed"] = {name: value for name, value in kept["listed"].items() if value is not None}  # type: ignore[union-attr]
    return model, kept


def _model_entries(value: list[object]) -> list[str | dict[str, object]]:
    """Provider models (SPEC §12.6, §19): each an id, or an object with its id and any of its kind,
    its facts (window, vision, tools, JSON output, free-tier caps) and what its platform's listing
    states (``listed``); each model once (its first entry, in the user's order)."""
    entries: dict[str, str | dict[str, object]] = {}
    for entry in value:
        if isinstance(entry, str):
            model = entry.strip()
            kept: str | dict[str, object] = model
        elif isinstance(entry, dict) and "id" in entry and set(entry) <= _ENTRY_FIELDS and isinstance(entry["id"], str):
            model, kept = _model_entry(entry)
            if set(kept) == {"id"}:
                kept = model
        else:
            raise ValueError(f"each model is {_ENTRY_SHAPE}")
        if not model:
            raise ValueError("model ids must not be empty")
        entries.setdefault(model, kept)
    return list(entries.values())


def _keys(value: list[str]) -> list[str]:
    cleaned = [k.strip() for k in value]
    if any(not k for k in cleaned):
        raise ValueError("keys must not be empty")
    if len(set(cleaned)) != len(cleaned):
        raise ValueError("the same key is given twice")
    return cleaned


BaseUrl = Annotated[str, AfterValidator(_base_url)]
ApiKey = Annotated[str, Field(min_length=1)]
ApiKeys = Annotated[list[str], Field(min_length=1, max_length=MAX_KEYS), AfterValidator(_keys)]
Models = Annotated[list[object], Field(min_length=1), AfterValidator(_model_entries)]
Name = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_name)]
Platform = Annotated[str, Field(min_length=1, max_length=64)]
TimeoutMs = Annotated[int, Field(gt=0, le=600_000)]
# Integers cross to D1 as JS numbers: beyond 2**53 they would become BigInts, which D1 refuses.
Priority = Annotated[int, Field(ge=-1_000_000_000, le=1_000_000_000)]
ProviderId = Annotated[int, Field(ge=1, le=MAX_ID)]


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", str_strip_whitespace=True)


Cap = Annotated[int, Field(ge=1, le=MAX_ID)]


class ProviderCaps(_Body):
    """A provider's free-tier caps (SPEC §19), for each cap of each of its models that the model's
    own ``models`` entry does not set: requests per minute, per UTC day, tokens per minute."""

    rpm: Cap | None = None
    rpd: Cap | None = None
    tpm: Cap | None = None


class ProviderCreate(_Body):
    """A new provider with one key (``api_key``) or several (``api_keys``): exactly one of the two
    (SPEC §13)."""

    name: Name
    platform: Platform = "custom"
    base_url: BaseUrl
    api_key: ApiKey | None = None
    api_keys: ApiKeys | None = None
    models: Models
    priority: Priority = 100
    timeout_ms: TimeoutMs | None = None
    enabled: bool = True
    caps: ProviderCaps | None = None

    @property
    def keys(self) -> list[str] | None:
        """The keys given, or None unless exactly one of the two fields is (the route says so)."""
        if (self.api_key is None) == (self.api_keys is None):
            return None
        return [self.api_key] if self.api_key is not None else list(self.api_keys or ())


class ProviderUpdate(_Body):
    """Any subset of the create fields; an empty or absent ``api_key`` keeps the stored key."""

    name: Name | None = None
    platform: Platform | None = None
    base_url: BaseUrl | None = None
    api_key: str | None = None
    models: Models | None = None
    priority: Priority | None = None
    timeout_ms: TimeoutMs | None = None
    enabled: bool | None = None
    caps: ProviderCaps | None = None


class KeyCreate(_Body):
    """``POST /api/admin/providers/{id}/keys``: one more key."""

    api_key: ApiKey


class KeyUpdate(_Body):
    """``PUT /api/admin/providers/{id}/keys/{key_id}``: use the key or not."""

    enabled: bool


# A client's requests per minute (SPEC §14): null is unlimited.
Rpm = Annotated[int, Field(ge=1, le=1_000_000)]
# A client's model allow-list: null is every model; an empty list would allow none.
AllowedModels = Annotated[list[str], Field(min_length=1, max_length=500), AfterValidator(_models)]


class ClientCreate(_Body):
    """``POST /api/admin/clients`` (SPEC §14): the token is drawn by the gateway, never given."""

    name: Name
    rpm: Rpm | None = None
    models: AllowedModels | None = None
    stream_rescue: bool | None = None


class ClientUpdate(_Body):
    """``PUT /api/admin/clients/{id}``: any subset; ``rpm``/``models`` null lift the limit,
    ``stream_rescue`` null follows the setting again (SPEC §16)."""

    name: Name | None = None
    rpm: Rpm | None = None
    models: AllowedModels | None = None
    enabled: bool | None = None
    stream_rescue: bool | None = None


class TokensUpdate(_Body):
    """What makes a token usable is ``core.credentials``' rule, checked by the route."""

    api_token: str | None = Field(default=None, max_length=512)
    admin_token: str | None = Field(default=None, max_length=512)


class ModelsFetchByUrl(_Body):
    """``POST /api/admin/models/fetch`` for a platform not added yet: where and with which key."""

    base_url: BaseUrl
    api_key: str = Field(min_length=1)


class ModelsFetchByProvider(_Body):
    """``POST /api/admin/models/fetch`` for a stored provider: its base URL and stored key."""

    provider_id: ProviderId
