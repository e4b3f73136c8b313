"""Who may call what (SPEC §2.1, §8.2, §14): the API token or a named client's token on /v1,
the admin token on /api/admin.

- Neither token is ever accepted where the other is expected, even if both were set to the same
  value; a client token is never accepted on /api/admin.
- A client token is found in the snapshot's table (``core/clients.py``): no D1 query; a disabled
  or deleted client is refused like a wrong token.
- A surface whose token is not set, a placeholder or too short (``core.credentials``) is not
  served at all: 503 naming what to set, whatever the caller presented.
- A /v1 request that already passed through this gateway, or through too many gateways, is
  refused with 508 (``core.hop``), once the caller proved to hold the API token.
"""

from __future__ import annotations

from gateway.core.clients import Caller, find_client
from gateway.core.config import Config
from gateway.core.credentials import MIN_TOKEN_LENGTH, token_problem
from gateway.core.hop import loop_refusal, read_hops
from gateway.core.tokens import presented_token, token_matches
from gateway.errors import AuthenticationError, LoopDetectedError, TokenNotConfiguredError
from gateway.shell.http import IncomingRequest
from gateway.wire.headers import HOP, TOKEN_HEADERS

__all__ = ["require_admin", "require_api"]


def _require_usable(config: Config, token: str | None, variable: str, row: str) -> None:
    problem = token_problem(token)
    if problem is None:
        return
    if row in config.token_rows:
        raise TokenNotConfiguredError(
            f"The '{row}' row of the D1 settings table (it wins over {variable}) {problem}. Delete "
            f"it: npx wrangler d1 execute freellmapi-worker-db --remote --command "
            f"\"DELETE FROM settings WHERE key = '{row}'\""
        )
    raise TokenNotConfiguredError(
        f"{variable} {problem}. Set {variable} to a random secret of {MIN_TOKEN_LENGTH}+ characters "
        f"(npx wrangler secret put {variable}; locally in .dev.vars) and restart."
    )


def require_api(request: IncomingRequest, config: Config, *, query_key: bool = False) -> Caller:
    """Who called: the request's hop list (``X-Fllmapi-Hop``) and the named client (None for the
    API token), once the caller proved to hold the API token or an enabled client's token and the
    request is not looping. ``query_key``: the token may also come in ``?key=`` (Gemini clients,
    SPEC §12). Raises ``TokenNotConfiguredError`` (503), ``AuthenticationError`` (401) or
    ``LoopDetectedError`` (508)."""
    _require_usable(config, config.api_token, "API_TOKEN", "api_token")
    token = presented_token(request.header, TOKEN_HEADERS)
    if token is None and query_key:
        token = request.query_param("key")
    if token_matches(token, config.admin_token):
        raise AuthenticationError()
    client = None
    if not token_matches(token, config.api_token):
        client = find_client(config.clients, token)
        if client is None:
            raise AuthenticationError()
    hops = read_hops(request.header(HOP))
    refusal = loop_refusal(hops, config.deployment_id)
    if refusal is not None:
        raise LoopDetectedError(refusal)
    return Caller(hops, client)


def require_admin(request: IncomingRequest, config: Config) -> None:
    """Raises ``TokenNotConfiguredError`` (503) or ``AuthenticationError`` (401)."""
    _require_usable(config, config.admin_token, "ADMIN_TOKEN", "admin_token")
    token = presented_token(request.header, ("authorization",))
    if (
        not token_matches(token, config.admin_token)
        or token_matches(token, config.api_token)
        or find_client(config.clients, token) is not None
    ):
        raise AuthenticationError("Invalid admin token", code="invalid_admin_token")
