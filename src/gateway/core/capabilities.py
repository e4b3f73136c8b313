"""What a request needs of a model, and whether a model can give it (SPEC §19).

Rules:
- A model's facts (context window, vision, tools, JSON output, free-tier caps) come from, first
  wins per field: the admin's setting in its provider's ``models`` entry; the admin's caps for the
  whole provider (``Provider.caps``); the provider's ``/models`` listing as stored with that
  entry (``listed``); the presets' data for the provider's platform (``core/modelfacts.py``).
  ``static_facts`` joins them once per snapshot.
- A window learned from a ``context_length_exceeded`` (``Windows``) bounds the window the
  listing and the presets state: the smaller wins, since a free tier may serve less than a
  model's advertised window, and the failure is what the platform did. A window the admin set is
  never bounded by it.
- Unknown means "may".
- A request needs (``needs_of``): its tokens, estimated as its JSON's bytes (image data left out)
  / ``CHARS_PER_TOKEN`` plus its ``max_tokens`` (or ``max_completion_tokens``), at most
  ``OUTPUT_ESTIMATE_MAX``, ``OUTPUT_ESTIMATE_DEFAULT`` when unset; vision when a message holds an
  image part; tools when ``tools`` or ``functions`` is a non-empty list; JSON output when
  ``response_format`` asks for ``json_object`` or ``json_schema``. ``ceiling``: its tokens at its
  whole ``max_tokens``, what a refusal that states no window bounds the window under.
- A model cannot serve a request (``unfit``) when its window, or its free tier's tokens per
  minute, is under the request's tokens, or it lacks a need; the reason names the figure
  (``context 8192 < ~21000``, ``tpm 6000 < ~21000``) or the need.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gateway.core import rules
from gateway.core.modelfacts import NO_FACTS, Facts, preset_facts
from gateway.core.providers import Provider

__all__ = [
    "CAP_FIELDS",
    "FACT_FIELDS",
    "LISTED_FIELDS",
    "NO_NEEDS",
    "Lack",
    "Need",
    "Needs",
    "Windows",
    "entry_facts",
    "facts_json",
    "facts_problem",
    "facts_sources",
    "learned_window",
    "needs_of",
    "static_facts",
    "unfit",
]

Need = Literal["context", "vision", "tools", "json"]

_IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
_JSON_FORMATS = frozenset({"json_object", "json_schema"})


@dataclass(frozen=True, slots=True)
class Needs:
    """What a request asks of a model: ``tokens`` (prompt and answer, estimated), and whether it
    holds an image, offers tools and asks for JSON output."""

    tokens: int = 0
    vision: bool = False
    tools: bool = False
    json: bool = False
    ceiling: int = 0


NO_NEEDS = Needs()


def _image_bytes(part: Mapping[str, Any]) -> int | None:
    """The size of an image part's data, or None when ``part`` is not an image."""
    if part.get("type") not in _IMAGE_PARTS:
        return None
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    return len(url) if isinstance(url, str) else 0


def needs_of(data: Mapping[str, Any], size: int) -> Needs:
    """The needs of the chat body ``data``, whose JSON is ``size`` bytes (rules in the module doc)."""
    vision = False
    for message in data.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for part in content:
                image = _image_bytes(part) if isinstance(part, dict) else None
                if image is not None:
                    vision = True
                    size -= image
    asked = data.get("max_tokens", data.get("max_completion_tokens"))
    asked = asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else None
    output = rules.OUTPUT_ESTIMATE_DEFAULT if asked is None else min(asked, rules.OUTPUT_ESTIMATE_MAX)
    tools = bool(data.get("tools")) or bool(data.get("functions"))
    response_format = data.get("response_format")
    json = isinstance(response_format, dict) and response_format.get("type") in _JSON_FORMATS
    prompt = max(size, 0) // rules.CHARS_PER_TOKEN
    return Needs(prompt + output, vision, tools, json, prompt + max(output, asked or 0))


# The facts a provider's ``models`` entry may set (SPEC §19), and the type of each: a window and
# the caps are positive integers, the rest booleans. A listing states only what a model can do.
FACT_FIELDS: dict[str, type] = {
    "context": int, "vision": bool, "tools": bool, "json": bool, "rpm": int, "rpd": int, "tpm": int,
}  # fmt: skip
LISTED_FIELDS = ("context", "vision", "tools", "json")
CAP_FIELDS = ("rpm", "rpd", "tpm")


def _fact(value: object, kind: type) -> object | None:
    if kind is int:
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 2**53 - 1 else None
    return value if isinstance(value, bool) else None


def entry_facts(entry: Mapping[str, Any]) -> tuple[Facts, Facts]:
    """The admin's facts and the listing's (its ``listed`` object) of a stored ``models`` entry;
    a field of the wrong type (an entry edited by hand) is left out."""
    declared = {name: _fact(entry.get(name), kind) for name, kind in FACT_FIELDS.items()}
    listing = entry.get("listed")
    listing = listing if isinstance(listing, dict) else {}
    listed = {name: _fact(listing.get(name), FACT_FIELDS[name]) for name in LISTED_FIELDS}
    return Facts(**declared), Facts(**listed)  # type: ignore[arg-type]  # _fact checked each type


