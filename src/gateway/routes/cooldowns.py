"""Cooldown visibility and control under ``/api/admin`` (SPEC §5.3).

Cooldowns live in this isolate's memory: another isolate may still hold one an admin cleared
here (SPEC §5.2).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gateway import isolate
from gateway.answers import json_response
from gateway.call import Call
from gateway.core import rules
from gateway.core.attempt import Candidate, Delivered
from gateway.core.classify import classify
from gateway.core.config import Config
from gateway.core.kinds import Kind
from gateway.core.ledger import Cooldown
from gateway.core.providers import Provider
from gateway.core.subrequests import SUBREQUESTS
from gateway.serving.auth import admin_config
from gateway.shell import d1
from gateway.shell.http import JsResponse
from gateway.upstream.openai import CHAT, EMBEDDINGS, send_upstream
from gateway.wire.cooldowns import cooldown_json

__all__ = ["clear_cooldowns", "status", "verify_cooldowns"]


async def status(call: Call) -> JsResponse:
    config = await admin_config(call)
    now_ms = isolate.now_ms()
    cooldowns = isolate.current().router.ledger.active(now_ms)
    return json_response(
        {
            "cooldowns": [cooldown_json(c, now_ms) for c in cooldowns],
            "providers": len(config.providers),
            "config_age_ms": now_ms - config.loaded_at_ms,
            # What this isolate saw of D1 (SPEC §18): while it fails, the snapshot above serves.
            "d1": d1.health().as_json(),
            # This isolate's broken streams that rescue was on for (SPEC §16), newest first.
            "rescues": [r.json() for r in isolate.current().rescues.recent()],
        }
    )


async def clear_cooldowns(call: Call) -> JsResponse:
    await admin_config(call)
    cleared = isolate.current().router.ledger.clear(isolate.now_ms())
    return json_response({"cleared": cleared})


# What a probe asks of a model, by kind (SPEC §5.3, §12.6): the smallest request of its endpoint.
# Transcription, speech and image models are not probed: each probe would cost a generation.
_PROBES = {
    Kind.CHAT: (CHAT, {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}),
    Kind.EMBEDDING: (EMBEDDINGS, {"input": "ping"}),
}


def _probe_model(provider: Provider, cooldowns: list[Cooldown]) -> str | None:
    """The model a provider's probe asks for: the one benched, if the cooldown was per model,
    else its first model; either only if its kind can be probed (else the first that can)."""
    benched = [c.model for c in cooldowns if c.provider_id == provider.id and c.model is not None]
    probable = [m for m in provider.models if provider.kind_of(m) in _PROBES]
    if benched and benched[0] in probable:
        return benched[0]
    return probable[0] if probable else None


async def _probe(config: Config, candidate: Candidate) -> dict[str, Any]:
    """One minimal request (SPEC §5.3) with the candidate's key (None: the provider's default
    key); a failure cools the provider, or the key, again by the normal rules."""
    provider, model, key = candidate.provider, candidate.model, candidate.key
    endpoint, fields = _PROBES[provider.kind_of(model)]
    body = json.dumps({"model": model, **fields})
    outcome = await send_upstream(
        config, candidate, endpoint, (body, "application/json"), False, rules.PROBE_TIMEOUT_MS
    )
    ledger = isolate.current().router.ledger
    result: dict[str, Any] = {"providerId": provider.id, "name": provider.name, "keyId": key.id if key else None}
    if isinstance(outcome, Delivered):
        await outcome.handle.text()  # drain the tiny answer
        ledger.record_success(provider.id, key.id if key else None)
        return {**result, "ok": True, "status": outcome.handle.status, "message": "ok"}
    now_ms = isolate.now_ms()
    failure = classify(outcome, now_ms)
    ledger.record_failure(candidate, failure, now_ms, config.settings.routing_cooldown_ceiling_ms)
    message = failure.reason or str(failure.kind)
    return {**result, "ok": False, "status": outcome.status, "message": message}


def _probes(config: Config, cooling: list[Cooldown]) -> list[Candidate]:
    """What to probe: each provider with a provider-wide or model cooldown (with its default
    key), and each cooling key (SPEC §13), in priority order."""
    probes = []
    for provider in config.providers:
        mine = [c for c in cooling if c.provider_id == provider.id]
        if not mine or not provider.models:
            continue
        model = _probe_model(provider, mine)
        if model is None:
            continue  # its cooldowns are cleared, unchecked
        if any(c.key_id is None for c in mine):
            probes.append(Candidate(provider, model))
        cooling_keys = {c.key_id for c in mine if c.key_id is not None}
        probes += [Candidate(provider, model, k) for k in provider.keys if k.id in cooling_keys]
    return probes


def _not_probed(candidate: Candidate) -> dict[str, Any]:
    """The result of a probe left out (``verify_cooldowns``): nothing sent, nothing recorded."""
    key = candidate.key
    return {
        "providerId": candidate.provider.id,
        "name": candidate.provider.name,
        "keyId": key.id if key else None,
        "ok": None,
        "status": None,
        "message": (
            f"not probed: one verify sends at most {rules.MAX_VERIFY_PROBES} probes, within the "
            "subrequest limit of a Workers request (setting subrequest_limit); its cooldown was cleared "
            "unchecked"
        ),
    }


async def verify_cooldowns(call: Call) -> JsResponse:
    """Clear every cooldown, then probe each provider and each key that was cooling down: the
    first ``MAX_VERIFY_PROBES`` in priority order, fewer when the request's subrequests (SPEC §18)
    leave less room; the others are reported with ``ok: null``."""
    config = await admin_config(call)
    ledger = isolate.current().router.ledger
    now_ms = isolate.now_ms()
    cooling = ledger.active(now_ms)
    ledger.clear(now_ms)
    probes = _probes(config, cooling)
    count = min(rules.MAX_VERIFY_PROBES, SUBREQUESTS.get().left())
    sent, left = probes[:count], probes[count:]
    results = await asyncio.gather(*(_probe(config, c) for c in sent))
    return json_response({"results": [*results, *(_not_probed(c) for c in left)]})
