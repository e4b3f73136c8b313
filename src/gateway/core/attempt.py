"""The contract between the fallback loop (core) and one upstream attempt (shell).

The loop decides *which* candidate to try and *what a result means*; the shell only performs the
call and reports what it observed, as a value:

- ``Delivered``: the upstream answered 2xx (for streams: a well-formed first SSE chunk arrived);
  ``handle`` is opaque to the core (the shell's response object), ``latency_ms`` is the time to
  headers (to the first chunk for streams).
- ``Observed``: anything else, described with enough detail to classify it (``classify.py``):
  an HTTP status with headers and (redacted later) body text, or a transport-level ``defect``.

The shell never raises for an upstream problem; exceptions are for bugs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway.core.providers import Provider, ProviderKey

__all__ = ["Attempt", "Candidate", "Defect", "Delivered", "Observed", "Outcome"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One (provider, model) pair of a chain, and the key an attempt uses: the one the loop
    chose (rotation, SPEC §13), or None for the provider's ``default_key``."""

    provider: Provider
    model: str
    key: ProviderKey | None = None


class Defect(StrEnum):
    """What went wrong below HTTP, or inside a 200 before the first chunk was forwarded."""

    NETWORK = "network"  # connection refused/reset, DNS, TLS
    TIMEOUT = "timeout"  # no headers (or, for streams, no first chunk) within the attempt timeout
    NOT_SSE = "not_sse"  # stream requested, 200 whose content type is not text/event-stream
    EMPTY_STREAM = "empty_stream"  # the stream closed with no data
    ERROR_EVENT = "error_event"  # the first SSE event carries an error object
    KEY_UNREADABLE = "key_unreadable"  # the stored key cannot be decrypted: no upstream call made


@dataclass(frozen=True, slots=True)
class Delivered:
    handle: Any
    latency_ms: int


@dataclass(frozen=True, slots=True)
class Observed:
    status: int | None = None  # HTTP status when the upstream answered
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    body: str = ""  # the error body text, or the error event's JSON for ERROR_EVENT
    defect: Defect | None = None
    latency_ms: int = 0
    detail: str = ""  # a short human description for the trail (never secret)


Outcome = Delivered | Observed

# attempt(candidate, timeout_ms) -> Outcome. The loop clamps timeout_ms to the budget left.
Attempt = Callable[[Candidate, int], Awaitable[Outcome]]
