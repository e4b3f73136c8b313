"""``POST /v1/chat/completions`` (SPEC §2): authenticate, validate, route, answer."""

from __future__ import annotations

from typing import Any

from gateway import isolate
from gateway.core import rules
from gateway.core.attempt import Candidate, Delivered
from gateway.core.config import Provider
from gateway.errors import NoProvidersError, ProviderError
from gateway.responses import CORS_HEADERS, sse_headers
from gateway.routes.auth import require_api
from gateway.routes.body import read_json, validate
from gateway.shell.http import IncomingRequest, JsResponse, UpstreamResponse, respond
from gateway.upstream.openai import ChatBody, OpenAIUpstream
from gateway.wire import headers as h
from gateway.wire.chat import ChatRequest

__all__ = ["chat_completions"]


def _first_candidate(providers: tuple[Provider, ...], chat: ChatRequest) -> Candidate:
    if not chat.is_auto:
        for provider in providers:
            if chat.model in provider.models:
                return Candidate(provider, chat.model)
    provider = providers[0]
    return Candidate(provider, provider.models[0])


def _served(answer: UpstreamResponse, candidate: Candidate, chat: ChatRequest) -> JsResponse:
    routing = {h.ROUTED_VIA: f"{candidate.provider.name}/{candidate.model}"}
    if not chat.is_auto and candidate.model != chat.model:
        routing[h.FALLBACK_FROM] = chat.model
    if chat.streaming:
        headers = sse_headers(routing)
    else:
        content_type = answer.header("content-type") or "application/json"
        headers = {"content-type": content_type, **CORS_HEADERS, **routing}
    return respond(answer.body, answer.status, headers)


async def chat_completions(request: IncomingRequest, env: Any, params: dict[str, str]) -> JsResponse:
    config = await isolate.load_config(env)
    require_api(request, config)
    raw, data = await read_json(request, config.settings.max_body_bytes)
    chat = validate(ChatRequest, data)
    providers = config.enabled_providers
    if not providers:
        raise NoProvidersError()
    candidate = _first_candidate(providers, chat)
    attempt = OpenAIUpstream(config, ChatBody(raw, data), chat.streaming)
    outcome = await attempt(candidate, candidate.provider.timeout_ms or rules.DEFAULT_ATTEMPT_TIMEOUT_MS)
    if isinstance(outcome, Delivered):
        return _served(outcome.handle, candidate, chat)
    what = outcome.detail or (outcome.defect or f"HTTP {outcome.status}")
    raise ProviderError(f"{candidate.provider.name}/{candidate.model}: {what}")