def facts_problem(entry: Mapping[str, Any]) -> str | None:
    """What is wrong with the facts of a ``models`` entry given to the admin API, or None."""
    for name, kind in FACT_FIELDS.items():
        value = entry.get(name)
        if value is not None and _fact(value, kind) is None:
            return f"'{name}' must be {'a positive integer' if kind is int else 'true or false'} (or null)"
    listing = entry.get("listed")
    if listing is None:
        return None
    if not isinstance(listing, dict) or not set(listing) <= set(LISTED_FIELDS):
        return "'listed' must be an object of " + ", ".join(LISTED_FIELDS)
    return facts_problem({name: listing[name] for name in listing})


def facts_json(facts: Facts, fields: tuple[str, ...] | None = None) -> dict[str, object]:
    """The known fields of ``facts`` (of ``fields``, or all), as a ``models`` entry holds them."""
    return {name: getattr(facts, name) for name in fields or FACT_FIELDS if getattr(facts, name) is not None}


def _layers(
    platform: str, model: str, declared: Mapping[str, Facts], listed: Mapping[str, Facts], caps: Facts
) -> tuple[tuple[str, Facts], ...]:
    """The sources of a model's facts, first wins (rules in the module doc)."""
    return (
        ("admin", declared.get(model, NO_FACTS)),
        ("provider", caps),
        ("listed", listed.get(model, NO_FACTS)),
        ("preset", preset_facts(platform, model)),
    )


def static_facts(
    platform: str,
    models: tuple[str, ...],
    declared: Mapping[str, Facts],
    listed: Mapping[str, Facts],
    caps: Facts = NO_FACTS,
) -> dict[str, Facts]:
    """Each model's facts from the admin's setting, the provider's caps, the listing and the
    presets, first wins; only the models something is known of."""
    facts: dict[str, Facts] = {}
    for model in models:
        joined = NO_FACTS
        for _, layer in _layers(platform, model, declared, listed, caps):
            joined = joined.over(layer)
        if joined != NO_FACTS:
            facts[model] = joined
    return facts


def facts_sources(provider: Provider, model: str, learned: int | None) -> tuple[Facts, dict[str, str]]:
    """A model's facts as routing uses them and, per known field, where it came from
    (``admin``, ``provider``, ``listed``, ``preset`` or ``learned``): what the config page shows."""
    layers = _layers(provider.platform, model, provider.declared, provider.listed, provider.caps)
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    for name in FACT_FIELDS:
        for source, facts in layers:
            value = getattr(facts, name)
            if value is not None:
                values[name], sources[name] = value, source
                break
    context = values.get("context")
    window = _window(context, learned)  # type: ignore[arg-type]  # the context field is an int
    if window != context:
        values["context"], sources["context"] = window, "learned"
    return Facts(**values), sources  # type: ignore[arg-type]  # each value is its field's type


def learned_window(provider: Provider, model: str, windows: Windows) -> int | None:
    """The window ``windows`` learned for the model, unless the admin set its window (which
    stands: rules in the module doc)."""
    declared = provider.declared.get(model)
    return None if declared is not None and declared.context is not None else windows.bound(provider.id, model)


def _window(stated: int | None, learned: int | None) -> int | None:
    """The window routing uses: the smaller of the stated one and the learned bound."""
    return stated if learned is None or (stated is not None and stated < learned) else learned


@dataclass(frozen=True, slots=True)
class Lack:
    """What a model cannot give a request: the need, the reason in words (``context 8192 <
    ~21000``) and, for the context, the model's window."""

    need: Need
    reason: str
    window: int | None = None


def unfit(facts: Facts, needs: Needs, learned: int | None = None) -> Lack | None:
    """What ``needs`` asks that a model with ``facts`` (and a ``learned`` window bound) cannot
    give; None when it may serve."""
    window = _window(facts.context, learned)
    if window is not None and needs.tokens > window:
        return Lack("context", f"context {window} < ~{needs.tokens}", window)
    # Larger than a free tier's minute: no key of it can ever send it.
    if facts.tpm is not None and needs.tokens > facts.tpm:
        return Lack("context", f"tpm {facts.tpm} < ~{needs.tokens}", facts.tpm)
    if needs.vision and facts.vision is False:
        return Lack("vision", "no vision")
    if needs.tools and facts.tools is False:
        return Lack("tools", "no tools")
    if needs.json and facts.json is False:
        return Lack("json", "no json output")
    return None


class Windows:
    """Context windows learned from ``context_length_exceeded`` answers, by (provider id, model):
    the smallest bound seen, in isolate memory (at most ``LEARNED_WINDOWS_KEPT``)."""

    __slots__ = ("_bounds",)

    def __init__(self) -> None:
        self._bounds: OrderedDict[tuple[int, str], int] = OrderedDict()

    def learn(self, provider_id: int, model: str, bound: int) -> None:
        """The model refused a request of ``bound`` tokens (or stated that window)."""
        if bound <= 0:
            return
        pair = (provider_id, model)
        known = self._bounds.get(pair)
        self._bounds[pair] = bound if known is None else min(known, bound)
        self._bounds.move_to_end(pair)
        while len(self._bounds) > rules.LEARNED_WINDOWS_KEPT:
            self._bounds.popitem(last=False)

    def bound(self, provider_id: int, model: str) -> int | None:
        return self._bounds.get((provider_id, model)) if self._bounds else None

    def forget_provider(self, provider_id: int) -> None:
        for pair in [p for p in self._bounds if p[0] == provider_id]:
            del self._bounds[pair]
