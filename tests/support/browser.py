"""Debian's Chromium, driven by Playwright, for the tests that use the config page (SPEC §8.1)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Page, expect

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "connect_snippets", "login", "open_fold", "watched_page"]

# Debian's Chromium (scripts/test installs it); BROWSER_PATH names another Chromium-based browser,
# e.g. the Google Chrome that GitHub's Ubuntu runners carry.
CHROMIUM = os.environ.get("BROWSER_PATH", "/usr/bin/chromium")
# Without the background-networking flags Chromium keeps dialling out of this closed network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def watched_page(
    browser: Browser, base_url: str, locale: str = "zh-CN", viewport: tuple[int, int] = (1280, 900)
) -> Iterator[Page]:
    """A page at ``viewport`` in a context of its own, closed after; at the end, asserts the page
    threw no error and the CSP refused nothing (what no test wants). The page opens in the
    browser's language (``locale``, navigator.language): Chinese unless told, as most tests read it."""
    errors: list[str] = []
    width, height = viewport
    context = browser.new_context(base_url=base_url, locale=locale, viewport={"width": width, "height": height})
    opened = context.new_page()
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
    yield opened
    context.close()
    assert errors == []


def login(page: Page, token: str) -> None:
    page.goto("/")
    page.get_by_test_id("login-token").fill(token)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("cooldown-bar")).to_be_visible()


def open_fold(page: Page, test_id: str) -> None:
    """Open the folded part (a <details>) ``test_id`` as a user does, by its summary; an open one stays open."""
    fold = page.get_by_test_id(test_id)
    if fold.get_attribute("open") is None:
        fold.locator("summary").first.click()
    expect(fold).to_have_attribute("open", "")


def connect_snippets(page: Page, client: str, model: str) -> dict[str, str]:
    """The Connect panel's snippets for ``client`` and ``model``, by label key (``connect.shell``,
    ``connect.headless``, ``connect.claudeFile`` …), as the page shows them."""
    panel = page.get_by_test_id("connect")
    page.get_by_test_id("connect-model").select_option(model)
    panel.locator(f'[data-testid="connect-tab"][data-client="{client}"]').click()
    snippets = page.locator(f'[data-testid="connect-snippet"][data-client="{client}"]')
    expect(snippets.first).to_be_visible()
    return {
        snippet.get_attribute("data-label") or "": snippet.get_by_test_id("connect-code").inner_text()
        for snippet in snippets.all()
    }
