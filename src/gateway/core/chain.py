"""The candidate chain of one request: which (provider, model) pairs to try, in which order,
and which of them are half-open probes (SPEC §3, §5.4).

Rules:
- ``auto`` (any case), an empty or an absent model: every enabled provider by (priority, id),
  and inside a provider its models in speed-memory order (``Memory.order``).
- An explicit model: first the providers that declare it, by (priority, id); then the rest as
  for ``auto`` (degradation). A step that serves another model than the one asked is
  ``degraded`` (the answer then carries ``X-Fallback-From``). A model no provider declares
  degrades at once.
- A pair in cooldown is skipped and reported in ``Chain.skipped``: a provider-wide cooldown, or
  every enabled key of the provider cooling (SPEC §13), skips all its models, a model cooldown
  only that pair. A provider with no enabled key is left out.
- A cooling provider that is probe-ready (``Ledger.probe_ready``) is offered once per chain, as a
  probe, with its first model that has no cooldown of its own; when its keys are what cools, the
  probe is of its first probe-ready key (the step's ``Candidate.key``). It keeps its place when it stands
  ahead of the first usable pair (so traffic returns to a recovered primary, and an all-cooled
  chain is made of probes); behind it, it is tried last, before answering that everything failed.
- At most ``MAX_CANDIDATES`` steps.
- ``one_model`` keeps a chain to one model (SPEC §12.6, embeddings): the one asked for, or for
  ``auto`` the model of the first step, across every provider and key that declares it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gateway.core import rules
from gateway.core.attempt import Candidate
from gateway.core.ledger import Cooldown, Ledger
from gateway.core.memory import Memory
from gateway.core.providers import Provider
from gateway.core.state import RouterState

__all__ = ["AUTO_MODEL", "Chain", "Step", "build_chain", "is_auto", "model_catalog", "one_model"]

AUTO_MODEL = "auto"


@dataclass(frozen=True, slots=True)
class Step:
    """One attempt to make. ``degraded``: serves another model than the one asked for.
    ``probe``: a half-open probe of a cooling provider (``PROBE_TIMEOUT_MS``, one in flight)."""

    candidate: Candidate
    degraded: bool = False
    probe: bool = False


@dataclass(frozen=True, slots=True)
class Chain:
    """The steps to try in order, the pairs skipped because they cool down, and the model asked
    for (None for ``auto``)."""

    steps: tuple[Step, ...]
    skipped: tuple[Candidate, ...]
    requested_model: str | None

    @property
    def explicit(self) -> bool:
        return self.requested_model is not None

    def provider_ids(self) -> frozenset[int]:
        """Ids of every provider the chain considered (tried or skipped)."""
        ids = {step.candidate.provider.id for step in self.steps}
        ids.update(candidate.provider.id for candidate in self.skipped)
        return frozenset(ids)

    def several_keys(self) -> frozenset[int]:
        """Ids of the chain's providers that hold more than one key: the ones whose messages name
        a key (``trail.named_key_id``)."""
        candidates = [*(step.candidate for step in self.steps), *self.skipped]
        return frozenset(c.provider.id for c in candidates if len(c.provider.keys) > 1)


def is_auto(model: str | None) -> bool:
    return not model or model.lower() == AUTO_MODEL


def _priority(provider: Provider) -> tuple[int, int]:
    return (provider.priority, provider.id)


def _pairs(providers: list[Provider], requested: str | None, memory: Memory) -> Iterator[tuple[Provider, str]]:
    if requested is not None:
        for provider in providers:
            if requested in provider.models:
                yield provider, requested
    for provider in providers:
        for model in memory.order(provider):
            if model != requested:  # those pairs came first
                yield provider, model


class _Builder:
    __slots__ = ("late", "ledger", "now_ms", "probed", "skipped", "steps", "usable")

    def __init__(self, ledger: Ledger, now_ms: int) -> None:
        self.ledger = ledger
        self.now_ms = now_ms
        self.steps: list[Step] = []
        self.late: list[Step] = []  # probes standing behind the first usable pair
        self.skipped: list[Candidate] = []
        self.probed: set[int] = set()
        self.usable = False

    def add(self, candidate: Candidate, degraded: bool) -> bool:
        """Place one pair; True once the chain is full."""
        provider = candidate.provider
        cooldown = self.ledger.blocking(provider.id, candidate.model, self.now_ms, provider.keys)
        probe = None
        if (
            cooldown is not None
            and cooldown.model is None
            and self.ledger.model_cooldown(provider.id, candidate.model, self.now_ms) is None
            and provider.id not in self.probed
        ):
            probe = self._probe(candidate, cooldown)
        if cooldown is None:
            self.steps.append(Step(candidate, degraded))
            self.usable = True
        elif probe is not None:
            self.probed.add(provider.id)
            (self.late if self.usable else self.steps).append(Step(probe, degraded, True))
        else:
            self.skipped.append(candidate)
        return len(self.steps) >= rules.MAX_CANDIDATES

    def _probe(self, candidate: Candidate, cooldown: Cooldown) -> Candidate | None:
        """The candidate a probe of this cooling provider sends, or None when it is not ready:
        the provider's probe (any key), or, when its keys cool, the first probe-ready key's."""
        provider = candidate.provider
        if cooldown.key_id is None:
            return candidate if self.ledger.probe_ready(provider.id, self.now_ms) else None
        for key in provider.enabled_keys:
            if self.ledger.probe_ready(provider.id, self.now_ms, key.id):
                return Candidate(provider, candidate.model, key)
        return None

    def chain(self, requested: str | None) -> Chain:
        room = rules.MAX_CANDIDATES - len(self.steps)
        steps = (*self.steps, *self.late[:room]) if room > 0 else tuple(self.steps)
        return Chain(steps, tuple(self.skipped), requested)


def model_catalog(providers: Iterable[Provider]) -> list[tuple[str, str]]:
    """Every model an enabled provider declares, once, as ``(model, provider name)`` in priority
    order (the first provider declaring it names it): what ``/v1/models`` lists (SPEC §12.1)."""
    catalog: dict[str, str] = {}
    for provider in sorted((p for p in providers if p.enabled), key=_priority):
        for model in provider.models:
            catalog.setdefault(model, provider.name)
    return list(catalog.items())


def build_chain(providers: Iterable[Provider], requested_model: str | None, state: RouterState, now_ms: int) -> Chain:
    """The chain for ``requested_model`` (None, ``""`` or ``auto`` for auto) over
    ``providers`` (any order; disabled ones and ones without models or enabled keys are left out) at
    ``now_ms`` (epoch ms). Reads the ledger and the memory; changes neither."""
    requested = None if is_auto(requested_model) else requested_model
    ordered = sorted((p for p in providers if p.enabled and p.models and p.enabled_keys), key=_priority)
    builder = _Builder(state.ledger, now_ms)
    for provider, model in _pairs(ordered, requested, state.memory):
        degraded = requested is not None and model != requested
        if builder.add(Candidate(provider, model), degraded):
            break
    return builder.chain(requested)


def one_model(chain: Chain) -> Chain:
    """``chain`` without the steps (and skipped pairs) of any other model than the one asked for,
    or, for ``auto``, than its first step's (a chain with no step is returned as it is)."""
    model = chain.requested_model
    if model is None:
        if not chain.steps:
            return chain
        model = chain.steps[0].candidate.model
    steps = tuple(step for step in chain.steps if step.candidate.model == model)
    skipped = tuple(candidate for candidate in chain.skipped if candidate.model == model)
    return Chain(steps, skipped, chain.requested_model)
