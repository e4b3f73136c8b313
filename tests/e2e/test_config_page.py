"""The config page (SPEC §8.1) in a real browser: Debian's Chromium driven by Playwright, against
the local runtime and the fake upstream.

Each test gets a fresh browser context (empty sessionStorage and localStorage) and an empty
configuration (the ``admin`` fixture). Waiting is Playwright's own (``expect`` retries until the
page shows what is asserted); no test sleeps. Screenshots of the main view go to
``test-artifacts/``. A test that changes the tokens puts the session's tokens back itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from gateway.core.settings import SETTINGS, ChoiceSetting
from support.browser import login, open_fold, watched_page
from support.d1 import d1_execute
from support.openrouter import FakeOpenRouter, endpoint
from support.runtime import ROOT
from support.upstream import UPSTREAM_KEY, Json

ARTIFACTS = ROOT / "test-artifacts"
INJECTION = "<img src=x onerror=alert(1)>"
CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")


@dataclass
class Watch:
    """The dialogs the page opened."""

    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def page(browser: Browser, gateway, admin) -> Iterator[Page]:
    with watched_page(browser, gateway.url) as opened:
        yield opened


def custom_add(page: Page, name: str, base_url: str, models: str) -> None:
    """Open Custom add, fill it (the fake's key) and submit it."""
    open_fold(page, "custom-add")
    page.get_by_test_id("custom-name").fill(name)
    page.get_by_test_id("custom-base-url").fill(base_url)
    page.get_by_test_id("custom-key").fill(UPSTREAM_KEY)
    page.get_by_test_id("custom-models").fill(models)
    page.get_by_test_id("custom-submit").click()


def row(page: Page, name: str):
    return page.get_by_test_id("provider-row").filter(
        has=page.get_by_test_id("provider-name").get_by_text(name, exact=True)
    )


def providers(admin: httpx.Client) -> dict[str, dict]:
    return {p["name"]: p for p in admin.get("/providers").json()["providers"]}


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def ask(api, model="m"):
    return api.post("/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "x"}]})


def test_page_is_served_self_contained_with_a_strict_policy(gateway):
    response = httpx.get(f"{gateway.url}/")

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    policy = {d.split()[0]: d.split()[1:] for d in response.headers["content-security-policy"].split(";") if d.strip()}
    # Nothing is loaded from elsewhere, nor run inline: the browser refuses it (and every test's
    # page, watched_page, fails on a refusal).
    assert policy["default-src"] == ["'none'"]
    assert policy["script-src"] == policy["style-src"] == policy["connect-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:"]
    assert policy["frame-ancestors"] == ["'none'"]


def test_login_with_a_wrong_then_the_right_token(page, gateway):
    page.goto("/")
    page.get_by_test_id("login-token").fill("not-the-admin-token")
    page.get_by_test_id("login-submit").click()

    expect(page.get_by_test_id("login-message")).to_have_text("管理令牌无效，请重新登录。")
    expect(page.get_by_test_id("cooldown-bar")).to_be_hidden()

    page.get_by_test_id("login-token").fill(gateway.admin_token)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("cooldown-bar")).to_contain_text("所有服务商均可用")
    expect(page.get_by_test_id("provider-list")).to_contain_text("还没有服务商")

    page.reload()  # the token is kept for the tab's session
    expect(page.get_by_test_id("cooldown-bar")).to_be_visible()


def test_the_api_token_is_not_an_admin_token(page, gateway):
    page.goto("/")
    page.get_by_test_id("login-token").fill(gateway.api_token)
    page.get_by_test_id("login-submit").click()

    expect(page.get_by_test_id("login-message")).to_be_visible()


def test_quick_add_from_a_preset_with_fetch_search_and_tick(page, gateway, admin, api, upstream):
    upstream.serve_models(["whisper-large", "beta-small", "beta-large", "llama-3.3-70b-versatile"])
    groq = {p["id"]: p for p in admin.get("/platforms").json()["platforms"]}["groq"]
    login(page, gateway.admin_token)

    page.get_by_test_id("preset-platform").select_option("groq")
    expect(page.get_by_test_id("preset-base-url")).to_have_value(groq["base_url"])
    models = page.get_by_test_id("preset-model")
    expect(models).to_have_count(len(groq["default_models"]))
    page.get_by_test_id("preset-base-url").fill(upstream.base_url)  # the fake stands in for Groq
    page.get_by_test_id("preset-key").fill(UPSTREAM_KEY)
    page.get_by_test_id("preset-fetch-models").click()
    expect(models).to_have_count(len(set(groq["default_models"]) | {"whisper-large", "beta-small", "beta-large"}))
    page.get_by_test_id("preset-model-search").fill("BETA")
    expect(models).to_have_count(2)
    models.filter(has_text="beta-small").get_by_role("checkbox").check()
    page.get_by_test_id("preset-submit").click()

    expect(row(page, "groq")).to_contain_text("beta-small")
    assert upstream.model_list_requests[-1].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    added = providers(admin)["groq"]
    assert (added["platform"], added["base_url"]) == ("groq", upstream.base_url)
    assert added["models"] == [*groq["default_models"], "beta-small"]
    assert ask(api, "beta-small").headers["x-routed-via"] == "groq/beta-small"


def test_cloudflare_asks_for_the_account_id(page, gateway):
    login(page, gateway.admin_token)

    page.get_by_test_id("preset-platform").select_option("cloudflare")
    page.get_by_test_id("preset-account-id").fill("0123abcd")

    expect(page.get_by_test_id("preset-base-url")).to_have_value(
        "https://api.cloudflare.com/client/v4/accounts/0123abcd/ai/v1"
    )
    expect(page.get_by_test_id("preset-fetch-models")).to_be_disabled()


def test_a_failed_model_fetch_shows_the_gateway_message(page, gateway, upstream):
    # Like some platforms, the fake echoes the key it was sent: the page must still not show it.
    upstream.serve_models(Json({"error": {"message": "Invalid API Key sk-wrong-key-000000000000"}}, 401))
    login(page, gateway.admin_token)

    page.get_by_test_id("preset-platform").select_option("groq")
    page.get_by_test_id("preset-base-url").fill(upstream.base_url)
    page.get_by_test_id("preset-key").fill("sk-wrong-key-000000000000")
    page.get_by_test_id("preset-fetch-models").click()

    expect(page.locator("#preset-message")).to_contain_text("HTTP 401")
    expect(page.locator("#preset-message")).not_to_contain_text("sk-wrong-key")


def test_custom_add(page, gateway, admin, upstream):
    login(page, gateway.admin_token)

    expect(page.get_by_test_id("custom-name")).to_be_hidden()  # folded: Quick add comes first
    open_fold(page, "custom-add")
    page.get_by_test_id("custom-name").fill("local-llama")
    page.get_by_test_id("custom-platform").fill("ollama")
    page.get_by_test_id("custom-base-url").fill(upstream.base_url)
    page.get_by_test_id("custom-key").fill(UPSTREAM_KEY)
    page.get_by_test_id("custom-models").fill("llama3.2\n\n  qwen2.5  \n")
    page.get_by_test_id("custom-priority").fill("7")
    page.get_by_test_id("custom-timeout").fill("2.5")
    page.get_by_test_id("custom-submit").click()

    expect(row(page, "local-llama")).to_contain_text("qwen2.5")
    added = providers(admin)["local-llama"]
    assert (added["platform"], added["models"], added["priority"], added["timeout_ms"]) == (
        "ollama",
        ["llama3.2", "qwen2.5"],
        7,
        2500,
    )
    expect(page.get_by_test_id("custom-name")).to_have_value("")  # the form is ready for the next one


def test_model_kinds_are_shown_and_set_on_the_page(page, gateway, admin, upstream):
    """SPEC §12.6: each model's kind shows beside it, guessed from its id or set after a space."""
    login(page, gateway.admin_token)

    custom_add(page, "mixed", upstream.base_url, "llama3.2\nbge-m3\nhouse-vectors embedding\n")

    chips = row(page, "mixed").get_by_test_id("model-chip")
    expect(chips).to_have_text(["llama3.2", re.compile(r"^bge-m3 · \S+$"), re.compile(r"^house-vectors · \S+$")])
    assert chips.evaluate_all("cs => cs.map(c => c.dataset.kind)") == ["chat", "embedding", "embedding"]
    added = providers(admin)["mixed"]
    assert added["models"] == ["llama3.2", "bge-m3", {"id": "house-vectors", "kind": "embedding"}]

    row(page, "mixed").get_by_test_id("provider-edit").click()
    expect(page.get_by_test_id("edit-models")).to_have_value("llama3.2\nbge-m3\nhouse-vectors embedding")
    page.get_by_test_id("edit-models").fill("llama3.2\nbge-m3 chat\nhouse-vectors video")
    page.get_by_test_id("edit-save").click()
    # The 400 names the field: shown under the models being edited.
    expect(row(page, "mixed").get_by_test_id("field-error")).to_contain_text(
        "chat, embedding, transcription, speech, image"
    )
    expect(page.get_by_test_id("edit-models")).to_have_attribute("aria-invalid", "true")

    page.get_by_test_id("edit-models").fill("llama3.2\nbge-m3 chat")
    page.get_by_test_id("edit-save").click()
    expect(row(page, "mixed").get_by_test_id("model-chip")).to_have_text(["llama3.2", "bge-m3"])
    assert providers(admin)["mixed"]["kinds"] == {"llama3.2": "chat", "bge-m3": "chat"}


def test_a_rejected_add_shows_the_gateway_message(page, gateway, add_provider, upstream):
    add_provider(name="taken")
    login(page, gateway.admin_token)

    custom_add(page, "taken", upstream.base_url, "m")

    # The 409 names the field (param "name"): its message shows beside the name field.
    expect(page.locator("#custom-name-error")).to_have_text("A provider with this name already exists.")
    expect(page.get_by_test_id("custom-name")).to_have_attribute("aria-describedby", "custom-name-error")
    expect(page.locator("#custom-message")).to_be_empty()
    expect(page.get_by_test_id("provider-row")).to_have_count(1)


def test_edit_with_an_empty_key_keeps_the_key(page, gateway, admin, api, add_provider, upstream):
    add_provider(name="keeper", models=["m"])
    login(page, gateway.admin_token)

    row(page, "keeper").get_by_test_id("provider-edit").click()
    expect(page.get_by_test_id("edit-key")).to_have_value("")
    page.get_by_test_id("edit-name").fill("kept-key")
    page.get_by_test_id("edit-priority").fill("5")
    page.get_by_test_id("edit-save").click()

    expect(row(page, "kept-key")).to_be_visible()
    assert providers(admin)["kept-key"]["priority"] == 5
    assert ask(api).status_code == 200
    assert upstream.requests[-1].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_disable_and_enable(page, gateway, admin, add_provider):
    add_provider(name="switch")
    login(page, gateway.admin_token)

    row(page, "switch").get_by_test_id("provider-toggle").click()
    expect(row(page, "switch")).to_contain_text("已停用")
    assert providers(admin)["switch"]["enabled"] is False

    row(page, "switch").get_by_test_id("provider-toggle").click()
    expect(row(page, "switch")).to_contain_text("已启用")
    assert providers(admin)["switch"]["enabled"] is True


def test_delete_asks_first(page, gateway, admin, add_provider, watch):
    add_provider(name="doomed")
    add_provider(name="stays")
    login(page, gateway.admin_token)

    page.once("dialog", lambda dialog: (watch.dialogs.append(dialog.message), dialog.dismiss()))
    row(page, "doomed").get_by_test_id("provider-delete").click()
    expect(page.locator("#providers-message")).to_be_empty()
    expect(page.get_by_test_id("provider-row")).to_have_count(2)

    page.once("dialog", lambda dialog: dialog.accept())
    row(page, "doomed").get_by_test_id("provider-delete").click()

    expect(page.get_by_test_id("provider-row")).to_have_count(1)
    assert watch.dialogs == ["删除服务商“doomed”？此操作无法撤销。"]
    assert set(providers(admin)) == {"stays"}


def test_token_change_switches_the_session(page, gateway, admin):
    new_admin = "page-admin-token-0123456789"
    login(page, gateway.admin_token)
    try:
        open_fold(page, "tokens")
        page.get_by_test_id("token-api-random").click()
        expect(page.get_by_test_id("token-api")).to_have_value(
            re.compile(r"^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$")
        )
        new_api = page.get_by_test_id("token-api").input_value()
        page.get_by_test_id("token-api-save").click()
        expect(page.locator("#tokens")).to_contain_text(f"{new_api[:4]}...{new_api[-4:]}")

        page.get_by_test_id("token-admin").fill(new_admin)
        page.get_by_test_id("token-admin-save").click()
        expect(page.locator("#tokens-message")).to_contain_text("已改用新令牌")

        assert httpx.get(f"{gateway.url}/api/admin/providers", headers=bearer(gateway.admin_token)).status_code == 401
        assert httpx.get(f"{gateway.url}/api/admin/providers", headers=bearer(new_admin)).status_code == 200
        open_fold(page, "custom-add")
        page.get_by_test_id("custom-name").fill("after-switch")  # the session goes on with the new token
        page.get_by_test_id("custom-base-url").fill("http://127.0.0.1:9/v1")
        page.get_by_test_id("custom-key").fill("k")
        page.get_by_test_id("custom-models").fill("m")
        page.get_by_test_id("custom-submit").click()
        expect(row(page, "after-switch")).to_be_visible()
        page.reload()
        expect(row(page, "after-switch")).to_be_visible()
    finally:
        httpx.put(
            f"{gateway.url}/api/admin/tokens",
            json={"api_token": gateway.api_token, "admin_token": gateway.admin_token},
            headers=bearer(new_admin),
        )


def test_a_401_returns_to_the_login_view(page, gateway):
    replaced = "replaced-admin-token-0123456789"
    login(page, gateway.admin_token)
    try:
        httpx.put(
            f"{gateway.url}/api/admin/tokens", json={"admin_token": replaced}, headers=bearer(gateway.admin_token)
        ).raise_for_status()

        page.locator("#providers-refresh").click()

        expect(page.get_by_test_id("login-message")).to_have_text("管理令牌无效，请重新登录。")
        expect(page.get_by_test_id("cooldown-bar")).to_be_hidden()
    finally:
        httpx.put(
            f"{gateway.url}/api/admin/tokens", json={"admin_token": gateway.admin_token}, headers=bearer(replaced)
        )


def test_language_switch_is_remembered(page, gateway):
    login(page, gateway.admin_token)
    expect(page.get_by_test_id("lang-toggle")).to_have_text("English")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")

    page.get_by_test_id("lang-toggle").click()

    expect(page.get_by_test_id("lang-toggle")).to_have_text("中文")
    expect(page.get_by_test_id("cooldown-bar")).to_contain_text("All providers available")
    assert CJK.findall(page.locator("body").inner_text()) == list("中文")
    page.reload()
    expect(page.get_by_test_id("cooldown-bar")).to_contain_text("All providers available")
    expect(page.locator("html")).to_have_attribute("lang", "en")


def test_routing_settings_show_value_and_source(page, gateway, admin):
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    stall = page.get_by_test_id("setting-row").filter(has=page.get_by_test_id("setting-stream_stall_ms"))
    expect(stall.get_by_test_id("setting-source")).to_have_text("默认值")
    expect(stall.get_by_test_id("setting-unit")).to_have_text("秒")

    page.get_by_test_id("setting-stream_stall_ms").fill("30")
    page.get_by_test_id("settings-save").click()

    expect(stall.get_by_test_id("setting-source")).to_have_text("已保存（D1）")
    assert (
        admin.get("/settings").json()["settings"]["stream_stall_ms"].items() >= {"value": 30000, "source": "d1"}.items()
    )
    stall.get_by_role("button").click()  # back to the default
    expect(stall.get_by_test_id("setting-source")).to_have_text("默认值")
    expect(page.get_by_test_id("setting-stream_stall_ms")).to_have_value("60")


def test_rate_limit_settings_are_labelled_saved_and_never_reset_to_off(page, gateway, admin):
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    labels = {
        "default_client_rpm": "API 令牌每分钟请求数",
        "ip_rpm": "每个 IP 每分钟请求数",
        "auth_fail_limit": "每个 IP 每分钟令牌验证失败次数",
    }
    for key, label in labels.items():
        limit = page.get_by_test_id("setting-row").filter(has=page.get_by_test_id(f"setting-{key}"))
        expect(limit.locator("label")).to_have_text(label)
        expect(limit.get_by_test_id("setting-reset")).to_have_count(0)  # null would turn it off

    ip = page.get_by_test_id("setting-row").filter(has=page.get_by_test_id("setting-ip_rpm"))
    page.get_by_test_id("setting-ip_rpm").fill("20")
    page.get_by_test_id("settings-save").click()
    expect(page.locator("#settings-message")).to_have_text("设置已保存。")
    expect(ip.get_by_test_id("setting-source")).to_have_text("已保存（D1）")
    assert admin.get("/settings").json()["settings"]["ip_rpm"].items() >= {"value": 20, "source": "d1"}.items()

    page.get_by_test_id("setting-ip_rpm").fill("")
    page.get_by_test_id("settings-save").click()
    expect(ip.get_by_test_id("field-error")).to_have_text("每个 IP 每分钟请求数：请填写数字；0 表示关闭该限制。")
    assert admin.get("/settings").json()["settings"]["ip_rpm"].items() >= {"value": 20, "source": "d1"}.items()


def test_cooldown_bar_and_both_clear_buttons(page, gateway, api, add_provider, upstream):
    add_provider(name="A", priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"])
    upstream.queue(Json({"error": {"message": "upstream overloaded"}}, 503))
    assert ask(api, "auto").headers["x-routed-via"] == "B/m"
    login(page, gateway.admin_token)
    bar = page.get_by_test_id("cooldown-bar")
    entries = page.get_by_test_id("cooldown-entry")

    expect(entries).to_have_count(1)
    expect(entries).to_contain_text("A")
    expect(entries).to_contain_text("推断")
    expect(entries).to_contain_text("HTTP 503")
    expect(entries).to_contain_text("upstream overloaded")
    expect(entries).to_contain_text(re.compile(r"1 分 \d+ 秒"))
    expect(row(page, "A").get_by_test_id("provider-cooldown")).to_be_visible()
    # The whole provider rests (a 5xx): its key is not "in use" either.
    expect(row(page, "A").get_by_test_id("key-state")).to_have_text("冷却中")

    page.get_by_test_id("cooldown-clear").click()
    expect(entries).to_have_count(0)
    expect(bar).to_contain_text("所有服务商均可用")
    expect(row(page, "A").get_by_test_id("provider-cooldown")).to_have_count(0)
    expect(row(page, "A").get_by_test_id("key-state")).to_have_text("使用中")

    upstream.queue(Json({"error": {"message": "still down"}}, 503))
    ask(api, "auto")
    page.locator("#providers-refresh").click()
    expect(entries).to_have_count(1)
    upstream.queue(Json({"error": {"message": "down for the probe too"}}, 503))  # the probe of A fails
    page.get_by_test_id("cooldown-verify").click()
    result = page.get_by_test_id("verify-result")
    expect(result).to_have_count(1)
    expect(result).to_contain_text("失败")
    expect(result).to_contain_text("HTTP 503")
    expect(entries).to_have_count(1)  # A went back into cooldown

    page.get_by_test_id("cooldown-verify").click()  # now the probe succeeds
    expect(result).to_contain_text("正常")
    expect(entries).to_have_count(0)


def test_markup_in_names_and_upstream_messages_stays_text(page, gateway, api, add_provider, upstream, watch):
    page.on("dialog", lambda dialog: (watch.dialogs.append(dialog.message), dialog.dismiss()))
    add_provider(name=INJECTION, priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"])
    upstream.queue(Json({"error": {"message": "<img src=y onerror=alert(2)><b>bold</b>"}}, 503))
    ask(api, "auto")
    login(page, gateway.admin_token)

    expect(row(page, INJECTION)).to_be_visible()
    expect(page.get_by_test_id("cooldown-entry")).to_contain_text("<img src=y onerror=alert(2)><b>bold</b>")
    row(page, INJECTION).get_by_test_id("provider-edit").click()
    expect(page.get_by_test_id("edit-name")).to_have_value(INJECTION)

    assert page.locator("#main-view img, #main-view b").count() == 0
    assert watch.dialogs == []


def test_screenshots_of_the_main_view(page, gateway, api, add_provider, upstream):
    add_provider(name="groq", platform="groq", priority=1, models=["llama-3.3-70b-versatile", "openai/gpt-oss-120b"])
    add_provider(name="gemini", platform="gemini", priority=2, models=["gemini-2.5-flash"], timeout_ms=20000)
    add_provider(name="local-ollama", platform="ollama", priority=3, models=["qwen2.5:7b"], enabled=False)
    upstream.queue(Json({"error": {"message": "Rate limit reached for model llama-3.3-70b-versatile"}}, 429))
    ask(api, "auto")
    ARTIFACTS.mkdir(exist_ok=True)
    login(page, gateway.admin_token)
    page.get_by_test_id("preset-platform").select_option("groq")
    expect(page.get_by_test_id("cooldown-entry")).to_have_count(1)

    page.screenshot(path=ARTIFACTS / "config-page-zh.png", full_page=True)
    page.get_by_test_id("lang-toggle").click()
    expect(page.get_by_test_id("lang-toggle")).to_have_text("中文")
    page.screenshot(path=ARTIFACTS / "config-page-en.png", full_page=True)
    page.get_by_test_id("lang-toggle").click()
    page.set_viewport_size({"width": 360, "height": 740})
    page.screenshot(path=ARTIFACTS / "config-page-zh-360-top.png")
    page.get_by_test_id("preset-platform").scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "config-page-zh-360-forms.png")

    # At 360 px nothing is wider than the screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


def test_model_aliases_editor(page, gateway, admin, add_provider):
    add_provider(name="small", priority=1, models=["small-fast"])
    add_provider(name="big", priority=2, models=["big-slow"])
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    aliases = page.get_by_test_id("aliases")
    rows = page.get_by_test_id("alias-row")
    expect(aliases.get_by_test_id("alias-source")).to_have_text("默认值")
    expect(rows).to_have_count(0)

    page.get_by_test_id("alias-example").click()  # claude-*haiku* -> the first model, claude-* -> auto
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("alias-target").first).to_have_value("small-fast")
    page.get_by_test_id("alias-add").click()
    page.get_by_test_id("alias-pattern").nth(2).fill("gpt-4o*")
    page.get_by_test_id("alias-save").click()
    expect(page.locator("#settings-message")).to_contain_text("gpt-4o*")  # it has no target yet
    page.get_by_test_id("alias-target").nth(2).fill("big-slow")
    page.get_by_test_id("settings-save").click()

    expect(aliases.get_by_test_id("alias-source")).to_have_text("已保存（D1）")
    assert admin.get("/settings").json()["settings"]["model_aliases"]["value"] == {
        "claude-*haiku*": "small-fast",
        "claude-*": "auto",
        "gpt-4o*": "big-slow",
    }

    rows.nth(1).get_by_test_id("alias-remove").click()
    page.get_by_test_id("alias-save").click()
    expect(rows).to_have_count(2)
    expect(page.locator("#settings-message")).to_have_text("设置已保存。")
    assert list(admin.get("/settings").json()["settings"]["model_aliases"]["value"]) == ["claude-*haiku*", "gpt-4o*"]

    page.get_by_test_id("alias-reset").click()  # back to the default: no alias
    expect(aliases.get_by_test_id("alias-source")).to_have_text("默认值")
    expect(rows).to_have_count(0)


def test_a_refused_alias_table_shows_the_gateway_message(page, gateway):
    login(page, gateway.admin_token)
    open_fold(page, "settings")

    page.get_by_test_id("alias-add").click()
    page.get_by_test_id("alias-pattern").fill("x" * 201)
    page.get_by_test_id("alias-target").fill("auto")
    page.get_by_test_id("alias-save").click()

    expect(page.locator("#settings-message")).to_contain_text("model_aliases")
    expect(page.locator("#settings-message")).to_contain_text("200")


def test_connect_a_client_shows_this_gateway_and_never_the_token(page, gateway, add_provider):
    add_provider(name="groq", priority=1, models=["llama-3.3-70b-versatile"])
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=gateway.url)
    login(page, gateway.admin_token)
    panel = page.get_by_test_id("connect")
    code = page.get_by_test_id("connect-code")
    page.get_by_test_id("connect-model").select_option("llama-3.3-70b-versatile")
    expected = {
        "claude": [
            f'ANTHROPIC_BASE_URL="{gateway.url}"',
            'ANTHROPIC_AUTH_TOKEN="<你的 API 令牌>"',
            'ANTHROPIC_MODEL="llama-3.3-70b-versatile"',
            "ANTHROPIC_DEFAULT_HAIKU_MODEL=",
        ],
        "codex": [
            'model_provider = "fllmapi"',
            "[model_providers.fllmapi]",
            f'base_url = "{gateway.url}/v1"',
            'env_key = "FLLMAPI_API_KEY"',
            'wire_api = "responses"',
            'export FLLMAPI_API_KEY="<你的 API 令牌>"',
        ],
        "gemini": [
            f'GOOGLE_GEMINI_BASE_URL="{gateway.url}"',
            'GEMINI_API_KEY="<你的 API 令牌>"',
            'gemini -m "llama-3.3-70b-versatile"',
        ],
        "openai": [f'base_url="{gateway.url}/v1"', 'api_key="<你的 API 令牌>"'],
        "apps": [f"{gateway.url}/v1", "Authorization: Bearer <你的 API 令牌>"],
    }

    for client, parts in expected.items():
        panel.locator(f'[data-testid="connect-tab"][data-client="{client}"]').click()
        expect(page.get_by_test_id("connect-snippet").first).to_have_attribute("data-client", client)
        text = "\n".join(code.all_inner_texts())
        for part in parts:
            assert part in text, (client, part, text)
        assert gateway.api_token not in text and gateway.admin_token not in text

    panel.locator('[data-testid="connect-tab"][data-client="codex"]').click()
    page.get_by_test_id("connect-copy").first.click()
    expect(page.locator("#connect-message")).to_have_text("已复制到剪贴板。")
    assert page.evaluate("navigator.clipboard.readText()") == code.first.inner_text()

    page.get_by_test_id("connect-model").select_option("auto")  # Gemini CLI has an "auto" of its own
    panel.locator('[data-testid="connect-tab"][data-client="gemini"]').click()
    expect(code.nth(1)).to_contain_text('gemini -m "<模型 ID>"')
    page.get_by_test_id("lang-toggle").click()
    expect(code.nth(1)).to_contain_text('GEMINI_API_KEY="<your API token>"')
    expect(page.get_by_test_id("connect-help")).to_contain_text("Gemini API key")

    # The context window goes where each agent reads it; Claude Code compacts at 100,000 at least.
    panel.locator('[data-testid="connect-tab"][data-client="claude"]').click()
    page.get_by_test_id("connect-window").fill("163840")
    page.get_by_test_id("connect-window").blur()
    expect(code.nth(1)).to_contain_text('CLAUDE_CODE_AUTO_COMPACT_WINDOW="163840"')
    page.get_by_test_id("connect-window").fill("32768")
    page.get_by_test_id("connect-window").blur()
    expect(code.nth(1)).not_to_contain_text("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    panel.locator('[data-testid="connect-tab"][data-client="codex"]').click()
    expect(code.first).to_contain_text("model_context_window = 32768")
    panel.locator('[data-testid="connect-tab"][data-client="openai"]').click()
    expect(page.get_by_test_id("connect-window")).to_be_hidden()


def test_screenshots_of_aliases_and_connect(page, gateway, admin, add_provider):
    add_provider(name="groq", platform="groq", priority=1, models=["llama-3.3-70b-versatile", "llama-3.1-8b-instant"])
    admin.put("/settings", json={"model_aliases": {"claude-*haiku*": "llama-3.1-8b-instant", "claude-*": "auto"}})
    ARTIFACTS.mkdir(exist_ok=True)
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    expect(page.get_by_test_id("alias-row")).to_have_count(2)

    for lang in ("zh", "en"):
        page.set_viewport_size({"width": 1280, "height": 900})
        page.get_by_test_id("aliases").screenshot(path=ARTIFACTS / f"aliases-{lang}.png")
        page.get_by_test_id("connect").screenshot(path=ARTIFACTS / f"connect-{lang}.png")
        page.set_viewport_size({"width": 360, "height": 740})
        page.get_by_test_id("aliases").screenshot(path=ARTIFACTS / f"aliases-{lang}-360.png")
        page.get_by_test_id("connect").screenshot(path=ARTIFACTS / f"connect-{lang}-360.png")
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        page.get_by_test_id("lang-toggle").click()


# --- Several keys per provider (issue 10, SPEC §13) ---------------------------------------------

KEY_A = "sk-page-key-aaaa-000000000001"
KEY_B = "sk-page-key-bbbb-000000000002"
KEY_C = "sk-page-key-cccc-000000000003"


def key_rows(page: Page, name: str):
    return row(page, name).get_by_test_id("provider-key")


def key_row(page: Page, name: str, key_id: int):
    return row(page, name).locator(f'[data-testid="provider-key"][data-key-id="{key_id}"]')


def hint(key: str) -> str:
    return f"{key[:4]}...{key[-4:]}"


def keys_sent(upstream, n: int) -> set[str]:
    return {r.headers["authorization"].removeprefix("Bearer ") for r in upstream.requests[-n:]}


def assert_no_full_key(page: Page, *keys: str) -> None:
    """No key in the document (markup, attributes, text), in any field's value or in the tab's storage."""
    seen = "\n".join(
        [
            page.content(),
            *page.evaluate("[...document.querySelectorAll('input, textarea, select')].map((f) => f.value)"),
            page.evaluate("JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])"),
        ]
    )
    for key in keys:
        assert key not in seen
        assert key[4:-4] not in seen  # not even the middle a hint leaves out


def test_quick_add_with_two_keys_rotates_them(page, gateway, admin, api, upstream):
    login(page, gateway.admin_token)

    page.get_by_test_id("preset-platform").select_option("groq")
    page.get_by_test_id("preset-base-url").fill(upstream.base_url)
    page.get_by_test_id("preset-key").fill(f"{KEY_A}\n\n  {KEY_B}  \n{KEY_A}\n")
    expect(page.get_by_test_id("preset-key-count")).to_have_text("已填写 2 个密钥")
    page.get_by_test_id("preset-submit").click()

    keys = key_rows(page, "groq")
    expect(keys).to_have_count(2)
    expect(row(page, "groq").get_by_test_id("provider-keys")).to_contain_text("密钥（2）")
    expect(keys.get_by_test_id("key-hint")).to_have_text([hint(KEY_A), hint(KEY_B)])
    expect(keys.get_by_test_id("key-state")).to_have_text(["使用中", "使用中"])
    expect(page.get_by_test_id("preset-key")).to_have_value("")
    added = providers(admin)["groq"]
    assert [k["hint"] for k in added["keys"]] == [hint(KEY_A), hint(KEY_B)]
    model = added["models"][0]
    for _ in range(2):
        assert ask(api, model).status_code == 200
    assert keys_sent(upstream, 2) == {KEY_A, KEY_B}  # round-robin over both
    assert_no_full_key(page, KEY_A, KEY_B)


def test_custom_add_with_several_keys(page, gateway, admin, upstream):
    login(page, gateway.admin_token)
    open_fold(page, "custom-add")

    page.get_by_test_id("custom-name").fill("many-keys")
    page.get_by_test_id("custom-base-url").fill(upstream.base_url)
    page.get_by_test_id("custom-key").fill(f"{KEY_A}\n{KEY_B}\n{KEY_C}")
    expect(page.get_by_test_id("custom-key-count")).to_have_text("已填写 3 个密钥")
    page.get_by_test_id("custom-models").fill("m")
    page.get_by_test_id("custom-submit").click()

    expect(key_rows(page, "many-keys")).to_have_count(3)
    assert [k["hint"] for k in providers(admin)["many-keys"]["keys"]] == [hint(KEY_A), hint(KEY_B), hint(KEY_C)]
    expect(page.get_by_test_id("custom-key")).to_have_value("")
    assert_no_full_key(page, KEY_A, KEY_B, KEY_C)


def test_add_keys_to_an_existing_provider(page, gateway, admin, api, add_provider, upstream):
    add_provider(name="grows", models=["m"])
    login(page, gateway.admin_token)
    message = row(page, "grows").get_by_test_id("key-message")
    expect(key_rows(page, "grows")).to_have_count(1)

    row(page, "grows").get_by_test_id("key-add").click()
    row(page, "grows").get_by_test_id("key-add-input").fill(f"{KEY_B}\n\n{KEY_C}\n")
    expect(row(page, "grows").get_by_test_id("key-add-count")).to_have_text("已填写 2 个密钥")
    row(page, "grows").get_by_test_id("key-add-submit").click()

    expect(key_rows(page, "grows")).to_have_count(3)
    expect(message).to_have_text("已添加 2 个密钥。")
    expect(row(page, "grows").get_by_test_id("key-add-input")).to_have_count(0)  # the form closed
    assert [k["hint"] for k in providers(admin)["grows"]["keys"]] == [hint(UPSTREAM_KEY), hint(KEY_B), hint(KEY_C)]
    for _ in range(3):
        assert ask(api).status_code == 200
    assert keys_sent(upstream, 3) == {UPSTREAM_KEY, KEY_B, KEY_C}

    # A key the provider already holds: the server's refusal, and the key stays in the field.
    row(page, "grows").get_by_test_id("key-add").click()
    row(page, "grows").get_by_test_id("key-add-input").fill(KEY_B)
    row(page, "grows").get_by_test_id("key-add-submit").click()
    expect(message).to_have_text("This provider already holds this key.")
    expect(row(page, "grows").get_by_test_id("key-add-input")).to_have_value(KEY_B)
    expect(key_rows(page, "grows")).to_have_count(3)
    row(page, "grows").get_by_test_id("key-add-cancel").click()
    assert_no_full_key(page, UPSTREAM_KEY, KEY_B, KEY_C)


def test_disable_enable_and_delete_a_key(page, gateway, admin, api, add_provider, upstream, watch):
    made = add_provider(name="pair", models=["m"], api_key=None, api_keys=[KEY_A, KEY_B])
    first, second = (k["id"] for k in made["keys"])
    login(page, gateway.admin_token)
    message = row(page, "pair").get_by_test_id("key-message")

    key_row(page, "pair", first).get_by_test_id("key-toggle").click()
    expect(key_row(page, "pair", first).get_by_test_id("key-state")).to_have_text("已禁用")
    expect(message).to_have_text(f"已禁用密钥 #{first}。")
    assert [k["enabled"] for k in providers(admin)["pair"]["keys"]] == [False, True]
    for _ in range(2):
        assert ask(api).status_code == 200
    assert keys_sent(upstream, 2) == {KEY_B}  # a disabled key is not used

    key_row(page, "pair", first).get_by_test_id("key-toggle").click()
    expect(key_row(page, "pair", first).get_by_test_id("key-state")).to_have_text("使用中")
    assert [k["enabled"] for k in providers(admin)["pair"]["keys"]] == [True, True]

    page.once("dialog", lambda dialog: (watch.dialogs.append(dialog.message), dialog.dismiss()))
    key_row(page, "pair", second).get_by_test_id("key-delete").click()
    expect(message).to_be_empty()
    expect(key_rows(page, "pair")).to_have_count(2)
    page.once("dialog", lambda dialog: dialog.accept())
    key_row(page, "pair", second).get_by_test_id("key-delete").click()

    expect(key_rows(page, "pair")).to_have_count(1)
    expect(message).to_have_text(f"已删除密钥 #{second}。")
    assert watch.dialogs == [f"删除“pair”的密钥 #{second}（{hint(KEY_B)}）？此操作无法撤销。"]
    assert [k["id"] for k in providers(admin)["pair"]["keys"]] == [first]


def test_the_last_key_cannot_be_deleted(page, gateway, admin, add_provider):
    made = add_provider(name="single", models=["m"])
    login(page, gateway.admin_token)

    page.once("dialog", lambda dialog: dialog.accept())
    row(page, "single").get_by_test_id("key-delete").click()

    expect(row(page, "single").get_by_test_id("key-message")).to_have_text(
        "This is the provider's last key: add another first, or delete the provider."
    )
    expect(row(page, "single").get_by_test_id("key-message")).to_have_class(re.compile(r"\berror\b"))
    expect(key_rows(page, "single")).to_have_count(1)
    assert [k["id"] for k in providers(admin)["single"]["keys"]] == [made["keys"][0]["id"]]


def test_a_disabled_last_key_is_flagged(page, gateway, add_provider):
    add_provider(name="silent", models=["m"])
    login(page, gateway.admin_token)
    expect(row(page, "silent").get_by_test_id("keys-none-usable")).to_have_count(0)

    row(page, "silent").get_by_test_id("key-toggle").click()

    expect(row(page, "silent").get_by_test_id("keys-none-usable")).to_contain_text("没有可用的密钥")


def test_an_unreadable_key_says_so_and_is_never_in_use(page, gateway, admin, add_provider):
    made = add_provider(name="damaged", models=["m"], api_key=None, api_keys=[KEY_A, KEY_B])
    damaged, sound = (k["id"] for k in made["keys"])
    d1_execute(gateway.persist_to, f"UPDATE provider_keys SET auth_tag = substr(auth_tag, 1, 8) WHERE id = {damaged}")
    admin.put("/settings", json={}).raise_for_status()  # an admin write: the isolate re-reads D1
    login(page, gateway.admin_token)

    expect(key_row(page, "damaged", damaged).get_by_test_id("key-error")).to_have_text(
        "无法解密：请重新添加该密钥，再删除这一条"
    )
    expect(key_row(page, "damaged", damaged).get_by_test_id("key-state")).to_have_count(0)
    expect(key_row(page, "damaged", sound).get_by_test_id("key-state")).to_have_text("使用中")
    expect(key_row(page, "damaged", sound).get_by_test_id("key-error")).to_have_count(0)


# Whether a field hides what is typed, is never filled in by the browser, and (a textarea, which a
# password type cannot be) is never spell-checked, as the browser resolves it.
WRITE_ONLY = """f => ({
  masked: f.type === "password" || getComputedStyle(f).webkitTextSecurity === "disc",
  autocomplete: f.getAttribute("autocomplete") || (f.form && f.form.getAttribute("autocomplete")),
  spellchecked: f.type !== "password" && f.spellcheck,
})"""


def test_every_key_field_is_masked_and_never_filled_in(page, gateway, add_provider):
    add_provider(name="keyed", models=["m"])
    login(page, gateway.admin_token)
    open_fold(page, "custom-add")
    fields = {"preset-key": page.get_by_test_id("preset-key"), "custom-key": page.get_by_test_id("custom-key")}
    row(page, "keyed").get_by_test_id("key-add").click()
    fields["key-add-input"] = row(page, "keyed").get_by_test_id("key-add-input")
    seen = {name: field.evaluate(WRITE_ONLY) for name, field in fields.items()}
    row(page, "keyed").get_by_test_id("key-add-cancel").click()
    row(page, "keyed").get_by_test_id("provider-edit").click()
    seen["edit-key"] = page.get_by_test_id("edit-key").evaluate(WRITE_ONLY)

    for name, found in seen.items():
        assert found["masked"] is True, name
        assert found["autocomplete"] in ("off", "new-password"), name
        assert found["spellchecked"] is False, name


def test_a_cooling_key_shows_in_its_foundand_in_the_bar(page, gateway, api, add_provider, upstream):
    made = add_provider(name="rotating", models=["m"], api_key=None, api_keys=[KEY_A, KEY_B])
    upstream.queue(Json({"error": {"message": "Rate limit reached"}}, 429))
    assert ask(api).status_code == 200  # the next key served at once
    refused = upstream.requests[-2].headers["authorization"].removeprefix("Bearer ")
    cooled = next(k for k in made["keys"] if k["hint"] == hint(refused))
    login(page, gateway.admin_token)

    entry = page.get_by_test_id("cooldown-entry")
    expect(entry).to_have_count(1)
    expect(entry.get_by_test_id("cooldown-key")).to_have_text(f"密钥 #{cooled['id']} · {cooled['hint']}")
    cooling = key_row(page, "rotating", cooled["id"]).get_by_test_id("key-cooling")
    expect(cooling).to_contain_text(re.compile(r"冷却至 .*\d\d:\d\d:\d\d · \d+ (分|秒)"))
    # A resting key is never "in use"; the one serving is.
    state = key_rows(page, "rotating").get_by_test_id("key-state")
    expect(key_row(page, "rotating", cooled["id"]).get_by_test_id("key-state")).to_have_text("冷却中")
    expect(state).to_have_text(["冷却中", "使用中"] if cooled["id"] == made["keys"][0]["id"] else ["使用中", "冷却中"])
    expect(key_rows(page, "rotating").get_by_test_id("key-cooling")).to_have_count(1)
    expect(row(page, "rotating").get_by_test_id("provider-cooldown")).to_have_count(0)  # the provider serves

    page.get_by_test_id("lang-toggle").click()
    expect(entry.get_by_test_id("cooldown-key")).to_have_text(f"key #{cooled['id']} · {cooled['hint']}")
    expect(cooling).to_contain_text(re.compile(r"cooling down until .*\d\d:\d\d:\d\d · \d+ (min|s)"))

    page.get_by_test_id("cooldown-verify").click()  # the probe of the key succeeds
    expect(page.get_by_test_id("verify-result").get_by_test_id("cooldown-key")).to_have_text(
        f"key #{cooled['id']} · {cooled['hint']}"
    )
    expect(entry).to_have_count(0)
    expect(cooling).to_have_count(0)
    expect(state).to_have_text(["in use", "in use"])


def test_a_provider_whose_every_key_cools_is_cooling(page, gateway, api, add_provider, upstream):
    add_provider(name="spent", priority=1, models=["m"])
    add_provider(name="spare", priority=2, models=["m"])
    upstream.queue(Json({"error": {"message": "Rate limit reached"}}, 429))
    assert ask(api, "auto").headers["x-routed-via"] == "spare/m"
    login(page, gateway.admin_token)

    expect(row(page, "spent").get_by_test_id("key-cooling")).to_have_count(1)
    badge = row(page, "spent").get_by_test_id("provider-cooldown")
    expect(badge).to_contain_text(re.compile(r"全部密钥冷却中 \d+ (分|秒)"))
    expect(row(page, "spare").get_by_test_id("provider-cooldown")).to_have_count(0)


def test_screenshots_of_provider_keys(page, gateway, admin, api, add_provider, upstream):
    made = add_provider(
        name="groq",
        platform="groq",
        priority=1,
        models=["llama-3.3-70b-versatile"],
        api_key=None,
        api_keys=[KEY_A, KEY_B, KEY_C],
    )
    admin.put(f"/providers/{made['id']}/keys/{made['keys'][2]['id']}", json={"enabled": False}).raise_for_status()
    upstream.queue(Json({"error": {"message": "Rate limit reached for model llama-3.3-70b-versatile"}}, 429))
    assert ask(api, "llama-3.3-70b-versatile").status_code == 200
    ARTIFACTS.mkdir(exist_ok=True)
    login(page, gateway.admin_token)
    row(page, "groq").get_by_test_id("key-add").click()
    row(page, "groq").get_by_test_id("key-add-input").fill("sk-new-key-0000000000000004\nsk-new-key-0000000000000005")
    page.get_by_test_id("preset-platform").select_option("groq")
    page.get_by_test_id("preset-key").fill("gsk_example_key_0000000000001\ngsk_example_key_0000000000002")

    for lang in ("zh", "en"):
        expect(key_rows(page, "groq").get_by_test_id("key-cooling")).to_have_count(1)
        page.set_viewport_size({"width": 1280, "height": 900})
        row(page, "groq").screenshot(path=ARTIFACTS / f"provider-keys-{lang}.png")
        page.evaluate("window.scrollTo(0, 0)")  # the bar is first: clear of the sticky top bar
        page.get_by_test_id("cooldown-bar").screenshot(path=ARTIFACTS / f"cooldown-key-{lang}.png")
        page.set_viewport_size({"width": 360, "height": 740})
        row(page, "groq").screenshot(path=ARTIFACTS / f"provider-keys-{lang}-360.png")
        page.evaluate("window.scrollTo(0, 0)")
        page.get_by_test_id("cooldown-bar").screenshot(path=ARTIFACTS / f"cooldown-key-{lang}-360.png")
        page.locator("#preset-form").screenshot(path=ARTIFACTS / f"preset-keys-{lang}-360.png")
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        assert_no_full_key(page, KEY_A, KEY_B, KEY_C)
        page.get_by_test_id("lang-toggle").click()


# --- Clients (issue 11, SPEC §14) ---------------------------------------------------------------


def client_row(page: Page, name: str):
    return page.locator(f'[data-testid="client-row"][data-client="{name}"]')


def clients(admin: httpx.Client) -> dict[str, dict]:
    return {c["name"]: c for c in admin.get("/clients").json()["clients"]}


def test_create_a_client_shows_its_token_once_with_a_copy_button(page, gateway, admin, add_provider):
    add_provider(models=["fake-model", "other-model"])
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=gateway.url)
    login(page, gateway.admin_token)
    expect(page.get_by_test_id("clients")).to_contain_text("尚无客户端")

    page.get_by_test_id("client-name").fill("laptop")
    page.get_by_test_id("client-rpm").fill("30")
    page.get_by_test_id("client-models").fill("fake-model\n")
    page.get_by_test_id("client-submit").click()

    token_node = page.get_by_test_id("client-token")
    expect(token_node).to_have_text(re.compile(r"^fk-[A-Za-z0-9_-]{43,}$"))
    token = token_node.inner_text()
    stored = clients(admin)["laptop"]
    assert (stored["rpm"], stored["models"], stored["token_hint"]) == (
        30,
        ["fake-model"],
        f"{token[:4]}...{token[-4:]}",
    )
    row = client_row(page, "laptop")
    expect(row.get_by_test_id("client-hint")).to_have_text(stored["token_hint"])
    expect(row.get_by_test_id("client-rpm-value")).to_have_text("每分钟 30 次")
    expect(row.get_by_test_id("client-models-value")).to_have_text("fake-model")

    page.get_by_test_id("client-token-copy").click()
    expect(page.locator("#clients-message")).to_have_text("令牌已复制到剪贴板。")
    assert page.evaluate("navigator.clipboard.readText()") == token
    works = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers=bearer(token),
        json={"model": "fake-model", "messages": [{"role": "user", "content": "x"}]},
    )
    assert works.status_code == 200

    page.get_by_test_id("client-token-dismiss").click()
    expect(token_node).to_have_count(0)
    page.reload()
    expect(client_row(page, "laptop")).to_be_visible()
    assert token not in page.content()


