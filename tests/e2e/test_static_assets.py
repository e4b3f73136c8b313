"""The config page as Workers Static Assets (SPEC §8.1, §14): ``public/`` served with the headers of
``public/_headers`` by Miniflare's asset router on workerd, as in production, while every API
path stays the Worker's."""

from __future__ import annotations

import http.client
import re
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

PUBLIC = Path(__file__).resolve().parents[2] / "public"


def _declared_headers() -> dict[str, str]:
    """The headers ``public/_headers`` gives every file (its one ``/*`` rule), names lower-cased."""
    lines = [
        line for line in (PUBLIC / "_headers").read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "/*", "one rule, for every file"
    return {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines[1:])}


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.preloaded: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script" and named.get("src"):
            self.found.append(named["src"])
        if tag == "link" and named.get("rel") == "stylesheet":
            self.found.append(named["href"])
        if tag == "link" and named.get("rel") == "modulepreload":
            self.preloaded.append(named["href"])


# A module's static imports of the page's own modules (an import list may take several lines).
IMPORT = re.compile(r'^import [^;]*? from "\./([\w.-]+)";$', re.M)


def _page_files(client: httpx.Client) -> list[str]:
    """Every file the page loads, once: its script and style, and the modules the scripts import."""
    parser = _References()
    parser.feed(client.get("/").text)
    files, queue = [], list(parser.found)
    while queue:
        path = queue.pop()
        if path in files:
            continue
        files.append(path)
        if path.endswith(".js"):
            queue += [f"/{name}" for name in IMPORT.findall(client.get(path).text)]
    return sorted(files)


@pytest.fixture
def client(gateway) -> httpx.Client:
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        yield c


def test_the_page_and_every_file_it_loads_carry_the_declared_headers(client):
    declared = _declared_headers()
    assert "script-src 'self'" in declared["content-security-policy"]
    assert "'unsafe-inline'" not in declared["content-security-policy"]

    files = _page_files(client)
    assert files == [
        "/addprovider.js",
        "/clients.js",
        "/connect.js",
        "/core.js",
        "/formvalues.js",
        "/i18n.js",
        "/keys.js",
        "/main.js",
        "/modelfacts.js",
        "/openrouter.js",
        "/providers.js",
        "/settings.js",
        "/status.js",
        "/style.css",
        "/usage.js",
        "/usagecharts.js",
    ]
    # Every script and style in public/ is one the page loads (no module is left out of the imports).
    assert files == sorted(f"/{p.name}" for p in PUBLIC.iterdir() if p.suffix in (".js", ".css"))
    for path, content_type in [
        ("/", "text/html"),
        *((f, "text/css" if f.endswith(".css") else "text/javascript") for f in files),
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith(content_type), path
        assert response.content == (PUBLIC / ("index.html" if path == "/" else path[1:])).read_bytes(), path
        for name, value in declared.items():
            assert response.headers[name] == value, (path, name)


def test_head_gives_the_page_headers_without_a_body(client):
    response = client.head("/")

    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-security-policy"] == _declared_headers()["content-security-policy"]


def test_the_headers_file_itself_is_not_served(client):
    assert client.get("/_headers").status_code == 404


def test_api_paths_and_unknown_paths_are_the_workers(client):
    for path in ("/v1/models", "/api/admin/providers", "/v1beta/models"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert response.json()["error"]["code"], path
        assert "content-security-policy" not in response.headers, path
    missing = client.get("/no-such-file.txt")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"


def test_every_module_the_entry_imports_is_preloaded(client):
    # One round trip for the modules instead of one per level of imports; a module left off the
    # list still loads, later.
    parser = _References()
    parser.feed(client.get("/").text)
    modules = [f for f in _page_files(client) if f.endswith(".js")]

    assert sorted(parser.preloaded) == [f for f in modules if f not in parser.found]


def test_a_path_that_looks_like_another_host_stays_on_the_gateway(gateway, upstream):
    # `//host/x` is a path; read as a URL it would be another host, and the asset lookup a proxy.
    host = upstream.origin.split("//", 1)[1]
    connection = http.client.HTTPConnection(gateway.url.split("//", 1)[1], timeout=30)
    for path in (f"//{host}/v1/models", f"/\\{host}/v1/models"):
        connection.request("GET", path)
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 404, path
    connection.close()

    assert upstream.model_list_requests == [] and upstream.requests == []
