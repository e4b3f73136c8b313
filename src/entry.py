"""The Worker: the route table, in order, and the one function that turns errors into answers.

workerd constructs ``Default(ctx, env)`` per request and awaits ``fetch``. Nothing here runs
at import beyond building the table (the deploy snapshot forbids randomness and JS objects).
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from workers import Request, WorkerEntrypoint

from gateway import isolate, meter
from gateway.answers import PRIVATE_HEADERS, json_response, preflight_response
from gateway.call import Call
from gateway.core import subrequests
from gateway.core.classify import redact
from gateway.errors import GatewayError, MethodNotAllowedError, NotFoundError, StorageError, error_body
from gateway.routes import (
    admin,
    anthropic,
    chat,
    clients,
    cooldowns,
    forwarded,
    gemini,
    models,
    ollama,
    openrouter,
    platforms,
    responses,
    usage,
)
from gateway.serving import limits
from gateway.shell.http import IncomingRequest, JsResponse, add_headers, without_body

Handler = Callable[[Call], Awaitable[JsResponse]]

logger = logging.getLogger("fllmapi")

_ADMIN_PREFIX = "/api/admin/"

# ``{name}`` matches digits (an id); ``{name:path}`` any text, slashes and colons included (model
# ids such as ``meta-llama/llama-3.3-70b:free``). The query string never takes part (SPEC §12.1).
ROUTES: list[tuple[str, str, Handler]] = [
    ("POST", "/v1/chat/completions", chat.chat_completions),
    ("GET", "/v1/models", models.list_models),
    ("POST", "/v1/messages", anthropic.messages),
    ("POST", "/v1/messages/count_tokens", anthropic.count_tokens),
    ("POST", "/v1/responses", responses.create_response),
    ("POST", "/v1/embeddings", forwarded.embeddings),
    ("POST", "/v1/completions", forwarded.completions),
    ("POST", "/v1/audio/transcriptions", forwarded.audio_transcriptions),
    ("POST", "/v1/audio/translations", forwarded.audio_translations),
    ("POST", "/v1/audio/speech", forwarded.audio_speech),
    ("POST", "/v1/images/generations", forwarded.image_generations),
    ("POST", "/v1/images/edits", forwarded.image_edits),
    ("POST", "/v1/images/variations", forwarded.image_variations),
    ("GET", "/v1beta/models", gemini.list_models),
    ("GET", "/v1beta/models/{model:path}", gemini.get_model),
    ("POST", "/v1beta/models/{model:path}:generateContent", gemini.generate_content),
    ("POST", "/v1beta/models/{model:path}:streamGenerateContent", gemini.stream_generate_content),
    ("POST", "/v1beta/models/{model:path}:countTokens", gemini.count_tokens),
    ("POST", "/v1beta/models/{model:path}:embedContent", gemini.embed_content),
    ("POST", "/v1beta/models/{model:path}:batchEmbedContents", gemini.batch_embed_contents),
    # The google-genai SDK defaults to /v1 (SPEC §12.4).
    ("POST", "/v1/models/{model:path}:generateContent", gemini.generate_content),
    ("POST", "/v1/models/{model:path}:streamGenerateContent", gemini.stream_generate_content),
    ("POST", "/v1/models/{model:path}:countTokens", gemini.count_tokens),
    ("POST", "/v1/models/{model:path}:embedContent", gemini.embed_content),
    ("POST", "/v1/models/{model:path}:batchEmbedContents", gemini.batch_embed_contents),
    ("GET", "/v1/models/{model:path}", models.get_model),
    ("GET", "/api/version", ollama.version),
    ("GET", "/api/tags", ollama.tags),
    ("POST", "/api/show", ollama.show),
    ("POST", "/api/chat", ollama.chat),
    ("POST", "/api/generate", ollama.generate),
    ("POST", "/api/embed", ollama.embed),
    ("POST", "/api/embeddings", ollama.embeddings),
    ("GET", "/api/admin/providers", admin.list_providers),
    ("POST", "/api/admin/providers", admin.create_provider),
    ("PUT", "/api/admin/providers/{id}", admin.update_provider),
    ("DELETE", "/api/admin/providers/{id}", admin.delete_provider),
    ("POST", "/api/admin/providers/{id}/keys", admin.add_key),
    ("PUT", "/api/admin/providers/{id}/keys/{key_id}", admin.update_key),
    ("DELETE", "/api/admin/providers/{id}/keys/{key_id}", admin.delete_key),
    ("GET", "/api/admin/settings", admin.get_settings),
    ("PUT", "/api/admin/settings", admin.put_settings),
    ("PUT", "/api/admin/tokens", admin.put_tokens),
    ("GET", "/api/admin/clients", clients.list_clients),
    ("POST", "/api/admin/clients", clients.create_client),
    ("PUT", "/api/admin/clients/{id}", clients.update_client),
    ("DELETE", "/api/admin/clients/{id}", clients.delete_client),
    ("GET", "/api/admin/status", cooldowns.status),
    ("POST", "/api/admin/cooldowns/clear", cooldowns.clear_cooldowns),
    ("POST", "/api/admin/cooldowns/verify", cooldowns.verify_cooldowns),
    ("GET", "/api/admin/openrouter", openrouter.status),
    ("GET", "/api/admin/usage", usage.usage),
    ("GET", "/api/admin/events", usage.events),
    ("GET", "/api/admin/platforms", platforms.list_platforms),
    ("POST", "/api/admin/models/fetch", platforms.fetch_models),
]


def _compile(path: str) -> re.Pattern[str]:
    assert path.startswith("/"), path
    pattern = re.sub(r"\\\{(\w+):path\\\}", r"(?P<\1>.+?)", re.escape(path))
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[0-9]+)", pattern) + "/?$")


_TABLE = [(method, _compile(path), handler) for method, path, handler in ROUTES]


def match(method: str, path: str) -> tuple[Handler, dict[str, str]]:
    """The handler for ``method`` and ``path`` with its path parameters; ``HEAD`` takes the
    ``GET`` route (RFC 9110 §9.3.2: the same answer without its body, which ``fetch`` drops).
    Raises ``NotFoundError`` when no path matches, ``MethodNotAllowedError`` (with ``Allow``) when
    only the method is wrong, whatever the method (``PATCH``, ``TRACE``, one never heard of)."""
    wanted = "GET" if method == "HEAD" else method
    allowed: list[str] = []
    for route_method, pattern, handler in _TABLE:
        found = pattern.match(path)
        if found is None:
            continue
        if route_method == wanted:
            return handler, found.groupdict()
        allowed.append(route_method)
    if allowed:
        if "GET" in allowed:
            allowed.append("HEAD")
        allow = ", ".join(sorted({*allowed, "OPTIONS"}))  # OPTIONS: the CORS preflight
        raise MethodNotAllowedError(
            f"Method {method} is not allowed on {path}; allowed: {allow}.", headers={"Allow": allow}
        )
    raise NotFoundError(f"No route for {method} {path}.")


def error_response(exc: Exception) -> JsResponse:
    """Every failure becomes ``{"error": {...}}``; unknown ones answer 500 and are logged by type
    and redacted message only (no traceback locals, no bodies)."""
    if isinstance(exc, GatewayError):
        return json_response(exc.body(), status=exc.status, headers=exc.headers)
    logger.error("unhandled %s: %s", type(exc).__name__, redact(str(exc)))
    return json_response(error_body("Internal error", "server_error"), status=500)


class Default(WorkerEntrypoint):
    async def fetch(self, request: Request) -> JsResponse:
        subrequests.begin()  # this request's count (SPEC §18); its tasks inherit it
        incoming = IncomingRequest(request)
        if incoming.method == "OPTIONS":
            return preflight_response(incoming.header("access-control-request-headers"))
        call = None
        try:
            handler, params = match(incoming.method, incoming.path)
            call = Call(incoming, self.env, self.ctx, params, started_ms=isolate.now_ms())
            response = await handler(call)
        except Exception as exc:  # noqa: BLE001 - the one place errors become answers
            response = error_response(exc)
        if incoming.method == "HEAD":
            response = without_body(response)
        if call is not None:
            if call.answer_headers:
                add_headers(response, call.answer_headers)
            meter.end_unless_relayed(call)
        if f"{incoming.path}/".startswith(_ADMIN_PREFIX):
            add_headers(response, PRIVATE_HEADERS)  # errors included: SPEC §14, "admin answers"
        return response

    async def scheduled(self, controller: Any) -> None:
        """The Cron Trigger (``triggers.crons`` in wrangler.jsonc): OpenRouter pinning's refresh
        (SPEC §15), then usage older than 30 days is pruned (SPEC §17) and the rows of rate windows that
        ended are deleted (SPEC §14). workerd calls a class
        entrypoint's handler with the event alone (``env`` and ``ctx`` are the instance's:
        ``getHandlerFromEntrypointClass`` in workerd's worker.c++), so a handler that also asks
        for them fails every run."""
        subrequests.begin()
        refreshed = await openrouter.refresh_candidates(self.env)
        logger.info("cron %s: %d OpenRouter model(s) re-scored", controller.cron, refreshed)
        try:
            await usage.prune(self.env.DB)
            await limits.sweep(self.env.DB, isolate.now_ms())
        except StorageError:
            logger.warning(
                "cron %s: old usage or rate windows not pruned (D1 failed); the next run tries again", controller.cron
            )


# workerd calls ``fetch`` through ``pyodide.code.relaxed_call``, which asks ``inspect.signature``
# for the bound method on every request (its cache is keyed by the per-request instance). A
# precomputed ``__signature__`` is inspect's documented fast path: the same answer, without
# re-deriving it from the code object each time.
Default.fetch.__signature__ = inspect.signature(Default.fetch)