def test_edit_disable_and_revoke_a_client(page, gateway, admin, watch):
    created = admin.post("/clients", json={"name": "phone", "models": ["a"]}).json()
    token = created["token"]
    login(page, gateway.admin_token)
    row = client_row(page, "phone")

    row.get_by_test_id("client-edit").click()
    row.get_by_test_id("client-edit-rpm").fill("12")
    row.get_by_test_id("client-edit-models").fill("a\nb")
    row.get_by_test_id("client-edit-save").click()
    expect(row.get_by_test_id("client-rpm-value")).to_have_text("每分钟 12 次")
    assert (clients(admin)["phone"]["rpm"], clients(admin)["phone"]["models"]) == (12, ["a", "b"])

    row.get_by_test_id("client-edit").click()
    row.get_by_test_id("client-edit-rpm").fill("")
    row.get_by_test_id("client-edit-models").fill("")
    row.get_by_test_id("client-edit-save").click()
    expect(row.get_by_test_id("client-models-value")).to_have_text("全部模型")
    assert (clients(admin)["phone"]["rpm"], clients(admin)["phone"]["models"]) == (None, None)

    row.get_by_test_id("client-toggle").click()
    expect(row.get_by_test_id("client-state")).to_have_text("已停用")
    assert clients(admin)["phone"]["enabled"] is False

    page.once("dialog", lambda dialog: (watch.dialogs.append(dialog.message), dialog.dismiss()))
    row.get_by_test_id("client-revoke").click()
    expect(row).to_have_count(1)
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_test_id("client-revoke").click()
    expect(row).to_have_count(0)
    assert clients(admin) == {}
    hint = created["client"]["token_hint"]
    assert watch.dialogs == [f"吊销客户端“phone”（{hint}）？其令牌立即失效，且无法恢复。"]
    assert token not in page.content()


