"""The config page's Usage panel (SPEC §17) in Chromium, against the fake upstream.

Each test has a runtime of its own (its D1 starts empty), so every count the panel shows is that
test's own traffic, and the tests pass in any order and one by one. The traffic of
``test_usage_panel_shows_the_traffic``: two providers on the fake, "flaky" (tried first, answers 429) and "steady"
(answers with its usage). 21 requests with the API token fail over from flaky to steady; the client
"laptop" sends one that fails over and one that steady serves at once (flaky is cooling down) with
no usage in the answer, so its tokens are estimated; a last request with the API token finds both
failing. ``GET /api/admin/usage`` writes the serving isolate's counts first, so the page sees them
at once. Waiting is Playwright's own (``expect``); screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from support.answers import completion_with, server_error
from support.browser import login, watched_page
from support.openrouter import FakeOpenRouter, endpoint
from support.runtime import ROOT, Gateway
from support.upstream import Json

ARTIFACTS = ROOT / "test-artifacts"
MODEL = "m"
RATE_LIMITED = Json({"error": {"message": "Rate limit reached for model m"}}, 429)
# The API token's answers carry 1,500 prompt and 20 completion tokens each; the laptop's first 40 and 9.
API_USAGE = (1500, 20)
LAPTOP_USAGE = (40, 9)
API_REQUESTS = 21


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    """The test's own runtime: usage counted by any other test's traffic would change its numbers
    (usage is kept in D1 and the isolate, and nothing clears it)."""
    running = Gateway.start(tmp_path, extra_env={"AUTH_FAIL_LIMIT": "0"})
    yield running
    running.stop()


@pytest.fixture
def page(browser: Browser, gateway: Gateway, admin: httpx.Client) -> Iterator[Page]:
    with watched_page(browser, gateway.url) as opened:
        yield opened


def chat(client: httpx.Client, model: str = MODEL) -> httpx.Response:
    return client.post("/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "x"}]})


def without_usage() -> Json:
    body = completion_with(MODEL, "served without a usage count")
    del body["usage"]
    return Json(body)


def send_traffic(gateway: Gateway, admin: httpx.Client, api: httpx.Client, upstream) -> None:
    created = admin.post("/clients", json={"name": "laptop"})
    assert created.status_code == 201, created.text
    headers = {"authorization": f"Bearer {created.json()['token']}"}
    laptop = httpx.Client(base_url=f"{gateway.url}/v1", headers=headers, timeout=30)

    def failing_over(client: httpx.Client, usage: tuple[int, int]) -> None:
        admin.post("/cooldowns/clear").raise_for_status()  # flaky is tried first again
        upstream.queue(RATE_LIMITED, Json(completion_with(MODEL, "hi", usage=usage)))
        answered = chat(client)
        assert answered.headers["x-routed-via"] == f"steady/{MODEL}", answered.text

    with laptop:
        for _ in range(API_REQUESTS):
            failing_over(api, API_USAGE)
        failing_over(laptop, LAPTOP_USAGE)
        upstream.queue(without_usage())  # flaky cools down since the 429: steady serves at once
        assert chat(laptop).headers["x-routed-via"] == f"steady/{MODEL}"
    admin.post("/cooldowns/clear").raise_for_status()
    upstream.queue(RATE_LIMITED, server_error(503, "steady is down"))
    # "auto": each candidate once (with the model named, steady would be tried again after its 503).
    assert chat(api, "auto").status_code == 502  # nothing served it


def usage_of(admin: httpx.Client, by: str) -> dict[str, dict[str, Any]]:
    """The range's groups as the admin API answers them, by label."""
    return {g["group"]: g for g in admin.get("/usage", params={"by": by}).json()["groups"]}


def cells(row: Locator) -> Locator:
    return row.locator("td")


def slot_sums(page: Page) -> dict[str, int]:
    return page.evaluate("""() => {
      const slots = [...document.querySelectorAll('[data-testid="usage-slot"]')];
      const sum = (name) => slots.reduce((n, s) => n + Number(s.getAttribute(name)), 0);
      return { slots: slots.length, requests: sum("data-requests"), errors: sum("data-errors") };
    }""")


