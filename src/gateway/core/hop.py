"""The loop guard: the ``X-Fllmapi-Hop`` header of every request the gateway forwards upstream.

A provider whose ``base_url`` leads back to the gateway, directly or through other gateways, would
turn one request into thousands (issue 8). Rules:

- Each deployment has an id: 16 lowercase hex characters, random, made once and kept in D1 (the
  ``deployment_id`` settings row), so every isolate of a deployment has the same one and no other
  deployment has it. It is read with the configuration snapshot (no D1 query on a warm request).
- ``X-Fllmapi-Hop`` lists the deployments a request passed through, oldest first, separated by
  commas (RFC 9110 §5.6.1 list syntax: a header a proxy repeated reads the same). Its hop count is
  the number of entries.
- An incoming request is refused with 508 ``loop_detected`` when its list holds this deployment's
  id (the request left here before), or holds more than ``rules.MAX_HOPS`` entries.
- Every upstream request carries the incoming list plus this deployment's id at its end. An entry
  that is not an id-like token counts as a hop but is not forwarded.
- An upstream's 508 answer is a loop through that provider (``classify``: ``loop_detected``).
- The admin API refuses a ``base_url`` that leads back to the gateway in any spelling of its
  address (``own_address_refusal``): the loop caught before it is made. Other names of the same
  gateway (a DNS name resolving to it, a second route) no spelling shows; the header catches them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.core import rules
from gateway.core.hosts import is_loopback, read_address

__all__ = [
    "DEPLOYMENT_ID_KEY",
    "Hops",
    "forward_value",
    "loop_refusal",
    "own_address_refusal",
    "read_hops",
]

# The D1 settings row that holds the deployment id.
DEPLOYMENT_ID_KEY = "deployment_id"
# What an entry must look like to be forwarded (another version may make longer ids).
_ENTRY = re.compile(r"[0-9A-Za-z_-]{1,64}")
_OWN_ADDRESS = "it is this gateway's own address, so every request sent to it would come back here"


@dataclass(frozen=True, slots=True)
class Hops:
    """The deployments an incoming request passed through, oldest first, as sent."""

    entries: tuple[str, ...] = ()


def read_hops(value: str | None) -> Hops:
    """The entries of an ``X-Fllmapi-Hop`` value (None: the header is absent); blanks are skipped."""
    if not value:
        return Hops()
    return Hops(tuple(entry for entry in (part.strip() for part in value.split(",")) if entry))


def loop_refusal(hops: Hops, own_id: str | None) -> str | None:
    """Why a request with ``hops`` must be refused by the deployment ``own_id``, or None."""
    if own_id and own_id in hops.entries:
        return (
            "Request loop: this request already passed through this gateway (X-Fllmapi-Hop). "
            "A provider's base_url leads back here; point it at the real upstream."
        )
    if len(hops.entries) > rules.MAX_HOPS:
        return (
            f"Request loop: this request already passed through {len(hops.entries)} gateways "
            f"(X-Fllmapi-Hop), more than {rules.MAX_HOPS}. Providers' base_urls chain gateways "
            "into each other."
        )
    return None


def forward_value(hops: Hops, own_id: str | None) -> str:
    """The ``X-Fllmapi-Hop`` value of an upstream request made for a request with ``hops``. A
    deployment whose id could not be read marks it ``unknown``: still a hop that counts."""
    kept = [entry for entry in hops.entries if _ENTRY.fullmatch(entry)]
    return ", ".join([*kept, own_id or "unknown"])


def own_address_refusal(base_url: str, own_url: str) -> str | None:
    """Why a provider may not have ``base_url`` on the gateway reached at ``own_url`` (the admin
    call's URL), or None. Hosts and ports are read as ``fetch`` reads them (``core/hosts.py``).

    - A gateway reached on a loopback address runs on the developer's machine (the local
      runtime, ``wrangler dev``): another loopback server there is a real upstream (a local model
      server, the tests' fakes); only its own port, in any loopback spelling, is refused.
    - A gateway reached on any other host is deployed: no loopback address can serve it, so every
      spelling of one is refused, and so is its own host on any port or scheme (Workers routes
      match a host and a path, never a port).
    - A URL ``fetch`` would not accept is refused as such.
    """
    target, own = read_address(base_url), read_address(own_url)
    if target is None:
        return "it is not a URL a request can be sent to (check the host and the port)"
    if own is None:
        return None
    if is_loopback(own):
        if is_loopback(target) and target.port == own.port:
            return _OWN_ADDRESS
        return None
    if is_loopback(target):
        return (
            "it names this machine (a loopback address such as 127.0.0.1, ::1, 0.0.0.0 or "
            "localhost), which the deployed gateway can only reach as itself"
        )
    if target.same_host(own):
        return _OWN_ADDRESS
    return None