def test_a_refused_client_shows_the_gateway_message(page, gateway, admin):
    admin.post("/clients", json={"name": "taken"}).raise_for_status()
    login(page, gateway.admin_token)

    page.get_by_test_id("client-name").fill("taken")
    page.get_by_test_id("client-submit").click()
    expect(page.locator("#client-name-error")).to_have_text("A client with this name already exists.")
    page.get_by_test_id("client-rpm").fill("0")
    page.get_by_test_id("client-name").fill("fresh")
    expect(page.locator("#client-name-error")).to_have_count(0)  # changing the field clears its error
    page.get_by_test_id("client-submit").click()
    expect(page.locator("#client-rpm-error")).to_have_text("每分钟请求数须为不小于 1 的整数，或留空。")
    expect(page.locator("#clients-message")).to_be_empty()
    assert set(clients(admin)) == {"taken"}


def test_a_clients_stream_rescue_is_chosen_on_create_and_edit(page, gateway, admin):
    # SPEC §16: the client's own switch; "follow the setting" is null, and the row says nothing then.
    login(page, gateway.admin_token)
    page.get_by_test_id("client-name").fill("agent")
    page.get_by_test_id("client-rescue").select_option("on")
    page.get_by_test_id("client-submit").click()
    row = client_row(page, "agent")
    expect(row.get_by_test_id("client-rescue-value")).to_have_text("流式续接：开启")
    assert clients(admin)["agent"]["stream_rescue"] is True
    expect(page.get_by_test_id("client-rescue")).to_have_value("")  # the form is reset

    row.get_by_test_id("client-edit").click()
    expect(row.get_by_test_id("client-edit-rescue")).to_have_value("on")
    row.get_by_test_id("client-edit-rescue").select_option("off")
    row.get_by_test_id("client-edit-save").click()
    expect(row.get_by_test_id("client-rescue-value")).to_have_text("流式续接：关闭")
    assert clients(admin)["agent"]["stream_rescue"] is False

    row.get_by_test_id("client-edit").click()
    row.get_by_test_id("client-edit-rescue").select_option("")
    row.get_by_test_id("client-edit-save").click()
    expect(row.get_by_test_id("client-rescue-value")).to_have_count(0)
    assert clients(admin)["agent"]["stream_rescue"] is None


