"""``GET /v1/models`` and ``GET /v1/models/{id}`` (SPEC §12.1): ``auto`` first, then every
declared model once, in the shape the caller speaks: Anthropic's when the request carries
``anthropic-version``, Gemini's when its token came in ``x-goog-api-key`` or ``?key=``, else
OpenAI's."""

from __future__ import annotations

from gateway import isolate
from gateway.answers import iso_utc, json_response
from gateway.call import Call
from gateway.core.clients import Caller
from gateway.core.config import Config
from gateway.errors import NotFoundError
from gateway.serving.auth import require_api
from gateway.serving.catalog import caller_catalog, catalog_kinds, embedding_models, gemini_model
from gateway.serving.surface import ErrorRenderer, speaks_as
from gateway.shell.http import IncomingRequest, JsResponse
from gateway.surfaces import anthropic, gemini, models
from gateway.wire.chat import AUTO_MODEL

__all__ = ["get_model", "list_models"]

# The gateway's own entry: the chain over every provider (SPEC §3).
_AUTO_OWNER = "fllmapi-worker"


def _shape(request: IncomingRequest) -> str:
    if request.header("anthropic-version"):
        return "anthropic"
    if request.header("x-goog-api-key") or request.query_param("key"):
        return "gemini"
    return "openai"


def _catalog(config: Config, caller: Caller) -> list[tuple[str, str]]:
    """``auto``, then the models the caller may use (SPEC §14)."""
    return [(AUTO_MODEL, _AUTO_OWNER), *caller_catalog(config, caller)]


def _error_shape(call: Call) -> ErrorRenderer | None:
    """Errors in the shape the caller speaks, like the listing itself (None: OpenAI's)."""
    return {"anthropic": anthropic.render_error, "gemini": gemini.render_error}.get(_shape(call.request))


@speaks_as(_error_shape)
async def list_models(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config, query_key=True)
    catalog, created = _catalog(config, caller), isolate.now_ms() // 1000
    match _shape(call.request):
        case "anthropic":
            return json_response(models.anthropic_models([m for m, _ in catalog], iso_utc(created)))
        case "gemini":
            return json_response(models.gemini_models([m for m, _ in catalog], embedding_models(config)))
        case _:
            return json_response(models.openai_models(catalog, created, catalog_kinds(config)))


@speaks_as(_error_shape)
async def get_model(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config, query_key=True)
    model, created = call.params["model"], isolate.now_ms() // 1000
    shape = _shape(call.request)
    if shape == "gemini":
        return json_response(gemini_model(config, caller, model))
    entry = next((e for e in _catalog(config, caller) if e[0] == model), None)
    if entry is None:
        raise NotFoundError(f"The model '{model}' does not exist on this gateway.", code="model_not_found")
    if shape == "anthropic":
        return json_response(models.anthropic_model(model, iso_utc(created)))
    return json_response(models.openai_model(entry, created, catalog_kinds(config).get(model)))
