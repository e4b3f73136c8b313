"""Who may call what (SPEC §2.1, §8.2): the API token on /v1, the admin token on /api/admin.

Neither token is ever accepted where the other is expected, even if both were set to the same
value."""

from __future__ import annotations

from gateway.core.config import Config
from gateway.core.tokens import presented_token, token_matches
from gateway.errors import AuthenticationError
from gateway.shell.http import IncomingRequest
from gateway.wire.headers import TOKEN_HEADERS

__all__ = ["require_admin", "require_api"]


def require_api(request: IncomingRequest, config: Config) -> None:
    token = presented_token(request.header, TOKEN_HEADERS)
    if not token_matches(token, config.api_token) or token_matches(token, config.admin_token):
        raise AuthenticationError()


def require_admin(request: IncomingRequest, config: Config) -> None:
    token = presented_token(request.header, ("authorization",))
    if not token_matches(token, config.admin_token) or token_matches(token, config.api_token):
        raise AuthenticationError("Invalid admin token", code="invalid_admin_token")
