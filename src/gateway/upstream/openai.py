"""The OpenAI-compatible adapter: one attempt against ``{base_url}`` plus an endpoint's path
(``/chat/completions``, ``/embeddings``, … SPEC §12.6).

It implements ``gateway.core.attempt.Attempt``: it never raises for an upstream problem, it
reports what it saw as ``Delivered`` or ``Observed`` and leaves the meaning to the core. For a
stream, the attempt lasts until the first data event (SPEC §2.6): a bad start is still a failure
the loop can fail over from; ``Delivered.handle`` is then the ``OpenedStream``.

Every request carries the loop guard's ``X-Fllmapi-Hop`` (``core/hop.py``): the hops the caller's
request came through, plus this deployment.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.core.attempt import Candidate, Defect, Delivered, Observed, Outcome
from gateway.core.classify import scrub
from gateway.core.config import Config
from gateway.core.hop import Hops, forward_value
from gateway.core.pinning import with_provider_member
from gateway.core.providers import Provider, ProviderKey
from gateway.core.sse import First
from gateway.errors import CryptoError
from gateway.shell import crypto, http
from gateway.shell.stream import open_stream
from gateway.wire.headers import HOP

__all__ = ["CHAT", "EMBEDDINGS", "Body", "Endpoint", "JsonBody", "OpenAIUpstream", "provider_key", "send_upstream"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where an upstream request goes (``path`` under the provider's base URL) and the media type
    its answer is asked for when it is not a stream."""

    path: str
    accept: str = "application/json"


CHAT = Endpoint("/chat/completions")
EMBEDDINGS = Endpoint("/embeddings")


class Body(Protocol):
    """A caller's body, read once. ``data``: its JSON fields (empty for a body that is not JSON);
    ``payload(model)``: what is sent upstream for ``model``, and its content type (None: the
    runtime's own, as for a FormData)."""

    data: Mapping[str, Any]

    def payload(self, model: str) -> tuple[Any, str | None]: ...


@dataclass(frozen=True, slots=True)
class JsonBody:
    """A JSON body, parsed once. ``raw`` is forwarded untouched whenever the model is the one the
    caller named; otherwise only ``model`` is replaced."""

    raw: bytes
    data: dict[str, Any]

    def payload(self, model: str) -> tuple[bytes | str, str]:
        return self.for_model(model), "application/json"

    def for_model(self, model: str) -> bytes | str:
        if self.data.get("model") == model:
            return self.raw
        return json.dumps({**self.data, "model": model}, separators=(",", ":"), ensure_ascii=False)

    def with_provider(self, model: str, provider: dict[str, Any]) -> bytes | str:
        """The body for ``model`` with OpenRouter's ``provider`` routing object (SPEC §15; only
        for a body without one): spliced into ``raw`` for the caller's own model
        (``core.pinning.with_provider_member``)."""
        if self.data.get("model") == model:
            return with_provider_member(self.raw, provider)
        body = {**self.data, "model": model, "provider": provider}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


async def provider_key(config: Config, provider: Provider, key: ProviderKey | None = None) -> str:
    """The plain text of ``key`` (None: the provider's ``default_key``), decrypted once per
    snapshot. Raises ``CryptoError``, also for a provider with no key."""
    key = key or provider.default_key
    if key is None:
        raise CryptoError(f"provider '{provider.name}' has no key")
    plain = config.key_memo.plain(key)
    if plain is None:
        plain = await crypto.open_sealed(key.sealed, config.encryption_key)
        config.key_memo.remember(key, plain)
    return plain


def _key_name(provider: Provider, key: ProviderKey | None) -> str:
    """How a message names the key: ``key #7 of provider 'groq'`` when the provider has several."""
    if key is not None and len(provider.keys) > 1:
        return f"key #{key.id} of provider '{provider.name}'"
    return f"key of provider '{provider.name}'"


def _elapsed_ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


async def send_upstream(
    config: Config,
    candidate: Candidate,
    endpoint: Endpoint,
    payload: tuple[Any, str | None],
    stream: bool,
    timeout_ms: int,
    hops: Hops = Hops(),
) -> Outcome:
    """One request to ``endpoint`` with ``payload`` (body, content type) for a caller's request
    that came through ``hops`` (none: the caller is a client, or a probe); see the module doc for
    what comes back."""
    provider = candidate.provider
    try:
        key = await provider_key(config, provider, candidate.key)
    except CryptoError as exc:
        detail = f"the {_key_name(provider, candidate.key)} cannot be decrypted ({exc.message})"
        return Observed(defect=Defect.KEY_UNREADABLE, detail=detail)
    body, content_type = payload
    headers = {
        "authorization": f"Bearer {key}",
        "accept": "text/event-stream" if stream else endpoint.accept,
        HOP: forward_value(hops, config.deployment_id),
    }
    if content_type is not None:
        headers["content-type"] = content_type
    start = time.monotonic()
    answer = await http.send("POST", f"{provider.base_url}{endpoint.path}", headers, timeout_ms, body)
    if isinstance(answer, Defect):
        return Observed(defect=answer, latency_ms=_elapsed_ms(start))
    if not 200 <= answer.status < 300:
        text = scrub(await answer.text(), key)
        answer.disarm()
        defect = Defect.TIMEOUT if answer.timed_out else None
        return Observed(answer.status, answer.headers(), text, defect, _elapsed_ms(start))
    if not stream:
        answer.disarm()
        return Delivered(answer, _elapsed_ms(start))
    if "text/event-stream" not in (answer.header("content-type") or ""):
        await answer.discard()
        return Observed(status=answer.status, defect=Defect.NOT_SSE, latency_ms=_elapsed_ms(start))
    opened = await open_stream(answer)
    if isinstance(opened, Defect):
        return Observed(status=answer.status, defect=opened, latency_ms=_elapsed_ms(start))
    if opened.first.kind is First.DATA:
        return Delivered(opened, _elapsed_ms(start))
    await http.fulfilled(opened.reader.cancel())
    if opened.first.kind is First.ERROR:
        body = scrub(opened.first.data, key)
        return Observed(status=answer.status, body=body, defect=Defect.ERROR_EVENT, latency_ms=_elapsed_ms(start))
    return Observed(status=answer.status, defect=Defect.EMPTY_STREAM, latency_ms=_elapsed_ms(start))


class OpenAIUpstream:
    """``attempt(candidate, timeout_ms)`` for one request's body to ``endpoint``; ``hops``: its
    hop list (``Caller.hops``, what ``require_api`` returned for it)."""

    def __init__(
        self, config: Config, body: Body, stream: bool, hops: Hops = Hops(), endpoint: Endpoint = CHAT
    ) -> None:
        self._config = config
        self._body = body
        self._stream = stream
        self._hops = hops
        self._endpoint = endpoint

    async def __call__(self, candidate: Candidate, timeout_ms: int) -> Outcome:
        payload = self._body.payload(candidate.model)
        return await send_upstream(
            self._config, candidate, self._endpoint, payload, self._stream, timeout_ms, self._hops
        )