def test_stream_rescue_is_a_routing_switch_off_by_default(page, gateway, admin):
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    routing = page.locator('[data-testid="setting-group"][data-group="routing"]')
    rescue = routing.get_by_test_id("setting-row").filter(has=page.get_by_test_id("setting-stream_rescue"))
    expect(rescue.locator("label")).to_have_text("续接中断的流式回答（1 开启，0 关闭）")
    expect(rescue).to_contain_text("已关闭")

    page.get_by_test_id("setting-stream_rescue").fill("1")
    page.get_by_test_id("settings-save").click()
    expect(rescue).to_contain_text("已开启")
    assert admin.get("/settings").json()["settings"]["stream_rescue"].items() >= {"value": 1, "source": "d1"}.items()


def test_screenshots_of_the_clients_panel(page, gateway, admin):
    admin.post("/clients", json={"name": "laptop", "rpm": 30, "models": ["llama-3.3-70b-versatile"]})
    admin.post("/clients", json={"name": "ci", "stream_rescue": True}).raise_for_status()
    ARTIFACTS.mkdir(exist_ok=True)
    login(page, gateway.admin_token)
    expect(page.get_by_test_id("client-row")).to_have_count(2)

    for lang in ("zh", "en"):
        page.set_viewport_size({"width": 1280, "height": 900})
        page.get_by_test_id("clients").screenshot(path=ARTIFACTS / f"clients-{lang}.png")
        page.set_viewport_size({"width": 360, "height": 740})
        page.get_by_test_id("clients").screenshot(path=ARTIFACTS / f"clients-{lang}-360.png")
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        page.get_by_test_id("lang-toggle").click()