def screenshot(page: Page, name: str) -> None:
    """The panel in a full-page capture (clear of the sticky top bar)."""
    page.evaluate("window.scrollTo(0, 0)")
    box = page.get_by_test_id("usage").bounding_box()
    assert box is not None
    page.screenshot(
        path=ARTIFACTS / name,
        full_page=True,
        clip={"x": 0, "y": max(box["y"] - 8, 0), "width": page.viewport_size["width"], "height": box["height"] + 16},
    )


def test_an_empty_range_says_so(page, gateway):
    login(page, gateway.admin_token)
    usage = page.get_by_test_id("usage")

    expect(usage.get_by_test_id("usage-empty")).to_have_text("此时间范围内还没有流量。")
    expect(usage.get_by_test_id("usage-failures-empty")).to_have_text("没有失败记录。")
    expect(usage.locator("svg")).to_have_count(0)
    expect(usage.locator('[data-range="24h"]')).to_have_attribute("aria-pressed", "true")
    page.get_by_test_id("lang-toggle").click()
    expect(usage.get_by_test_id("usage-empty")).to_have_text("No traffic in this range yet.")


def test_usage_panel_shows_the_traffic(page, gateway, admin, api, add_provider, upstream):
    add_provider(name="flaky", priority=1, models=[MODEL])
    add_provider(name="steady", priority=2, models=[MODEL])
    send_traffic(gateway, admin, api, upstream)
    clients = usage_of(admin, "client")
    laptop_tokens = clients["laptop"]["tokens"]
    assert laptop_tokens["estimated_input"] > 0
    latency = usage_of(admin, "provider")["steady"]["latency_ms"]
    ARTIFACTS.mkdir(exist_ok=True)

    login(page, gateway.admin_token)
    page.get_by_test_id("lang-toggle").click()
    usage = page.get_by_test_id("usage")

    # The totals line, and the time chart's legend and bars: 24 requests (23 served, 22 after a
    # failover), 24 errors (23 from flaky, 1 from steady).
    expect(usage.locator('[data-testid="usage-total"] .strong')).to_have_text(["24", "23", "22", "24", "0", "0"])
    time_chart = usage.get_by_test_id("usage-chart-time")
    expect(time_chart.locator("h3")).to_have_text("Requests and errors over time")
    expect(time_chart.get_by_test_id("usage-legend-total")).to_have_text(["24", "24"])
    sums = slot_sums(page)
    assert (sums["requests"], sums["errors"]) == (24, 24)
    assert sums["slots"] in (24, 25)  # the hours of the last 24 h, the one holding its start included

    # Per provider, most requests first; the requests nothing served are the "no provider" row.
    rows = usage.get_by_test_id("usage-provider")
    expect(rows).to_have_count(3)
    expect(cells(rows.nth(0))).to_have_text(["steady", "23", "23", "22", "1", "upstream error 1", "0", "0"])
    expect(cells(rows.nth(1))).to_have_text(["no provider (all failed)", "1", "0", "0", "0", "—", "0", "0"])
    expect(cells(rows.nth(2))).to_have_text(["flaky", "0", "0", "0", "23", "rate limited 23", "0", "0"])
    expect(rows.nth(2).locator('[data-class="rate_limited"]')).to_have_attribute("data-value", "23")

    # Tokens per client: reported plus estimated, the estimate said apart.
    tokens = usage.get_by_test_id("usage-client")
    expect(tokens).to_have_count(2)
    expect(tokens.nth(0)).to_have_attribute("data-group", "(api token)")
    expect(tokens.nth(0).locator(".strong")).to_have_text("API token")
    expect(tokens.nth(0).get_by_test_id("usage-tokens-in")).to_have_text("31,500 in")
    expect(tokens.nth(0).get_by_test_id("usage-tokens-out")).to_have_text("420 out")
    expect(tokens.nth(0).locator("rect.s-in")).to_have_attribute("data-value", "31500")
    estimated_in, estimated_out = laptop_tokens["estimated_input"], laptop_tokens["estimated_output"]
    expect(tokens.nth(1).locator(".strong")).to_have_text("laptop")
    expect(tokens.nth(1).get_by_test_id("usage-tokens-in")).to_have_text(
        f"{LAPTOP_USAGE[0] + estimated_in:,} in ({estimated_in:,} est.)"
    )
    expect(tokens.nth(1).get_by_test_id("usage-tokens-out")).to_have_text(
        f"{LAPTOP_USAGE[1] + estimated_out:,} out ({estimated_out:,} est.)"
        if estimated_out
        else f"{LAPTOP_USAGE[1]} out"
    )

    # Latency: only steady answered anything; its p50 and p95 as numbers in ms.
    latencies = usage.get_by_test_id("usage-latency")
    expect(latencies).to_have_count(1)
    expect(latencies.locator(".strong")).to_have_text("steady")
    first_byte = latencies.get_by_test_id("usage-latency-first")
    expect(first_byte).to_have_text(re.compile(r"^first byte: p50 [\d,]+ ms · p95 [\d,]+ ms$"))
    assert float(first_byte.get_attribute("data-p50")) == latency["first_byte"]["p50"]
    assert float(first_byte.get_attribute("data-p95")) == latency["first_byte"]["p95"]
    expect(latencies.get_by_test_id("usage-latency-end")).to_have_text(
        re.compile(r"^to the end: p50 [\d,]+ ms · p95 [\d,]+ ms$")
    )

    # Recent failures, newest first: 20 of 24 until "show all".
    failures = usage.get_by_test_id("usage-failure")
    expect(failures).to_have_count(20)
    toggle = usage.get_by_test_id("usage-failures-toggle")
    expect(toggle).to_have_text("Show all 24")
    toggle.click()
    expect(failures).to_have_count(24)
    expect(toggle).to_have_text("Show the latest 20")
    times = [int(t) for t in failures.evaluate_all("fs => fs.map(f => f.dataset.time)")]
    assert times == sorted(times, reverse=True)
    classes = failures.evaluate_all("fs => fs.map(f => f.dataset.class)")
    assert sorted(classes) == ["rate_limited"] * 23 + ["upstream_error"]
    last_request = {
        (
            f.get_by_test_id("usage-failure-provider").inner_text(),
            f.get_by_test_id("usage-failure-class").inner_text(),
            f.get_by_test_id("usage-failure-status").inner_text(),
            f.get_by_test_id("usage-failure-client").inner_text(),
        )
        for f in failures.all()[:2]
    }
    assert last_request == {
        ("steady", "upstream error", "HTTP 503", "API token"),
        ("flaky", "rate limited", "HTTP 429", "API token"),
    }
    laptops = failures.nth(2)
    expect(laptops.get_by_test_id("usage-failure-client")).to_have_text("laptop")
    expect(laptops.get_by_test_id("usage-failure-model")).to_have_text(MODEL)
    expect(laptops.get_by_test_id("usage-failure-message")).to_contain_text("Rate limit reached")
    expect(laptops.get_by_test_id("usage-failure-key")).to_have_text(re.compile(r"^key #\d+$"))
    toggle.click()
    expect(failures).to_have_count(20)

    # Screenshots, and nothing wider than a 390 px screen.
    screenshot(page, "usage-en-1280.png")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "usage-en-390.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    # Both languages: the chart titles and the id-0 labels in Chinese.
    page.get_by_test_id("lang-toggle").click()
    expect(time_chart.locator("h3")).to_have_text("请求与错误趋势")
    expect(usage.get_by_test_id("usage-chart-tokens").locator("h3")).to_have_text("各客户端的 token 用量")
    expect(usage.get_by_test_id("usage-chart-latency").locator("h3")).to_have_text("各服务商延迟")
    expect(tokens.nth(0).locator(".strong")).to_have_text("API 令牌")
    expect(cells(rows.nth(1)).first).to_have_text("无服务商（全部失败）")
    expect(tokens.nth(0).get_by_test_id("usage-tokens-in")).to_have_text("输入 31,500")
    screenshot(page, "usage-zh-390.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})
    screenshot(page, "usage-zh-1280.png")


def test_the_range_switch_reloads_the_panel(page, gateway, admin, api, add_provider, upstream):
    # Each range adds up the same traffic: all of it is of the last hour.
    add_provider(name="solo", models=[MODEL])
    for _ in range(3):
        assert chat(api).status_code == 200
    login(page, gateway.admin_token)
    usage = page.get_by_test_id("usage")
    body = page.get_by_test_id("usage-body")
    ranges = usage.get_by_test_id("usage-range")
    expect(ranges).to_have_text(["24 小时", "7 天", "30 天"])
    expect(body).to_have_attribute("data-shown", "24h")
    total = slot_sums(page)["requests"]
    assert total == 3

    usage.locator('[data-range="7d"]').click()
    expect(body).to_have_attribute("data-shown", "7d")
    assert ranges.evaluate_all("bs => bs.map(b => b.getAttribute('aria-pressed'))") == ["false", "true", "false"]
    sums = slot_sums(page)
    assert sums["slots"] in (7 * 24, 7 * 24 + 1)  # one bar an hour
    assert sums["requests"] == total
    expect(usage.get_by_test_id("usage-chart-time")).to_contain_text("每小时")

    usage.locator('[data-range="30d"]').click()
    expect(body).to_have_attribute("data-shown", "30d")
    sums = slot_sums(page)
    assert sums["slots"] in (30, 31)  # one bar a UTC day
    assert sums["requests"] == total
    expect(usage.get_by_test_id("usage-chart-time")).to_contain_text("每天（UTC）")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "usage-zh-390-30d.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    usage.locator('[data-range="24h"]').click()
    expect(body).to_have_attribute("data-shown", "24h")
    assert slot_sums(page)["requests"] == total


# --- What OpenRouter pinning saves (seed 003's estimate, GET /api/admin/openrouter) -------------

# For deepseek/… the official provider is "deepseek"; "deepinfra" is cheaper and faster, so it is
# pinned. For qwen/… no "qwen" endpoint is offered: no official price is known.
DEEPSEEK = "deepseek/deepseek-chat"
QWEN = "qwen/qwen3-coder"
DEEPSEEK_ENDPOINTS = [
    endpoint("deepinfra", prompt="0.0000003", completion="0.0000009", cache_read="0.00000003", throughput=50.0),
    endpoint("deepseek", prompt="0.00000056", completion="0.00000168", cache_read="0.00000007", throughput=20.0),
]
QWEN_ENDPOINTS = [endpoint("chutes", prompt="0.0000002", completion="0.0000008", cache_read="0.00000002")]


@pytest.fixture(scope="module")
def openrouter_server() -> Iterator[FakeOpenRouter]:
    server = FakeOpenRouter().start()
    yield server
    server.stop()


def usd(value: float) -> str:
    return f"${value:,.2f}"


def test_the_savings_of_each_pinned_openrouter_model(page, gateway, admin, api, openrouter_server):
    openrouter_server.reset()
    openrouter_server.set_endpoints(DEEPSEEK, DEEPSEEK_ENDPOINTS)
    openrouter_server.set_endpoints(QWEN, QWEN_ENDPOINTS)
    admin.put("/settings", json={"openrouter_origin": openrouter_server.origin}).raise_for_status()
    admin.post(
        "/providers",
        json={
            "name": "openrouter",
            "platform": "openrouter",
            "base_url": openrouter_server.base_url,
            "api_key": "sk-or-test-key-0000000000",
            "models": [DEEPSEEK, QWEN],
        },
    ).raise_for_status()
    for model in (DEEPSEEK, QWEN):
        assert chat(api, model).status_code == 200
    estimates = {m["model"]: m["estimate"] for m in admin.get("/openrouter").json()["models"]}
    deepseek, qwen = estimates[DEEPSEEK], estimates[QWEN]
    assert (deepseek["pinned"], deepseek["official"], qwen["pinned"], qwen["official"]) == (
        "deepinfra",
        "deepseek",
        "chutes",
        None,
    )
    assert deepseek["savings_usd"] > 0

    login(page, gateway.admin_token)
    page.get_by_test_id("lang-toggle").click()
    lines = page.get_by_test_id("usage").get_by_test_id("usage-savings")

    expect(lines).to_have_count(2)
    expect(lines.filter(has_text=DEEPSEEK)).to_contain_text(
        f"pinned deepinfra: {usd(deepseek['pinned_usd'])} vs official deepseek: {usd(deepseek['official_usd'])} "
        f"for 10M input (98% cached) + 1M output tokens — saves {usd(deepseek['savings_usd'])}"
    )
    expect(lines.filter(has_text=QWEN)).to_contain_text(
        f"pinned chutes: {usd(qwen['pinned_usd'])} for 10M input (98% cached) + 1M output tokens; "
        "no price is known for the model's official endpoint."
    )
    page.get_by_test_id("lang-toggle").click()
    expect(lines.filter(has_text=DEEPSEEK)).to_contain_text(f"节省 {usd(deepseek['savings_usd'])}")
    expect(lines.filter(has_text=QWEN)).to_contain_text("官方端点的价格未知")
