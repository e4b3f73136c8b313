"""Exceptions that end a request with an error answer, and the one place their JSON is built.

Every class carries the HTTP status and the OpenAI error ``type``/``code`` it answers with
(as h11's ``error_status_hint``), so whose fault it is travels with the error::

    GatewayError                      any error answered in the OpenAI format
    ├── AuthenticationError           401 authentication_error / invalid_api_key
    ├── InvalidRequestError           400 invalid_request_error (names the field)
    │   └── BodyTooLargeError         413
    ├── PermissionDeniedError         403 permission_error (a client's model allow-list)
    ├── NotFoundError                 404
    ├── MethodNotAllowedError         405
    ├── ConflictError                 409
    ├── RateLimitedError              429 rate_limit_error (SPEC §14: a client's or an IP's rpm,
    │                                 the failed-auth lock), with Retry-After
    ├── NoProvidersError              503 no_providers_configured
    ├── TokenNotConfiguredError       503 token_not_configured (unset, placeholder or short token)
    ├── LoopDetectedError             508 loop_detected (the request passed here before: ``hop``)
    ├── ProviderError                 502 provider_error (a platform call of the admin API failed)
    ├── RoutingError                  the fallback loop's answer when nothing served (SPEC §4):
    │                                 status and type from the outcome, 429s with retryAtMs
    └── ShellError                    a JS-side failure, mapped at the call (raised ``from`` it)
        ├── StorageError              D1 failed (503 d1_unavailable: it names D1 and its error)
        └── CryptoError               a key cannot be encrypted/decrypted (500 crypto_error)

Routing outcomes (exhaustion, caller errors passed through) are values in the core, not
exceptions; only the edges raise.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "BodyTooLargeError",
    "ConflictError",
    "CryptoError",
    "GatewayError",
    "InvalidRequestError",
    "LoopDetectedError",
    "MethodNotAllowedError",
    "NoProvidersError",
    "NotFoundError",
    "PermissionDeniedError",
    "ProviderError",
    "RateLimitedError",
    "RoutingError",
    "ShellError",
    "StorageError",
    "TokenNotConfiguredError",
    "error_body",
]


def error_body(message: str, type_: str, code: str | None = None, **extra: Any) -> dict[str, Any]:
    """The OpenAI error envelope ``{"error": {"message", "type", "code"?, ...extra}}``."""
    error: dict[str, Any] = {"message": message, "type": type_}
    if code is not None:
        error["code"] = code
    error.update(extra)
    return {"error": error}


class GatewayError(Exception):
    status: int = 500
    type: str = "server_error"
    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        extra = {"param": self.param} if self.param is not None else {}
        return error_body(self.message, self.type, self.code, **extra)


class AuthenticationError(GatewayError):
    """401. The API's answer is SPEC §2.1's body plus OpenAI's own code for it,
    ``invalid_api_key``; the admin API's says ``invalid_admin_token``."""

    status = 401
    type = "authentication_error"

    def __init__(self, message: str = "Invalid API key", code: str = "invalid_api_key") -> None:
        super().__init__(message, code=code)


class InvalidRequestError(GatewayError):
    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class BodyTooLargeError(InvalidRequestError):
    status = 413
    code = "request_too_large"


class PermissionDeniedError(GatewayError):
    """403: the caller proved who it is but may not do this (SPEC §14: a model outside a named
    client's allow-list). Surfaces render it in their own error shape."""

    status = 403
    type = "permission_error"
    code = "model_not_allowed"


class NotFoundError(GatewayError):
    status = 404
    type = "not_found_error"
    code = "not_found"


class MethodNotAllowedError(GatewayError):
    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


class ConflictError(GatewayError):
    status = 409
    type = "invalid_request_error"
    code = "conflict"


class RateLimitedError(GatewayError):
    """429 from the gateway's own limits (SPEC §14), never an upstream's: ``code`` says which
    (``rate_limit_exceeded``: a client's or an IP's requests per minute; ``too_many_failed_auth``:
    the failed-auth lock). ``headers`` carry ``Retry-After`` (and a limited client's
    ``X-RateLimit-*``). Surfaces render it in their own error shape."""

    status = 429
    type = "rate_limit_error"
    code = "rate_limit_exceeded"


class NoProvidersError(GatewayError):
    status = 503
    type = "service_unavailable"
    code = "no_providers_configured"

    def __init__(self) -> None:
        super().__init__("No provider is configured. Add one in the config page or with POST /api/admin/providers.")


class TokenNotConfiguredError(GatewayError):
    """503: the token that guards this surface is not set, a placeholder or too short
    (``core.credentials``), so nothing is served with it; the message names what to set."""

    status = 503
    type = "service_unavailable"
    code = "token_not_configured"


class LoopDetectedError(GatewayError):
    """508 (RFC 5842 §7.2): the request already passed through this gateway, or through too many
    (``core.hop``). Surfaces render it in their own error shape."""

    status = 508
    type = "invalid_request_error"
    code = "loop_detected"


class ProviderError(GatewayError):
    status = 502
    type = "provider_error"
    code = "upstream_failed"


class RoutingError(GatewayError):
    """Status, type and code come from the loop's outcome; ``extra`` goes into the error object
    (``retryAtMs``, ``cooldowns``)."""

    def __init__(
        self,
        status: int,
        type_: str,
        code: str,
        message: str,
        *,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message, code=code, headers=headers)
        self.status = status
        self.type = type_
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.code, **self.extra)


class ShellError(GatewayError):
    """A JS-side failure, re-raised as ours at the call site."""


class StorageError(ShellError):
    status = 503
    code = "d1_unavailable"


class CryptoError(ShellError):
    code = "crypto_error"
