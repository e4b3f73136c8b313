"""Who may call what (SPEC §2.1, §8.2, §14): the API token or a named client's token on /v1,
the admin token on /api/admin, each behind the rate limits and the failed-auth lock.

- Neither token is ever accepted where the other is expected, even if both were set to the same
  value; a client token is never accepted on /api/admin.
- A client token is found in the snapshot's table (``core/clients.py``): no D1 query; a disabled
  or deleted client is refused like a wrong token.
- An admin token that is not set, a placeholder or too short (``core.credentials``) closes the
  admin API: 503 naming what to set, whatever the caller presented.
- Such an API token turns the default client off (SPEC §14, decided 2026-12-02): /v1 serves the
  enabled named clients only, and any other token, the unusable API token itself included, is a
  wrong token (401, counted by the failed-auth limit). With no enabled named client either,
  nothing could be served: 503 naming both ways out (set ``API_TOKEN``, or create a client).
- Limits (``serving/limits.py``): an IP the isolate knows to be locked out is refused before any
  token is compared; a failed check is counted; an admitted caller is counted and checked against
  the lock. They fail open; tokens, revocation and model lists never do.
- A /v1 request that already passed through this gateway, or through too many gateways, is
  refused with 508 (``core.hop``), once the caller proved to hold a token.
"""

from __future__ import annotations

from gateway import isolate
from gateway.call import Call
from gateway.core.clients import Caller, find_client
from gateway.core.config import Config
from gateway.core.credentials import MIN_TOKEN_LENGTH, default_client_enabled, token_problem
from gateway.core.hop import loop_refusal, read_hops
from gateway.core.tokens import presented_token, token_matches
from gateway.errors import AuthenticationError, LoopDetectedError, TokenNotConfiguredError
from gateway.serving.limits import Limits
from gateway.wire.headers import HOP, TOKEN_HEADERS

__all__ = ["admin_config", "require_admin", "require_api"]

# The other way out of a /v1 503 (SPEC §14): named clients are served without the API token.
_OR_CREATE_A_CLIENT = ", or create a named client (config page, Clients; POST /api/admin/clients) and use its token"


def _require_usable(config: Config, token: str | None, variable: str, row: str, *, or_else: str = "") -> None:
    """Raises ``TokenNotConfiguredError`` when ``token`` is unusable; ``or_else`` is appended to the
    message: another way to make the surface serve."""
    problem = token_problem(token)
    if problem is None:
        return
    if row in config.token_rows:
        raise TokenNotConfiguredError(
            f"The '{row}' row of the D1 settings table (it wins over {variable}) {problem}. Delete "
            f"it: WRANGLER_SEND_METRICS=false npx wrangler d1 execute freellmapi-worker-db --remote --command "
            f"\"DELETE FROM settings WHERE key = '{row}'\"{or_else}"
        )
    raise TokenNotConfiguredError(
        f"{variable} {problem}. Set {variable} to a random secret of {MIN_TOKEN_LENGTH}+ characters "
        f"(WRANGLER_SEND_METRICS=false npx wrangler secret put {variable}; locally in .dev.vars) and "
        f"restart{or_else}."
    )


async def require_api(call: Call, config: Config, *, query_key: bool = False) -> Caller:
    """Who called: the request's hop list (``X-Fllmapi-Hop``) and the named client (None for the
    API token), once the caller proved to hold the API token or an enabled client's token, was
    admitted by the limits and the request is not looping; a limited client's ``X-RateLimit-*``
    go into ``call.answer_headers``. ``query_key``: the token may also come in ``?key=`` (Gemini
    clients, SPEC §12). Raises ``TokenNotConfiguredError`` (503: the API token is unusable and no
    named client is enabled), ``RateLimitedError`` (429), ``AuthenticationError`` (401) or
    ``LoopDetectedError`` (508)."""
    default_enabled = default_client_enabled(config.api_token)
    if not config.clients:
        _require_usable(config, config.api_token, "API_TOKEN", "api_token", or_else=_OR_CREATE_A_CLIENT)
    request = call.request
    limits = Limits(call, config)
    limits.refuse_if_locked()
    token = presented_token(request.header, TOKEN_HEADERS)
    if token is None and query_key:
        token = request.query_param("key")
    client = None
    valid = not token_matches(token, config.admin_token)
    if valid and not (default_enabled and token_matches(token, config.api_token)):
        client = find_client(config.clients, token)
        valid = client is not None
    if not valid:
        await limits.failed(token, api=True)
        raise AuthenticationError()
    call.answer_headers.update(await limits.admit(client, api=True))
    hops = read_hops(request.header(HOP))
    refusal = loop_refusal(hops, config.deployment_id)
    if refusal is not None:
        raise LoopDetectedError(refusal)
    return Caller(hops, client)


async def require_admin(call: Call, config: Config) -> None:
    """Raises ``TokenNotConfiguredError`` (503), ``RateLimitedError`` (429, the failed-auth lock)
    or ``AuthenticationError`` (401)."""
    _require_usable(config, config.admin_token, "ADMIN_TOKEN", "admin_token")
    limits = Limits(call, config)
    limits.refuse_if_locked()
    token = presented_token(call.request.header, ("authorization",))
    if (
        not token_matches(token, config.admin_token)
        or token_matches(token, config.api_token)
        or find_client(config.clients, token) is not None
    ):
        await limits.failed(token, api=False)
        raise AuthenticationError("Invalid admin token", code="invalid_admin_token")
    await limits.admit(None, api=False)


async def admin_config(call: Call) -> Config:
    """The configuration, once the caller proved to be the admin."""
    config = await isolate.load_config(call.env)
    await require_admin(call, config)
    return config
