"""Running one chat body through the router, for every front door (SPEC §2–§4, §12).

``route`` applies the model aliases (``core/aliases.py``: the alias target is then what the request
asks for, so ``X-Fallback-From`` names it, not the client's name), then a named client's model
allow-list (SPEC §14, ``core/clients.py``: a named model outside it is refused with 403, and the
chain only holds models inside it), reads what the request needs of a model, its strategy and its
conversation's sticky target (SPEC §19), builds the chain and runs the fallback loop; the
helpers turn its outcome into the headers every surface sends (``X-Routed-Via``,
``X-Fallback-*``) and the honest error when nothing served. What a surface does with a
``Served`` answer is its own business.
"""

from __future__ import annotations

from gateway import isolate, meter
from gateway.call import Call
from gateway.core import rules
from gateway.core.aliases import resolve_alias
from gateway.core.attempt import Attempt, Candidate
from gateway.core.capabilities import NO_NEEDS, Needs, needs_of
from gateway.core.chain import Chain, build_chain, one_model
from gateway.core.clients import Caller, model_refused
from gateway.core.config import Config
from gateway.core.counting import estimate_text
from gateway.core.kinds import Kind, single_model
from gateway.core.loop import run_loop
from gateway.core.outcome import Exhausted, LoopResult, Served
from gateway.core.sticky import Target, continues, conversation_name
from gateway.core.strategy import Strategy, auto_strategy, is_auto
from gateway.core.subrequests import SUBREQUESTS
from gateway.core.trail import Pass, Trail, attempts_header, header_safe, trail_header
from gateway.errors import InvalidRequestError, NotFoundError, PermissionDeniedError, RoutingError
from gateway.requestid import next_request_id
from gateway.upstream.openai import CHAT, Body, Endpoint, JsonBody, OpenAIUpstream
from gateway.upstream.openrouter import PinnedUpstream
from gateway.wire import headers as h
from gateway.wire.cooldowns import cooldown_json

__all__ = ["exhausted_error", "input_estimate", "route", "routed_via", "routing_headers", "trail_headers"]


async def route(
    call: Call,
    config: Config,
    body: Body,
    model: str | None,
    stream: bool,
    caller: Caller = Caller(),
    endpoint: Endpoint = CHAT,
    kind: Kind = Kind.CHAT,
) -> LoopResult:
    """The fallback loop's result for ``body`` to ``endpoint`` asking for ``model`` of ``kind``
    (None or ``auto``: the first of that kind), or for the target of the first model alias that
    matches it; ``caller``: what ``require_api`` returned (the loop guard's mark is forwarded
    upstream; a named client's allow-list limits the chain). Only models of ``kind`` are tried
    (SPEC §12.6), and for a ``single_model`` kind only one model. Chat requests to OpenRouter are
    pinned (SPEC §15, ``upstream/openrouter.py``), writing to ``call``'s D1 in its ``waitUntil``.
    The request is counted (SPEC §17, ``gateway.meter``): its failed attempts at once, itself when
    its answer ends. The loop stops before the request's subrequests pass ``subrequest_limit``
    (SPEC §18, ``core/subrequests.py``). Raises
    ``PermissionDeniedError`` (403) for a model outside the allow-list, ``NotFoundError`` (404) for
    a single-model kind's model that no provider declares as that kind, and for a kind other than
    chat that no provider declares at all."""
    state = isolate.current().router
    model = resolve_alias(config.settings.model_aliases, model) or model
    auto = is_auto(model)
    if model_refused(caller.models, model, auto):
        raise PermissionDeniedError(
            f"This client may not use the model '{model}'. Ask for one of the models it is allowed, or 'auto'.",
            param="model",
        )
    providers = config.providers_for(caller.models, kind)
    now_ms = isolate.now_ms()
    needs, conversation, sticky = NO_NEEDS, None, None
    if kind is Kind.CHAT and isinstance(body, JsonBody):
        needs = needs_of(body.data, len(body.raw))
        conversation, sticky = _conversation(call, caller, body.data, now_ms)
    strategy = auto_strategy(model) or Strategy(config.settings.routing_strategy)
    chain = build_chain(
        providers, model, state, now_ms, needs=needs, strategy=strategy, sticky=sticky, beta=isolate.current().draw
    )
    if not chain.steps and not chain.skipped and chain.passed and all(p.need != "cap" for p in chain.passed):
        raise _unservable(chain, needs)
    if single_model(kind):
        if not auto and not any(model in p.models for p in providers):
            raise NotFoundError(
                f"No provider declares '{model}' as a model of kind {kind}; ask for one that does, or "
                f"'auto', or set the model's kind on the config page.",
                code="model_not_found",
                param="model",
            )
        chain = one_model(chain)
    if kind is not Kind.CHAT and not chain.steps and not chain.skipped:
        allowed = "" if caller.models is None else " that this client may use"
        raise NotFoundError(
            f"No enabled provider declares a model of kind {kind}{allowed}. Add one: a model's kind "
            "is guessed from its id, or set beside it on the config page.",
            code="model_not_found",
            param="model",
        )
    deadline_ms = now_ms + rules.TOTAL_BUDGET_MS
    subrequests = SUBREQUESTS.get()
    if kind is Kind.CHAT and isinstance(body, JsonBody):
        attempt: Attempt = PinnedUpstream(config, body, stream, caller.hops, call.env, call.ctx, deadline_ms, endpoint)
    else:
        attempt = OpenAIUpstream(config, body, stream, caller.hops, endpoint)
    counted = meter.start(call, config.settings, caller.client.id if caller.client else 0, input_estimate(body))
    result = await run_loop(
        chain, attempt, settings=config.settings, state=state, clock=isolate.CLOCK, subrequests=subrequests
    )
    counted.routed(result, model, isolate.now_ms())
    if conversation is not None and isinstance(result, Served):
        served = result.candidate
        target = Target(served.provider.id, served.key.id if served.key else 0, served.model)
        state.conversations.served(conversation, target, isolate.now_ms())
    return result