# --- OpenRouter pinning (SPEC §15) --------------------------------------------------------------


def test_openrouter_panel_without_models_and_the_origin_saved_as_text(page, gateway, admin):
    # No model has gone through an OpenRouter provider: the panel says when models appear. (A pinned
    # model needs a fake OpenRouter; the pinning tests cover that.) The origin is a text setting.
    login(page, gateway.admin_token)
    open_fold(page, "openrouter-fold")
    open_fold(page, "settings")
    panel = page.get_by_test_id("openrouter")
    expect(panel.get_by_test_id("openrouter-empty")).to_have_text(
        "暂无模型：模型经 OpenRouter 服务商完成第一次请求后会出现在这里。"
    )
    expect(panel.get_by_test_id("openrouter-state")).to_have_text("已开启")
    expect(panel.get_by_test_id("openrouter-meta")).to_contain_text("https://openrouter.ai")
    expect(panel.get_by_test_id("openrouter-model")).to_have_count(0)

    setting = page.locator('[data-testid="setting-row"][data-setting="openrouter_origin"]')
    origin = page.get_by_test_id("setting-openrouter_origin")
    expect(origin).to_have_value("https://openrouter.ai")
    assert origin.get_attribute("type") is None  # a text field, not a number
    origin.fill("openrouter.ai/api")
    page.get_by_test_id("settings-save").click()
    expect(setting.get_by_test_id("field-error")).to_have_text(
        "OpenRouter 源地址：需要形如 https://openrouter.ai 的源地址（http 或 https，加主机名，不带路径）。"
    )
    assert admin.get("/settings").json()["settings"]["openrouter_origin"]["source"] == "default"

    origin.fill("http://127.0.0.1:9")
    page.get_by_test_id("settings-save").click()
    expect(page.locator("#settings-message")).to_have_text("设置已保存。")
    saved = admin.get("/settings").json()["settings"]["openrouter_origin"]
    assert saved.items() >= {"value": "http://127.0.0.1:9", "source": "d1"}.items()
    expect(setting.get_by_test_id("setting-source")).to_have_text("已保存（D1）")
    expect(panel.get_by_test_id("openrouter-meta")).to_contain_text("http://127.0.0.1:9")  # the panel follows

    page.get_by_test_id("lang-toggle").click()
    page.get_by_test_id("openrouter-refresh").click()
    expect(panel.get_by_test_id("openrouter-empty")).to_have_text(
        "No model yet: a model appears here after its first request through an OpenRouter provider."
    )
    expect(panel.get_by_test_id("openrouter-state")).to_have_text("on")
    setting.get_by_test_id("setting-reset").click()  # "Use default": null restores the default
    expect(setting.get_by_test_id("setting-source")).to_have_text("default")
    expect(origin).to_have_value("https://openrouter.ai")
    assert admin.get("/settings").json()["settings"]["openrouter_origin"] == {
        "value": "https://openrouter.ai",
        "source": "default",
    }


