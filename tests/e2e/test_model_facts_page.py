"""The config page's part of a router that knows its models (SPEC §19), in Chromium against the
local runtime and the fake upstream: each provider's model facts with their sources, edited and
saved as the admin's own; each key's count against its free-tier caps; the routing strategy.

The page opens in English here (``watched_page``'s locale), except where a test reads the Chinese
strings. The providers are on the ``groq`` platform (pointed at the fake), so the presets' figures
for ``llama-3.1-8b-instant`` apply: a 131,072-token window, tools, no vision, 30 requests a minute,
14,400 a day and 6,000 tokens a minute. Waiting is Playwright's own (``expect``); no test sleeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from support.browser import login, open_fold, watched_page
from support.runtime import ROOT
from support.upstream import UPSTREAM_KEY, Json

ARTIFACTS = ROOT / "test-artifacts"
GROQ_MODEL = "llama-3.1-8b-instant"


@pytest.fixture
def page(browser: Browser, gateway, admin) -> Iterator[Page]:
    with watched_page(browser, gateway.url, locale="en-US") as opened:
        yield opened


def row(page: Page, name: str) -> Locator:
    return page.get_by_test_id("provider-row").filter(
        has=page.get_by_test_id("provider-name").get_by_text(name, exact=True)
    )


def facts_row(page: Page, provider: str, model: str) -> Locator:
    return row(page, provider).locator(f'[data-testid="facts-row"][data-model="{model}"]')


def cell(facts: Locator, field: str) -> Locator:
    return facts.locator(f'td[data-field="{field}"]')


def provider(admin: httpx.Client, name: str) -> dict:
    return next(p for p in admin.get("/providers").json()["providers"] if p["name"] == name)


def open_facts(page: Page, name: str) -> None:
    fold = row(page, name).get_by_test_id("model-facts")
    if fold.get_attribute("open") is None:
        fold.locator("summary").click()
    expect(fold).to_have_attribute("open", "")


def test_model_facts_show_where_each_came_from(page, gateway, add_provider):
    listed = {"context": 8192, "vision": True}
    add_provider(name="groq", platform="groq", models=[GROQ_MODEL, {"id": "house-model", "listed": listed}])
    login(page, gateway.admin_token)

    fold = row(page, "groq").get_by_test_id("model-facts")
    expect(fold.locator("summary")).to_have_text("Model facts (2)")
    expect(fold).not_to_have_attribute("open", "")  # folded: a provider may declare many models
    open_facts(page, "groq")

    preset = facts_row(page, "groq", GROQ_MODEL)
    expect(preset.get_by_test_id("fact-context")).to_have_value("")  # nothing of the admin's
    expect(preset.get_by_test_id("fact-context")).to_have_attribute("placeholder", "131072")
    expect(cell(preset, "context").get_by_test_id("fact-source")).to_have_text("preset")
    expect(preset.get_by_test_id("fact-rpm")).to_have_attribute("placeholder", "30")
    expect(preset.get_by_test_id("fact-rpd")).to_have_attribute("placeholder", "14400")
    expect(preset.get_by_test_id("fact-tpm")).to_have_attribute("placeholder", "6000")
    expect(preset.get_by_test_id("fact-tools").locator("option:checked")).to_have_text("(yes)")
    expect(preset.get_by_test_id("fact-vision").locator("option:checked")).to_have_text("(no)")
    expect(preset.get_by_test_id("fact-json").locator("option:checked")).to_have_text("unknown")
    expect(cell(preset, "json").get_by_test_id("fact-source")).to_have_count(0)

    house = facts_row(page, "groq", "house-model")
    expect(house.get_by_test_id("fact-context")).to_have_attribute("placeholder", "8192")
    expect(cell(house, "context").get_by_test_id("fact-source")).to_have_text("listed")
    expect(house.get_by_test_id("fact-vision").locator("option:checked")).to_have_text("(yes)")
    expect(cell(house, "vision").get_by_test_id("fact-source")).to_have_text("listed")
    expect(house.get_by_test_id("fact-rpm")).not_to_have_attribute("placeholder", re.compile("."))
    row(page, "groq").screenshot(path=ARTIFACTS / "model-facts-en.png")
    # On a phone the table scrolls inside its part; the page itself does not get wider.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(preset.get_by_test_id("fact-context")).to_be_attached()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_editing_a_models_facts_saves_them_as_the_admins(page, gateway, admin, add_provider):
    listed = {"context": 32768}
    add_provider(
        name="groq", platform="groq", models=[GROQ_MODEL, {"id": "house-model", "kind": "chat", "listed": listed}]
    )
    login(page, gateway.admin_token)
    open_facts(page, "groq")

    preset = facts_row(page, "groq", GROQ_MODEL)
    preset.get_by_test_id("fact-context").fill("8192")
    preset.get_by_test_id("fact-rpm").fill("10")
    facts_row(page, "groq", "house-model").get_by_test_id("fact-json").select_option("no")
    row(page, "groq").get_by_test_id("facts-save").click()

    expect(row(page, "groq").get_by_test_id("facts-message")).to_have_text("Saved the model facts of “groq”.")
    expect(cell(preset, "context").get_by_test_id("fact-source")).to_have_text("yours")
    expect(cell(preset, "rpm").get_by_test_id("fact-source")).to_have_text("yours")
    expect(preset.get_by_test_id("fact-context")).to_have_value("8192")
    expect(row(page, "groq").get_by_test_id("model-facts")).to_have_attribute("open", "")  # still unfolded
    saved = provider(admin, "groq")
    assert saved["capabilities"][GROQ_MODEL]["context"] == 8192
    assert saved["capabilities"][GROQ_MODEL]["rpm"] == 10
    assert (
        saved["capabilities"][GROQ_MODEL]["sources"] | {"context": "admin", "rpm": "admin"}
        == saved["capabilities"][GROQ_MODEL]["sources"]
    )
    assert saved["capabilities"][GROQ_MODEL]["sources"]["rpd"] == "preset"
    # Only what the admin set; the kind and the listing of the other entry are kept as they were.
    assert saved["models"] == [
        {"id": GROQ_MODEL, "context": 8192, "rpm": 10},
        {"id": "house-model", "kind": "chat", "json": False, "listed": listed},
    ]
    assert saved["capabilities"]["house-model"]["sources"]["json"] == "admin"

    # Emptying the admin's window lets the next source (the presets) apply again.
    preset.get_by_test_id("fact-context").fill("")
    row(page, "groq").get_by_test_id("facts-save").click()
    expect(cell(preset, "context").get_by_test_id("fact-source")).to_have_text("preset")
    expect(preset.get_by_test_id("fact-context")).to_have_attribute("placeholder", "131072")
    saved = provider(admin, "groq")
    assert saved["models"][0] == {"id": GROQ_MODEL, "rpm": 10}
    assert saved["capabilities"][GROQ_MODEL]["sources"]["context"] == "preset"


def test_the_providers_own_caps_are_saved_and_apply_to_its_models_without_their_own(page, gateway, admin, add_provider):
    add_provider(name="house", models=["a", {"id": "b", "rpm": 3}])
    login(page, gateway.admin_token)
    open_facts(page, "house")

    caps = row(page, "house").get_by_test_id("facts-provider-row")
    caps.get_by_test_id("provider-cap-rpm").fill("10")
    caps.get_by_test_id("provider-cap-rpd").fill("500")
    row(page, "house").get_by_test_id("facts-save").click()

    expect(row(page, "house").get_by_test_id("facts-message")).to_have_text("Saved the model facts of “house”.")
    expect(cell(facts_row(page, "house", "a"), "rpm").get_by_test_id("fact-source")).to_have_text("provider")
    expect(cell(facts_row(page, "house", "b"), "rpm").get_by_test_id("fact-source")).to_have_text("yours")
    saved = provider(admin, "house")
    assert saved["caps"] == {"rpm": 10, "rpd": 500}
    assert (saved["capabilities"]["a"]["rpm"], saved["capabilities"]["b"]["rpm"]) == (10, 3)
    assert saved["capabilities"]["b"]["rpd"] == 500

    caps.get_by_test_id("provider-cap-rpm").fill("")
    caps.get_by_test_id("provider-cap-rpd").fill("")
    row(page, "house").get_by_test_id("facts-save").click()
    expect(cell(facts_row(page, "house", "a"), "rpm").get_by_test_id("fact-source")).to_have_count(0)
    assert provider(admin, "house")["caps"] is None


def test_a_window_learned_from_a_refusal_shows_as_learned(page, gateway, api, add_provider, upstream):
    add_provider(name="groq", platform="groq", models=[GROQ_MODEL])
    refusal = {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. Please reduce the length.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    upstream.queue(Json(refusal, 400))
    api.post("/chat/completions", json={"model": GROQ_MODEL, "messages": [{"role": "user", "content": "x"}]})
    login(page, gateway.admin_token)
    open_facts(page, "groq")

    facts = facts_row(page, "groq", GROQ_MODEL)
    expect(cell(facts, "context").get_by_test_id("fact-source")).to_have_text("learned ≤ 4096")
    expect(cell(facts, "context").get_by_test_id("fact-source")).to_have_attribute("data-source", "learned")
    expect(cell(facts, "rpm").get_by_test_id("fact-source")).to_have_text("preset")


def test_a_fact_that_is_not_a_positive_integer_is_refused_beside_its_field(page, gateway, admin, add_provider):
    add_provider(name="groq", platform="groq", models=[GROQ_MODEL])
    login(page, gateway.admin_token)
    open_facts(page, "groq")

    facts = facts_row(page, "groq", GROQ_MODEL)
    facts.get_by_test_id("fact-rpd").fill("0")
    row(page, "groq").get_by_test_id("facts-save").click()

    expect(row(page, "groq").get_by_test_id("field-error")).to_have_text(
        f"Req/day of {GROQ_MODEL}: a whole number of 1 or more is expected (or empty)."
    )
    expect(facts.get_by_test_id("fact-rpd")).to_have_attribute("aria-invalid", "true")
    assert provider(admin, "groq")["models"] == [GROQ_MODEL]


def test_the_edit_form_keeps_the_models_facts(page, gateway, admin, add_provider):
    entry = {"id": GROQ_MODEL, "context": 8192, "tools": False, "listed": {"context": 131072}}
    add_provider(name="groq", platform="groq", models=[entry, "other-model"])
    login(page, gateway.admin_token)

    row(page, "groq").get_by_test_id("provider-edit").click()
    expect(page.get_by_test_id("edit-models")).to_have_value(f"{GROQ_MODEL}\nother-model")
    page.get_by_test_id("edit-models").fill(f"{GROQ_MODEL}\nother-model embedding\nnew-model")
    page.get_by_test_id("edit-save").click()

    expect(row(page, "groq").get_by_test_id("model-chip")).to_have_count(3)
    assert provider(admin, "groq")["models"] == [entry, {"id": "other-model", "kind": "embedding"}, "new-model"]


def test_quick_add_stores_what_the_listing_states(page, gateway, admin, upstream):
    listing = {
        "object": "list",
        "data": [
            {"id": "beta-small", "object": "model", "context_window": 32768},
            {"id": "beta-plain", "object": "model"},
        ],
    }
    upstream.serve_models(Json(listing))
    login(page, gateway.admin_token)

    page.get_by_test_id("preset-platform").select_option("groq")
    page.get_by_test_id("preset-base-url").fill(upstream.base_url)
    page.get_by_test_id("preset-key").fill(UPSTREAM_KEY)
    page.get_by_test_id("preset-fetch-models").click()
    models = page.get_by_test_id("preset-model")
    for model in ("beta-small", "beta-plain"):
        models.filter(has_text=model).get_by_role("checkbox").check()
    page.get_by_test_id("preset-submit").click()

    open_facts(page, "groq")
    small = facts_row(page, "groq", "beta-small")
    expect(small.get_by_test_id("fact-context")).to_have_attribute("placeholder", "32768")
    expect(cell(small, "context").get_by_test_id("fact-source")).to_have_text("listed")
    added = provider(admin, "groq")["models"]
    assert {"id": "beta-small", "listed": {"context": 32768}} in added
    assert "beta-plain" in added  # the listing states nothing of it


def test_custom_add_stores_what_the_listing_states(page, gateway, admin, upstream):
    upstream.serve_models(Json({"object": "list", "data": [{"id": "wide", "context_length": 65536}]}))
    login(page, gateway.admin_token)

    open_fold(page, "custom-add")
    page.get_by_test_id("custom-name").fill("house")
    page.get_by_test_id("custom-base-url").fill(upstream.base_url)
    page.get_by_test_id("custom-key").fill(UPSTREAM_KEY)
    page.get_by_test_id("custom-fetch-models").click()
    page.get_by_test_id("custom-model").filter(has_text="wide").get_by_role("checkbox").check()
    page.get_by_test_id("custom-submit").click()

    expect(row(page, "house")).to_be_visible()
    assert provider(admin, "house")["models"] == [{"id": "wide", "listed": {"context": 65536}}]


def test_a_keys_count_against_its_caps(page, gateway, admin, api, add_provider, upstream):
    add_provider(name="groq", platform="groq", models=[GROQ_MODEL, "uncapped"])
    login(page, gateway.admin_token)
    caps = row(page, "groq").get_by_test_id("key-cap")
    expect(caps).to_have_text([f"{GROQ_MODEL}: 0/30 per min · 0/14400 per day · 0/6000 tokens per min"])

    answer = api.post("/chat/completions", json={"model": GROQ_MODEL, "messages": [{"role": "user", "content": "x"}]})
    assert answer.status_code == 200, answer.text
    page.locator("#providers-refresh").click()

    expect(caps).to_have_text(
        [re.compile(rf"^{GROQ_MODEL}: 1/30 per min · 1/14400 per day · [1-9]\d*/6000 tokens per min$")]
    )
    expect(caps).to_have_attribute("data-model", GROQ_MODEL)  # the model without a cap shows none

    # A cap the admin sets is the one counted against; at it, the key is marked.
    admin.put(
        f"/providers/{provider(admin, 'groq')['id']}", json={"models": [{"id": GROQ_MODEL, "rpm": 1}, "uncapped"]}
    )
    page.locator("#providers-refresh").click()
    expect(caps).to_contain_text(f"{GROQ_MODEL}: 1/1 per min")
    expect(caps).to_have_class(re.compile(r"\bwarn\b"))


def test_a_keys_caps_in_chinese(browser, gateway, admin, add_provider):
    add_provider(name="groq", platform="groq", models=[GROQ_MODEL])
    with watched_page(browser, gateway.url) as zh:
        login(zh, gateway.admin_token)
        expect(row(zh, "groq").get_by_test_id("key-cap")).to_have_text(
            f"{GROQ_MODEL}：每分钟 0/30 · 每日 0/14400 · 每分钟令牌 0/6000"
        )
        fold = row(zh, "groq").get_by_test_id("model-facts")
        expect(fold.locator("summary")).to_have_text("模型参数（1）")
        fold.locator("summary").click()
        expect(
            facts_row(zh, "groq", GROQ_MODEL).locator('td[data-field="rpm"]').get_by_test_id("fact-source")
        ).to_have_text("预设")


def test_the_strategy_select_saves(page, gateway, admin):
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    strategy = page.get_by_test_id("setting-row").filter(has=page.get_by_test_id("setting-routing_strategy"))
    expect(strategy.locator("label")).to_have_text("Routing strategy")
    expect(page.get_by_test_id("setting-routing_strategy")).to_have_value("priority")
    expect(page.get_by_test_id("setting-routing_strategy").locator("option")).to_have_text(
        ["Priority (provider order)", "Fastest", "Most reliable", "Balanced"]
    )
    expect(strategy.get_by_test_id("setting-source")).to_have_text("default")

    page.get_by_test_id("setting-routing_strategy").select_option("fastest")
    page.get_by_test_id("settings-save").click()

    expect(page.locator("#settings-message")).to_have_text("Settings saved.")
    expect(strategy.get_by_test_id("setting-source")).to_have_text("saved (D1)")
    expect(page.get_by_test_id("setting-routing_strategy")).to_have_value("fastest")
    assert (
        admin.get("/settings").json()["settings"]["routing_strategy"].items()
        >= {
            "value": "fastest",
            "source": "d1",
        }.items()
    )

    strategy.get_by_test_id("setting-reset").click()  # back to the default
    expect(strategy.get_by_test_id("setting-source")).to_have_text("default")
    expect(page.get_by_test_id("setting-routing_strategy")).to_have_value("priority")
    assert admin.get("/settings").json()["settings"]["routing_strategy"]["value"] == "priority"