def _conversation(call: Call, caller: Caller, data: dict, now_ms: int) -> tuple[str | None, Target | None]:
    """The request's conversation (SPEC §19, ``core/sticky.py``), and what served its last turn
    when it has one."""
    messages = data.get("messages") or ()
    client_id = caller.client.id if caller.client else 0
    conversation = conversation_name(call.request.header(h.SESSION_ID), client_id, messages)
    if conversation is None or not continues(messages):
        return conversation, None
    return conversation, isolate.current().router.conversations.target(conversation, now_ms)


_MIXED = ("no_capable_model", "No model this request may use can serve it")
_UNSERVABLE = {
    "context": ("context_length_exceeded", "The request is too long for every model"),
    "vision": ("no_vision_model", "The request holds an image, and no model it may use reads images"),
    "tools": ("no_tools_model", "The request offers tools, and no model it may use calls tools"),
    "json": ("no_json_model", "The request asks for JSON output, and no model it may use gives it"),
}


def _unservable(chain: Chain, needs: Needs) -> InvalidRequestError:
    """The 400 when no model can serve the request (SPEC §19): what every model lacked, when they
    all lacked the same (else ``no_capable_model``), and every model passed over with its reason."""
    lacking = {p.need for p in chain.passed}
    code, headline = _UNSERVABLE[lacking.pop()] if len(lacking) == 1 else _MIXED
    if code == "context_length_exceeded":
        largest = max(p.window or 0 for p in chain.passed)
        headline += f" (~{needs.tokens} tokens; the most any model known takes is {largest})"
    passed = "; ".join(p.label for p in chain.passed[: rules.TRAIL_MAX_ENTRIES])
    more = len(chain.passed) - rules.TRAIL_MAX_ENTRIES
    passed += f"; +{more} more" if more > 0 else ""
    message = f"{headline}. Set a model's facts on the config page if they are wrong. Passed over: {passed}"
    return InvalidRequestError(message, code=code, param="messages", headers=trail_headers((), chain.passed))


def input_estimate(body: Body) -> int:
    """The prompt's tokens by its size (SPEC §17, for an answer that reports no usage); an upload's
    are not text."""
    return estimate_text(len(body.raw)) if isinstance(body, JsonBody) else 0


def trail_headers(trail: Trail, passed: tuple[Pass, ...] = ()) -> dict[str, str]:
    """``X-Fallback-Attempts`` when an attempt failed, ``X-Fallback-Trail`` when one failed or a
    pair was passed over (SPEC §19)."""
    attempts, text = attempts_header(trail), trail_header(trail, passed)
    headers = {h.FALLBACK_TRAIL: text} if text else {}
    return headers | {h.FALLBACK_ATTEMPTS: attempts} if attempts else headers


def routed_via(candidate: Candidate) -> str:
    return header_safe(f"{candidate.provider.name}/{candidate.model}")


def routing_headers(served: Served) -> dict[str, str]:
    """``X-Routed-Via``, ``X-Fallback-From`` when another model served, the trail, and a new
    ``X-Request-Id`` (``gateway/requestid.py``): call it once per answer."""
    routing = {h.ROUTED_VIA: routed_via(served.candidate), h.REQUEST_ID: next_request_id()}
    if served.degraded_from is not None:
        routing[h.FALLBACK_FROM] = header_safe(served.degraded_from)
    return routing | trail_headers(served.trail, served.passed)


def exhausted_error(result: Exhausted) -> RoutingError:
    """The answer when nothing served: status, type and code from the outcome, ``retryAtMs``,
    ``cooldowns`` and ``Retry-After`` when the cause was a cooldown or a rate limit."""
    now_ms = isolate.now_ms()
    extra: dict[str, object] = {}
    headers = trail_headers(result.trail, result.passed)
    if result.retry_at_ms is not None:
        extra["retryAtMs"] = result.retry_at_ms
        headers[h.RETRY_AFTER] = str(result.retry_after_s(now_ms))
    if result.cooldowns:
        extra["cooldowns"] = [cooldown_json(c, now_ms) for c in result.cooldowns]
    return RoutingError(result.status, result.type, result.code, result.message, extra=extra, headers=headers)