# "cache" caches and is cheap on input: it is pinned first; "cheap" caches nothing and has no
# cache price; "down" is never a candidate. (test_openrouter_pinning.py's endpoints.)
PINNED_MODEL = "deepseek/deepseek-chat"
ENDPOINTS = [
    endpoint("cheap", prompt="0.0000002", completion="0.0000008", caching=False, throughput=60.0),
    endpoint("cache", prompt="0.0000003", completion="0.0000009", cache_read="0.00000003", throughput=50.0),
    endpoint("slow", prompt="0.0000003", completion="0.0000009", cache_read="0.00000003", throughput=5.0),
    endpoint("down", prompt="0.0000001", completion="0.0000001", status=-2),
]


def per_million(per_token: str | float) -> str:
    """A price per token as the panel shows it: per million tokens, to 3 significant digits."""
    return f"${float(per_token) * 1e6:.3g} / M"


def test_openrouter_panel_shows_each_pinned_model_its_lock_and_ranked_candidates(browser, tmp_path):
    # A runtime of its own: pins outlive providers, and the empty panel above must stay empty.
    from support.runtime import Gateway

    fake, gateway = FakeOpenRouter().start(), Gateway.start(tmp_path)
    try:
        fake.set_endpoints(PINNED_MODEL, ENDPOINTS)
        admin = httpx.Client(base_url=f"{gateway.url}/api/admin", headers=bearer(gateway.admin_token), timeout=30)
        api = httpx.Client(base_url=f"{gateway.url}/v1", headers=bearer(gateway.api_token), timeout=30)
        with admin, api, watched_page(browser, gateway.url) as page:
            admin.put("/settings", json={"openrouter_origin": fake.origin}).raise_for_status()
            admin.post("/providers", json={"name": "openrouter", "platform": "openrouter", "base_url": fake.base_url,
                                           "api_key": "sk-or-test-key-0000000000", "models": [PINNED_MODEL]},
                       ).raise_for_status()  # fmt: skip
            login(page, gateway.admin_token)
            open_fold(page, "openrouter-fold")
            panel = page.get_by_test_id("openrouter")
            expect(panel.get_by_test_id("openrouter-empty")).to_be_visible()

            # Three faults of the pinned "cache" cool it and move the lock to "cheap".
            fake.always_for("cache", Json({"error": {"message": "upstream exploded"}}, status=502))
            for _ in range(4):
                assert ask(api, PINNED_MODEL).status_code == 200
            [pin] = admin.get("/openrouter").json()["models"]
            page.get_by_test_id("openrouter-refresh").click()  # the panel reads the pins again

            model = panel.get_by_test_id("openrouter-model")
            expect(model).to_have_count(1)
            expect(model.get_by_test_id("openrouter-model-id")).to_have_text(PINNED_MODEL)
            expect(model.get_by_test_id("openrouter-lock")).to_have_text(
                re.compile(r"^固定到 cheap · 至 .*\d\d:\d\d:\d\d$")
            )
            expect(model.get_by_test_id("openrouter-counts")).to_contain_text(f"连续失败{pin['failures']}")
            expect(model.get_by_test_id("openrouter-counts")).to_contain_text("切换次数1")
            candidates = model.get_by_test_id("openrouter-candidates").get_by_test_id("openrouter-candidate")
            ranked = [c["slug"] for c in pin["candidates"]]
            assert sorted(ranked) == ["cache", "cheap", "slow"]  # "down" is never a candidate
            expect(candidates).to_have_count(3)
            assert candidates.evaluate_all("rs => rs.map((r) => r.dataset.slug)") == ranked  # as the server ranks
            by_slug = {c["slug"]: c for c in pin["candidates"]}
            cheap = candidates.filter(has=page.locator('[data-testid="openrouter-pinned"]'))
            expect(cheap).to_have_attribute("data-slug", "cheap")
            # Rank, slug, score, prices per million tokens, caching, speed, state.
            expect(cheap.locator("td")).to_have_text(
                [
                    str(ranked.index("cheap") + 1),
                    "cheap",
                    re.compile(r"^[\d.,]+$"),
                    "$0.2 / M",
                    "$0.8 / M",
                    per_million(by_slug["cheap"]["input_cache_read"]),
                    "否",
                    "60 tok/s",
                    "已固定",
                ]
            )
            score = float(cheap.locator("td").nth(2).inner_text().replace(",", ""))
            assert score == float(f"{by_slug['cheap']['score']:.3g}")  # to 3 significant digits
            cache = candidates.filter(has=page.locator('[data-testid="openrouter-cooling"]'))
            expect(cache).to_have_attribute("data-slug", "cache")
            expect(cache.locator("td").nth(5)).to_have_text("$0.03 / M")
            expect(cache.get_by_test_id("openrouter-cooling")).to_have_text(re.compile(r"^冷却至 .*\d\d:\d\d:\d\d$"))
            # The pinned row stands out from the others.
            backgrounds = candidates.evaluate_all("rs => rs.map((r) => getComputedStyle(r.cells[1]).backgroundColor)")
            locked = backgrounds[ranked.index("cheap")]
            assert all(b != locked for i, b in enumerate(backgrounds) if ranked[i] != "cheap"), backgrounds

            # A failed read says so in the panel's own line, and leaves what it showed.
            page.route(
                "**/api/admin/openrouter",
                lambda route: route.fulfill(
                    status=503, json={"error": {"message": "D1 is unavailable", "type": "storage_error"}}
                ),
            )
            page.get_by_test_id("openrouter-refresh").click()
            expect(page.locator("#openrouter-message")).to_have_text("D1 is unavailable")
            expect(model).to_have_count(1)
    finally:
        gateway.stop()
        fake.stop()


