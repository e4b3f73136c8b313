"""Where a URL really leads: its host and port read the way ``fetch`` reads them (WHATWG URL).

A base URL is refused when it leads back to the gateway (``core/hop.py``), and a check that reads
the host differently from ``fetch`` is one an odd spelling walks past. Rules, from the WHATWG URL
Standard (https://url.spec.whatwg.org/, "host parsing", "IPv4 parser", "special authority
slashes"), for the special schemes http and https:

- Surrounding spaces and controls are dropped, tabs and newlines inside are removed; any run of
  ``/`` or ``\\`` after ``scheme:`` starts the authority (``http:/\\127.0.0.1`` is 127.0.0.1).
- The authority ends at the first ``/``, ``\\``, ``?`` or ``#``; user info ends at its last ``@``;
  the port follows the first ``:`` outside brackets (digits only, at most 65535, empty: default).
- The host is percent-decoded, then mapped as IDNA does: full-width forms to ASCII (NFKC), the
  ideographic full stops to ``.``, the code points IDNA ignores (soft hyphen, zero-width space,
  variation selectors…) dropped, lower case, and a non-ASCII label as Punycode.
- A host whose last dot-separated part is a number (``1``, ``0x7f``; a trailing dot is dropped) is
  an IPv4 address and nothing else: one to four parts, each decimal, hex (``0x``) or octal
  (leading ``0``); the last part fills the remaining bytes (``127.1``, ``2130706433``). A part
  that does not parse, or a value out of range, makes the URL invalid (``fetch`` refuses it).
- ``[…]`` is an IPv6 address (no zone id).
- Loopback or unspecified, whatever the spelling (``is_loopback``): 127.0.0.0/8, 0.0.0.0/8 (RFC
  1122 §3.2.1.3 "this host"; Linux connects 0.0.0.0 to itself), ``::1``, ``::``, IPv4-mapped
  forms of those, and ``localhost`` with its subdomains (RFC 6761 §6.3).

What no spelling shows (a DNS name that resolves to 127.0.0.1, another name of the same deploy)
is left to the hop header.
"""

from __future__ import annotations

import encodings.idna
import ipaddress
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["Address", "is_loopback", "read_address"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Characters IDNA (UTS #46) maps to a label separator.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
# Forbidden host code points (WHATWG "forbidden domain code point", the ones that survive decoding).
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_FORBIDDEN = frozenset(_C0_AND_SPACE + "#/:<>?@[\\]^|%\x7f")
_END_OF_AUTHORITY = "/\\?#"
_HEX = frozenset("0123456789abcdefABCDEF")

Host = int | ipaddress.IPv6Address | str  # IPv4 as its 32-bit number, IPv6, or a domain


@dataclass(frozen=True, slots=True)
class Address:
    """Where a URL leads: its scheme, its host as ``fetch`` resolves it (IPv4 number, IPv6
    address, or a lower-case domain without a trailing dot) and its port (defaulted)."""

    scheme: str
    host: Host
    port: int

    def same_host(self, other: Address) -> bool:
        """The same machine by name or address: equal hosts, or both loopback."""
        return self.host == other.host or (is_loopback(self) and is_loopback(other))


def read_address(url: str) -> Address | None:
    """The ``Address`` of an http(s) URL, or None when ``fetch`` would refuse it as a URL (or it
    is not http/https)."""
    text = url.strip(_C0_AND_SPACE)
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    scheme, colon, rest = text.partition(":")
    scheme = scheme.lower()
    if not colon or scheme not in _DEFAULT_PORTS:
        return None
    rest = rest.lstrip("/\\")
    end = min((i for i in (rest.find(c) for c in _END_OF_AUTHORITY) if i >= 0), default=len(rest))
    authority = rest[:end].rpartition("@")[2]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            return None
        raw_host, after = authority[: close + 1], authority[close + 1 :]
        if after and not after.startswith(":"):
            return None
        port_text = after[1:]
    else:
        raw_host, _, port_text = authority.partition(":")
    port = _port(port_text, scheme)
    host = _host(raw_host)
    if port is None or host is None:
        return None
    return Address(scheme, host, port)


def is_loopback(address: Address) -> bool:
    """Whether ``address`` is this machine: a loopback or unspecified address in any spelling, or
    ``localhost`` and its subdomains."""
    host = address.host
    if isinstance(host, int):
        return host >> 24 in (0, 127)
    if isinstance(host, ipaddress.IPv6Address):
        mapped = host.ipv4_mapped
        if mapped is not None:
            return int(mapped) >> 24 in (0, 127)
        return host.is_loopback or host.is_unspecified
    return host == "localhost" or host.endswith(".localhost")


def _port(text: str, scheme: str) -> int | None:
    if not text:
        return _DEFAULT_PORTS[scheme]
    if not text.isascii() or not text.isdigit() or int(text) > 65535:
        return None
    return int(text)


def _host(raw: str) -> Host | None:
    if raw.startswith("["):
        inner = raw[1:-1]
        if "%" in inner:  # a zone id is not allowed in a URL
            return None
        try:
            return ipaddress.IPv6Address(inner)
        except ValueError:
            return None
    try:
        decoded = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        return None
    domain = (decoded if decoded.isascii() else _ascii_domain(decoded)).lower()
    if not domain or any(c in _FORBIDDEN for c in domain):
        return None
    if _ends_in_a_number(domain):
        return _ipv4(domain)
    return domain.rstrip(".") if domain != "." else None


def _ascii_domain(decoded: str) -> str:
    """A non-ASCII host as ``fetch`` sends it: IDNA's mapping per label (nameprep: NFKC, case
    folding, and the code points IDNA ignores dropped, so ``local\u00adhost`` is ``localhost``),
    then Punycode (the form a request's own URL carries). A label IDNA refuses is kept as mapped
    by NFKC alone (such a host is compared as it is)."""
    labels = unicodedata.normalize("NFKC", decoded.translate(_DOTS)).translate(_DOTS).split(".")
    try:
        mapped = [label if label.isascii() else encodings.idna.nameprep(label) for label in labels]
        return ".".join(label if label.isascii() else encodings.idna.ToASCII(label).decode() for label in mapped)
    except UnicodeError:
        return ".".join(labels)


def _ends_in_a_number(domain: str) -> bool:
    parts = domain.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    if last and last.isascii() and last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and all(c in _HEX for c in last[2:])


def _ipv4_number(part: str) -> int | None:
    if not part:
        return None
    base = 10
    if part[:2] in ("0x", "0X"):
        part, base = part[2:], 16
        if not part:
            return 0
    elif len(part) > 1 and part[0] == "0":
        part, base = part[1:], 8
    try:
        return int(part, base) if part.isascii() and part.isalnum() else None
    except ValueError:
        return None


def _ipv4(domain: str) -> int | None:
    parts = domain.split(".")
    if parts[-1] == "":
        parts.pop()
    if len(parts) > 4:
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *first, last = numbers
    if any(n > 255 for n in first) or last >= 256 ** (5 - len(numbers)):  # type: ignore[operator]
        return None
    value = last
    for i, n in enumerate(first):
        value += n * 256 ** (3 - i)  # type: ignore[operator]
    return value  # type: ignore[return-value]
