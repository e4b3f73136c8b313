"""The candidate chain of one request: which (provider, model) pairs to try, in which order,
and which of them are half-open probes (SPEC §3, §5.4).

Rules:
- ``auto`` (any case, or ``auto:<strategy>``), an empty or an absent model: every enabled
  provider by (priority, id), and inside a provider its models in speed-memory order
  (``Memory.order``); then reordered by the strategy (``core/strategy.py``, SPEC §19).
- An explicit model: first the providers that declare it, by (priority, id); then the rest as
  for ``auto`` (degradation); the strategy reorders each of the two groups within itself. A
  step that serves another model than the one asked is ``degraded`` (the answer then carries
  ``X-Fallback-From``). A model no provider declares degrades at once.
- A pair in cooldown is skipped and reported in ``Chain.skipped``: a provider-wide cooldown, or
  every enabled key of the provider cooling (SPEC §13), skips all its models, a model cooldown
  only that pair. A provider with no enabled key is left out.
- A cooling provider that is probe-ready (``Ledger.probe_ready``) is offered once per chain, as a
  probe, with its first model that has no cooldown of its own; when its keys are what cools, the
  probe is of its first probe-ready key (the step's ``Candidate.key``). It keeps its place when it stands
  ahead of the first usable pair (so traffic returns to a recovered primary, and an all-cooled
  chain is made of probes); behind it, it is tried last, before answering that everything failed.
- A pair that cannot serve the request (``capabilities.unfit``: its window under the request's
  tokens, or a need it lacks) is passed over before anything else is asked of it, and so is one
  whose every usable key is at its free-tier cap (``core/freetier.py``); each is reported in
  ``Chain.passed`` (SPEC §19).
- A sticky target (``core/sticky.py``): the (provider, key, model) that served the
  conversation's last turn is the first step, with that key, unless it cannot serve the request,
  cools, is at its cap, has left the configuration, or (for an explicit model) is another model.
  The pair keeps its own place too, for the provider's other keys.
- At most ``MAX_CANDIDATES`` steps.
- ``one_model`` keeps a chain to one model (SPEC §12.6, embeddings): the one asked for, or for
  ``auto`` the model of the first step, across every provider and key that declares it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gateway.core import rules
from gateway.core.attempt import Candidate
from gateway.core.capabilities import NO_NEEDS, Needs, learned_window, unfit
from gateway.core.ledger import Cooldown
from gateway.core.memory import Memory
from gateway.core.providers import Provider, ProviderKey
from gateway.core.state import RouterState
from gateway.core.sticky import Target
from gateway.core.strategy import Beta, Pair, Strategy, is_auto, order_pairs
from gateway.core.trail import Pass

__all__ = ["Chain", "Step", "build_chain", "model_catalog", "one_model"]


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
    for (None for ``auto``); ``passed``: the pairs passed over as unfit or at cap, ``needs``: what
    the request asks of a model (SPEC §19)."""

    steps: tuple[Step, ...]
    skipped: tuple[Candidate, ...]
    requested_model: str | None
    passed: tuple[Pass, ...] = ()
    needs: Needs = NO_NEEDS

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


def _priority(provider: Provider) -> tuple[int, int]:
    return (provider.priority, provider.id)


def _pairs(
    providers: list[Provider], requested: str | None, memory: Memory, strategy: Strategy, beta: Beta
) -> Iterator[Pair]:
    asked: list[Pair] = []
    if requested is not None:
        asked = [(provider, requested) for provider in providers if requested in provider.models]
        yield from order_pairs(asked, strategy, memory, beta)
    rest = [(p, model) for p in providers for model in memory.order(p) if model != requested]  # asked came first
    yield from order_pairs(rest, strategy, memory, beta)


def _no_beta(alpha: float, beta: float) -> float:
    """The mean, for a caller that gave no draw (only ``priority`` and ``fastest`` need none)."""
    return alpha / (alpha + beta)