# --- The page guides: the order of the work, units, field errors, language ----------------------

# The panels top to bottom, as a newcomer needs them: providers (bar, list, adding), connecting a
# client, clients (and their tokens), usage, then what is secondary, folded.
PANELS = [
    "cooldown-bar",
    "providers",
    "add-provider",
    "custom-add",
    "connect",
    "clients",
    "tokens",
    "usage",
    "openrouter-fold",
    "settings",
]
# The admin API keeps ms and bytes; the page shows s, min and MB.
MINUTE_MS, MB = 60000, 1024 * 1024


def sample_data(add_provider, admin: httpx.Client) -> None:
    """Two providers and two clients: the data the heights were measured with, before and after."""
    add_provider(name="groq", platform="groq", priority=1, models=["llama-3.3-70b-versatile", "openai/gpt-oss-120b"])
    add_provider(name="gemini", platform="gemini", priority=2, models=["gemini-2.5-flash"], timeout_ms=20000)
    admin.post("/clients", json={"name": "laptop", "rpm": 30, "models": ["llama-3.3-70b-versatile"]}).raise_for_status()
    admin.post("/clients", json={"name": "ci"}).raise_for_status()


def panel_tops(page: Page) -> list[float]:
    return page.evaluate(
        'ids => ids.map((id) => document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect().top)',
        PANELS,
    )


def test_the_panels_follow_the_work_and_settings_are_folded(page, gateway):
    login(page, gateway.admin_token)

    tops = panel_tops(page)
    assert tops == sorted(tops) and len(set(tops)) == len(tops), tops
    expect(page.locator("#main-view h2:visible")).to_have_text(
        [
            re.compile("服务商"),
            "服务商",
            "快速添加",
            "自定义添加",
            "连接客户端",
            "客户端",
            "API 令牌与管理令牌",
            "用量与健康",
            "OpenRouter 上游固定",
            "高级设置",
        ]
    )
    for fold in ("custom-add", "tokens", "openrouter-fold", "settings"):
        expect(page.get_by_test_id(fold)).not_to_have_attribute("open", re.compile(".*"))
    expect(page.get_by_test_id("setting-row")).to_have_count(16)
    expect(page.get_by_test_id("setting-row").first).to_be_hidden()

    open_fold(page, "settings")  # the routing settings and the three rate limits, together
    groups = page.get_by_test_id("setting-group")
    expect(groups).to_have_count(4)
    expect(groups.nth(1).get_by_test_id("setting-row")).to_have_count(3)
    assert [r.get_attribute("data-setting") for r in groups.nth(1).get_by_test_id("setting-row").all()] == [
        "default_client_rpm",
        "ip_rpm",
        "auth_fail_limit",
    ]
    usage = groups.nth(3)  # how often usage is written to D1 (SPEC §18's budget), in its own group
    expect(usage.locator("h3")).to_have_text("用量")
    expect(usage.get_by_test_id("setting-row")).to_have_attribute("data-setting", "usage_flush_minutes")
    expect(page.get_by_test_id("setting-usage_flush_minutes")).to_have_value("10")


