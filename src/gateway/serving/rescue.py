"""The rescue request of a stream cut mid-answer (SPEC §16): which candidate, with what body.

``rescuer`` is asked when a streamed chat request is routed; it answers None when rescue is off
for the caller or cannot apply to the request whatever its stream sends (``core/rescue.py``'s
``request_refusal``): the stream is then relayed exactly as without the feature. Otherwise the
relay holds a ``LoopRescuer`` (its ``shell.rescue.Rescuer``) and calls ``open(partial)`` at most
once, when the stream broke and ``eligibility`` allows it; each broken stream's record is kept in
the isolate's memory (``keep``).

``open`` runs the fallback loop once more, over a chain for the served model (the same model
first, on other providers, then the chain's other models, as ``build_chain`` orders them), never
with the key whose stream broke, under a budget of its own (``TOTAL_BUDGET_MS`` from the break),
and within what is left of the request's subrequests (SPEC §18: the relay's task counts on the
request's counter).
Each candidate is sent the original body plus the partial, by the method its platform is known
to honour (``plan_rescue``); failures before the first event fail over, cool down and are
remembered as any attempt's. The answer is the rescue's opened stream, or None.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gateway import isolate
from gateway.call import Call
from gateway.core import rules
from gateway.core.attempt import Candidate, Outcome
from gateway.core.capabilities import needs_of
from gateway.core.chain import build_chain
from gateway.core.clients import Caller
from gateway.core.config import Config
from gateway.core.counting import RequestCount, Tokens, estimate_text
from gateway.core.kinds import Kind
from gateway.core.loop import run_loop
from gateway.core.outcome import Served
from gateway.core.rescue import Method, RescueRecord, plan_rescue, request_refusal, rescue_enabled
from gateway.core.subrequests import SUBREQUESTS
from gateway.core.trail import trail_header
from gateway.serving.routing import routed_via
from gateway.shell.rescue import Rescued
from gateway.shell.stream import OpenedStream
from gateway.upstream.openai import CHAT, send_upstream

__all__ = ["LoopRescuer", "rescuer"]


class LoopRescuer:
    """One rescue for one routed stream (see the module doc), the relay's ``shell.rescue.Rescuer``.
    ``body``: the chat request as the upstream was sent it; ``served``: who sent the stream that
    may break."""

    def __init__(
        self,
        config: Config,
        body: dict[str, Any],
        caller: Caller,
        served: Served,
        input_estimate: int,
        count: RequestCount | None,
    ) -> None:
        self.body = body
        self._count = count
        self._config = config
        self._caller = caller
        self._served = served
        self._input_estimate = input_estimate
        self.tried = False

    def tokens_before(self, usage: Tokens | None, partial: str) -> Tokens:
        """The broken attempt's tokens: its stated usage, else estimates (the prompt by its size,
        the output by the partial's)."""
        return usage or Tokens(self._input_estimate, estimate_text(len(partial.encode())))

    def keep(self, record: RescueRecord) -> None:
        """Keep the record of a broken stream in the isolate's memory (the admin status)."""
        isolate.current().rescues.add(record)

    async def open(self, partial: str) -> Rescued | None:
        """The rescue's stream continuing ``partial``, or None when no candidate delivered one.
        Once per request: a second call answers None."""
        if self.tried:
            return None
        self.tried = True
        config, served = self._config, self._served
        state = isolate.current().router
        providers = config.providers_for(self._caller.models, Kind.CHAT)
        # The continuation needs what the request did (SPEC §19): a model that cannot take it is passed over.
        needs = needs_of(self.body, self._input_estimate * rules.CHARS_PER_TOKEN)
        chain = build_chain(providers, served.candidate.model, state, isolate.now_ms(), needs=needs)
        methods: dict[tuple[int, str], Method] = {}
        hops = self._caller.hops

        async def attempt(candidate: Candidate, timeout_ms: int) -> Outcome:
            provider = candidate.provider
            plan = plan_rescue(self.body, partial, provider.platform, provider.base_url)
            methods[(provider.id, candidate.model)] = plan.method
            body = json.dumps({**plan.body, "model": candidate.model}, separators=(",", ":"), ensure_ascii=False)
            if plan.base_url != provider.base_url:
                candidate = replace(candidate, provider=replace(provider, base_url=plan.base_url))
            return await send_upstream(config, candidate, CHAT, (body, "application/json"), True, timeout_ms, hops)

        cut_key = served.candidate.key
        avoid = frozenset() if cut_key is None else frozenset({cut_key.id})
        result = await run_loop(
            chain,
            attempt,
            settings=config.settings,
            state=state,
            clock=isolate.CLOCK,
            avoid_keys=avoid,
            subrequests=SUBREQUESTS.get(),
        )
        if self._count is not None:
            self._count.failed(result.trail)  # the rescue's failed attempts count as any (SPEC §17)
        if not isinstance(result, Served) or not isinstance(result.handle, OpenedStream):
            return None
        candidate = result.candidate
        secret = config.key_memo.plain(candidate.key) if candidate.key is not None else None
        method = methods[(candidate.provider.id, candidate.model)]
        trail = trail_header(result.trail, result.passed)
        return Rescued(result.handle, routed_via(candidate), candidate.model, method, secret, trail)


def rescuer(
    call: Call,
    config: Config,
    body: dict[str, Any],
    stream: bool,
    caller: Caller,
    served: Served,
    input_estimate: int,
) -> LoopRescuer | None:
    """A ``LoopRescuer`` for the stream ``served`` answers ``call``'s ``body`` with, or None when
    rescue is off for ``caller`` or cannot apply to the request."""
    if not stream:
        return None
    enabled = rescue_enabled(bool(config.settings.stream_rescue), caller.stream_rescue)
    if request_refusal(enabled, body) is not None:
        return None
    return LoopRescuer(config, body, caller, served, input_estimate, call.count)
