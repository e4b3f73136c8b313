"""End-to-end tests: the Worker in a local runtime (real Pyodide 314, Miniflare's D1, real
WebCrypto and fetch) against the scriptable fake upstream (tests/support/upstream.py).

The runtime is workerd itself, started by ``scripts/dev`` (tests/support/runtime.py). One runtime
serves each worker's whole session (tests/conftest.py); each test starts from an empty provider
table, default settings, the env tokens, no cooldowns and a D1 that answers (``gateway.d1_fault``
makes it fail). To add a capability, add a ``test_<capability>.py`` here using the ``gateway``,
``upstream``, ``admin`` and ``api`` fixtures; a test whose subject is the runtime's own start or
environment calls ``Gateway.start``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, sync_playwright

from support.browser import CHROMIUM, CHROMIUM_ARGS
from support.runtime import Gateway
from support.upstream import UPSTREAM_KEY, FakeUpstream


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    # The failed-auth lock is off for the shared runtime: the suite sends many wrong tokens from one
    # address, and a test of one capability must not be locked out by another's. test_rate_limits
    # turns it on where it is the subject (and checks the default on a runtime of its own).
    running = Gateway.start(tmp_path_factory.mktemp("gateway"), extra_env={"AUTH_FAIL_LIMIT": "0"})
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium (support/browser.py); launch() gives it a fresh, empty user-data-dir."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def upstream_server() -> Iterator[FakeUpstream]:
    server = FakeUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def upstream(upstream_server: FakeUpstream) -> FakeUpstream:
    upstream_server.reset()
    return upstream_server


@pytest.fixture
def admin(gateway: Gateway) -> Iterator[httpx.Client]:
    """An admin API client; D1 answers and the configuration is reset to empty before each test
    (and after it)."""
    headers = {"authorization": f"Bearer {gateway.admin_token}"}
    with httpx.Client(base_url=f"{gateway.url}/api/admin", headers=headers, timeout=30) as client:
        _d1_answers(gateway)
        _reset(client)
        yield client
        _d1_answers(gateway)
        _reset(client, gateway)


# How long an isolate that saw D1 fail may wait before it asks D1 again (SPEC §18: the
# configuration is retried at most once a minute).
D1_RETRY_MS = 61_000


def _d1_answers(gateway: Gateway) -> None:
    """D1 answers again (a test may have made it fail), and the isolate will ask it again."""
    gateway.d1_fault("off")
    if gateway.d1_faulted:
        gateway.advance_clock(D1_RETRY_MS)
        gateway.d1_faulted = False


def _reset(client: httpx.Client, gateway: Gateway | None = None) -> None:
    if gateway is not None:
        # A test may have changed the admin token; reset with whichever one works.
        client.headers["authorization"] = f"Bearer {gateway.admin_token}"
    for provider in client.get("/providers").raise_for_status().json()["providers"]:
        client.delete(f"/providers/{provider['id']}").raise_for_status()
    for named in client.get("/clients").raise_for_status().json()["clients"]:
        client.delete(f"/clients/{named['id']}").raise_for_status()
    settings = client.get("/settings").raise_for_status().json()["settings"]
    stored = {key: None for key, setting in settings.items() if setting["source"] == "d1"}
    if stored:
        client.put("/settings", json=stored).raise_for_status()
    client.post("/cooldowns/clear").raise_for_status()


@pytest.fixture
def api(gateway: Gateway) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {gateway.api_token}"}
    with httpx.Client(base_url=f"{gateway.url}/v1", headers=headers, timeout=30) as client:
        yield client


@pytest.fixture
def add_provider(admin: httpx.Client, upstream: FakeUpstream) -> Callable[..., dict[str, Any]]:
    """Add a provider pointing at the fake upstream; keyword arguments override the fields."""

    def add(**fields: Any) -> dict[str, Any]:
        body = {
            "name": "fake",
            "base_url": upstream.base_url,
            "api_key": UPSTREAM_KEY,
            "models": ["fake-model"],
            **fields,
        }
        response = admin.post("/providers", json=body)
        assert response.status_code == 201, response.text
        return response.json()["provider"]

    return add