def test_durations_in_seconds_or_minutes_and_sizes_in_mb(page, gateway, admin):
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    setting = lambda key: page.locator(f'[data-testid="setting-row"][data-setting="{key}"]')
    expect(page.get_by_test_id("setting-routing_cooldown_ceiling_ms")).to_have_value("1440")  # the default, 24 h
    expect(setting("routing_cooldown_ceiling_ms").get_by_test_id("setting-unit")).to_have_text("分钟")
    expect(page.get_by_test_id("setting-max_body_bytes")).to_have_value("1")
    expect(setting("max_body_bytes").get_by_test_id("setting-unit")).to_have_text("MB")
    expect(page.get_by_test_id("setting-same_model_retry_max_ms")).to_have_value("3")
    expect(setting("same_model_retry_max_ms").get_by_test_id("setting-unit")).to_have_text("秒")

    page.get_by_test_id("setting-routing_cooldown_ceiling_ms").fill("2")
    page.get_by_test_id("setting-max_body_bytes").fill("2.5")
    page.get_by_test_id("setting-stream_stall_ms").fill("1.5")
    page.get_by_test_id("settings-save").click()

    expect(page.locator("#settings-message")).to_have_text("设置已保存。")
    stored = admin.get("/settings").json()["settings"]
    assert stored["routing_cooldown_ceiling_ms"].items() >= {"value": 2 * MINUTE_MS, "source": "d1"}.items()
    assert stored["max_body_bytes"].items() >= {"value": int(2.5 * MB), "source": "d1"}.items()
    assert stored["stream_stall_ms"].items() >= {"value": 1500, "source": "d1"}.items()
    admin.put("/settings", json={"openrouter_lock_idle_ms": 45 * MINUTE_MS}).raise_for_status()
    page.reload()
    open_fold(page, "settings")
    expect(page.get_by_test_id("setting-routing_cooldown_ceiling_ms")).to_have_value("2")
    expect(page.get_by_test_id("setting-max_body_bytes")).to_have_value("2.5")
    expect(page.get_by_test_id("setting-openrouter_lock_idle_ms")).to_have_value("45")
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_test_id("settings").screenshot(path=ARTIFACTS / "settings-zh-390.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})

    page.get_by_test_id("setting-routing_cooldown_ceiling_ms").fill("0.5")  # 30 s: the server's floor is 1 min
    page.get_by_test_id("settings-save").click()
    error = setting("routing_cooldown_ceiling_ms").get_by_test_id("field-error")
    expect(error).to_have_text("冷却时长上限：取值范围为 1 至 1440 分钟。")  # the bounds in the field's unit
    expect(page.locator("#settings-message")).to_be_empty()
    page.get_by_test_id("setting-routing_cooldown_ceiling_ms").fill("2")
    page.get_by_test_id("setting-max_body_bytes").fill("100")  # 100 MiB is over the platform's 100,000,000 bytes
    page.get_by_test_id("settings-save").click()
    expect(setting("max_body_bytes").get_by_test_id("field-error")).to_contain_text("95.367")
    assert admin.get("/settings").json()["settings"]["routing_cooldown_ceiling_ms"]["value"] == 2 * MINUTE_MS


# What the page shows each setting's value in (unit.s, unit.min, unit.MB): one of it in the API's
# milliseconds or bytes, per language.
UNITS = {"zh": {"秒": 1000, "分钟": MINUTE_MS, "MB": MB}, "en": {"seconds": 1000, "minutes": MINUTE_MS, "MB": MB}}
# Each setting row as the page shows it.
SETTING_ROWS = """rows => rows.map((r) => {
  const field = r.querySelector("input, select");
  const unit = r.querySelector('[data-testid="setting-unit"]');
  return {
    key: r.dataset.setting, label: r.querySelector("label").textContent, type: field.type,
    inputmode: field.getAttribute("inputmode"), value: field.value, unit: unit && unit.textContent,
    reset: r.querySelector('[data-testid="setting-reset"]') !== null,
  };
})"""


# The settings with a row of the settings panel (the alias table has an editor of its own).
FIELD_SETTINGS = [s for s in SETTINGS if isinstance(s.default, int | str)]


def test_every_setting_has_the_field_and_unit_of_its_kind_and_a_limit_no_reset(page, gateway, admin):
    # Every setting saved (its value as it is), so each row offers what a saved one offers.
    listed = admin.get("/settings").json()["settings"]
    saved = {s.key: listed[s.key]["value"] for s in FIELD_SETTINGS}
    admin.put("/settings", json=saved).raise_for_status()
    login(page, gateway.admin_token)
    open_fold(page, "settings")
    rows = page.get_by_test_id("setting-row")
    expect(rows).to_have_count(len(FIELD_SETTINGS))
    expect(rows.get_by_test_id("setting-source")).to_have_text(["已保存（D1）"] * len(FIELD_SETTINGS))

    for lang in ("zh", "en"):
        shown = {r["key"]: r for r in rows.evaluate_all(SETTING_ROWS)}
        assert set(shown) == set(saved), lang
        for setting in FIELD_SETTINGS:
            found = shown[setting.key]
            # "Use default" sends null, which turns a rate limit off: a limit has none.
            assert found["reset"] is not getattr(setting, "null_is_off", False), (lang, setting.key)
            if isinstance(setting, ChoiceSetting):  # a choice (the routing strategy): a select of them
                assert (found["type"], found["value"]) == ("select-one", saved[setting.key]), (lang, setting.key)
                continue
            if isinstance(setting.default, str):  # an origin: text, with a URL keyboard
                assert (found["type"], found["inputmode"], found["value"]) == ("text", "url", saved[setting.key])
                continue
            assert found["type"] == "number", (lang, setting.key)
            if not setting.key.endswith(("_ms", "_bytes")):
                assert (found["unit"], found["value"]) == (None, str(saved[setting.key])), (lang, setting.key)
                continue
            # Nothing in raw milliseconds or bytes: a unit of the page, the value converted to it.
            assert found["unit"] in UNITS[lang], (lang, setting.key, found["unit"])
            factor = UNITS[lang][found["unit"]]
            assert abs(float(found["value"]) * factor - saved[setting.key]) <= factor / 1000, (lang, setting.key)
            assert not re.search(r"\bms\b|bytes|毫秒|字节", found["label"]), (lang, found["label"])
        if lang == "zh":
            page.get_by_test_id("lang-toggle").click()
            expect(rows.get_by_test_id("setting-source").first).to_have_text("saved (D1)")


def test_a_refused_field_shows_its_error_beside_it(page, gateway, admin, upstream):
    login(page, gateway.admin_token)

    custom_add(page, "bad-url", "ftp://models.example", "m")

    base_url = page.get_by_test_id("custom-base-url")
    error = page.locator("#custom-base-url-error")
    expect(error).to_contain_text("http:// or https://")
    expect(base_url).to_have_attribute("aria-describedby", "custom-base-url-error")
    expect(base_url).to_have_attribute("aria-invalid", "true")
    expect(base_url).to_be_focused()
    # Beside its field: right under the base URL input, above the next field.
    field_box, error_box = base_url.bounding_box(), error.bounding_box()
    key_box = page.get_by_test_id("custom-key").bounding_box()
    assert field_box["y"] + field_box["height"] <= error_box["y"] < key_box["y"]
    expect(page.locator("#custom-message")).to_be_empty()
    assert providers(admin) == {}
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_test_id("custom-add").screenshot(path=ARTIFACTS / "field-error-zh.png")

    base_url.fill(upstream.base_url)  # changing the field clears its error
    expect(error).to_have_count(0)
    expect(base_url).not_to_have_attribute("aria-invalid", "true")
    page.get_by_test_id("custom-submit").click()
    expect(row(page, "bad-url")).to_be_visible()

    # A form check does the same: a missing key is shown under the key field.
    page.get_by_test_id("custom-name").fill("no-key")
    page.get_by_test_id("custom-base-url").fill(upstream.base_url)
    page.get_by_test_id("custom-models").fill("m")
    page.get_by_test_id("custom-submit").click()
    expect(page.locator("#custom-key-error")).to_have_text("请至少填写一个 API 密钥。")


def test_the_page_opens_in_the_browsers_language_and_keeps_the_choice(browser, gateway, admin):
    with watched_page(browser, gateway.url, locale="zh-CN") as chinese:
        chinese.goto("/")
        expect(chinese.get_by_test_id("login-submit")).to_have_text("登录")
        expect(chinese.locator("html")).to_have_attribute("lang", "zh-CN")

    with watched_page(browser, gateway.url, locale="en-US") as english:
        login(english, gateway.admin_token)
        expect(english.locator("html")).to_have_attribute("lang", "en")
        expect(english.get_by_test_id("cooldown-bar")).to_contain_text("All providers available")
        assert CJK.findall(english.locator("body").inner_text()) == list("中文")  # the toggle's own label

        english.get_by_test_id("lang-toggle").click()  # chosen: Chinese, in an English browser
        expect(english.get_by_test_id("cooldown-bar")).to_contain_text("所有服务商均可用")
        english.reload()
        expect(english.get_by_test_id("cooldown-bar")).to_contain_text("所有服务商均可用")
        expect(english.locator("html")).to_have_attribute("lang", "zh-CN")

    with watched_page(browser, gateway.url, locale="zh-TW") as taiwan:
        taiwan.goto("/")
        expect(taiwan.get_by_test_id("login-submit")).to_have_text("登录")


def test_the_connect_panel_starts_on_auto(page, gateway, add_provider):
    add_provider(name="groq", priority=1, models=["llama-3.3-70b-versatile"])
    login(page, gateway.admin_token)

    expect(page.get_by_test_id("connect-model")).to_have_value("auto")
    expect(page.get_by_test_id("connect-code").nth(1)).to_contain_text('ANTHROPIC_MODEL="auto"')


def test_custom_add_fetches_the_model_list(page, gateway, admin, upstream):
    upstream.serve_models(["whisper-large", "beta-small", "beta-large"])
    login(page, gateway.admin_token)
    open_fold(page, "custom-add")
    page.get_by_test_id("custom-name").fill("vllm")
    page.get_by_test_id("custom-base-url").fill(upstream.base_url)
    page.get_by_test_id("custom-key").fill(UPSTREAM_KEY)
    page.get_by_test_id("custom-models").fill("llama3.2")

    page.get_by_test_id("custom-fetch-models").click()

    models = page.get_by_test_id("custom-models-list").get_by_test_id("custom-model")
    expect(models).to_have_count(3)
    expect(page.locator("#custom-message")).to_contain_text("3")
    assert upstream.model_list_requests[-1].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    page.get_by_test_id("custom-model-search").fill("BETA")
    expect(models).to_have_count(2)
    models.filter(has_text="beta-small").get_by_role("checkbox").check()
    models.filter(has_text="beta-large").get_by_role("checkbox").check()
    models.filter(has_text="beta-large").get_by_role("checkbox").uncheck()
    expect(page.get_by_test_id("custom-models")).to_have_value("llama3.2\nbeta-small")
    page.get_by_test_id("custom-submit").click()

    expect(row(page, "vllm")).to_contain_text("beta-small")
    assert providers(admin)["vllm"]["models"] == ["llama3.2", "beta-small"]
    expect(models).to_have_count(0)  # the form is ready for the next one


def test_the_clients_panel_says_the_default_client_is_on(page, gateway):
    login(page, gateway.admin_token)

    expect(page.get_by_test_id("default-client")).to_contain_text("API_TOKEN")
    expect(page.get_by_test_id("default-client")).not_to_contain_text("未设置")


def test_the_clients_panel_says_when_the_default_client_is_off(browser, tmp_path):
    # A runtime of its own whose API_TOKEN is a placeholder (SPEC §14: the default client is off).
    from support.runtime import Gateway

    off = Gateway.start(tmp_path, extra_env={"API_TOKEN": "change-me-to-a-long-random-token"})
    try:
        note = lambda page: page.get_by_test_id("default-client")
        with watched_page(browser, off.url, locale="en-US") as opened:
            login(opened, off.admin_token)
            expect(note(opened)).to_have_text(
                "API_TOKEN is not set (or is a placeholder or too short) and no client is enabled: /v1 answers "
                "503 until you create a client below or set the API token."
            )
            opened.get_by_test_id("client-name").fill("laptop")
            opened.get_by_test_id("client-submit").click()
            expect(note(opened)).to_have_text(
                "API_TOKEN is not set (or is a placeholder or too short): the default client is off; the "
                "enabled clients below are served."
            )
            open_fold(opened, "tokens")  # a usable token turns the default client on, at once
            opened.get_by_test_id("token-api").fill("a-usable-api-token-0123456789")
            opened.get_by_test_id("token-api-save").click()
            expect(note(opened)).to_have_text(re.compile("^The API token \\(API_TOKEN\\) is the default client"))
    finally:
        off.stop()


def test_heights_and_screenshots_at_1280_and_390(browser, tmp_path, upstream, capsys):
    # A runtime of its own: no usage counted by other tests, as when the heights before were taken.
    from support.runtime import Gateway

    fresh = Gateway.start(tmp_path, extra_env={"AUTH_FAIL_LIMIT": "0"})
    try:
        with httpx.Client(base_url=f"{fresh.url}/api/admin", headers=bearer(fresh.admin_token), timeout=30) as admin:
            sample_data(
                lambda **f: admin.post(
                    "/providers", json={"base_url": upstream.base_url, "api_key": UPSTREAM_KEY, **f}
                ).raise_for_status(),
                admin,
            )
            heights = measure_heights(browser, fresh)
    finally:
        fresh.stop()
    with capsys.disabled():
        print(
            "\npage heights (logged in, 2 providers, 2 clients):",
            ", ".join(f"{lang} {width} px: {h} px" for (lang, width), h in sorted(heights.items())),
        )
    # Measured before the reorder (same data, same runtime): at most 60% of that now.
    before = {("zh", 1280): 4910, ("en", 1280): 5176, ("zh", 390): 6817, ("en", 390): 7403}
    assert {k: h for k, h in heights.items() if h > 0.6 * before[k]} == {}


def measure_heights(browser: Browser, gateway) -> dict[tuple[str, int], int]:
    """The page's height per (language, width), logged in; a full-page screenshot of each."""
    ARTIFACTS.mkdir(exist_ok=True)
    heights = {}
    for width, height in ((1280, 900), (390, 844)):
        for locale, lang in (("zh-CN", "zh"), ("en-US", "en")):
            with watched_page(browser, gateway.url, locale=locale, viewport=(width, height)) as opened:
                login(opened, gateway.admin_token)
                expect(opened.get_by_test_id("client-row")).to_have_count(2)
                expect(opened.get_by_test_id("provider-row")).to_have_count(2)
                expect(opened.get_by_test_id("usage-empty")).to_be_visible()
                heights[(lang, width)] = opened.evaluate("document.documentElement.scrollHeight")
                opened.screenshot(path=ARTIFACTS / f"page-{lang}-{width}.png", full_page=True)
                # No horizontal scroll, and the panels keep their order at every width.
                assert opened.evaluate("document.documentElement.scrollWidth") <= width
                tops = panel_tops(opened)
                assert tops == sorted(tops), tops
    return heights


def test_a_newcomer_reaches_a_working_client_in_the_pages_order(browser, gateway, admin, upstream):
    # The "done when": sign in, add a provider, read how to connect, make a client token, and
    # the client works, top to bottom, without opening a fold or reading a setting.
    with watched_page(browser, gateway.url, locale="en-US") as page:
        login(page, gateway.admin_token)
        steps = [page.get_by_test_id(i) for i in ("preset-platform", "connect-tab", "client-name")]
        tops = [step.first.bounding_box()["y"] for step in steps]
        assert tops == sorted(tops), tops

        page.get_by_test_id("preset-platform").select_option("groq")
        page.get_by_test_id("preset-base-url").fill(upstream.base_url)  # the fake stands in for Groq
        page.get_by_test_id("preset-key").fill(UPSTREAM_KEY)
        page.get_by_test_id("preset-submit").click()
        expect(row(page, "groq")).to_be_visible()

        page.get_by_test_id("connect").locator('[data-testid="connect-tab"][data-client="openai"]').click()
        expect(page.get_by_test_id("connect-model")).to_have_value("auto")
        snippet = "\n".join(page.get_by_test_id("connect-code").all_inner_texts())
        base_url = re.search(r'base_url="([^"]+)"', snippet).group(1)
        model = re.search(r'model="([^"]+)"', snippet).group(1)

        page.get_by_test_id("client-name").fill("laptop")
        page.get_by_test_id("client-submit").click()
        token = page.get_by_test_id("client-token").inner_text()

        for fold in ("custom-add", "tokens", "openrouter-fold", "settings"):
            expect(page.get_by_test_id(fold)).not_to_have_attribute("open", re.compile(".*"))

    answer = httpx.post(
        f"{base_url}/chat/completions",
        headers=bearer(token),
        json={"model": model, "messages": [{"role": "user", "content": "hello"}]},
    )
    assert (base_url, model) == (f"{gateway.url}/v1", "auto")
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-routed-via"].startswith("groq/")


def test_quick_add_proposes_a_name_free_whatever_its_case(page, gateway, add_provider):
    # Provider names are one whatever their case (the server answers 409 for "groq" beside "Groq").
    add_provider(name="Groq", platform="groq")
    login(page, gateway.admin_token)

    page.get_by_test_id("preset-platform").select_option("groq")

    expect(page.locator("#preset-name")).to_have_value("groq-2")
