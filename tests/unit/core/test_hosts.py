"""Hosts and ports read as ``fetch`` reads them (WHATWG URL): every spelling of a loopback address
is seen as one (``core/hosts.py``)."""

from __future__ import annotations

import ipaddress

import pytest

from gateway.core.hosts import is_loopback, read_address

LOOPBACK_V4 = 0x7F000001


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        pytest.param("https://api.groq.com/openai/v1", "api.groq.com", 443, id="domain"),
        pytest.param("HTTP://API.Example.COM.:8080/v1", "api.example.com", 8080, id="case-and-trailing-dot"),
        pytest.param("http://127.0.0.1:8787/v1", LOOPBACK_V4, 8787, id="dotted"),
        pytest.param("http://127.1/v1", LOOPBACK_V4, 80, id="two-parts"),
        pytest.param("http://127.0.1/v1", LOOPBACK_V4, 80, id="three-parts"),
        pytest.param("http://2130706433/v1", LOOPBACK_V4, 80, id="decimal"),
        pytest.param("http://0x7f000001/v1", LOOPBACK_V4, 80, id="hex"),
        pytest.param("http://0X7F.0.0.1/v1", LOOPBACK_V4, 80, id="hex-part"),
        pytest.param("http://0177.0.0.1/v1", LOOPBACK_V4, 80, id="octal-part"),
        pytest.param("http://017700000001/v1", LOOPBACK_V4, 80, id="octal"),
        pytest.param("http://127.0.0.1./v1", LOOPBACK_V4, 80, id="trailing-dot"),
        pytest.param("http://127%2E0%2E0%2E1/v1", LOOPBACK_V4, 80, id="percent-encoded"),
        pytest.param("http://１２７．０．０．１/v1", LOOPBACK_V4, 80, id="full-width"),
        pytest.param("http://127。0。0。1/v1", LOOPBACK_V4, 80, id="ideographic-dots"),
        pytest.param("http://0.0.0.0:8787", 0, 8787, id="unspecified"),
        pytest.param("http://0/", 0, 80, id="zero"),
        pytest.param("http://[::1]:8787/v1", ipaddress.IPv6Address("::1"), 8787, id="ipv6"),
        pytest.param("http://[0:0:0:0:0:0:0:1]/", ipaddress.IPv6Address("::1"), 80, id="ipv6-long"),
        pytest.param("http://user@127.0.0.1:81/", LOOPBACK_V4, 81, id="userinfo"),
        pytest.param("http:///127.0.0.1/v1", LOOPBACK_V4, 80, id="extra-slash"),
        pytest.param("http:\\\\127.0.0.1/v1", LOOPBACK_V4, 80, id="backslashes"),
        pytest.param("http://127.0.0.1\\.evil.example/v1", LOOPBACK_V4, 80, id="backslash-ends-host"),
        pytest.param("  http://127.0.0.1:8787/v1 ", LOOPBACK_V4, 8787, id="surrounding-space"),
        pytest.param("http://127.0.0.1:0080/", LOOPBACK_V4, 80, id="port-leading-zero"),
        pytest.param("http://1.2.3.4.example/", "1.2.3.4.example", 80, id="numbers-then-a-name"),
        pytest.param("http://example.0x7g/", "example.0x7g", 80, id="not-quite-hex-is-a-name"),
        pytest.param("http://example.com:/v1", "example.com", 80, id="empty-port-is-the-default"),
        # Code points IDNA ignores, and Unicode names: as Node's URL reads them (checked 2026-12-02).
        pytest.param("http://local\u00adhost:8787", "localhost", 8787, id="soft-hyphen"),
        pytest.param("http://local%C2%ADhost:8787", "localhost", 8787, id="soft-hyphen-percent-encoded"),
        pytest.param("http://local\u200bhost:8787", "localhost", 8787, id="zero-width-space"),
        pytest.param("http://loc\u034falhost:8787", "localhost", 8787, id="combining-grapheme-joiner"),
        pytest.param("http://localhost\ufe0f:8787", "localhost", 8787, id="variation-selector"),
        pytest.param("http://lo\u180bcalhost:8787", "localhost", 8787, id="mongolian-selector"),
        pytest.param("http://ＬＯＣＡＬＨＯＳＴ/", "localhost", 80, id="full-width-name"),
        pytest.param("http://gw.exa\u00admple.com/", "gw.example.com", 80, id="soft-hyphen-in-a-name"),
        pytest.param("http://BÜCHER.example/", "xn--bcher-kva.example", 80, id="unicode-name-as-punycode"),
    ],
)  # fmt: skip
def test_read_address(url, host, port):
    address = read_address(url)

    assert address is not None
    assert (address.host, address.port) == (host, port)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("ftp://127.0.0.1/", id="not-http"),
        pytest.param("http://127.0.0.256/", id="part-too-big"),
        pytest.param("http://256.0.0.1/", id="first-part-too-big"),
        pytest.param("http://4294967296/", id="number-too-big"),
        pytest.param("http://1.2.3.4.5/", id="five-parts"),
        pytest.param("http://127.0.0.09/", id="bad-octal"),
        pytest.param("http://127..1/", id="empty-part"),
        pytest.param("http://127.0.0.1:65536/", id="port-too-big"),
        pytest.param("http://127.0.0.1:8o/", id="port-not-a-number"),
        pytest.param("http://[::1/", id="unclosed-bracket"),
        pytest.param("http://[::1%25lo]/", id="zone-id"),
        pytest.param("http://[::1]x/", id="junk-after-bracket"),
        pytest.param("http://a%00b/", id="control-in-host"),
        pytest.param("http://a%2fb/", id="slash-in-host"),
    ],
)
def test_urls_fetch_refuses_have_no_address(url):
    assert read_address(url) is None


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        pytest.param("http://127.0.0.1/", True, id="127.0.0.1"),
        pytest.param("http://127.255.255.254/", True, id="all-of-127/8"),
        pytest.param("http://127.1/", True, id="127.1"),
        pytest.param("http://2130706433/", True, id="decimal"),
        pytest.param("http://0x7f000001/", True, id="hex"),
        pytest.param("http://0177.0.0.1/", True, id="octal"),
        pytest.param("http://0.0.0.0/", True, id="0.0.0.0"),
        pytest.param("http://[::1]/", True, id="[::1]"),
        pytest.param("http://[::]/", True, id="[::]"),
        pytest.param("http://[::ffff:127.0.0.1]/", True, id="v4-mapped"),
        pytest.param("http://[::ffff:7f00:1]/", True, id="v4-mapped-hex"),
        pytest.param("http://[::ffff:0.0.0.0]/", True, id="v4-mapped-unspecified"),
        pytest.param("http://localhost/", True, id="localhost"),
        pytest.param("http://LOCALHOST./", True, id="localhost-case-dot"),
        pytest.param("http://gw.localhost/", True, id="subdomain-of-localhost"),
        pytest.param("http://128.0.0.1/", False, id="128.0.0.1"),
        pytest.param("http://1.0.0.127/", False, id="reversed"),
        pytest.param("http://[::2]/", False, id="other-v6"),
        pytest.param("http://[::ffff:8.8.8.8]/", False, id="other-v4-mapped"),
        pytest.param("http://localhost.example/", False, id="localhost-as-a-label"),
        pytest.param("http://notlocalhost/", False, id="localhost-as-a-suffix"),
    ],
)
def test_is_loopback(url, loopback):
    address = read_address(url)

    assert address is not None
    assert is_loopback(address) is loopback