class _Builder:
    __slots__ = ("late", "ledger", "needs", "now_ms", "passed", "probed", "skipped", "state", "steps", "usable")

    def __init__(self, state: RouterState, needs: Needs, now_ms: int) -> None:
        self.state = state
        self.ledger = state.ledger
        self.needs = needs
        self.now_ms = now_ms
        self.steps: list[Step] = []
        self.late: list[Step] = []  # probes standing behind the first usable pair
        self.skipped: list[Candidate] = []
        self.passed: list[Pass] = []
        self.probed: set[int] = set()
        self.usable = False

    def unfit(self, provider: Provider, model: str) -> Pass | None:
        """The pass of a pair that cannot serve the request, or None."""
        if self.needs is NO_NEEDS:
            return None
        learned = learned_window(provider, model, self.state.windows)
        lack = unfit(provider.facts_of(model), self.needs, learned)
        return None if lack is None else Pass(provider.name, model, lack.need, lack.reason, window=lack.window)

    def capped(self, provider: Provider, model: str, keys: tuple[ProviderKey, ...]) -> Pass | None:
        """The pass of a pair whose every key of ``keys`` not cooling is at its cap, or None."""
        facts, tier, tokens, now_ms = provider.facts_of(model), self.state.free_tier, self.needs.tokens, self.now_ms
        reasons, until = [], []
        for key in keys:
            cooling = self.ledger.key_cooldown(key.id, now_ms)
            if cooling is not None:
                until.append(cooling.until_ms)  # it may serve sooner than a cap turns
                continue
            reason = tier.at_cap(key.id, model, facts, tokens, now_ms)
            if reason is None:
                return None
            reasons.append(reason)
            until.append(tier.reset_ms(key.id, model, facts, now_ms))
        if not reasons:
            return None
        return Pass(provider.name, model, "cap", reasons[0], min(until))

    def sticky(self, providers: list[Provider], target: Target, requested: str | None) -> None:
        """Put the conversation's target first when it may serve (rules in the module doc)."""
        if requested is not None and target.model != requested:
            return
        provider = next((p for p in providers if p.id == target.provider_id), None)
        if provider is None or target.model not in provider.models:
            return
        key = next((k for k in provider.enabled_keys if k.id == target.key_id), None)
        if key is None or self.unfit(provider, target.model) is not None:
            return
        if self.ledger.is_cooling(provider.id, target.model, self.now_ms, provider.keys):
            return
        if self.capped(provider, target.model, (key,)) is not None or self.ledger.key_cooldown(key.id, self.now_ms):
            return
        self.steps.append(Step(Candidate(provider, target.model, key)))
        self.usable = True

    def add(self, candidate: Candidate, degraded: bool) -> bool:
        """Place one pair; True once the chain is full."""
        provider = candidate.provider
        passed = self.unfit(provider, candidate.model)
        if passed is not None:
            self.passed.append(passed)
            return False
        cooldown = self.ledger.blocking(provider.id, candidate.model, self.now_ms, provider.keys)
        if cooldown is None:
            passed = self.capped(provider, candidate.model, provider.enabled_keys)
            if passed is not None:
                self.passed.append(passed)
                return False
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
        return Chain(steps, tuple(self.skipped), requested, tuple(self.passed), self.needs)


def model_catalog(providers: Iterable[Provider]) -> list[tuple[str, str]]:
    """Every model an enabled provider declares, once, as ``(model, provider name)`` in priority
    order (the first provider declaring it names it): what ``/v1/models`` lists (SPEC §12.1)."""
    catalog: dict[str, str] = {}
    for provider in sorted((p for p in providers if p.enabled), key=_priority):
        for model in provider.models:
            catalog.setdefault(model, provider.name)
    return list(catalog.items())


def build_chain(
    providers: Iterable[Provider],
    requested_model: str | None,
    state: RouterState,
    now_ms: int,
    *,
    needs: Needs = NO_NEEDS,
    strategy: Strategy = Strategy.PRIORITY,
    sticky: Target | None = None,
    beta: Beta = _no_beta,
) -> Chain:
    """The chain for ``requested_model`` (None, ``""``, ``auto`` or ``auto:<strategy>`` for auto)
    over ``providers`` (any order; disabled ones and ones without models or enabled keys are left
    out) at ``now_ms`` (epoch ms), for a request with ``needs``, in ``strategy``'s order (``beta``
    draws for it), with the conversation's ``sticky`` target first when it may serve. Reads the
    router state; changes none of it."""
    requested = None if is_auto(requested_model) else requested_model
    ordered = sorted((p for p in providers if p.enabled and p.models and p.enabled_keys), key=_priority)
    builder = _Builder(state, needs, now_ms)
    if sticky is not None:
        builder.sticky(ordered, sticky, requested)
    for provider, model in _pairs(ordered, requested, state.memory, strategy, beta):
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
    passed = tuple(p for p in chain.passed if p.model == model)
    return Chain(steps, skipped, chain.requested_model, passed, chain.needs)
