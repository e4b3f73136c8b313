r"""The config page (SPEC §8.1): one self-contained HTML document, its CSS and its one script.

It lives in a ``.py`` file because a Python Worker can reliably import only Python modules: a
``.html`` file beside the code is not bundled by every deploy path, while a string constant is.
Read it as the HTML file it is; ``gateway.routes.page`` serves it with a Content-Security-Policy
that admits exactly this script and this style (by hash) and requests to the Worker itself.

Rules the page keeps (STYLE "Admin page", checked by ``tests/unit/test_page.py``):
- every visible string comes from ``I18N.en`` / ``I18N.zh`` (identical keys) through ``t(key)``;
  static elements name their key in ``data-i18n`` (text) or ``data-i18n-placeholder``;
- one ``state`` object; one ``api(method, path, body)``; one render function per view, which
  rebuilds its container from ``state``;
- user and upstream values reach the DOM only as text (``textContent``, text nodes, attribute
  values through ``setAttribute``); nothing is ever parsed as markup;
- nothing is loaded from anywhere but the Worker (no CDN, no external font): it works offline.
"""

from __future__ import annotations

__all__ = ["PAGE"]

PAGE = r"""<!doctype html>
<html lang="zh-CN">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>fllmapi-worker</title>
<style>
:root {
  --bg: #f5f6f8; --card: #ffffff; --text: #1d2125; --muted: #5f6b76; --border: #d5dbe1;
  --accent: #2457c5; --accent-text: #ffffff; --danger: #c0262d; --ok: #1d7a3a; --ok-bg: #e3f4e8;
  --warn: #8a5a00; --warn-bg: #fff3cd; --chip: #eef1f4; --focus: #2457c566;
  --alt: #7a4cc2; --soft: #9db6ea;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #15181c; --card: #1e2227; --text: #e6e9ec; --muted: #9aa5b1; --border: #353b43;
    --accent: #5b8def; --accent-text: #0d1117; --danger: #f47067; --ok: #57c27a; --ok-bg: #1f3326;
    --warn: #e0b040; --warn-bg: #3a3016; --chip: #2a3037; --focus: #5b8def66;
    --alt: #b48cf0; --soft: #34507f;
  }
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC",
    "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", sans-serif;
}
.topbar {
  position: sticky; top: 0; z-index: 2; display: flex; align-items: center; gap: 8px;
  padding: 10px 16px; background: var(--card); border-bottom: 1px solid var(--border);
}
.brand { font-weight: 650; margin-right: auto; overflow-wrap: anywhere; }
main { max-width: 1080px; margin: 0 auto; padding: 16px; display: grid; gap: 16px; }
.card {
  background: var(--card); border: 1px solid var(--border); border-radius: 10px;
  padding: 16px; min-width: 0;
}
.narrow { max-width: 420px; width: 100%; margin: 8vh auto 0; }
.grid2 { display: grid; gap: 16px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 440px), 1fr)); }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 0; }
h3 { font-size: 14px; margin: 12px 0 6px; }
p { margin: 0; }
.section-head { display: flex; align-items: center; flex-wrap: wrap; gap: 8px; margin-bottom: 12px; }
.section-head h2 { margin-right: auto; }
.stack { display: grid; gap: 12px; align-content: start; }
.field { display: grid; gap: 4px; min-width: 0; }
.row2 { display: grid; gap: 12px; grid-template-columns: 1fr 1fr; }
@media (max-width: 480px) { .row2 { grid-template-columns: 1fr; } main { padding: 10px; } .card { padding: 12px; } }
label, .label { font-size: 13px; font-weight: 550; color: var(--muted); }
input, select, textarea {
  font: inherit; width: 100%; min-width: 0; padding: 7px 10px; color: inherit;
  background: var(--card); border: 1px solid var(--border); border-radius: 6px;
}
input:not([type="checkbox"]), select { min-height: 36px; }
textarea { min-height: 88px; resize: vertical; }
input:focus, select:focus, textarea:focus, button:focus-visible { outline: 3px solid var(--focus); outline-offset: 0; }
.mono, textarea, input.mono {
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px;
}
button {
  font: inherit; font-size: 14px; padding: 6px 14px; border-radius: 6px; cursor: pointer; white-space: nowrap;
  color: inherit; background: var(--chip); border: 1px solid var(--border);
}
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-text); font-weight: 600; }
button.danger { color: var(--danger); }
button.ghost { background: transparent; border-color: transparent; }
button.small { font-size: 13px; padding: 3px 10px; }
button:disabled { opacity: .55; cursor: default; }
.inline { display: flex; gap: 8px; }
.inline > input { flex: 1; }
.muted { color: var(--muted); font-size: 13px; }
.note { font-size: 13px; overflow-wrap: anywhere; }
.note:empty { display: none; }
.note.error, .error-text { color: var(--danger); }
.note.ok { color: var(--ok); }
.chip {
  display: inline-block; max-width: 100%; padding: 0 8px; border-radius: 999px; font-size: 12px;
  line-height: 22px; background: var(--chip); overflow-wrap: anywhere;
}
.chip.ok { background: var(--ok-bg); color: var(--ok); }
.chip.warn { background: var(--warn-bg); color: var(--warn); }
.chip.bad { background: transparent; color: var(--danger); border: 1px solid var(--danger); line-height: 20px; }
.chip.off { background: transparent; color: var(--muted); border: 1px solid var(--border); line-height: 20px; }
.k { color: var(--muted); margin-right: 4px; }
.status { border-left: 4px solid var(--ok); }
.status.cooling { border-left-color: var(--warn); }
.status .section-head { margin-bottom: 0; }
.status-body:not(:empty) { margin-top: 12px; }
ul.plain { list-style: none; margin: 0; padding: 0; display: grid; gap: 8px; }
.entry {
  display: flex; flex-wrap: wrap; align-items: center; gap: 4px 10px;
  padding: 8px 10px; border-radius: 8px; background: var(--bg);
}
.entry .msg { flex-basis: 100%; color: var(--muted); font-size: 13px; overflow-wrap: anywhere; }
.strong { font-weight: 600; overflow-wrap: anywhere; }
.provider { display: grid; gap: 6px; padding: 14px 0; border-top: 1px solid var(--border); }
.provider:first-child { border-top: 0; padding-top: 0; }
.provider:last-child { padding-bottom: 0; }
.provider.off .strong, .provider.off .url { opacity: .6; }
.provider-head { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 8px; }
.actions { display: flex; flex-wrap: wrap; gap: 6px; margin-left: auto; }
.url { overflow-wrap: anywhere; color: var(--muted); }
.meta { display: flex; flex-wrap: wrap; gap: 2px 18px; font-size: 13px; }
.models { display: flex; flex-wrap: wrap; gap: 4px; }
.keys { display: grid; gap: 6px; }
.keys-head { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }
.key {
  display: flex; flex-wrap: wrap; align-items: center; gap: 4px 8px;
  padding: 6px 10px; border-radius: 8px; background: var(--bg); min-width: 0;
}
.key.off .mono { opacity: .6; }
.key .mono { font-size: 13px; overflow-wrap: anywhere; }
/* Key fields are write-only: a pasted key is masked as in a password field (Chromium, Safari;
   a browser without -webkit-text-security shows it as typed, as any textarea would). */
textarea.secret { -webkit-text-security: disc; min-height: 64px; }
.editor { margin-top: 6px; padding: 12px; border: 1px dashed var(--border); border-radius: 8px; }
.checklist {
  max-height: 280px; overflow: auto; display: grid; gap: 2px; padding: 6px 10px;
  border: 1px solid var(--border); border-radius: 6px;
}
.check {
  display: flex; align-items: center; gap: 8px; min-width: 0;
  font-weight: 400; color: var(--text); cursor: pointer;
}
.check input { width: auto; flex: none; margin: 3px 0; }
.check span { overflow-wrap: anywhere; }
.between { display: flex; align-items: center; justify-content: space-between; gap: 8px; flex-wrap: wrap; }
#settings { margin-top: 12px; }
.setting { display: grid; gap: 4px; padding: 10px 0; border-top: 1px solid var(--border); }
.setting:first-child { border-top: 0; padding-top: 0; }
.setting-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; }
.setting-controls input { flex: 1 1 140px; width: auto; }
.aliases { display: grid; gap: 8px; margin-top: 12px; padding-top: 12px; border-top: 1px solid var(--border); }
.aliases h3 { margin: 0; }
.alias-row { display: grid; grid-template-columns: minmax(0, 1fr) auto minmax(0, 1fr) auto; align-items: center; gap: 6px; }
.alias-row .arrow { color: var(--muted); }
@media (max-width: 480px) {
  .alias-row { grid-template-columns: auto minmax(0, 1fr) auto; }
  .alias-row .pattern { grid-column: 1 / -1; }
}
.tabs { display: flex; flex-wrap: wrap; gap: 6px; }
.tabs button[aria-selected="true"], .tabs button[aria-pressed="true"] {
  background: var(--accent); border-color: var(--accent); color: var(--accent-text);
}
.snippet { display: grid; gap: 4px; min-width: 0; }
pre.code {
  margin: 0; padding: 10px 12px; overflow-x: auto; white-space: pre; background: var(--bg);
  border: 1px solid var(--border); border-radius: 6px;
}
.pins { display: grid; gap: 0; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table.ranked { border-collapse: collapse; width: 100%; font-size: 13px; }
table.ranked th, table.ranked td { padding: 4px 8px; text-align: left; white-space: nowrap; border-top: 1px solid var(--border); }
table.ranked th { color: var(--muted); font-weight: 550; border-top: 0; }
table.ranked td.num, table.ranked th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.ranked tr.locked td { background: var(--ok-bg); }
table.ranked tr.locked td:first-child { box-shadow: inset 3px 0 0 var(--ok); }
/* The Usage panel (SPEC §17): bars are SVG rects coloured by class; every number is text beside them. */
.chart { margin: 0; display: grid; gap: 8px; min-width: 0; align-content: start; container-type: inline-size; }
.chart figcaption { display: grid; gap: 4px; }
.chart h3 { margin: 0; }
.legend { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 2px 14px; font-size: 13px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.s-req { fill: var(--accent); background: var(--accent); }
.s-err { fill: var(--danger); background: var(--danger); }
.s-in { fill: var(--accent); background: var(--accent); }
.s-out { fill: var(--alt); background: var(--alt); }
.s-p50 { fill: var(--accent); background: var(--accent); }
.s-p95 { fill: var(--soft); background: var(--soft); }
.track { fill: var(--chip); }
.plot { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: 2px 6px; }
.plot svg { display: block; width: 100%; height: 140px; border-bottom: 1px solid var(--border); }
.plot .y-axis { display: flex; flex-direction: column; justify-content: space-between; text-align: right; }
.y-axis, .x-axis { font-size: 12px; color: var(--muted); font-variant-numeric: tabular-nums; }
.x-axis { grid-column: 2; display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 4px; }
.x-axis span:nth-child(2) { text-align: center; }
.x-axis span:last-child { text-align: right; }
/* One grid per chart: every bar's track has the same length, numbers in a column of their own;
   in a narrow chart each number goes under its bar. */
.hbars {
  display: grid; grid-template-columns: minmax(60px, 1fr) max-content; align-items: center; gap: 4px 8px;
  font-size: 13px;
}
.hbar-group, .hbar { display: contents; }
.hbar-group > .strong { grid-column: 1 / -1; margin-top: 6px; }
.hbar-group:first-child > .strong { margin-top: 0; }
.hbars svg { display: block; width: 100%; height: 10px; }
.hbar-value { font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
@container (max-width: 400px) {
  .hbars { grid-template-columns: minmax(0, 1fr); gap: 2px; }
  .hbar-value { margin-bottom: 4px; }
}
.usage-totals { font-size: 14px; }
.usage-totals .strong { font-variant-numeric: tabular-nums; }
.classes { display: flex; flex-wrap: wrap; gap: 4px; }
</style>
</head>
<body>
<header class="topbar">
  <span class="brand" data-i18n="app.title"></span>
  <button type="button" class="ghost" id="lang-toggle" data-testid="lang-toggle" data-i18n="lang.toggle"></button>
  <button type="button" class="ghost" id="logout" data-testid="logout" data-i18n="login.logout" hidden></button>
</header>

<main id="login-view" hidden>
  <form id="login-form" class="card narrow stack" autocomplete="off">
    <div>
      <h1 data-i18n="login.heading"></h1>
      <p class="muted" data-i18n="login.help"></p>
    </div>
    <div class="field">
      <label for="login-token" data-i18n="login.token"></label>
      <input id="login-token" data-testid="login-token" type="password" autocomplete="current-password">
    </div>
    <p id="login-message" class="note error" data-testid="login-message" role="alert"></p>
    <button type="submit" class="primary" data-testid="login-submit" data-i18n="login.submit"></button>
  </form>
</main>

<main id="main-view" hidden>
  <section id="status-section" class="card status" data-testid="cooldown-bar" aria-live="polite">
    <div class="section-head">
      <h2 id="status-title"></h2>
      <button type="button" id="cooldown-clear" data-testid="cooldown-clear" data-i18n="status.clearButton"></button>
      <button type="button" id="cooldown-verify" data-testid="cooldown-verify" data-i18n="status.verifyButton"></button>
    </div>
    <p class="muted" data-i18n="status.help"></p>
    <p id="status-message" class="note" role="status"></p>
    <div id="status-body" class="status-body"></div>
  </section>

  <section class="card stack" data-testid="usage" aria-labelledby="usage-title">
    <div class="section-head">
      <h2 id="usage-title" data-i18n="usage.heading"></h2>
      <div id="usage-range" class="tabs" role="group" aria-labelledby="usage-title">
        <button type="button" class="small" data-testid="usage-range" data-range="24h" aria-pressed="true"
            data-i18n="usage.range.24h"></button>
        <button type="button" class="small" data-testid="usage-range" data-range="7d" aria-pressed="false"
            data-i18n="usage.range.7d"></button>
        <button type="button" class="small" data-testid="usage-range" data-range="30d" aria-pressed="false"
            data-i18n="usage.range.30d"></button>
      </div>
      <button type="button" id="usage-refresh" class="small" data-testid="usage-refresh"
          data-i18n="usage.refresh"></button>
    </div>
    <p class="muted" data-i18n="usage.help"></p>
    <p id="usage-message" class="note" role="status"></p>
    <div id="usage" class="stack" data-testid="usage-body"></div>
    <div id="usage-savings" class="stack"></div>
  </section>

  <section class="card">
    <div class="section-head">
      <h2 data-i18n="providers.heading"></h2>
      <span id="providers-count" class="muted"></span>
      <button type="button" id="providers-refresh" class="small" data-i18n="providers.refresh"></button>
    </div>
    <p id="providers-message" class="note" role="status"></p>
    <div id="providers" data-testid="provider-list"></div>
  </section>

  <div class="grid2">
    <section class="card">
      <div class="section-head"><h2 data-i18n="preset.heading"></h2></div>
      <form id="preset-form" class="stack" autocomplete="off">
        <p class="muted" data-i18n="preset.help"></p>
        <div class="field">
          <label for="preset-platform" data-i18n="preset.platform"></label>
          <select id="preset-platform" data-testid="preset-platform"></select>
        </div>
        <div class="field" id="preset-account-field" hidden>
          <label for="preset-account" data-i18n="preset.accountId"></label>
          <input id="preset-account" data-testid="preset-account-id" class="mono"
              data-i18n-placeholder="preset.accountIdPlaceholder">
        </div>
        <div class="field">
          <label for="preset-base-url" data-i18n="form.baseUrl"></label>
          <input id="preset-base-url" data-testid="preset-base-url" class="mono" inputmode="url" spellcheck="false">
        </div>
        <div class="field">
          <label for="preset-name" data-i18n="form.name"></label>
          <input id="preset-name" data-testid="preset-name">
        </div>
        <div class="field">
          <label for="preset-key" data-i18n="form.keys"></label>
          <textarea id="preset-key" data-testid="preset-key" class="mono secret" rows="2" autocomplete="off"
              spellcheck="false" data-i18n-placeholder="form.keysPlaceholder"></textarea>
          <p id="preset-key-count" class="muted" data-testid="preset-key-count"></p>
        </div>
        <div class="field">
          <div class="between">
            <span class="label" data-i18n="preset.models"></span>
            <span id="preset-model-count" class="muted"></span>
          </div>
          <div class="inline">
            <input id="preset-model-search" data-testid="preset-model-search" type="search"
                data-i18n-placeholder="preset.search">
            <button type="button" id="preset-fetch-models" data-testid="preset-fetch-models"
                data-i18n="preset.fetch"></button>
          </div>
          <p id="preset-models-hint" class="muted"></p>
          <div id="preset-models" class="checklist" data-testid="preset-models"></div>
        </div>
        <p id="preset-message" class="note" role="status"></p>
        <div><button type="submit" class="primary" data-testid="preset-submit" data-i18n="preset.submit"></button></div>
      </form>
    </section>

    <section class="card">
      <div class="section-head"><h2 data-i18n="custom.heading"></h2></div>
      <form id="custom-form" class="stack" autocomplete="off">
        <p class="muted" data-i18n="custom.help"></p>
        <div class="row2">
          <div class="field">
            <label for="custom-name" data-i18n="form.name"></label>
            <input id="custom-name" data-testid="custom-name">
          </div>
          <div class="field">
            <label for="custom-platform" data-i18n="form.platform"></label>
            <input id="custom-platform" data-testid="custom-platform" value="custom" spellcheck="false">
          </div>
        </div>
        <div class="field">
          <label for="custom-base-url" data-i18n="form.baseUrl"></label>
          <input id="custom-base-url" data-testid="custom-base-url" class="mono" inputmode="url" spellcheck="false"
              data-i18n-placeholder="custom.baseUrlPlaceholder">
        </div>
        <div class="field">
          <label for="custom-key" data-i18n="form.keys"></label>
          <textarea id="custom-key" data-testid="custom-key" class="mono secret" rows="2" autocomplete="off"
              spellcheck="false" data-i18n-placeholder="form.keysPlaceholder"></textarea>
          <p id="custom-key-count" class="muted" data-testid="custom-key-count"></p>
        </div>
        <div class="field">
          <label for="custom-models" data-i18n="form.models"></label>
          <textarea id="custom-models" data-testid="custom-models" spellcheck="false"
              data-i18n-placeholder="form.modelsPlaceholder"></textarea>
        </div>
        <div class="row2">
          <div class="field">
            <label for="custom-priority" data-i18n="form.priority"></label>
            <input id="custom-priority" data-testid="custom-priority" type="number" step="1" value="100">
          </div>
          <div class="field">
            <label for="custom-timeout" data-i18n="form.timeout"></label>
            <input id="custom-timeout" data-testid="custom-timeout" type="number" min="0" step="any"
                data-i18n-placeholder="form.timeoutPlaceholder">
          </div>
        </div>
        <p id="custom-message" class="note" role="status"></p>
        <div><button type="submit" class="primary" data-testid="custom-submit" data-i18n="custom.submit"></button></div>
      </form>
    </section>
  </div>

  <div class="grid2">
    <section class="card stack">
      <div class="section-head"><h2 data-i18n="tokens.heading"></h2></div>
      <div class="field">
        <label for="token-api" data-i18n="tokens.api"></label>
        <p class="muted" data-i18n="tokens.apiHelp"></p>
        <div class="inline">
          <input id="token-api" data-testid="token-api" class="mono" autocomplete="off" spellcheck="false">
          <button type="button" id="token-api-random" data-testid="token-api-random" data-i18n="tokens.random"></button>
        </div>
        <div><button type="button" id="token-api-save" class="primary" data-testid="token-api-save"
            data-i18n="tokens.saveApi"></button></div>
      </div>
      <div class="field">
        <label for="token-admin" data-i18n="tokens.admin"></label>
        <p class="muted" data-i18n="tokens.adminHelp"></p>
        <input id="token-admin" data-testid="token-admin" type="password" class="mono" autocomplete="new-password">
        <div><button type="button" id="token-admin-save" class="primary" data-testid="token-admin-save"
            data-i18n="tokens.saveAdmin"></button></div>
      </div>
      <p id="tokens-message" class="note" role="status"></p>
      <div id="tokens" class="muted"></div>
    </section>

    <section class="card">
      <div class="section-head">
        <h2 data-i18n="settings.heading"></h2>
        <button type="button" id="settings-save" class="primary" data-testid="settings-save"
            data-i18n="settings.save"></button>
      </div>
      <p class="muted" data-i18n="settings.help"></p>
      <p id="settings-message" class="note" role="status"></p>
      <div id="settings"></div>
      <div id="aliases" class="aliases" data-testid="aliases"></div>
    </section>
  </div>

  <section class="card stack" data-testid="clients">
    <div class="section-head"><h2 data-i18n="clients.heading"></h2></div>
    <p class="muted" data-i18n="clients.help"></p>
    <form id="client-form" class="stack" data-testid="client-form" novalidate>
      <div class="row2">
        <div class="field">
          <label for="client-name" data-i18n="clients.name"></label>
          <input id="client-name" data-testid="client-name" autocomplete="off">
        </div>
        <div class="field">
          <label for="client-rpm" data-i18n="clients.rpm"></label>
          <input id="client-rpm" data-testid="client-rpm" type="number" min="1" step="1"
              data-i18n-placeholder="clients.rpmPlaceholder">
        </div>
      </div>
      <p class="muted" data-i18n="clients.rpmHelp"></p>
      <div class="field">
        <label for="client-models" data-i18n="clients.models"></label>
        <textarea id="client-models" data-testid="client-models" spellcheck="false"
            data-i18n-placeholder="clients.modelsPlaceholder"></textarea>
      </div>
      <div><button type="submit" class="primary" data-testid="client-submit" data-i18n="clients.create"></button></div>
    </form>
    <p id="clients-message" class="note" role="status"></p>
    <div id="client-token-box" class="stack"></div>
    <div id="clients" class="stack"></div>
  </section>

  <section class="card stack" data-testid="openrouter">
    <div class="section-head">
      <h2 data-i18n="openrouter.heading"></h2>
      <span id="openrouter-state"></span>
      <button type="button" id="openrouter-refresh" class="small" data-testid="openrouter-refresh"
          data-i18n="openrouter.refresh"></button>
    </div>
    <p class="muted" data-i18n="openrouter.help"></p>
    <p id="openrouter-message" class="note" role="status"></p>
    <div id="openrouter" class="pins"></div>
  </section>

  <section class="card stack" data-testid="connect">
    <div class="section-head"><h2 data-i18n="connect.heading"></h2></div>
    <p class="muted" data-i18n="connect.help"></p>
    <div class="tabs" id="connect-tabs" role="tablist"></div>
    <div class="field">
      <label for="connect-model" data-i18n="connect.model"></label>
      <select id="connect-model" data-testid="connect-model"></select>
    </div>
    <div class="field" id="connect-window-field">
      <label for="connect-window" data-i18n="connect.window"></label>
      <input id="connect-window" data-testid="connect-window" type="number" min="1" step="1" inputmode="numeric">
    </div>
    <p id="connect-message" class="note" role="status"></p>
    <div id="connect" class="stack"></div>
  </section>
</main>

<script>
"use strict";

const I18N = {
  "en": {
    "app.title": "fllmapi-worker · configuration",
    "lang.toggle": "中文",
    "login.heading": "Sign in",
    "login.help": "Enter the admin token (ADMIN_TOKEN). It is kept in this tab only.",
    "login.token": "Admin token",
    "login.submit": "Sign in",
    "login.empty": "Enter the admin token.",
    "login.rejected": "The admin token was not accepted. Sign in again.",
    "login.logout": "Sign out",
    "error.network": "The gateway could not be reached.",
    "error.status": "The gateway answered HTTP {status}.",
    "status.clear": "All providers available",
    "status.cooling": "{n} cooling down",
    "status.help": "Cooldowns live in the memory of the Worker instance that answered; another instance may still hold one.",
    "status.clearButton": "Clear cooldowns",
    "status.verifyButton": "Clear and verify",
    "status.allModels": "all models",
    "status.left": "left",
    "status.lastStatus": "last status",
    "status.none": "—",
    "status.http": "HTTP {status}",
    "status.key": "key #{id}",
    "status.cleared": "Cleared {n} cooldown(s).",
    "status.verified": "Cleared; each provider and key that was cooling down was probed.",
    "status.verifyHeading": "Verification",
    "status.verifyNothing": "Nothing was cooling down: nothing to verify.",
    "status.verifyOk": "working",
    "status.verifyFailed": "failing",
    "status.verifySkipped": "not probed",
    "source.heuristic": "heuristic",
    "source.authoritative": "set by provider",
    "source.quota": "daily quota",
    "source.credit": "credit exhausted",
    "source.tier": "tier / permission",
    "source.model": "model unavailable",
    "source.loop": "request loop (base_url leads back)",
    "cooldown.badge": "cooling down",
    "cooldown.badgeModel": "{model} cooling down",
    "cooldown.badgeKeys": "every key cooling down",
    "time.now": "ending",
    "time.s": "{s} s",
    "time.m": "{m} min",
    "time.ms": "{m} min {s} s",
    "time.h": "{h} h",
    "time.hm": "{h} h {m} min",
    "providers.heading": "Providers",
    "providers.count": "{n} configured",
    "providers.refresh": "Refresh",
    "providers.empty": "No provider yet. Add one below: pick a platform in Quick add, or enter any OpenAI-compatible endpoint in Custom add.",
    "provider.enabled": "enabled",
    "provider.disabled": "disabled",
    "provider.edit": "Edit",
    "provider.enable": "Enable",
    "provider.disable": "Disable",
    "provider.delete": "Delete",
    "provider.priority": "priority",
    "provider.timeout": "timeout",
    "provider.timeoutDefault": "default",
    "provider.confirmDelete": "Delete provider “{name}”? This cannot be undone.",
    "provider.deleted": "Deleted “{name}”.",
    "provider.saved": "Saved “{name}”.",
    "provider.enabledNote": "“{name}” is enabled.",
    "provider.disabledNote": "“{name}” is disabled.",
    "edit.keyPlaceholder": "empty keeps the keys; a key here replaces them all",
    "edit.enabled": "Enabled",
    "keys.heading": "Keys ({n})",
    "keys.add": "Add keys",
    "keys.input": "New keys, one per line",
    "keys.submit": "Add",
    "keys.inUse": "in use",
    "keys.disabled": "disabled",
    "keys.enable": "Enable",
    "keys.disable": "Disable",
    "keys.unreadable": "cannot be decrypted: add it again, then delete this one",
    "keys.coolingUntil": "cooling down until {time}",
    "keys.noneUsable": "No usable key: this provider serves nothing until a key is enabled or added.",
    "keys.confirmDelete": "Delete key #{id} ({hint}) of “{name}”? This cannot be undone.",
    "keys.deleted": "Deleted key #{id}.",
    "keys.enabledNote": "Key #{id} is in use again.",
    "keys.disabledNote": "Key #{id} is disabled.",
    "keys.added": "Added {n} key(s).",
    "keys.addStopped": "Added {n} of {total} key(s); the next one was refused: {message} The rest stay in the field.",
    "edit.save": "Save",
    "edit.cancel": "Cancel",
    "form.name": "Name",
    "form.platform": "Platform id",
    "form.baseUrl": "Base URL",
    "form.key": "API key",
    "form.keys": "API keys, one per line",
    "form.keysPlaceholder": "one key per line",
    "form.keysHelp": "Several keys of one platform take turns; a key that reaches its limit rests while the others serve.",
    "form.keysCount": "{n} key(s) entered",
    "form.models": "Models, one per line (a kind after a space sets it: embedding, transcription, speech, image, chat; else it is guessed from the id)",
    "form.modelsPlaceholder": "model-id",
    "form.priority": "Priority (lower is tried first)",
    "form.timeout": "Timeout in seconds",
    "form.timeoutPlaceholder": "empty: default 15",
    "form.notInteger": "{field}: a whole number is expected.",
    "form.badTimeout": "Timeout: a number of seconds above 0 is expected.",
    "form.needName": "Enter a name.",
    "form.needKey": "Enter at least one API key.",
    "form.needModels": "Give at least one model.",
    "form.needBaseUrl": "Enter the base URL.",
    "preset.heading": "Quick add",
    "preset.help": "Pick a platform: its base URL and free models are filled in. Paste your keys, then add it.",
    "preset.platform": "Platform",
    "preset.choose": "Choose a platform…",
    "preset.accountId": "Cloudflare account id",
    "preset.accountIdPlaceholder": "32 hexadecimal characters",
    "preset.needAccount": "Enter the Cloudflare account id.",
    "preset.models": "Models",
    "kind.embedding": "embedding",
    "kind.transcription": "transcription",
    "kind.speech": "speech",
    "kind.image": "image",
    "preset.modelCount": "{selected} of {total} selected",
    "preset.search": "Search models",
    "preset.fetch": "Fetch full model list",
    "preset.fetched": "The platform lists {n} model(s).",
    "preset.noModelList": "This platform has no model list to fetch; its free models are listed.",
    "preset.pickFirst": "Choose a platform first.",
    "preset.noMatch": "No model matches the search.",
    "preset.submit": "Add provider",
    "preset.added": "Added “{name}”.",
    "custom.heading": "Custom add",
    "custom.help": "Any OpenAI-compatible endpoint: a platform not in the list, Ollama, vLLM, llama.cpp.",
    "custom.baseUrlPlaceholder": "for example http://127.0.0.1:11434/v1",
    "custom.submit": "Add provider",
    "custom.added": "Added “{name}”.",
    "clients.heading": "Clients",
    "clients.help": "Give each app or person its own token: it works wherever the API token does, and revoking it stops only that client.",
    "clients.name": "Name",
    "clients.rpm": "Requests per minute (optional)",
    "clients.rpmPlaceholder": "no limit",
    "clients.rpmHelp": "Over this many requests in a minute, the client gets 429 until the minute ends.",
    "clients.models": "Allowed models, one per line (optional: empty allows every model)",
    "clients.modelsPlaceholder": "llama-3.3-70b-versatile",
    "clients.create": "Create client",
    "clients.created": "Client “{name}” created. Copy its token now: it is shown only this once.",
    "clients.token": "Token of “{name}”",
    "clients.copy": "Copy token",
    "clients.copied": "Token copied to the clipboard.",
    "clients.dismiss": "I have copied it",
    "clients.empty": "No client yet: only the API token is accepted.",
    "clients.enabled": "enabled",
    "clients.disabled": "disabled",
    "clients.rpmValue": "{n} requests/min",
    "clients.noRpm": "no rpm set",
    "clients.allModels": "every model",
    "clients.edit": "Edit",
    "clients.save": "Save",
    "clients.cancel": "Cancel",
    "clients.enable": "Enable",
    "clients.disable": "Disable",
    "clients.revoke": "Revoke",
    "clients.confirmRevoke": "Revoke the client “{name}” ({hint})? Its token stops working at once and cannot be restored.",
    "clients.saved": "Client “{name}” saved.",
    "clients.revoked": "Client “{name}” revoked.",
    "clients.nameEmpty": "Enter a name for the client.",
    "clients.rpmInvalid": "Requests per minute must be a whole number of at least 1, or empty.",
    "openrouter.heading": "OpenRouter pinning",
    "openrouter.help": "Each model served through OpenRouter is pinned to one upstream provider, ranked by speed for the price (implicit caching counts double). The pin moves only after it was idle, or after 3 failures in a row. Prices in USD per million tokens.",
    "openrouter.refresh": "Refresh",
    "openrouter.on": "on",
    "openrouter.off": "off",
    "openrouter.offNote": "Pinning is off (setting openrouter_pinning): OpenRouter chooses the upstream of every request.",
    "openrouter.origin": "origin",
    "openrouter.idle": "released after idle",
    "openrouter.empty": "No model yet: a model appears here after its first request through an OpenRouter provider.",
    "openrouter.lockedTo": "pinned to {slug}",
    "openrouter.until": "until {time}",
    "openrouter.notPinned": "not pinned",
    "openrouter.failures": "failures in a row",
    "openrouter.switches": "switches",
    "openrouter.refreshed": "last refresh",
    "openrouter.never": "never",
    "openrouter.noCandidates": "No usable endpoint known for this model.",
    "openrouter.col.rank": "#",
    "openrouter.col.slug": "Upstream",
    "openrouter.col.score": "Score",
    "openrouter.col.prompt": "Input",
    "openrouter.col.completion": "Output",
    "openrouter.col.cacheRead": "Cache read",
    "openrouter.col.caching": "Caching",
    "openrouter.col.throughput": "Throughput",
    "openrouter.col.state": "State",
    "openrouter.price": "${n} / M",
    "openrouter.tps": "{n} tok/s",
    "openrouter.yes": "yes",
    "openrouter.no": "no",
    "openrouter.pinned": "pinned",
    "openrouter.coolingUntil": "cooling until {time}",
    "tokens.heading": "Tokens",
    "tokens.api": "API token",
    "tokens.apiHelp": "What clients send to /v1. Copy it before leaving: it is not shown again.",
    "tokens.random": "Random",
    "tokens.saveApi": "Save API token",
    "tokens.admin": "Admin token",
    "tokens.adminHelp": "What this page signs in with. This session switches to the new token at once.",
    "tokens.saveAdmin": "Save admin token",
    "tokens.tooShort": "A token needs at least {n} characters.",
    "tokens.apiSaved": "API token saved. Clients must send the new one from now on.",
    "tokens.adminSaved": "Admin token saved; this session now uses it.",
    "tokens.apiHint": "API token in use",
    "tokens.adminHint": "Admin token in use",
    "settings.heading": "Settings: routing, rate limits, OpenRouter",
    "settings.help": "Each value's source: saved here (D1) wins over the environment, which wins over the default. Empty a field and save to drop the saved value. Rate limits cannot be emptied: 0 turns one off.",
    "settings.save": "Save settings",
    "settings.saved": "Settings saved.",
    "settings.unchanged": "Nothing changed.",
    "settings.reset": "Use default",
    "settings.notInteger": "{field}: a whole number of 0 or more is expected.",
    "settings.limitEmpty": "{field}: enter a number; 0 turns the limit off.",
    "settings.off": "off",
    "settings.on": "on",
    "settings.badOrigin": "{field}: an origin such as https://openrouter.ai is expected (http or https, a host, no path).",
    "settingSource.d1": "saved (D1)",
    "settingSource.env": "environment",
    "settingSource.default": "default",
    "setting.routing_cooldown_ceiling_ms": "Cooldown ceiling (ms)",
    "setting.max_consecutive_upstream_fails": "Stop after consecutive failures",
    "setting.same_model_retry_max_ms": "Same-model retry wait (ms)",
    "setting.stream_stall_ms": "Stream stall timeout (ms)",
    "setting.max_body_bytes": "Request body limit (bytes)",
    "settingHelp.routing_cooldown_ceiling_ms": "Longest heuristic, credit or tier cooldown; kept between 1 min and 24 h.",
    "settingHelp.max_consecutive_upstream_fails": "A request stops with 503 after this many failed attempts in a row; 0 turns it off.",
    "settingHelp.same_model_retry_max_ms": "A 429 asking to wait at most this long is waited for and retried on the same model.",
    "settingHelp.stream_stall_ms": "A stream with no data for this long ends with an error event.",
    "settingHelp.max_body_bytes": "Larger requests are refused with 413.",
    "setting.default_client_rpm": "API token: requests per minute",
    "setting.ip_rpm": "Requests per minute per IP",
    "setting.auth_fail_limit": "Failed token checks per minute per IP",
    "settingHelp.default_client_rpm": "The limit of the API token (the default client); named clients have their own under Clients. Over it, 429 until the minute ends; 0 turns it off.",
    "settingHelp.ip_rpm": "Every /v1 request counts against its caller's IP, whichever token it carries. Over it, 429 until the minute ends; 0 turns it off.",
    "settingHelp.auth_fail_limit": "After this many wrong tokens in a minute from one IP, every request from it (the API and this page alike) gets 429 until the minute ends; 0 turns it off.",
    "setting.openrouter_pinning": "OpenRouter pinning (1 on, 0 off)",
    "setting.openrouter_lock_idle_ms": "OpenRouter pin released after idle (ms)",
    "setting.openrouter_origin": "OpenRouter origin",
    "settingHelp.openrouter_pinning": "For providers on OpenRouter, each model keeps to one upstream provider, so long conversations keep its prompt cache. 0 lets OpenRouter spread the requests.",
    "settingHelp.openrouter_lock_idle_ms": "Every request renews a model's pin; once no request has come for this long, the best candidate may take over. From 1 min to 24 h.",
    "settingHelp.openrouter_origin": "Where the candidates are asked for (the endpoints API): scheme and host only, such as https://openrouter.ai. Empty it to go back to the environment or the default.",
    "setting.model_aliases": "Model aliases",
    "settingHelp.model_aliases": "Send the model names clients ask for to a model of yours, on every API (OpenAI, Anthropic, Responses, Gemini, Ollama). * matches any characters; the whole name must match, in any case; the first matching row wins. A target is a model id or auto. The target counts as the model asked for: X-Fallback-From names it only when another model served.",
    "aliases.pattern": "Pattern",
    "aliases.target": "Target model",
    "aliases.patternPlaceholder": "claude-*haiku*",
    "aliases.targetPlaceholder": "model id or auto",
    "aliases.add": "Add alias",
    "aliases.example": "Add the Claude Code example",
    "aliases.remove": "Remove",
    "aliases.empty": "No alias: every model name is routed as it is asked.",
    "aliases.needPattern": "Alias {n}: enter a pattern.",
    "aliases.needTarget": "Alias “{pattern}”: enter a target model (or auto).",
    "aliases.duplicate": "The pattern “{pattern}” is given twice.",
    "connect.heading": "Connect a client",
    "connect.help": "Copy-ready set-up for the clients below, with this gateway's address. Put your API token where it says so (the token set under Tokens, or API_TOKEN); this page never shows it.",
    "connect.model": "Model",
    "connect.auto": "auto (any model, by priority)",
    "connect.tokenPlaceholder": "<your API token>",
    "connect.modelPlaceholder": "<model id>",
    "connect.copy": "Copy",
    "connect.copied": "Copied to the clipboard.",
    "connect.copyFailed": "The browser refused to copy: select the text and copy it by hand.",
    "connect.shell": "In a shell (bash, zsh)",
    "connect.codexFile": "~/.codex/config.toml",
    "connect.python": "Python (pip install openai)",
    "connect.headless": "Without a terminal (scripts, CI)",
    "connect.claudeFile": "~/.claude/settings.json (merge into yours)",
    "connect.geminiFile": "~/.gemini/settings.json (merge into yours)",
    "connect.taskPlaceholder": "<your task>",
    "connect.window": "Context window of that model, in tokens (the agent compacts the conversation before it fills)",
    "connect.apps": "Settings of the app",
    "client.claude": "Claude Code",
    "client.codex": "Codex CLI",
    "client.gemini": "Gemini CLI",
    "client.openai": "OpenAI SDK",
    "client.apps": "Cherry Studio / Open WebUI / Ollama apps",
    "clientHelp.claude": "Claude Code speaks Anthropic Messages; ANTHROPIC_AUTH_TOKEN is sent as a Bearer token, and its quick background tasks ask for the haiku model. The settings row tells Claude Code to handle the model as one it knows (else it warns that it does not recognize it and assumes a 1M-token window); CLAUDE_CODE_AUTO_COMPACT_WINDOW makes it compact before the model's window fills (it takes 100,000 at least; for a larger window than 200,000 none is needed).",
    "clientHelp.codex": "Codex CLI speaks only the Responses API (wire_api = \"responses\"). Put the file in place, set the variable, then run codex. model_context_window tells it the model's window. Outside a git repository codex exec needs --skip-git-repo-check. Codex notes that it has no metadata for a model that is not OpenAI's and uses its generic profile: the right one here.",
    "clientHelp.gemini": "Gemini CLI speaks the Gemini API and sends the key as x-goog-api-key. The settings file chooses the Gemini API key as its sign-in (with a base URL set, it would not choose one itself). Without a terminal it runs only in a folder it trusts: GEMINI_CLI_TRUST_WORKSPACE=true. It reads auto, pro and flash as names of its own: give a model id.",
    "clientHelp.openai": "Any OpenAI SDK or OpenAI-compatible tool: base URL ending in /v1, the API token as the key. Chat Completions and the Responses API both work.",
    "clientHelp.apps": "Cherry Studio adds /v1 itself, so give it the bare address; Open WebUI takes the /v1 address; apps built for Ollama take the bare address and send the token as a Bearer header.",
    "apps.cherry": "Cherry Studio · provider type OpenAI",
    "apps.openwebui": "Open WebUI · Settings → Connections → OpenAI API",
    "apps.ollama": "Ollama-compatible apps",
    "apps.address": "API address",
    "apps.url": "URL",
    "apps.host": "Host",
    "apps.key": "API key",
    "apps.header": "Header",
    "usage.heading": "Usage and health",
    "usage.help": "What the gateway did: requests, errors, tokens and latency, counted per hour. Each Worker instance writes its counts at most once a minute; the 30 d view adds up whole UTC days.",
    "usage.range.24h": "24 h",
    "usage.range.7d": "7 d",
    "usage.range.30d": "30 d",
    "usage.refresh": "Refresh",
    "usage.empty": "No traffic in this range yet.",
    "usage.col.provider": "Provider",
    "usage.col.requests": "Requests",
    "usage.col.successes": "Succeeded",
    "usage.col.failovers": "Failovers",
    "usage.col.errors": "Errors",
    "usage.col.classes": "Errors by class",
    "usage.col.streams_cut": "Streams cut",
    "usage.col.rescues": "Rescued",
    "usage.timeChart": "Requests and errors over time",
    "usage.perHour": "per hour, local time",
    "usage.perDay": "per day (UTC)",
    "usage.slotTitle": "{time}: {requests} requests, {errors} errors",
    "usage.tokensChart": "Tokens per client",
    "usage.tokensHelp": "As the upstream reported them; where an answer carried no usage, estimated (est.).",
    "usage.input": "Input",
    "usage.output": "Output",
    "usage.tokensIn": "{n} in",
    "usage.tokensInEst": "{n} in ({e} est.)",
    "usage.tokensOut": "{n} out",
    "usage.tokensOutEst": "{n} out ({e} est.)",
    "usage.noTokens": "No client used tokens in this range.",
    "usage.latencyChart": "Latency per provider",
    "usage.p50": "p50 (median)",
    "usage.p95": "p95",
    "usage.firstByte": "first byte: p50 {p50} · p95 {p95}",
    "usage.toEnd": "to the end: p50 {p50} · p95 {p95}",
    "usage.ms": "{n} ms",
    "usage.noLatency": "No latency measured in this range.",
    "usage.table": "Per provider",
    "usage.failures": "Recent failures",
    "usage.noFailures": "No failure recorded.",
    "usage.showAll": "Show all {n}",
    "usage.showFewer": "Show the latest {n}",
    "usage.client": "client",
    "usage.noProvider": "no provider (all failed)",
    "usage.apiToken": "API token",
    "usage.savings": "OpenRouter: what pinning saves",
    "usage.savingsLine": "pinned {pinned}: {pinnedUsd} vs official {official}: {officialUsd} for {input} input ({hit}% cached) + {output} output tokens — saves {savings}",
    "usage.costsLine": "pinned {pinned}: {pinnedUsd} vs official {official}: {officialUsd} for {input} input ({hit}% cached) + {output} output tokens — costs {savings} more",
    "usage.savingsSame": "pinned {pinned}, the model's official provider: {pinnedUsd} for {input} input ({hit}% cached) + {output} output tokens",
    "usage.savingsUnknown": "pinned {pinned}: {pinnedUsd} for {input} input ({hit}% cached) + {output} output tokens; no price is known for the model's official endpoint.",
    "usage.class.auth": "auth refused",
    "usage.class.out_of_credits": "out of credits",
    "usage.class.forbidden": "forbidden",
    "usage.class.daily_quota_exhausted": "daily quota exhausted",
    "usage.class.rate_limited": "rate limited",
    "usage.class.model_not_found": "model not found",
    "usage.class.context_too_large": "context too large",
    "usage.class.timeout": "timeout",
    "usage.class.upstream_error": "upstream error",
    "usage.class.network": "network error",
    "usage.class.invalid_stream": "invalid stream",
    "usage.class.key_unreadable": "key unreadable",
    "usage.class.loop_detected": "request loop",
    "usage.class.caller_error": "caller error"
  },
  "zh": {
    "app.title": "fllmapi-worker · 配置",
    "lang.toggle": "English",
    "login.heading": "登录",
    "login.help": "输入管理令牌（ADMIN_TOKEN）。它只保存在当前标签页中。",
    "login.token": "管理令牌",
    "login.submit": "登录",
    "login.empty": "请输入管理令牌。",
    "login.rejected": "管理令牌无效，请重新登录。",
    "login.logout": "退出",
    "error.network": "无法连接到网关。",
    "error.status": "网关返回 HTTP {status}。",
    "status.clear": "所有服务商均可用",
    "status.cooling": "{n} 项冷却中",
    "status.help": "冷却状态保存在响应本次请求的 Worker 实例内存中，其他实例可能仍有冷却。",
    "status.clearButton": "清除冷却",
    "status.verifyButton": "清除并验证",
    "status.allModels": "全部模型",
    "status.left": "剩余",
    "status.lastStatus": "最近状态",
    "status.none": "—",
    "status.http": "HTTP {status}",
    "status.key": "密钥 #{id}",
    "status.cleared": "已清除 {n} 项冷却。",
    "status.verified": "已清除，并逐一探测了冷却中的服务商和密钥。",
    "status.verifyHeading": "验证结果",
    "status.verifyNothing": "没有冷却中的服务商，无需验证。",
    "status.verifyOk": "正常",
    "status.verifyFailed": "失败",
    "status.verifySkipped": "未探测",
    "source.heuristic": "推断",
    "source.authoritative": "服务商指定",
    "source.quota": "每日额度",
    "source.credit": "余额耗尽",
    "source.tier": "权限 / 等级",
    "source.model": "模型不可用",
    "source.loop": "请求回环（base_url 指回网关）",
    "cooldown.badge": "冷却中",
    "cooldown.badgeModel": "{model} 冷却中",
    "cooldown.badgeKeys": "全部密钥冷却中",
    "time.now": "即将结束",
    "time.s": "{s} 秒",
    "time.m": "{m} 分钟",
    "time.ms": "{m} 分 {s} 秒",
    "time.h": "{h} 小时",
    "time.hm": "{h} 小时 {m} 分",
    "providers.heading": "服务商",
    "providers.count": "共 {n} 个",
    "providers.refresh": "刷新",
    "providers.empty": "还没有服务商。在下方添加：在“快速添加”中选择平台，或在“自定义添加”中填写任意 OpenAI 兼容接口。",
    "provider.enabled": "已启用",
    "provider.disabled": "已停用",
    "provider.edit": "编辑",
    "provider.enable": "启用",
    "provider.disable": "停用",
    "provider.delete": "删除",
    "provider.priority": "优先级",
    "provider.timeout": "超时",
    "provider.timeoutDefault": "默认",
    "provider.confirmDelete": "删除服务商“{name}”？此操作无法撤销。",
    "provider.deleted": "已删除“{name}”。",
    "provider.saved": "已保存“{name}”。",
    "provider.enabledNote": "已启用“{name}”。",
    "provider.disabledNote": "已停用“{name}”。",
    "edit.keyPlaceholder": "留空保留现有密钥；填写则替换全部密钥",
    "edit.enabled": "启用",
    "keys.heading": "密钥（{n}）",
    "keys.add": "添加密钥",
    "keys.input": "新密钥，每行一个",
    "keys.submit": "添加",
    "keys.inUse": "使用中",
    "keys.disabled": "已禁用",
    "keys.enable": "启用",
    "keys.disable": "禁用",
    "keys.unreadable": "无法解密：请重新添加该密钥，再删除这一条",
    "keys.coolingUntil": "冷却至 {time}",
    "keys.noneUsable": "没有可用的密钥：启用或添加密钥之前，该服务商不会提供服务。",
    "keys.confirmDelete": "删除“{name}”的密钥 #{id}（{hint}）？此操作无法撤销。",
    "keys.deleted": "已删除密钥 #{id}。",
    "keys.enabledNote": "已重新启用密钥 #{id}。",
    "keys.disabledNote": "已禁用密钥 #{id}。",
    "keys.added": "已添加 {n} 个密钥。",
    "keys.addStopped": "已添加 {n} / {total} 个密钥；下一个被拒绝：{message} 其余的仍在输入框中。",
    "edit.save": "保存",
    "edit.cancel": "取消",
    "form.name": "名称",
    "form.platform": "平台标识",
    "form.baseUrl": "Base URL",
    "form.key": "API 密钥",
    "form.keys": "API 密钥，每行一个",
    "form.keysPlaceholder": "每行一个密钥",
    "form.keysHelp": "同一平台的多个密钥轮流使用；某个密钥达到限额时暂停，其余密钥继续服务。",
    "form.keysCount": "已填写 {n} 个密钥",
    "form.models": "模型，每行一个（在模型后空格写类型即可指定：embedding、transcription、speech、image、chat；否则按模型名推断）",
    "form.modelsPlaceholder": "模型 ID",
    "form.priority": "优先级（数字小的先尝试）",
    "form.timeout": "超时（秒）",
    "form.timeoutPlaceholder": "留空：默认 15",
    "form.notInteger": "{field}：需要整数。",
    "form.badTimeout": "超时：需要大于 0 的秒数。",
    "form.needName": "请填写名称。",
    "form.needKey": "请至少填写一个 API 密钥。",
    "form.needModels": "至少需要一个模型。",
    "form.needBaseUrl": "请填写 Base URL。",
    "preset.heading": "快速添加",
    "preset.help": "选择平台后会自动填入 Base URL 和免费模型。粘贴密钥（可多个）即可添加。",
    "preset.platform": "平台",
    "preset.choose": "选择平台…",
    "preset.accountId": "Cloudflare 账户 ID",
    "preset.accountIdPlaceholder": "32 位十六进制字符",
    "preset.needAccount": "请填写 Cloudflare 账户 ID。",
    "preset.models": "模型",
    "kind.embedding": "向量",
    "kind.transcription": "转写",
    "kind.speech": "语音",
    "kind.image": "图像",
    "preset.modelCount": "已选 {selected} / 共 {total}",
    "preset.search": "搜索模型",
    "preset.fetch": "获取完整模型列表",
    "preset.fetched": "该平台共列出 {n} 个模型。",
    "preset.noModelList": "该平台没有可获取的模型列表，下面是它的免费模型。",
    "preset.pickFirst": "请先选择平台。",
    "preset.noMatch": "没有匹配的模型。",
    "preset.submit": "添加服务商",
    "preset.added": "已添加“{name}”。",
    "custom.heading": "自定义添加",
    "custom.help": "任意 OpenAI 兼容接口：列表之外的平台、Ollama、vLLM、llama.cpp。",
    "custom.baseUrlPlaceholder": "例如 http://127.0.0.1:11434/v1",
    "custom.submit": "添加服务商",
    "custom.added": "已添加“{name}”。",
    "clients.heading": "客户端",
    "clients.help": "为每个应用或使用者单独发放令牌：凡接受 API 令牌之处都接受它，吊销时只影响这一个客户端。",
    "clients.name": "名称",
    "clients.rpm": "每分钟请求数（可选）",
    "clients.rpmPlaceholder": "不限",
    "clients.rpmHelp": "一分钟内超过这么多次请求后，该客户端的请求返回 429，直到本分钟结束。",
    "clients.models": "允许的模型，每行一个（可选：留空表示允许全部模型）",
    "clients.modelsPlaceholder": "llama-3.3-70b-versatile",
    "clients.create": "创建客户端",
    "clients.created": "已创建客户端“{name}”。请立即复制其令牌：它只显示这一次。",
    "clients.token": "“{name}”的令牌",
    "clients.copy": "复制令牌",
    "clients.copied": "令牌已复制到剪贴板。",
    "clients.dismiss": "我已复制",
    "clients.empty": "尚无客户端：目前只接受 API 令牌。",
    "clients.enabled": "已启用",
    "clients.disabled": "已停用",
    "clients.rpmValue": "每分钟 {n} 次",
    "clients.noRpm": "未设每分钟请求数",
    "clients.allModels": "全部模型",
    "clients.edit": "编辑",
    "clients.save": "保存",
    "clients.cancel": "取消",
    "clients.enable": "启用",
    "clients.disable": "停用",
    "clients.revoke": "吊销",
    "clients.confirmRevoke": "吊销客户端“{name}”（{hint}）？其令牌立即失效，且无法恢复。",
    "clients.saved": "已保存客户端“{name}”。",
    "clients.revoked": "已吊销客户端“{name}”。",
    "clients.nameEmpty": "请输入客户端名称。",
    "clients.rpmInvalid": "每分钟请求数须为不小于 1 的整数，或留空。",
    "openrouter.heading": "OpenRouter 上游固定",
    "openrouter.help": "经 OpenRouter 提供的每个模型都固定到一个上游提供方，按单位价格的速度排名（支持隐式缓存的得分加倍）。固定只在空闲之后、或连续 3 次失败之后才会转移。价格单位为美元 / 百万 token。",
    "openrouter.refresh": "刷新",
    "openrouter.on": "已开启",
    "openrouter.off": "已关闭",
    "openrouter.offNote": "上游固定已关闭（设置 openrouter_pinning）：每个请求的上游由 OpenRouter 决定。",
    "openrouter.origin": "源地址",
    "openrouter.idle": "空闲释放",
    "openrouter.empty": "暂无模型：模型经 OpenRouter 服务商完成第一次请求后会出现在这里。",
    "openrouter.lockedTo": "固定到 {slug}",
    "openrouter.until": "至 {time}",
    "openrouter.notPinned": "未固定",
    "openrouter.failures": "连续失败",
    "openrouter.switches": "切换次数",
    "openrouter.refreshed": "上次刷新",
    "openrouter.never": "从未",
    "openrouter.noCandidates": "该模型暂无可用的上游端点。",
    "openrouter.col.rank": "#",
    "openrouter.col.slug": "上游",
    "openrouter.col.score": "得分",
    "openrouter.col.prompt": "输入",
    "openrouter.col.completion": "输出",
    "openrouter.col.cacheRead": "缓存读取",
    "openrouter.col.caching": "缓存",
    "openrouter.col.throughput": "吞吐",
    "openrouter.col.state": "状态",
    "openrouter.price": "${n} / M",
    "openrouter.tps": "{n} tok/s",
    "openrouter.yes": "是",
    "openrouter.no": "否",
    "openrouter.pinned": "已固定",
    "openrouter.coolingUntil": "冷却至 {time}",
    "tokens.heading": "令牌",
    "tokens.api": "API 令牌",
    "tokens.apiHelp": "客户端调用 /v1 时使用。离开前请复制，之后不会再显示。",
    "tokens.random": "随机生成",
    "tokens.saveApi": "保存 API 令牌",
    "tokens.admin": "管理令牌",
    "tokens.adminHelp": "登录本页面所用的令牌。保存后当前会话立即改用新令牌。",
    "tokens.saveAdmin": "保存管理令牌",
    "tokens.tooShort": "令牌至少需要 {n} 个字符。",
    "tokens.apiSaved": "API 令牌已保存，客户端需改用新令牌。",
    "tokens.adminSaved": "管理令牌已保存，当前会话已改用新令牌。",
    "tokens.apiHint": "当前 API 令牌",
    "tokens.adminHint": "当前管理令牌",
    "settings.heading": "设置：路由、限流、OpenRouter",
    "settings.help": "每项都标明来源：此处保存的值（D1）优先于环境变量，环境变量优先于默认值。清空输入框并保存即可删除已保存的值。限流项不能清空：填 0 即关闭。",
    "settings.save": "保存设置",
    "settings.saved": "设置已保存。",
    "settings.unchanged": "没有改动。",
    "settings.reset": "恢复默认",
    "settings.notInteger": "{field}：需要大于或等于 0 的整数。",
    "settings.limitEmpty": "{field}：请填写数字；0 表示关闭该限制。",
    "settings.off": "已关闭",
    "settings.on": "已开启",
    "settings.badOrigin": "{field}：需要形如 https://openrouter.ai 的源地址（http 或 https，加主机名，不带路径）。",
    "settingSource.d1": "已保存（D1）",
    "settingSource.env": "环境变量",
    "settingSource.default": "默认值",
    "setting.routing_cooldown_ceiling_ms": "冷却时长上限（毫秒）",
    "setting.max_consecutive_upstream_fails": "连续失败熔断次数",
    "setting.same_model_retry_max_ms": "同模型重试最长等待（毫秒）",
    "setting.stream_stall_ms": "流式停滞超时（毫秒）",
    "setting.max_body_bytes": "请求体上限（字节）",
    "settingHelp.routing_cooldown_ceiling_ms": "推断、余额、权限类冷却的最长时间，限定在 1 分钟到 24 小时之间。",
    "settingHelp.max_consecutive_upstream_fails": "一次请求连续失败这么多次后停止并返回 503；0 表示关闭。",
    "settingHelp.same_model_retry_max_ms": "429 要求等待的时间不超过此值时，等待后在同一模型上重试。",
    "settingHelp.stream_stall_ms": "流式回答超过此时间没有数据，就以错误事件结束。",
    "settingHelp.max_body_bytes": "更大的请求以 413 拒绝。",
    "setting.default_client_rpm": "API 令牌每分钟请求数",
    "setting.ip_rpm": "每个 IP 每分钟请求数",
    "setting.auth_fail_limit": "每个 IP 每分钟令牌验证失败次数",
    "settingHelp.default_client_rpm": "API 令牌（默认客户端）的限额；具名客户端在“客户端”中各自设置。超出后返回 429，直到本分钟结束；0 表示关闭。",
    "settingHelp.ip_rpm": "每个 /v1 请求都计入调用方的 IP，不论使用哪个令牌。超出后返回 429，直到本分钟结束；0 表示关闭。",
    "settingHelp.auth_fail_limit": "同一 IP 一分钟内令牌错误达到这么多次后，来自它的所有请求（API 与本页面）都返回 429，直到本分钟结束；0 表示关闭。",
    "setting.openrouter_pinning": "OpenRouter 上游固定（1 开启，0 关闭）",
    "setting.openrouter_lock_idle_ms": "OpenRouter 固定的空闲释放时间（毫秒）",
    "setting.openrouter_origin": "OpenRouter 源地址",
    "settingHelp.openrouter_pinning": "对 OpenRouter 上的服务商，每个模型固定使用同一个上游提供方，长对话因此能保住提示缓存。0 表示交由 OpenRouter 分配请求。",
    "settingHelp.openrouter_lock_idle_ms": "每次请求都会续期模型的固定；超过这么久没有请求后，最佳候选可以接替。范围 1 分钟到 24 小时。",
    "settingHelp.openrouter_origin": "获取候选（endpoints 接口）的地址：只含协议和主机名，如 https://openrouter.ai。清空即恢复环境变量或默认值。",
    "setting.model_aliases": "模型别名",
    "settingHelp.model_aliases": "把客户端请求的模型名转到你自己的模型，对所有接口生效（OpenAI、Anthropic、Responses、Gemini、Ollama）。* 匹配任意字符；必须匹配整个名称，不区分大小写；按顺序第一条匹配的生效。目标是模型 ID 或 auto。目标即视为所请求的模型：只有由其他模型回答时，X-Fallback-From 才会写出它。",
    "aliases.pattern": "匹配模式",
    "aliases.target": "目标模型",
    "aliases.patternPlaceholder": "claude-*haiku*",
    "aliases.targetPlaceholder": "模型 ID 或 auto",
    "aliases.add": "添加别名",
    "aliases.example": "添加 Claude Code 示例",
    "aliases.remove": "删除",
    "aliases.empty": "没有别名：每个模型名按请求原样路由。",
    "aliases.needPattern": "第 {n} 条别名：请填写匹配模式。",
    "aliases.needTarget": "别名“{pattern}”：请填写目标模型（或 auto）。",
    "aliases.duplicate": "匹配模式“{pattern}”重复了。",
    "connect.heading": "连接客户端",
    "connect.help": "以下客户端的现成配置，已填好本网关的地址。在标明的位置填入你的 API 令牌（在“令牌”中设置的，或 API_TOKEN）；本页面不会显示它。",
    "connect.model": "模型",
    "connect.auto": "auto（任意模型，按优先级）",
    "connect.tokenPlaceholder": "<你的 API 令牌>",
    "connect.modelPlaceholder": "<模型 ID>",
    "connect.copy": "复制",
    "connect.copied": "已复制到剪贴板。",
    "connect.copyFailed": "浏览器拒绝复制：请选中文字后手动复制。",
    "connect.shell": "在终端中（bash、zsh）",
    "connect.codexFile": "~/.codex/config.toml",
    "connect.python": "Python（pip install openai）",
    "connect.headless": "无终端时（脚本、CI）",
    "connect.claudeFile": "~/.claude/settings.json（合并进你的设置）",
    "connect.geminiFile": "~/.gemini/settings.json（合并进你的设置）",
    "connect.taskPlaceholder": "<你的任务>",
    "connect.window": "该模型的上下文窗口（token 数；智能体会在填满前压缩对话）",
    "connect.apps": "应用中的设置",
    "client.claude": "Claude Code",
    "client.codex": "Codex CLI",
    "client.gemini": "Gemini CLI",
    "client.openai": "OpenAI SDK",
    "client.apps": "Cherry Studio / Open WebUI / Ollama 应用",
    "clientHelp.claude": "Claude Code 使用 Anthropic Messages 接口；ANTHROPIC_AUTH_TOKEN 以 Bearer 令牌发送，它的后台小任务请求 haiku 模型。设置中的这一行让 Claude Code 把该模型当作已知模型处理（否则它会警告不认识该模型，并假定 1M token 的窗口）；CLAUDE_CODE_AUTO_COMPACT_WINDOW 让它在模型窗口填满前压缩对话（最少 100,000；窗口大于 200,000 时无需设置）。",
    "clientHelp.codex": "Codex CLI 只使用 Responses 接口（wire_api = \"responses\"）。放好配置文件、设置环境变量，然后运行 codex。model_context_window 告诉它模型的窗口。在 git 仓库之外，codex exec 需要 --skip-git-repo-check。对于非 OpenAI 的模型，Codex 会提示没有该模型的元数据并使用通用配置：这里正应如此。",
    "clientHelp.gemini": "Gemini CLI 使用 Gemini 接口，密钥以 x-goog-api-key 发送。设置文件把登录方式定为 Gemini API 密钥（设置了 Base URL 时它不会自己选择）。无终端运行时它只在信任的文件夹中工作：GEMINI_CLI_TRUST_WORKSPACE=true。它把 auto、pro、flash 当作自己的名称：请填写模型 ID。",
    "clientHelp.openai": "任意 OpenAI SDK 或 OpenAI 兼容工具：Base URL 以 /v1 结尾，密钥填 API 令牌。Chat Completions 和 Responses 接口都可用。",
    "clientHelp.apps": "Cherry Studio 会自己加上 /v1，所以填不带路径的地址；Open WebUI 填带 /v1 的地址；为 Ollama 设计的应用填不带路径的地址，并以 Bearer 请求头发送令牌。",
    "apps.cherry": "Cherry Studio · 提供商类型 OpenAI",
    "apps.openwebui": "Open WebUI · 设置 → 外部连接 → OpenAI API",
    "apps.ollama": "Ollama 兼容应用",
    "apps.address": "API 地址",
    "apps.url": "URL",
    "apps.host": "Host",
    "apps.key": "API 密钥",
    "apps.header": "请求头",
    "usage.heading": "用量与健康",
    "usage.help": "网关做了什么：请求、错误、token 与延迟，按小时统计。每个 Worker 实例最多每分钟写入一次计数；30 天视图按 UTC 整日汇总。",
    "usage.range.24h": "24 小时",
    "usage.range.7d": "7 天",
    "usage.range.30d": "30 天",
    "usage.refresh": "刷新",
    "usage.empty": "此时间范围内还没有流量。",
    "usage.col.provider": "服务商",
    "usage.col.requests": "请求",
    "usage.col.successes": "成功",
    "usage.col.failovers": "故障转移",
    "usage.col.errors": "错误",
    "usage.col.classes": "错误类型",
    "usage.col.streams_cut": "流中断",
    "usage.col.rescues": "已救回",
    "usage.timeChart": "请求与错误趋势",
    "usage.perHour": "每小时，本地时间",
    "usage.perDay": "每天（UTC）",
    "usage.slotTitle": "{time}：{requests} 个请求，{errors} 个错误",
    "usage.tokensChart": "各客户端的 token 用量",
    "usage.tokensHelp": "取自上游报告的用量；答复未带用量时为估算值（估算）。",
    "usage.input": "输入",
    "usage.output": "输出",
    "usage.tokensIn": "输入 {n}",
    "usage.tokensInEst": "输入 {n}（估算 {e}）",
    "usage.tokensOut": "输出 {n}",
    "usage.tokensOutEst": "输出 {n}（估算 {e}）",
    "usage.noTokens": "此时间范围内没有客户端用过 token。",
    "usage.latencyChart": "各服务商延迟",
    "usage.p50": "p50（中位数）",
    "usage.p95": "p95",
    "usage.firstByte": "首字节：p50 {p50} · p95 {p95}",
    "usage.toEnd": "完成：p50 {p50} · p95 {p95}",
    "usage.ms": "{n} 毫秒",
    "usage.noLatency": "此时间范围内没有延迟数据。",
    "usage.table": "按服务商统计",
    "usage.failures": "最近的失败",
    "usage.noFailures": "没有失败记录。",
    "usage.showAll": "显示全部 {n} 条",
    "usage.showFewer": "只显示最近 {n} 条",
    "usage.client": "客户端",
    "usage.noProvider": "无服务商（全部失败）",
    "usage.apiToken": "API 令牌",
    "usage.savings": "OpenRouter：固定上游省下的费用",
    "usage.savingsLine": "固定的 {pinned}：{pinnedUsd}，官方 {official}：{officialUsd}（按 {input} 输入 token，{hit}% 命中缓存，加 {output} 输出 token 计）— 节省 {savings}",
    "usage.costsLine": "固定的 {pinned}：{pinnedUsd}，官方 {official}：{officialUsd}（按 {input} 输入 token，{hit}% 命中缓存，加 {output} 输出 token 计）— 多花 {savings}",
    "usage.savingsSame": "固定的 {pinned} 就是该模型的官方提供方：{pinnedUsd}（按 {input} 输入 token，{hit}% 命中缓存，加 {output} 输出 token 计）",
    "usage.savingsUnknown": "固定的 {pinned}：{pinnedUsd}（按 {input} 输入 token，{hit}% 命中缓存，加 {output} 输出 token 计）；该模型官方端点的价格未知。",
    "usage.class.auth": "鉴权失败",
    "usage.class.out_of_credits": "余额耗尽",
    "usage.class.forbidden": "无权限",
    "usage.class.daily_quota_exhausted": "每日额度用尽",
    "usage.class.rate_limited": "限流",
    "usage.class.model_not_found": "模型不存在",
    "usage.class.context_too_large": "上下文过长",
    "usage.class.timeout": "超时",
    "usage.class.upstream_error": "上游错误",
    "usage.class.network": "网络错误",
    "usage.class.invalid_stream": "无效的流",
    "usage.class.key_unreadable": "密钥无法解密",
    "usage.class.loop_detected": "请求回环",
    "usage.class.caller_error": "调用方错误"
  }
};

const TOKEN_STORAGE = "fllmapi.adminToken";
const LANG_STORAGE = "fllmapi.lang";
const ACCOUNT_PLACEHOLDER = "{account_id}";
const MIN_TOKEN_CHARS = 16;
const POLL_MS = 10000;
const TICK_MS = 1000;
// Sections with a message line (#<section>-message) that note() writes to.
const SECTIONS = ["status", "usage", "providers", "preset", "custom", "tokens", "settings", "clients", "openrouter", "connect"];
const ALIASES_KEY = "model_aliases";
// The rate limits (SPEC §14): the API's null turns them off instead of restoring the env value or
// the default, so the page never sends null for them: no reset button, and an empty field is refused.
const LIMIT_KEYS = ["default_client_rpm", "ip_rpm", "auth_fail_limit"];
// Settings whose value is an origin (text, SPEC §15), not a number: a text field, checked as an origin.
const ORIGIN_KEYS = ["openrouter_origin"];
// The aliases the example button adds: Claude Code's small background model to a small model
// (the page picks the first one a provider declares), everything else it asks for to auto.
const CLAUDE_EXAMPLE = [["claude-*haiku*", null], ["claude-*", "auto"]];
// The "Connect a client" tabs, in order (each has client.<id> and clientHelp.<id> texts).
const CLIENTS = ["claude", "codex", "gemini", "openai", "apps"];
// A model this version of Claude Code knows, whose handling a gateway model takes on (its
// settings' modelPicker "behavesAs"): without one, Claude Code warns that it does not recognize
// the model and guesses a 1M-token window.
const CLAUDE_BEHAVES_AS = "claude-sonnet-4-6";
// The smallest auto-compact window Claude Code accepts, and the window of CLAUDE_BEHAVES_AS: a
// model's window between the two is where Claude Code is told to compact.
const CLAUDE_MIN_COMPACT = 100000;
const CLAUDE_KNOWN_WINDOW = 200000;
// The context window the panel assumes until it is told (Llama 3.x, Qwen, gpt-oss: 128k).
const DEFAULT_WINDOW = 131072;
const HOUR_MS = 3600000;
const DAY_MS = 24 * HOUR_MS;
// The Usage panel's ranges (SPEC §17): how far back, and what one bar of the time chart covers
// (the server counts per UTC hour; 30 d sums them into UTC days).
const USAGE_RANGES = {
  "24h": { ms: DAY_MS, slotMs: HOUR_MS },
  "7d": { ms: 7 * DAY_MS, slotMs: HOUR_MS },
  "30d": { ms: 30 * DAY_MS, slotMs: DAY_MS },
};
// The server keeps the last 200 failures; the panel shows this many until "show all".
const EVENTS_LIMIT = 200;
const FAILURES_SHOWN = 20;
// The per-provider counts the totals line and the table show, in order (usage.col.<name>).
const USAGE_COUNTS = ["requests", "successes", "failovers", "errors", "streams_cut", "rescues"];
const SVG_NS = "http://www.w3.org/2000/svg";

const state = {
  lang: localStorage.getItem(LANG_STORAGE) === "en" ? "en" : "zh",
  token: sessionStorage.getItem(TOKEN_STORAGE) || "",
  view: "login",
  loginMessage: "",
  providers: [],
  platforms: [],
  settings: {},
  settingDrafts: {},
  aliasDraft: null,  // [{pattern, target}] once the alias rows were edited, else null (the saved table)
  connect: { client: "claude", model: null, window: DEFAULT_WINDOW },  // model null: the first model a provider declares
  cooldowns: [],   // /status entries, each with untilMs on this browser's clock
  verifyResults: null,
  editing: null,   // the draft of the provider being edited: {id, name, platform, …}
  keyDraft: null,  // the open "add keys" form: {id: provider id, text}; keys never go back to the DOM
  preset: { id: "", fetched: [], selected: [], search: "" },
  tokenHints: { api: null, admin: null },
  clients: [],
  newToken: null,     // {name, token} of the client just created: shown once, never fetched again
  clientEdit: null,   // the draft of the client being edited: {id, rpm, models}
  openrouter: null,   // GET /openrouter (SPEC §15): {pinning, origin, lock_idle_ms, models}; null until loaded
  usage: emptyUsage(),  // the Usage panel (SPEC §17): the range, its answers and the failures
  notes: {},       // section -> {kind, text}
  timers: [],
};

// range: "24h" | "7d" | "30d"; shown: the range of the answers held; provider and client:
// GET /usage by=provider and by=client (null until loaded); events: GET /events, newest first;
// seq: the last load started, so an answer for a range left meanwhile is dropped.
function emptyUsage() {
  return { range: "24h", shown: "24h", provider: null, client: null, events: [], showAll: false, seq: 0 };
}

// --- Text -----------------------------------------------------------------------------------

function t(key, vars) {
  const table = I18N[state.lang];
  const text = Object.prototype.hasOwnProperty.call(table, key) ? table[key] : key;
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}

function applyI18n() {
  document.documentElement.setAttribute("lang", state.lang === "zh" ? "zh-CN" : "en");
  document.title = t("app.title");
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.getAttribute("data-i18n"));
  for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
    node.setAttribute("placeholder", t(node.getAttribute("data-i18n-placeholder")));
  }
}

function duration(ms) {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return t("time.s", { s });
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  if (h === 0) return s % 60 ? t("time.ms", { m, s: s % 60 }) : t("time.m", { m });
  return m % 60 ? t("time.hm", { h, m: m % 60 }) : t("time.h", { h });
}

function timeLeft(untilMs) {
  const left = untilMs - Date.now();
  return left > 0 ? duration(left) : t("time.now");
}

// A moment as this browser's wall-clock time (with the day when it is not today).
function clockTime(ms) {
  const at = new Date(ms);
  const options = { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false };
  if (at.toDateString() !== new Date().toDateString()) Object.assign(options, { month: "short", day: "numeric" });
  return at.toLocaleString(state.lang === "zh" ? "zh-CN" : "en-GB", options);
}

// --- DOM: text only -------------------------------------------------------------------------

function byId(id) {
  return document.getElementById(id);
}

// An element with attributes (set with setAttribute; "on…" become listeners; value and checked
// are set as properties, after the attributes, so an input's type is known first) and children
// (nodes, or strings, which append() turns into text nodes).
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  const properties = [];
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "value" || name === "checked") properties.push([name, value]);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const [name, value] of properties) node[name] = value;
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function note(section, kind, text) {
  state.notes[section] = { kind, text };
  renderNote(section);
}

// A provider's key list has a message line of its own, section "keys-<provider id>" (rebuilt
// with the row, so it may be missing while the row is away).
function renderNote(section) {
  const node = byId(section + "-message");
  if (!node) return;
  const { kind, text } = state.notes[section] || { kind: "", text: "" };
  node.textContent = text;
  node.setAttribute("class", "note " + kind);
}

// --- The admin API --------------------------------------------------------------------------

// The answer's JSON, or throws an Error with the server's error.message. A 401 for the token in
// use returns to the login view (a 401 for a token already replaced is only thrown).
async function api(method, path, body) {
  const token = state.token;
  const init = { method, headers: { authorization: "Bearer " + token } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch("/api/admin" + path, init);
  } catch (err) {
    throw new Error(t("error.network"));
  }
  const data = await response.json().catch(() => null);
  if (response.status === 401) {
    if (token === state.token) showLogin(t("login.rejected"));
    throw new Error(t("login.rejected"));
  }
  if (!response.ok) {
    const message = data && data.error && data.error.message;
    throw new Error(message || t("error.status", { status: response.status }));
  }
  return data;
}

async function loadProviders() {
  state.providers = (await api("GET", "/providers")).providers;
}

async function loadPlatforms() {
  state.platforms = (await api("GET", "/platforms")).platforms;
}

async function loadSettings() {
  state.settings = (await api("GET", "/settings")).settings;
  state.settingDrafts = {};
  state.aliasDraft = null;
}

async function loadClients() {
  state.clients = (await api("GET", "/clients")).clients;
}

async function loadOpenRouter() {
  state.openrouter = await api("GET", "/openrouter");
}

// The chosen range by provider and by client, and the recent failures. True when they were
// taken; false when the range changed while they were on their way (a later load holds the new one).
async function loadUsage() {
  const usage = state.usage;
  const seq = ++usage.seq;
  const range = usage.range;
  const to = Date.now();
  const query = "/usage?from=" + (to - USAGE_RANGES[range].ms) + "&to=" + to + "&by=";
  const [provider, client, events] = await Promise.all([
    api("GET", query + "provider"), api("GET", query + "client"), api("GET", "/events?limit=" + EVENTS_LIMIT),
  ]);
  if (seq !== usage.seq) return false;
  Object.assign(usage, { shown: range, provider, client, events: events.events });
  return true;
}

async function loadStatus() {
  const data = await api("GET", "/status");
  const now = Date.now();
  state.cooldowns = data.cooldowns.map((c) => Object.assign({}, c, { untilMs: now + c.remainingMs }));
}

// --- Session --------------------------------------------------------------------------------

async function enter() {
  // The OpenRouter and Usage panels' failures show in those panels; they do not keep the rest of
  // the page shut.
  const openrouter = loadOpenRouter().then(() => null, (err) => err);
  const usage = loadUsage().then(() => null, (err) => err);
  await Promise.all([loadProviders(), loadPlatforms(), loadSettings(), loadStatus(), loadClients()]);
  const failed = await openrouter;
  const usageFailed = await usage;
  state.view = "main";
  state.loginMessage = "";
  state.notes = {};
  if (failed) state.notes.openrouter = { kind: "error", text: failed.message };
  if (usageFailed) state.notes.usage = { kind: "error", text: usageFailed.message };
  renderAll();
  startTimers();
}

function showLogin(message) {
  stopTimers();
  sessionStorage.removeItem(TOKEN_STORAGE);
  Object.assign(state, {
    token: "", view: "login", loginMessage: message, editing: null, keyDraft: null, verifyResults: null,
    clients: [], newToken: null, clientEdit: null, openrouter: null, usage: emptyUsage(),
  });
  renderAll();
}

function startTimers() {
  stopTimers();
  state.timers = [setInterval(tick, TICK_MS), setInterval(poll, POLL_MS)];
}

function stopTimers() {
  state.timers.forEach(clearInterval);
  state.timers = [];
}

function cooldownKey() {
  return state.cooldowns.map((c) => c.providerId + "#" + c.keyId + "/" + c.model).join(",");
}

// The status bar follows /status; provider rows re-render only when their badges change.
async function poll() {
  if (document.hidden || state.view !== "main") return;
  const before = cooldownKey();
  try {
    await loadStatus();
  } catch (err) {
    return;  // a 401 already went back to the login view; anything else waits for the next poll
  }
  renderStatus();
  if (cooldownKey() !== before) renderProviders();
}

function tick() {
  let ended = false;
  for (const node of document.querySelectorAll("[data-until]")) {
    const until = Number(node.getAttribute("data-until"));
    node.textContent = timeLeft(until);
    ended = ended || until <= Date.now();
  }
  if (ended) poll();
}

// An event handler that clears the section's note, keeps its button disabled while it runs and
// shows any error in the section.
function guarded(section, action) {
  return async (event) => {
    if (event.type === "submit") event.preventDefault();
    const button = event.submitter || event.currentTarget;
    const isButton = button instanceof HTMLButtonElement;
    note(section, "", "");
    if (isButton) button.disabled = true;
    try {
      await action(event);
    } catch (err) {
      note(section, "error", err.message);
    } finally {
      if (isButton) button.disabled = false;
    }
  };
}

// --- Views ----------------------------------------------------------------------------------

function renderAll() {
  applyI18n();
  const main = state.view === "main";
  byId("login-view").hidden = main;
  byId("main-view").hidden = !main;
  byId("logout").hidden = !main;
  byId("login-message").textContent = state.loginMessage;
  if (main) {
    renderStatus();
    renderUsage();
    renderSavings();
    renderProviders();
    renderPresetForm();
    renderKeyCount("preset");
    renderKeyCount("custom");
    renderTokens();
    renderSettings();
    renderClients();
    renderOpenRouter();
    renderConnect();
  }
  SECTIONS.forEach(renderNote);
}

function timeLeftNode(cooldown) {
  return el("span", { class: "strong", "data-until": cooldown.untilMs }, timeLeft(cooldown.untilMs));
}

function renderStatus() {
  const cooling = state.cooldowns;
  byId("status-section").classList.toggle("cooling", cooling.length > 0);
  byId("status-title").textContent = cooling.length ? t("status.cooling", { n: cooling.length }) : t("status.clear");
  const box = byId("status-body");
  box.replaceChildren();
  if (cooling.length) box.append(el("ul", { class: "plain" }, cooling.map(cooldownEntry)));
  if (state.verifyResults) box.append(verifyList(state.verifyResults));
}

// "key #3 · sk-a...f00d" for a key-scoped cooldown or probe (SPEC §13), else nothing.
function keyChip(providerId, keyId) {
  if (keyId === null || keyId === undefined) return null;
  const provider = state.providers.find((p) => p.id === providerId);
  const key = provider && provider.keys.find((k) => k.id === keyId);
  const label = t("status.key", { id: keyId }) + (key && key.hint ? " · " + key.hint : "");
  return el("span", { class: "chip mono", "data-testid": "cooldown-key" }, label);
}

function cooldownEntry(c) {
  return el("li", { class: "entry", "data-testid": "cooldown-entry" },
    el("span", { class: "strong" }, c.name),
    keyChip(c.providerId, c.keyId),
    el("span", { class: "chip mono" }, c.model === null ? t("status.allModels") : c.model),
    el("span", { class: "chip warn" }, t("source." + c.source)),
    el("span", null, el("span", { class: "k" }, t("status.left")), timeLeftNode(c)),
    el("span", null, el("span", { class: "k" }, t("status.lastStatus")),
      c.lastStatus === null ? t("status.none") : t("status.http", { status: c.lastStatus })),
    c.lastMessage ? el("span", { class: "msg" }, c.lastMessage) : null);
}

function verifyChip(ok) {
  // ok is null for a cooldown cleared without a probe (one verify sends a bounded number)
  if (ok === null) return el("span", { class: "chip off" }, t("status.verifySkipped"));
  return el("span", { class: ok ? "chip ok" : "chip bad" }, t(ok ? "status.verifyOk" : "status.verifyFailed"));
}

function verifyList(results) {
  const items = results.map((r) => el("li", { class: "entry", "data-testid": "verify-result" },
    verifyChip(r.ok),
    el("span", { class: "strong" }, r.name),
    keyChip(r.providerId, r.keyId),
    el("span", null, r.status === null ? t("status.none") : t("status.http", { status: r.status })),
    r.message ? el("span", { class: "msg" }, r.message) : null));
  return el("div", { "data-testid": "verify-results" },
    el("h3", null, t("status.verifyHeading")),
    items.length ? el("ul", { class: "plain" }, items) : el("p", { class: "muted" }, t("status.verifyNothing")));
}

function renderProviders() {
  byId("providers-count").textContent = t("providers.count", { n: state.providers.length });
  const box = byId("providers");
  box.replaceChildren();
  if (!state.providers.length) box.append(el("p", { class: "muted" }, t("providers.empty")));
  for (const provider of state.providers) box.append(providerRow(provider));
}

function providerRow(p) {
  const row = el("article", { class: p.enabled ? "provider" : "provider off", "data-testid": "provider-row" },
    el("div", { class: "provider-head" },
      el("span", { class: "strong", "data-testid": "provider-name" }, p.name),
      el("span", { class: "chip" }, p.platform),
      el("span", { class: p.enabled ? "chip ok" : "chip off" },
        t(p.enabled ? "provider.enabled" : "provider.disabled")),
      cooldownBadges(p),
      providerActions(p)),
    el("div", { class: "mono url" }, p.base_url),
    providerMeta(p),
    el("div", { class: "models" }, p.models.map((m) => modelChip(p, modelId(m)))),
    keyList(p));
  if (state.editing && state.editing.id === p.id) row.append(editor(p));
  return row;
}

// The provider's own and its models' cooldowns; a key's cooldown shows in its key row, and the
// provider is cooling as well when every usable key is (SPEC §13), until the first one ends.
function cooldownBadges(p) {
  const badges = state.cooldowns.filter((c) => c.providerId === p.id && (c.keyId === null || c.keyId === undefined))
    .map((c) => el("span", { class: "chip warn", "data-testid": "provider-cooldown" },
      c.model === null ? t("cooldown.badge") : t("cooldown.badgeModel", { model: c.model }), " ", timeLeftNode(c)));
  const usable = p.keys.filter((k) => k.enabled && !k.key_error);
  const ends = usable.map(keyCoolingUntil);
  if (usable.length && ends.every((until) => until !== null)) {
    badges.push(el("span", { class: "chip warn", "data-testid": "provider-cooldown" },
      t("cooldown.badgeKeys"), " ", timeLeftNode({ untilMs: Math.min(...ends) })));
  }
  return badges;
}

function smallButton(testId, labelKey, onclick, extraClass) {
  const attrs = { type: "button", class: extraClass ? "small " + extraClass : "small", "data-testid": testId, onclick };
  return el("button", attrs, t(labelKey));
}

function providerActions(p) {
  return el("span", { class: "actions" },
    smallButton("provider-edit", "provider.edit", () => startEdit(p)),
    smallButton("provider-toggle", p.enabled ? "provider.disable" : "provider.enable",
      guarded("providers", () => toggleProvider(p))),
    smallButton("provider-delete", "provider.delete", guarded("providers", () => deleteProvider(p)), "danger"));
}

function providerMeta(p) {
  const item = (labelKey, value) => el("span", null, el("span", { class: "k" }, t(labelKey)), value);
  const timeout = p.timeout_ms === null ? t("provider.timeoutDefault") : t("time.s", { s: p.timeout_ms / 1000 });
  return el("div", { class: "meta" }, item("provider.priority", String(p.priority)), item("provider.timeout", timeout));
}

// --- Keys of a provider (SPEC §13): hint, state, cooldown; add, disable, delete ---------------

// The end of a key's cooldown on this browser's clock: from /status (remainingMs, so a skewed
// clock does not matter), else the provider's cooling_until_ms; null when it is not cooling.
function keyCoolingUntil(k) {
  const ends = state.cooldowns.filter((c) => c.keyId === k.id).map((c) => c.untilMs);
  if (ends.length) return Math.max(...ends);
  return k.cooling_until_ms && k.cooling_until_ms > Date.now() ? k.cooling_until_ms : null;
}

function keyList(p) {
  const section = "keys-" + p.id;
  const message = state.notes[section] || { kind: "", text: "" };
  const adding = state.keyDraft !== null && state.keyDraft.id === p.id;
  const usable = p.keys.some((k) => k.enabled && !k.key_error);
  return el("div", { class: "keys", "data-testid": "provider-keys" },
    el("div", { class: "keys-head" },
      el("span", { class: "label" }, t("keys.heading", { n: p.keys.length })),
      adding ? null : smallButton("key-add", "keys.add", () => openKeyForm(p))),
    el("ul", { class: "plain" }, p.keys.map((k) => keyRow(p, k))),
    usable ? null : el("p", { class: "note error", "data-testid": "keys-none-usable" }, t("keys.noneUsable")),
    adding ? keyForm(p) : null,
    el("p", { id: section + "-message", class: "note " + message.kind, role: "status", "data-testid": "key-message" },
      message.text));
}

function keyRow(p, k) {
  const until = keyCoolingUntil(k);
  const section = "keys-" + p.id;
  return el("li", { class: k.enabled ? "key" : "key off", "data-testid": "provider-key", "data-key-id": k.id },
    el("span", { class: "mono k" }, "#" + k.id),
    el("span", { class: "mono", "data-testid": "key-hint" }, k.hint || t("status.none")),
    el("span", { class: k.enabled ? "chip ok" : "chip off", "data-testid": "key-state" },
      t(k.enabled ? "keys.inUse" : "keys.disabled")),
    k.key_error ? el("span", { class: "chip bad", "data-testid": "key-error" }, t("keys.unreadable")) : null,
    until ? el("span", { class: "chip warn", "data-testid": "key-cooling" },
      t("keys.coolingUntil", { time: clockTime(until) }), " · ", el("span", { "data-until": until }, timeLeft(until)))
      : null,
    el("span", { class: "actions" },
      smallButton("key-toggle", k.enabled ? "keys.disable" : "keys.enable", guarded(section, () => toggleKey(p, k))),
      smallButton("key-delete", "provider.delete", guarded(section, () => deleteKey(p, k)), "danger")));
}

function keyForm(p) {
  const draft = state.keyDraft;
  const id = "key-add-" + p.id;
  const count = el("p", { class: "muted", "data-testid": "key-add-count" }, keyCountText(draft.text));
  return el("form", { class: "editor stack", autocomplete: "off", onsubmit: guarded("keys-" + p.id, () => addKeys(p)) },
    el("div", { class: "field" },
      el("label", { for: id }, t("keys.input")),
      el("textarea", {
        id, class: "mono secret", rows: "3", autocomplete: "off", spellcheck: "false", value: draft.text,
        placeholder: t("form.keysPlaceholder"), "data-testid": "key-add-input",
        oninput: (e) => { draft.text = e.target.value; count.textContent = keyCountText(draft.text); },
      }),
      count),
    el("div", { class: "inline" },
      el("button", { type: "submit", class: "primary", "data-testid": "key-add-submit" }, t("keys.submit")),
      el("button", { type: "button", "data-testid": "key-add-cancel", onclick: closeKeyForm }, t("edit.cancel"))));
}

// The keys in a field: one per line, blank lines and repeats dropped.
function keyLines(text) {
  return [...new Set(String(text).split("\n").map((k) => k.trim()).filter(Boolean))];
}

function requiredKeys(text) {
  const keys = keyLines(text);
  if (!keys.length) throw new Error(t("form.needKey"));
  return keys;
}

function keyCountText(text) {
  const n = keyLines(text).length;
  return n ? t("form.keysCount", { n }) : t("form.keysHelp");
}

// The count line under a create form's key field ("preset" or "custom").
function renderKeyCount(form) {
  byId(form + "-key-count").textContent = keyCountText(byId(form + "-key").value);
}

function openKeyForm(p) {
  state.keyDraft = { id: p.id, text: "" };
  note("keys-" + p.id, "", "");
  renderProviders();
  const input = byId("key-add-" + p.id);
  if (input) input.focus();
}

function closeKeyForm() {
  state.keyDraft = null;
  renderProviders();
}

// One POST per key, in order; at the first refusal the keys not yet added stay in the field and
// the server's message is shown.
async function addKeys(p) {
  const keys = requiredKeys(state.keyDraft.text);
  let added = 0;
  try {
    for (const key of keys) {
      await api("POST", "/providers/" + p.id + "/keys", { api_key: key });
      added += 1;
    }
  } catch (err) {
    state.keyDraft.text = keys.slice(added).join("\n");
    if (added) await reloadProviders().catch(() => {});
    throw new Error(added ? t("keys.addStopped", { n: added, total: keys.length, message: err.message }) : err.message);
  }
  state.keyDraft = null;
  await reloadProviders();
  note("keys-" + p.id, "ok", t("keys.added", { n: added }));
}

async function toggleKey(p, k) {
  await api("PUT", "/providers/" + p.id + "/keys/" + k.id, { enabled: !k.enabled });
  await reloadProviders();
  note("keys-" + p.id, "ok", t(k.enabled ? "keys.disabledNote" : "keys.enabledNote", { id: k.id }));
}

// The server refuses the last key (409) with a message of its own, shown as it is.
async function deleteKey(p, k) {
  const hint = k.hint || t("status.none");
  if (!confirm(t("keys.confirmDelete", { id: k.id, hint, name: p.name }))) return;
  await api("DELETE", "/providers/" + p.id + "/keys/" + k.id);
  await reloadProviders();
  note("keys-" + p.id, "ok", t("keys.deleted", { id: k.id }));
}

function draftInput(draft, key, attrs) {
  return el("input", Object.assign({ value: draft[key], oninput: (e) => { draft[key] = e.target.value; } }, attrs));
}

function field(labelKey, id, control) {
  return el("div", { class: "field" }, el("label", { for: id }, t(labelKey)), control);
}

function editor(p) {
  const d = state.editing;
  const id = (name) => "edit-" + name + "-" + p.id;
  return el("form", { class: "editor stack", autocomplete: "off", onsubmit: guarded("providers", () => saveEdit(p)) },
    el("div", { class: "row2" },
      field("form.name", id("name"), draftInput(d, "name", { id: id("name"), "data-testid": "edit-name" })),
      field("form.platform", id("platform"),
        draftInput(d, "platform", { id: id("platform"), "data-testid": "edit-platform" }))),
    field("form.baseUrl", id("base-url"), draftInput(d, "base_url", {
      id: id("base-url"), class: "mono", "data-testid": "edit-base-url", spellcheck: "false",
    })),
    field("form.key", id("key"), draftInput(d, "api_key", {
      id: id("key"), type: "password", class: "mono", autocomplete: "new-password",
      placeholder: t("edit.keyPlaceholder"), "data-testid": "edit-key",
    })),
    field("form.models", id("models"), el("textarea", {
      id: id("models"), value: d.models, spellcheck: "false", "data-testid": "edit-models",
      oninput: (e) => { d.models = e.target.value; },
    })),
    el("div", { class: "row2" },
      field("form.priority", id("priority"),
        draftInput(d, "priority", { id: id("priority"), type: "number", step: "1", "data-testid": "edit-priority" })),
      field("form.timeout", id("timeout"), draftInput(d, "timeout", {
        id: id("timeout"), type: "number", min: "0", step: "any", placeholder: t("form.timeoutPlaceholder"),
        "data-testid": "edit-timeout",
      }))),
    el("label", { class: "check" },
      el("input", {
        type: "checkbox", checked: d.enabled, "data-testid": "edit-enabled",
        onchange: (e) => { d.enabled = e.target.checked; },
      }),
      el("span", null, t("edit.enabled"))),
    el("div", { class: "inline" },
      el("button", { type: "submit", class: "primary", "data-testid": "edit-save" }, t("edit.save")),
      el("button", { type: "button", "data-testid": "edit-cancel", onclick: cancelEdit }, t("edit.cancel"))));
}

function renderPresetForm() {
  const select = byId("preset-platform");
  select.replaceChildren(el("option", { value: "" }, t("preset.choose")),
    ...state.platforms.map((p) => el("option", { value: p.id }, p.name)));
  select.value = state.preset.id;
  const preset = currentPreset();
  byId("preset-account-field").hidden = !(preset && preset.base_url.includes(ACCOUNT_PLACEHOLDER));
  byId("preset-fetch-models").disabled = !(preset && preset.models_url);
  byId("preset-models-hint").textContent = preset && !preset.models_url ? t("preset.noModelList") : "";
  renderPresetModels();
}

function renderPresetModels() {
  const box = byId("preset-models");
  box.replaceChildren();
  renderPresetCount();
  if (!currentPreset()) {
    box.append(el("p", { class: "muted" }, t("preset.pickFirst")));
    return;
  }
  const query = state.preset.search.trim().toLowerCase();
  const shown = presetModels().filter((m) => m.toLowerCase().includes(query));
  if (!shown.length) box.append(el("p", { class: "muted" }, t("preset.noMatch")));
  for (const model of shown) {
    box.append(el("label", { class: "check", "data-testid": "preset-model" },
      el("input", {
        type: "checkbox", value: model, checked: state.preset.selected.includes(model),
        onchange: (e) => tickModel(model, e.target.checked),
      }),
      el("span", { class: "mono" }, model)));
  }
}

function renderPresetCount() {
  const total = presetModels().length;
  byId("preset-model-count").textContent =
    currentPreset() ? t("preset.modelCount", { selected: state.preset.selected.length, total }) : "";
}

function renderTokens() {
  const box = byId("tokens");
  box.replaceChildren();
  for (const [key, hint] of [["tokens.apiHint", state.tokenHints.api], ["tokens.adminHint", state.tokenHints.admin]]) {
    if (hint) box.append(el("div", null, el("span", { class: "k" }, t(key)), el("span", { class: "mono" }, hint)));
  }
}

function renderSettings() {
  const box = byId("settings");
  box.replaceChildren();
  for (const [key, setting] of Object.entries(state.settings)) {
    if (key === ALIASES_KEY) continue;  // a table, not a number: renderAliases
    const id = "setting-" + key;
    const draft = key in state.settingDrafts ? state.settingDrafts[key] : String(setting.value);
    const oninput = (e) => { state.settingDrafts[key] = e.target.value; };
    const input = ORIGIN_KEYS.includes(key)
      ? { id, class: "mono", inputmode: "url", spellcheck: "false", autocomplete: "off", value: draft, "data-testid": id, oninput }
      : { id, type: "number", min: "0", step: "1", value: draft, "data-testid": id, oninput };
    box.append(el("div", { class: "setting", "data-testid": "setting-row", "data-setting": key },
      el("label", { for: id }, t("setting." + key)),
      el("div", { class: "setting-controls" },
        el("input", input),
        el("span", { class: setting.source === "d1" ? "chip ok" : "chip", "data-testid": "setting-source" },
          t("settingSource." + setting.source)),
        key.endsWith("_ms") ? el("span", { class: "muted" }, duration(setting.value)) : null,
        LIMIT_KEYS.includes(key) && setting.value === 0 ? el("span", { class: "muted" }, t("settings.off")) : null,
        key === "openrouter_pinning" ? el("span", { class: "muted" }, t(setting.value ? "settings.on" : "settings.off")) : null,
        setting.source === "d1" && !LIMIT_KEYS.includes(key)
          ? smallButton("setting-reset", "settings.reset",
            guarded("settings", () => putSettings({ [key]: null })), "ghost")
          : null),
      el("p", { class: "muted" }, t("settingHelp." + key))));
  }
  renderAliases();
}

// --- Model aliases (a table setting: pattern -> target, in order) ----------------------------

// The saved table as rows. (Object order is the table's order; only a pattern that is a plain
// integer such as "7" would be moved first by JSON.parse, and no model is named like that.)
function savedAliasRows() {
  const setting = state.settings[ALIASES_KEY];
  const table = setting ? setting.value : {};
  return Object.entries(table).map(([pattern, target]) => ({ pattern, target }));
}

function aliasRows() {
  if (state.aliasDraft === null) state.aliasDraft = savedAliasRows();
  return state.aliasDraft;
}

// A provider's models entry is an id, or {id, kind} when its kind was set (SPEC §12.6); ``kinds``
// holds every model's kind, set or guessed from its id.
function modelId(entry) {
  return typeof entry === "string" ? entry : entry.id;
}

// The edit form's line of an entry: the id, then the kind when it was set.
function modelLine(entry) {
  return typeof entry === "string" ? entry : entry.id + " " + entry.kind;
}

function modelChip(p, id) {
  const kind = p.kinds[id] || "chat";
  return el("span", { class: "chip mono", "data-testid": "model-chip", "data-kind": kind },
    kind === "chat" ? id : id + " · " + t("kind." + kind));
}

// Every model the providers declare (of ``kind``, when given), once, in priority order (as
// /v1/models lists them).
function modelCatalog(kind) {
  const models = [];
  for (const p of state.providers) {
    if (!p.enabled) continue;
    for (const entry of p.models) {
      const id = modelId(entry);
      if (kind && (p.kinds[id] || "chat") !== kind) continue;
      if (!models.includes(id)) models.push(id);
    }
  }
  return models;
}

function renderAliases() {
  const box = byId("aliases");
  const setting = state.settings[ALIASES_KEY];
  box.replaceChildren();
  if (!setting) return;
  const rows = aliasRows();
  const list = el("div", { class: "stack" }, rows.map((row, index) => aliasRow(row, index)));
  if (!rows.length) list.append(el("p", { class: "muted", "data-testid": "alias-empty" }, t("aliases.empty")));
  box.append(
    el("div", { class: "between" },
      el("h3", null, t("setting." + ALIASES_KEY)),
      el("span", { class: "setting-controls" },
        el("span", { class: setting.source === "d1" ? "chip ok" : "chip", "data-testid": "alias-source" },
          t("settingSource." + setting.source)),
        setting.source === "d1"
          ? smallButton("alias-reset", "settings.reset",
            guarded("settings", () => putSettings({ [ALIASES_KEY]: null })), "ghost")
          : null)),
    el("p", { class: "muted" }, t("settingHelp." + ALIASES_KEY)),
    list,
    el("div", { class: "setting-controls" },
      smallButton("alias-add", "aliases.add", () => editAliases((r) => r.concat([{ pattern: "", target: "" }]))),
      smallButton("alias-example", "aliases.example", () => editAliases(addClaudeExample)),
      smallButton("alias-save", "settings.save", guarded("settings", saveSettings), "primary")),
    el("datalist", { id: "alias-models" }, ["auto", ...modelCatalog()].map((m) => el("option", { value: m }))));
}

function aliasRow(row, index) {
  const input = (key, testId, labelKey, placeholderKey, extra) => el("input", Object.assign({
    value: row[key], class: "mono", spellcheck: "false", "data-testid": testId,
    "aria-label": t(labelKey) + " " + (index + 1), placeholder: t(placeholderKey),
    oninput: (e) => { row[key] = e.target.value; },
  }, extra));
  return el("div", { class: "alias-row", "data-testid": "alias-row" },
    input("pattern", "alias-pattern", "aliases.pattern", "aliases.patternPlaceholder", { class: "mono pattern" }),
    el("span", { class: "arrow", "aria-hidden": "true" }, "→"),
    input("target", "alias-target", "aliases.target", "aliases.targetPlaceholder", { list: "alias-models" }),
    smallButton("alias-remove", "aliases.remove",
      () => editAliases((rows) => rows.filter((_, i) => i !== index)), "ghost"));
}

function editAliases(change) {
  state.aliasDraft = change(aliasRows().slice());
  renderAliases();
}

function addClaudeExample(rows) {
  const small = modelCatalog("chat")[0] || "auto";
  const taken = new Set(rows.map((r) => r.pattern.trim().toLowerCase()));
  const added = CLAUDE_EXAMPLE.filter(([pattern]) => !taken.has(pattern))
    .map(([pattern, target]) => ({ pattern, target: target || small }));
  return rows.filter((r) => r.pattern.trim() || r.target.trim()).concat(added);
}

// The rows as the table the admin API takes (blank rows dropped), or throws what is missing.
function aliasTable() {
  const table = {};
  const seen = new Set();
  aliasRows().forEach((row, index) => {
    const pattern = row.pattern.trim();
    const target = row.target.trim();
    if (!pattern && !target) return;
    if (!pattern) throw new Error(t("aliases.needPattern", { n: index + 1 }));
    if (!target) throw new Error(t("aliases.needTarget", { pattern }));
    if (seen.has(pattern.toLowerCase())) throw new Error(t("aliases.duplicate", { pattern }));
    seen.add(pattern.toLowerCase());
    table[pattern] = target;
  });
  return table;
}

// --- Connect a client -----------------------------------------------------------------------

// Every snippet holds this page's own origin and a placeholder for the token, never a token.
function connectModel() {
  const models = modelCatalog("chat");
  const chosen = state.connect.model;
  if (chosen === "auto" || models.includes(chosen)) return chosen;
  return models[0] || "auto";
}

function clientSnippets(client, origin, model, contextWindow) {
  const token = t("connect.tokenPlaceholder");
  const task = t("connect.taskPlaceholder");
  const shell = (lines) => ({ label: "connect.shell", text: lines.join("\n") });
  const headless = (lines) => ({ label: "connect.headless", text: lines.join("\n") });
  const json = (label, value) => ({ label, text: JSON.stringify(value, null, 2) });
  if (client === "claude") {
    const row = { model, label: model + " (fllmapi-worker)", behavesAs: CLAUDE_BEHAVES_AS };
    const compact = contextWindow >= CLAUDE_MIN_COMPACT && contextWindow < CLAUDE_KNOWN_WINDOW
      ? ['export CLAUDE_CODE_AUTO_COMPACT_WINDOW="' + contextWindow + '"'] : [];
    return [
      json("connect.claudeFile", { modelPicker: { options: [row] } }),
      shell([
        'export ANTHROPIC_BASE_URL="' + origin + '"',
        'export ANTHROPIC_AUTH_TOKEN="' + token + '"',
        'export ANTHROPIC_MODEL="' + model + '"',
        'export ANTHROPIC_DEFAULT_HAIKU_MODEL="' + model + '"',
        ...compact,
        "claude",
      ]),
      headless(['claude -p "' + task + '"']),
    ];
  }
  if (client === "codex") {
    return [
      { label: "connect.codexFile", text: [
        'model = "' + model + '"',
        'model_provider = "fllmapi"',
        "model_context_window = " + contextWindow,
        "",
        "[model_providers.fllmapi]",
        'name = "fllmapi-worker"',
        'base_url = "' + origin + '/v1"',
        'env_key = "FLLMAPI_API_KEY"',
        'wire_api = "responses"',
      ].join("\n") },
      shell(['export FLLMAPI_API_KEY="' + token + '"', "codex"]),
      headless(['codex exec --skip-git-repo-check "' + task + '"']),
    ];
  }
  if (client === "gemini") {
    const named = model === "auto" ? t("connect.modelPlaceholder") : model;
    return [
      json("connect.geminiFile", { security: { auth: { selectedType: "gemini-api-key" } } }),
      shell([
        'export GOOGLE_GEMINI_BASE_URL="' + origin + '"',
        'export GEMINI_API_KEY="' + token + '"',
        'gemini -m "' + named + '"',
      ]),
      headless(["export GEMINI_CLI_TRUST_WORKSPACE=true", 'gemini -m "' + named + '" -p "' + task + '"']),
    ];
  }
  if (client === "openai") {
    return [{ label: "connect.python", text: [
      "from openai import OpenAI",
      "",
      'client = OpenAI(base_url="' + origin + '/v1", api_key="' + token + '")',
      'answer = client.chat.completions.create(model="' + model + '", messages=[{"role": "user", "content": "Hello"}])',
      "print(answer.choices[0].message.content)",
    ].join("\n") }];
  }
  return [
    { label: "apps.cherry", text: t("apps.address") + ": " + origin + "\n" + t("apps.key") + ": " + token },
    { label: "apps.openwebui", text: t("apps.url") + ": " + origin + "/v1\n" + t("apps.key") + ": " + token },
    { label: "apps.ollama", text: t("apps.host") + ": " + origin + "\n" + t("apps.header") + ": Authorization: Bearer " + token },
  ];
}

function renderConnect() {
  const tabs = byId("connect-tabs");
  tabs.replaceChildren(...CLIENTS.map((id) => el("button", {
    type: "button", role: "tab", "aria-selected": String(id === state.connect.client),
    "data-testid": "connect-tab", "data-client": id,
    onclick: () => { state.connect.client = id; note("connect", "", ""); renderConnect(); },
  }, t("client." + id))));
  const model = connectModel();
  const select = byId("connect-model");
  select.replaceChildren(el("option", { value: "auto" }, t("connect.auto")),
    ...modelCatalog("chat").map((m) => el("option", { value: m }, m)));
  select.value = model;
  const client = state.connect.client;
  byId("connect-window-field").hidden = client !== "claude" && client !== "codex";
  byId("connect-window").value = String(state.connect.window);
  const box = byId("connect");
  box.replaceChildren(el("p", { class: "muted", "data-testid": "connect-help" }, t("clientHelp." + client)));
  for (const snippet of clientSnippets(client, location.origin, model, state.connect.window)) {
    box.append(el("div", { class: "snippet", "data-testid": "connect-snippet", "data-client": client, "data-label": snippet.label },
      el("div", { class: "between" },
        el("span", { class: "label mono" }, t(snippet.label)),
        smallButton("connect-copy", "connect.copy", guarded("connect", () => copyText(snippet.text)))),
      el("pre", { class: "code mono", "data-testid": "connect-code" }, snippet.text)));
  }
}

async function copyText(text, section = "connect", doneKey = "connect.copied") {
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {
    // No async clipboard outside a secure context (plain http to a LAN address): the old way.
    const area = el("textarea", { readonly: true, value: text });
    document.body.append(area);
    area.select();
    const copied = document.execCommand("copy");
    area.remove();
    if (!copied) throw new Error(t("connect.copyFailed"));
  }
  note(section, "ok", t(doneKey));
}

// --- Clients (SPEC §14): named tokens, shown once ------------------------------------------

// Model ids from a textarea: one per line (commas too), blanks dropped; none -> null (every model).
function parseModels(text) {
  const models = text.split(/[\n,]/).map((m) => m.trim()).filter(Boolean);
  return models.length ? models : null;
}

// An rpm field: "" -> null (no limit); otherwise a whole number >= 1, else throws.
function parseRpm(text) {
  const value = text.trim();
  if (!value) return null;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw new Error(t("clients.rpmInvalid"));
  return Number(value);
}

function renderClients() {
  const tokenBox = byId("client-token-box");
  tokenBox.replaceChildren();
  if (state.newToken) {
    const { name, token } = state.newToken;
    tokenBox.append(el("div", { class: "stack", "data-testid": "client-token-once" },
      el("span", { class: "strong" }, t("clients.token", { name })),
      el("pre", { class: "code mono", "data-testid": "client-token" }, token),
      el("span", { class: "actions" },
        smallButton("client-token-copy", "clients.copy",
          guarded("clients", () => copyText(token, "clients", "clients.copied"))),
        smallButton("client-token-dismiss", "clients.dismiss", () => {
          state.newToken = null;
          note("clients", "", "");
          renderClients();
        }, "ghost"))));
  }
  const box = byId("clients");
  box.replaceChildren();
  if (!state.clients.length) box.append(el("p", { class: "muted" }, t("clients.empty")));
  for (const client of state.clients) box.append(clientRow(client));
}

function clientRow(c) {
  const editing = state.clientEdit && state.clientEdit.id === c.id;
  const row = el("article", { class: c.enabled ? "provider" : "provider off", "data-testid": "client-row",
    "data-client": c.name },
    el("div", { class: "provider-head" },
      el("span", { class: "strong", "data-testid": "client-row-name" }, c.name),
      el("span", { class: "chip mono", "data-testid": "client-hint" }, c.token_hint),
      el("span", { class: c.enabled ? "chip ok" : "chip off", "data-testid": "client-state" },
        t(c.enabled ? "clients.enabled" : "clients.disabled")),
      el("span", { class: "actions" },
        smallButton("client-edit", "clients.edit", () => {
          state.clientEdit = { id: c.id, rpm: c.rpm === null ? "" : String(c.rpm), models: (c.models || []).join("\n") };
          renderClients();
        }),
        smallButton("client-toggle", c.enabled ? "clients.disable" : "clients.enable",
          guarded("clients", () => updateClient(c, { enabled: !c.enabled }))),
        smallButton("client-revoke", "clients.revoke", guarded("clients", () => revokeClient(c)), "danger"))),
    el("div", { class: "muted", "data-testid": "client-rpm-value" },
      c.rpm === null ? t("clients.noRpm") : t("clients.rpmValue", { n: c.rpm })),
    el("div", { class: "models", "data-testid": "client-models-value" },
      c.models === null ? el("span", { class: "chip" }, t("clients.allModels"))
        : c.models.map((m) => el("span", { class: "chip mono" }, m))));
  if (editing) row.append(clientEditor(c));
  return row;
}

function clientEditor(c) {
  const draft = state.clientEdit;
  return el("div", { class: "stack", "data-testid": "client-editor" },
    el("div", { class: "field" },
      el("label", { for: "client-edit-rpm" }, t("clients.rpm")),
      el("input", { id: "client-edit-rpm", "data-testid": "client-edit-rpm", type: "number", min: "1", step: "1",
        value: draft.rpm, placeholder: t("clients.rpmPlaceholder"), oninput: (e) => { draft.rpm = e.target.value; } })),
    el("div", { class: "field" },
      el("label", { for: "client-edit-models" }, t("clients.models")),
      el("textarea", { id: "client-edit-models", "data-testid": "client-edit-models", spellcheck: "false",
        value: draft.models, oninput: (e) => { draft.models = e.target.value; } })),
    el("span", { class: "actions" },
      smallButton("client-edit-save", "clients.save", guarded("clients", () => updateClient(c, {
        rpm: parseRpm(draft.rpm), models: parseModels(draft.models),
      })), "primary"),
      smallButton("client-edit-cancel", "clients.cancel", () => {
        state.clientEdit = null;
        renderClients();
      }, "ghost")));
}

async function submitClient() {
  const name = byId("client-name").value.trim();
  if (!name) throw new Error(t("clients.nameEmpty"));
  const body = { name };
  const rpm = parseRpm(byId("client-rpm").value);
  const models = parseModels(byId("client-models").value);
  if (rpm !== null) body.rpm = rpm;
  if (models !== null) body.models = models;
  const created = await api("POST", "/clients", body);
  state.newToken = { name: created.client.name, token: created.token };
  byId("client-form").reset();
  await loadClients();
  renderClients();
  note("clients", "ok", t("clients.created", { name: created.client.name }));
}

async function updateClient(c, body) {
  const saved = (await api("PUT", "/clients/" + c.id, body)).client;
  state.clientEdit = null;
  await loadClients();
  renderClients();
  note("clients", "ok", t("clients.saved", { name: saved.name }));
}

async function revokeClient(c) {
  if (!confirm(t("clients.confirmRevoke", { name: c.name, hint: c.token_hint }))) return;
  await api("DELETE", "/clients/" + c.id);
  if (state.clientEdit && state.clientEdit.id === c.id) state.clientEdit = null;
  await loadClients();
  renderClients();
  note("clients", "ok", t("clients.revoked", { name: c.name }));
}

// --- OpenRouter pinning (SPEC §15): per model the pin and the ranked candidates ---------------

async function reloadOpenRouter() {
  await loadOpenRouter();
  renderOpenRouter();
  renderSavings();  // the Usage panel shows the pins' estimates
}

function metaItem(labelKey, value) {
  return el("span", null, el("span", { class: "k" }, t(labelKey)), value);
}

function locale() {
  return state.lang === "zh" ? "zh-CN" : "en-GB";
}

// A number to 3 significant digits, grouped as this language writes it.
function significant(value) {
  return Number(value).toLocaleString(locale(), { maximumSignificantDigits: 3 });
}

// A price in USD per token, shown per million tokens: "$0.27 / M".
function pricePerMillion(perToken) {
  const n = Number(perToken) * 1e6;
  if (perToken === null || perToken === undefined || !Number.isFinite(n)) return t("status.none");
  const shown = n > 0 && n < 0.001 ? "<0.001" : String(Number(n.toPrecision(3)));
  return t("openrouter.price", { n: shown });
}

function renderOpenRouter() {
  const data = state.openrouter;
  const head = byId("openrouter-state");
  const box = byId("openrouter");
  head.replaceChildren();
  box.replaceChildren();
  if (!data) return;
  head.append(el("span", { class: data.pinning ? "chip ok" : "chip off", "data-testid": "openrouter-state" },
    t(data.pinning ? "openrouter.on" : "openrouter.off")));
  box.append(el("div", { class: "meta", "data-testid": "openrouter-meta" },
    metaItem("openrouter.origin", el("span", { class: "mono" }, data.origin)),
    metaItem("openrouter.idle", duration(data.lock_idle_ms))));
  if (!data.pinning) box.append(el("p", { class: "note", "data-testid": "openrouter-off" }, t("openrouter.offNote")));
  if (!data.models.length) box.append(el("p", { class: "muted", "data-testid": "openrouter-empty" }, t("openrouter.empty")));
  for (const pin of data.models) box.append(pinRow(pin));
}

function pinRow(pin) {
  const lock = pin.lock;
  return el("article", { class: "provider", "data-testid": "openrouter-model", "data-model": pin.model },
    el("div", { class: "provider-head" },
      el("span", { class: "strong mono", "data-testid": "openrouter-model-id" }, pin.model),
      lock
        ? el("span", { class: "chip ok", "data-testid": "openrouter-lock" },
          t("openrouter.lockedTo", { slug: lock.slug }), " · ", t("openrouter.until", { time: clockTime(lock.until) }))
        : el("span", { class: "chip off", "data-testid": "openrouter-lock" }, t("openrouter.notPinned"))),
    el("div", { class: "meta", "data-testid": "openrouter-counts" },
      metaItem("openrouter.failures", String(pin.failures)),
      metaItem("openrouter.switches", String(pin.switches)),
      metaItem("openrouter.refreshed", pin.refreshed_at ? clockTime(pin.refreshed_at) : t("openrouter.never"))),
    pin.candidates.length
      ? candidateTable(pin)
      : el("p", { class: "muted", "data-testid": "openrouter-no-candidates" }, t("openrouter.noCandidates")));
}

// The candidates best first (as the server ranks them); the pinned one highlighted.
function candidateTable(pin) {
  const locked = pin.lock ? pin.lock.slug : null;
  const columns = [
    ["openrouter.col.rank", "num"], ["openrouter.col.slug", null], ["openrouter.col.score", "num"],
    ["openrouter.col.prompt", "num"], ["openrouter.col.completion", "num"], ["openrouter.col.cacheRead", "num"],
    ["openrouter.col.caching", null], ["openrouter.col.throughput", "num"], ["openrouter.col.state", null],
  ];
  return el("div", { class: "table-wrap" },
    el("table", { class: "ranked", "data-testid": "openrouter-candidates" },
      el("thead", null, el("tr", null, columns.map(([key, cls]) => el("th", { class: cls, scope: "col" }, t(key))))),
      el("tbody", null, pin.candidates.map((c, index) => candidateRow(c, index, c.slug === locked)))));
}

function candidateRow(c, index, locked) {
  const num = (text) => el("td", { class: "num" }, text);
  const throughput = c.throughput === null || c.throughput === undefined
    ? t("status.none") : t("openrouter.tps", { n: significant(c.throughput) });
  return el("tr", { class: locked ? "locked" : null, "data-testid": "openrouter-candidate", "data-slug": c.slug },
    num(String(index + 1)),
    el("td", { class: "mono" }, c.slug),
    num(significant(c.score)),
    num(pricePerMillion(c.prompt)),
    num(pricePerMillion(c.completion)),
    num(pricePerMillion(c.input_cache_read)),
    el("td", null, t(c.caching ? "openrouter.yes" : "openrouter.no")),
    num(throughput),
    el("td", null,
      locked ? el("span", { class: "chip ok", "data-testid": "openrouter-pinned" }, t("openrouter.pinned")) : null,
      c.cooled_until
        ? el("span", { class: "chip warn", "data-testid": "openrouter-cooling" },
          t("openrouter.coolingUntil", { time: clockTime(c.cooled_until) }))
        : null));
}

// --- Usage and health (SPEC §17): a range's counts by provider and by client, the failures ----
//
// GET /usage answers buckets (one per UTC hour and group that had traffic), groups (one per group
// over the range, most requests first) and totals, each with the same counts. Every chart shows
// its numbers as text beside its bars (the time chart: a legend, its axes and a title per bar).

async function reloadUsage() {
  if (await loadUsage()) renderUsage();
}

async function chooseRange(range) {
  state.usage.range = range;
  renderUsageRange();
  await reloadUsage();
}

function count(n) {
  return Number(n || 0).toLocaleString(locale());
}

// 10000000 -> "10M" (en), "1000万" (zh); en-US, as en-GB writes "10m".
function compact(n) {
  const options = { notation: "compact", maximumFractionDigits: 1 };
  return Number(n).toLocaleString(state.lang === "zh" ? "zh-CN" : "en-US", options);
}

function usd(n) {
  const small = n !== 0 && Math.abs(n) < 0.01;
  const digits = small ? { maximumSignificantDigits: 2 } : { minimumFractionDigits: 2, maximumFractionDigits: 2 };
  return "$" + Number(n).toLocaleString(locale(), digits);
}

// The server's id-0 groups, in this page's words: the default API token among clients, "nothing
// served" among providers (every provider failed).
function groupLabel(by, id, name) {
  if (id !== 0) return name;
  return t(by === "client" ? "usage.apiToken" : "usage.noProvider");
}

// A failure class (SPEC §5.1) in this page's words; a class this page does not know, as sent.
function classLabel(cls) {
  return Object.prototype.hasOwnProperty.call(I18N[state.lang], "usage.class." + cls) ? t("usage.class." + cls) : cls;
}

// The start of a bar of the time chart: a local hour, or a UTC day.
function slotTime(ms, slotMs) {
  const options = slotMs === DAY_MS ? { month: "short", day: "numeric", timeZone: "UTC" }
    : { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hour12: false };
  return new Date(ms).toLocaleString(locale(), options);
}

// An SVG element with attributes and children (nodes, or strings as text).
function svgEl(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function renderUsageRange() {
  for (const button of document.querySelectorAll("#usage-range button")) {
    button.setAttribute("aria-pressed", String(button.getAttribute("data-range") === state.usage.range));
  }
}

function renderUsage() {
  const usage = state.usage;
  renderUsageRange();
  const box = byId("usage");
  box.replaceChildren();
  box.setAttribute("data-shown", usage.shown);  // the range of the counts on show
  const data = usage.provider;
  if (!data) return;  // not loaded: the panel's note says why
  if (!data.groups.length) {
    box.append(el("p", { class: "muted", "data-testid": "usage-empty" }, t("usage.empty")));
  } else {
    box.append(usageTotals(data.totals), timeChart(data),
      el("div", { class: "grid2" }, tokensChart(usage.client), latencyChart(data)),
      providerTable(data));
  }
  box.append(failureList(usage.events));
}

function usageTotals(totals) {
  return el("div", { class: "meta usage-totals", "data-testid": "usage-totals" }, USAGE_COUNTS.map((name) =>
    el("span", { "data-testid": "usage-total", "data-stat": name },
      el("span", { class: "k" }, t("usage.col." + name)),
      el("span", { class: "strong" }, count(name === "errors" ? totals.error_count : totals[name])))));
}

function chart(testId, title, legend, ...body) {
  return el("figure", { class: "chart", "data-testid": testId },
    el("figcaption", null, el("h3", null, title), legend), ...body);
}

// A legend entry: the colour of its bars, its name and (for a series with a total) the total.
function legendItem(series, label, total) {
  return el("li", { "data-series": series },
    el("span", { class: "swatch s-" + series, "aria-hidden": "true" }), label,
    total === undefined ? null
      : el("span", { class: "strong", "data-testid": "usage-legend-total" }, " " + count(total)));
}

// Requests and errors per bar over the whole range, bars without traffic included.
function timeSlots(data, slotMs) {
  const floor = (ms) => ms - (ms % slotMs);
  const hours = data.buckets.map((b) => floor(b.hour));
  const first = Math.min(floor(data.from), ...hours);
  const last = Math.max(floor(data.to - 1), ...hours);
  const slots = [];
  for (let at = first; at <= last; at += slotMs) slots.push({ at, requests: 0, errors: 0 });
  for (const b of data.buckets) {
    const slot = slots[(floor(b.hour) - first) / slotMs];
    slot.requests += b.requests;
    slot.errors += b.error_count;
  }
  return slots;
}

// A bar of the time chart: 10 units per slot, 100 high, requests left and errors right.
function columnBar(x, value, top, series) {
  const height = value ? Math.max(1.5, (value / top) * 100) : 0;
  return svgEl("rect", { class: "s-" + series, x, y: 100 - height, width: 4.5, height, "data-value": value });
}

function timeChart(data) {
  const slotMs = USAGE_RANGES[state.usage.shown].slotMs;
  const slots = timeSlots(data, slotMs);
  const top = Math.max(1, ...slots.map((s) => Math.max(s.requests, s.errors)));
  const title = t("usage.timeChart");
  const svg = svgEl("svg", {
    viewBox: "0 0 " + slots.length * 10 + " 100", preserveAspectRatio: "none", role: "img", "aria-label": title,
  }, slots.map((s, i) => svgEl("g", {
    "data-testid": "usage-slot", "data-time": s.at, "data-requests": s.requests, "data-errors": s.errors,
  },
  svgEl("title", null, t("usage.slotTitle", { time: slotTime(s.at, slotMs), requests: count(s.requests),
    errors: count(s.errors) })),
  columnBar(i * 10 + 0.5, s.requests, top, "req"),
  columnBar(i * 10 + 5, s.errors, top, "err"))));
  const middle = slots[Math.floor(slots.length / 2)];
  return chart("usage-chart-time", title,
    el("ul", { class: "legend" },
      legendItem("req", t("usage.col.requests"), data.totals.requests),
      legendItem("err", t("usage.col.errors"), data.totals.error_count),
      el("li", { class: "muted" }, t(slotMs === DAY_MS ? "usage.perDay" : "usage.perHour"))),
    el("div", { class: "plot" },
      el("div", { class: "y-axis", "aria-hidden": "true" },
        el("span", { "data-testid": "usage-y-top" }, count(top)), el("span", null, "0")),
      svg,
      el("div", { class: "x-axis", "aria-hidden": "true" },
        [slots[0], middle, slots[slots.length - 1]].map((s) => el("span", null, slotTime(s.at, slotMs))))));
}

// A horizontal bar (0..top) and its number as text; wraps under the bar when the row is narrow.
function hbar(series, value, top, text, testId) {
  const width = value ? Math.max(0.5, (value / top) * 100) : 0;
  return el("div", { class: "hbar" },
    svgEl("svg", { viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
      svgEl("rect", { class: "track", width: 100, height: 10 }),
      svgEl("rect", { class: "s-" + series, width, height: 10, "data-value": value })),
    el("span", { class: "hbar-value", "data-testid": testId, "data-value": value }, text));
}

function tokenText(n, estimated, key) {
  return estimated ? t(key + "Est", { n: count(n), e: count(estimated) }) : t(key, { n: count(n) });
}

// Input and output tokens of each client: as reported plus as estimated (SPEC §17 counts them apart).
function tokensChart(data) {
  const groups = (data ? data.groups : []).map((g) => ({
    g, input: g.tokens.input + g.tokens.estimated_input, output: g.tokens.output + g.tokens.estimated_output,
  })).filter((c) => c.input || c.output);
  const top = Math.max(1, ...groups.map((c) => Math.max(c.input, c.output)));
  const rows = groups.map(({ g, input, output }) => el("div", {
    class: "hbar-group", "data-testid": "usage-client", "data-group": g.group, "data-id": g.id,
  },
  el("span", { class: "strong" }, groupLabel("client", g.id, g.group)),
  hbar("in", input, top, tokenText(input, g.tokens.estimated_input, "usage.tokensIn"), "usage-tokens-in"),
  hbar("out", output, top, tokenText(output, g.tokens.estimated_output, "usage.tokensOut"), "usage-tokens-out")));
  return chart("usage-chart-tokens", t("usage.tokensChart"),
    el("ul", { class: "legend" }, legendItem("in", t("usage.input")), legendItem("out", t("usage.output"))),
    el("p", { class: "muted" }, t("usage.tokensHelp")),
    rows.length ? el("div", { class: "hbars" }, rows) : el("p", { class: "muted" }, t("usage.noTokens")));
}

function ms(value) {
  return value === null || value === undefined ? t("status.none") : t("usage.ms", { n: count(Math.round(value)) });
}

// p95 as a light bar with p50 over it, and both as text.
function latencyBar(q, top, key, testId) {
  const width = (v) => (v ? Math.max(0.5, (v / top) * 100) : 0);
  return el("div", { class: "hbar" },
    svgEl("svg", { viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
      svgEl("rect", { class: "track", width: 100, height: 10 }),
      svgEl("rect", { class: "s-p95", width: width(q.p95), height: 10, "data-value": q.p95 }),
      svgEl("rect", { class: "s-p50", width: width(q.p50), height: 10, "data-value": q.p50 })),
    el("span", { class: "hbar-value", "data-testid": testId, "data-p50": q.p50, "data-p95": q.p95 },
      t(key, { p50: ms(q.p50), p95: ms(q.p95) })));
}

// Latency to the first byte and to the end per provider (the server's p50 and p95, null without a sample).
function latencyChart(data) {
  const measured = data.groups.filter((g) => g.latency_ms.first_byte.p95 !== null || g.latency_ms.end.p95 !== null);
  const values = measured.flatMap((g) => [g.latency_ms.first_byte.p95, g.latency_ms.end.p95]);
  const top = Math.max(1, ...values.filter((v) => v !== null));
  const rows = measured.map((g) => el("div", {
    class: "hbar-group", "data-testid": "usage-latency", "data-group": g.group, "data-id": g.id,
  },
  el("span", { class: "strong" }, groupLabel("provider", g.id, g.group)),
  latencyBar(g.latency_ms.first_byte, top, "usage.firstByte", "usage-latency-first"),
  latencyBar(g.latency_ms.end, top, "usage.toEnd", "usage-latency-end")));
  return chart("usage-chart-latency", t("usage.latencyChart"),
    el("ul", { class: "legend" }, legendItem("p50", t("usage.p50")), legendItem("p95", t("usage.p95"))),
    rows.length ? el("div", { class: "hbars" }, rows) : el("p", { class: "muted" }, t("usage.noLatency")));
}

// The errors of a group by class, most first: "rate limited 3", "timeout 1".
function errorClasses(errors) {
  const classes = Object.entries(errors || {}).filter(([, n]) => n).sort((a, b) => b[1] - a[1]);
  if (!classes.length) return t("status.none");
  return el("span", { class: "classes" }, classes.map(([cls, n]) =>
    el("span", { class: "chip warn", "data-class": cls, "data-value": n, title: cls },
      classLabel(cls) + " " + count(n))));
}

function providerTable(data) {
  const num = (name, value) => el("td", { class: "num", "data-stat": name }, count(value));
  const head = ["provider", "requests", "successes", "failovers", "errors", "classes", "streams_cut", "rescues"];
  return el("div", { class: "stack" },
    el("h3", null, t("usage.table")),
    el("div", { class: "table-wrap" },
      el("table", { class: "ranked", "data-testid": "usage-providers" },
        el("thead", null, el("tr", null, head.map((name) => el("th", {
          class: name === "provider" || name === "classes" ? null : "num", scope: "col",
        }, t("usage.col." + name))))),
        el("tbody", null, data.groups.map((g) => el("tr", {
          "data-testid": "usage-provider", "data-group": g.group, "data-id": g.id,
        },
        el("td", { class: "strong", "data-stat": "provider" }, groupLabel("provider", g.id, g.group)),
        num("requests", g.requests), num("successes", g.successes), num("failovers", g.failovers),
        num("errors", g.error_count),
        el("td", { "data-stat": "classes" }, errorClasses(g.errors)),
        num("streams_cut", g.streams_cut), num("rescues", g.rescues)))))));
}

function failureList(events) {
  const usage = state.usage;
  const shown = usage.showAll ? events : events.slice(0, FAILURES_SHOWN);
  const toggle = events.length > FAILURES_SHOWN
    ? el("button", {
      type: "button", class: "small", "data-testid": "usage-failures-toggle", "aria-expanded": String(usage.showAll),
      onclick: () => {
        usage.showAll = !usage.showAll;
        renderUsage();
      },
    }, usage.showAll ? t("usage.showFewer", { n: FAILURES_SHOWN }) : t("usage.showAll", { n: events.length }))
    : null;
  return el("div", { class: "stack", "data-testid": "usage-failures" },
    el("div", { class: "between" }, el("h3", null, t("usage.failures")), toggle),
    events.length ? el("ul", { class: "plain" }, shown.map(failureEntry))
      : el("p", { class: "muted", "data-testid": "usage-failures-empty" }, t("usage.noFailures")));
}

function failureEntry(e) {
  return el("li", { class: "entry", "data-testid": "usage-failure", "data-class": e.class, "data-time": e.time },
    el("span", { class: "mono", "data-testid": "usage-failure-time" }, clockTime(e.time)),
    el("span", { class: "strong", "data-testid": "usage-failure-provider" },
      groupLabel("provider", e.provider_id, e.provider)),
    e.key_id ? el("span", { class: "chip mono", "data-testid": "usage-failure-key" }, t("status.key", { id: e.key_id }))
      : null,
    el("span", { class: "chip mono", "data-testid": "usage-failure-model" }, e.model),
    el("span", { class: "chip warn", "data-testid": "usage-failure-class", title: e.class }, classLabel(e.class)),
    el("span", { "data-testid": "usage-failure-status" },
      e.status === null ? t("status.none") : t("status.http", { status: e.status })),
    el("span", null, el("span", { class: "k" }, t("usage.client")),
      el("span", { "data-testid": "usage-failure-client" }, groupLabel("client", e.client_id, e.client))),
    el("span", { class: "chip off" }, e.surface),
    e.message ? el("span", { class: "msg", "data-testid": "usage-failure-message" }, e.message) : null);
}

// What each pinned OpenRouter model saves against its official provider (seed 003's estimate, from
// GET /openrouter): a line per model that has an estimate.
function renderSavings() {
  const box = byId("usage-savings");
  box.replaceChildren();
  const models = state.openrouter ? state.openrouter.models.filter((m) => m.estimate) : [];
  if (!models.length) return;
  box.append(el("h3", null, t("usage.savings")),
    el("ul", { class: "plain" }, models.map((m) => el("li", {
      class: "entry", "data-testid": "usage-savings", "data-model": m.model,
    }, el("span", { class: "strong mono" }, m.model), el("span", { class: "msg" }, savingsText(m.estimate))))));
}

function savingsText(e) {
  const vars = {
    pinned: e.pinned, official: e.official, pinnedUsd: usd(e.pinned_usd), input: compact(e.input_tokens),
    output: compact(e.output_tokens), hit: Math.round(e.hit_rate * 100),
  };
  if (e.official === null || e.official_usd === null) return t("usage.savingsUnknown", vars);
  if (e.official === e.pinned) return t("usage.savingsSame", vars);
  const saved = e.savings_usd === null ? e.official_usd - e.pinned_usd : e.savings_usd;
  Object.assign(vars, { officialUsd: usd(e.official_usd), savings: usd(Math.abs(saved)) });
  return t(saved >= 0 ? "usage.savingsLine" : "usage.costsLine", vars);
}

// --- Providers ------------------------------------------------------------------------------

async function reloadProviders() {
  await Promise.all([loadProviders(), loadStatus()]);
  renderProviders();
  renderStatus();
  renderAliases();  // the target suggestions and the connect panel's models follow the providers
  renderConnect();
}

function startEdit(p) {
  state.editing = {
    id: p.id, name: p.name, platform: p.platform, base_url: p.base_url, api_key: "",
    models: p.models.map(modelLine).join("\n"), priority: String(p.priority),
    timeout: p.timeout_ms === null ? "" : String(p.timeout_ms / 1000), enabled: p.enabled,
  };
  renderProviders();
}

function cancelEdit() {
  state.editing = null;
  renderProviders();
}

async function saveEdit(p) {
  const d = state.editing;
  const body = {
    name: required(d.name, "form.needName"),
    platform: d.platform.trim() || "custom",
    base_url: required(d.base_url, "form.needBaseUrl"),
    models: modelLines(d.models),
    priority: integer(d.priority, 100, "form.priority"),
    timeout_ms: timeoutMs(d.timeout),
    enabled: d.enabled,
  };
  if (d.api_key.trim()) body.api_key = d.api_key.trim();  // empty keeps the stored key
  const saved = (await api("PUT", "/providers/" + p.id, body)).provider;
  state.editing = null;
  await reloadProviders();
  note("providers", "ok", t("provider.saved", { name: saved.name }));
}

async function toggleProvider(p) {
  await api("PUT", "/providers/" + p.id, { enabled: !p.enabled });
  await reloadProviders();
  note("providers", "ok", t(p.enabled ? "provider.disabledNote" : "provider.enabledNote", { name: p.name }));
}

async function deleteProvider(p) {
  if (!confirm(t("provider.confirmDelete", { name: p.name }))) return;
  await api("DELETE", "/providers/" + p.id);
  if (state.editing && state.editing.id === p.id) state.editing = null;
  await reloadProviders();
  note("providers", "ok", t("provider.deleted", { name: p.name }));
}

// --- Form values ----------------------------------------------------------------------------

function required(value, messageKey) {
  const text = String(value).trim();
  if (!text) throw new Error(t(messageKey));
  return text;
}

// One model per line: its id, or its id and a kind after a space ("bge-m3 embedding").
function modelLines(text) {
  const models = text.split("\n").map((m) => m.trim()).filter(Boolean).map((line) => {
    const [id, kind, ...rest] = line.split(/\s+/);
    return kind && !rest.length ? { id, kind: kind.toLowerCase() } : line;
  });
  if (!models.length) throw new Error(t("form.needModels"));
  return models;
}

function integer(value, fallback, labelKey) {
  const text = String(value).trim();
  if (text === "") return fallback;
  if (!/^-?\d+$/.test(text)) throw new Error(t("form.notInteger", { field: t(labelKey) }));
  return Number(text);
}

function timeoutMs(value) {
  const text = String(value).trim();
  if (text === "") return null;
  const seconds = Number(text);
  if (!(seconds > 0)) throw new Error(t("form.badTimeout"));
  return Math.round(seconds * 1000);
}

// --- Quick add ------------------------------------------------------------------------------

function currentPreset() {
  return state.platforms.find((p) => p.id === state.preset.id) || null;
}

// The preset's default models first, then those the platform listed.
function presetModels() {
  const preset = currentPreset();
  return preset ? [...new Set([...preset.default_models, ...state.preset.fetched])] : [];
}

function uniqueName(base) {
  const taken = new Set(state.providers.map((p) => p.name));
  let name = base;
  for (let n = 2; taken.has(name); n++) name = base + "-" + n;
  return name;
}

function choosePlatform(id) {
  state.preset = { id, fetched: [], selected: [], search: "" };
  const preset = currentPreset();
  if (preset) state.preset.selected = [...preset.default_models];
  byId("preset-base-url").value = preset ? preset.base_url : "";
  byId("preset-name").value = preset ? uniqueName(preset.id) : "";
  byId("preset-account").value = "";
  byId("preset-model-search").value = "";
  renderPresetForm();
}

function fillAccountId() {
  const preset = currentPreset();
  const account = byId("preset-account").value.trim();
  if (!preset) return;
  const filled = preset.base_url.replace(ACCOUNT_PLACEHOLDER, encodeURIComponent(account));
  byId("preset-base-url").value = account ? filled : preset.base_url;
}

function tickModel(model, on) {
  const selected = state.preset.selected.filter((m) => m !== model);
  state.preset.selected = on ? selected.concat([model]) : selected;
  renderPresetCount();
}

function presetEndpoint() {
  const baseUrl = required(byId("preset-base-url").value, "form.needBaseUrl");
  if (baseUrl.includes(ACCOUNT_PLACEHOLDER)) throw new Error(t("preset.needAccount"));
  return baseUrl;
}

// The model list is fetched with the first key given.
async function fetchPresetModels() {
  if (!currentPreset()) throw new Error(t("preset.pickFirst"));
  const target = { base_url: presetEndpoint(), api_key: requiredKeys(byId("preset-key").value)[0] };
  const models = (await api("POST", "/models/fetch", target)).models;
  state.preset.fetched = models;
  renderPresetModels();
  note("preset", "ok", t("preset.fetched", { n: models.length }));
}

async function submitPreset() {
  const preset = currentPreset();
  if (!preset) throw new Error(t("preset.pickFirst"));
  const models = presetModels().filter((m) => state.preset.selected.includes(m));
  if (!models.length) throw new Error(t("form.needModels"));
  const name = byId("preset-name").value.trim() || uniqueName(preset.id);
  const body = {
    name, platform: preset.id, base_url: presetEndpoint(), api_keys: requiredKeys(byId("preset-key").value), models,
  };
  await api("POST", "/providers", body);
  byId("preset-key").value = "";
  renderKeyCount("preset");
  choosePlatform("");
  await reloadProviders();
  note("preset", "ok", t("preset.added", { name }));
}

// --- Custom add -----------------------------------------------------------------------------

async function submitCustom() {
  const body = {
    name: required(byId("custom-name").value, "form.needName"),
    platform: byId("custom-platform").value.trim() || "custom",
    base_url: required(byId("custom-base-url").value, "form.needBaseUrl"),
    api_keys: requiredKeys(byId("custom-key").value),
    models: modelLines(byId("custom-models").value),
    priority: integer(byId("custom-priority").value, 100, "form.priority"),
    timeout_ms: timeoutMs(byId("custom-timeout").value),
  };
  await api("POST", "/providers", body);
  byId("custom-form").reset();
  renderKeyCount("custom");
  await reloadProviders();
  note("custom", "ok", t("custom.added", { name: body.name }));
}

// --- Tokens ---------------------------------------------------------------------------------

function randomToken() {
  if (crypto.randomUUID) return crypto.randomUUID();
  // Outside a secure context (plain http to a LAN address) randomUUID is missing: a v4 UUID by hand.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join("-");
}

function tokenValue(id) {
  const value = byId(id).value.trim();
  if (value.length < MIN_TOKEN_CHARS) throw new Error(t("tokens.tooShort", { n: MIN_TOKEN_CHARS }));
  return value;
}

async function putTokens(body) {
  const data = await api("PUT", "/tokens", body);
  state.tokenHints = { api: data.api_token_hint, admin: data.admin_token_hint };
  renderTokens();
}

async function saveApiToken() {
  await putTokens({ api_token: tokenValue("token-api") });
  note("tokens", "ok", t("tokens.apiSaved"));
}

async function saveAdminToken() {
  const token = tokenValue("token-admin");
  await putTokens({ admin_token: token });
  state.token = token;
  sessionStorage.setItem(TOKEN_STORAGE, token);
  byId("token-admin").value = "";
  note("tokens", "ok", t("tokens.adminSaved"));
}

// --- Settings -------------------------------------------------------------------------------

async function putSettings(body) {
  state.settings = (await api("PUT", "/settings", body)).settings;
  state.settingDrafts = {};
  state.aliasDraft = null;
  renderSettings();
  note("settings", "ok", t("settings.saved"));
  // The OpenRouter panel shows pinning on/off, the origin and the idle time: keep it in step.
  if (Object.keys(body).some((key) => key.startsWith("openrouter_"))) {
    reloadOpenRouter().catch((err) => note("openrouter", "error", err.message));
  }
}

// An http(s) origin: scheme, host and an optional port, nothing else (a trailing / is allowed).
// The server checks it again and answers 400 with its own message.
const ORIGIN_PATTERN = /^https?:\/\/(?:\[[0-9a-f:.]+\]|[^\s\/?#@:\[\]]+)(?::\d{1,5})?\/?$/i;

function isOrigin(text) {
  return ORIGIN_PATTERN.test(text);
}

// Only what changed is sent; an emptied field (or an alias table with no row) drops the saved
// value (back to env or default), except a rate limit's, which is refused (null would turn it off).
async function saveSettings() {
  const body = {};
  if (state.aliasDraft !== null) {
    const table = aliasTable();
    const saved = state.settings[ALIASES_KEY];
    if (!Object.keys(table).length) {
      if (saved.source === "d1") body[ALIASES_KEY] = null;
    } else if (JSON.stringify(table) !== JSON.stringify(saved.value)) {
      body[ALIASES_KEY] = table;
    }
  }
  for (const [key, draft] of Object.entries(state.settingDrafts)) {
    const text = draft.trim();
    if (text === "" && LIMIT_KEYS.includes(key)) {
      throw new Error(t("settings.limitEmpty", { field: t("setting." + key) }));
    } else if (text === "") {
      if (state.settings[key].source === "d1") body[key] = null;
    } else if (ORIGIN_KEYS.includes(key)) {
      if (!isOrigin(text)) throw new Error(t("settings.badOrigin", { field: t("setting." + key) }));
      if (text !== state.settings[key].value) body[key] = text;
    } else if (!/^\d+$/.test(text)) {
      throw new Error(t("settings.notInteger", { field: t("setting." + key) }));
    } else if (Number(text) !== state.settings[key].value) {
      body[key] = Number(text);
    }
  }
  if (!Object.keys(body).length) {
    note("settings", "", t("settings.unchanged"));
    return;
  }
  await putSettings(body);
}

// --- Cooldowns ------------------------------------------------------------------------------

async function clearCooldowns() {
  const data = await api("POST", "/cooldowns/clear");
  state.verifyResults = null;
  await reloadProviders();
  note("status", "ok", t("status.cleared", { n: data.cleared }));
}

async function verifyCooldowns() {
  const data = await api("POST", "/cooldowns/verify");
  state.verifyResults = data.results;
  await reloadProviders();
  note("status", "ok", t("status.verified"));
}

// --- Wiring ---------------------------------------------------------------------------------

function toggleLanguage() {
  state.lang = state.lang === "zh" ? "en" : "zh";
  localStorage.setItem(LANG_STORAGE, state.lang);
  renderAll();
}

async function login(event) {
  event.preventDefault();
  const input = byId("login-token");
  const token = input.value.trim();
  if (!token) {
    showLogin(t("login.empty"));
    return;
  }
  const button = event.submitter;
  if (button) button.disabled = true;
  state.token = token;
  try {
    await enter();
    sessionStorage.setItem(TOKEN_STORAGE, token);
    input.value = "";
  } catch (err) {
    showLogin(err.message);
  } finally {
    if (button) button.disabled = false;
  }
}

function wire() {
  byId("lang-toggle").addEventListener("click", toggleLanguage);
  byId("logout").addEventListener("click", () => showLogin(""));
  byId("login-form").addEventListener("submit", login);
  byId("cooldown-clear").addEventListener("click", guarded("status", clearCooldowns));
  byId("cooldown-verify").addEventListener("click", guarded("status", verifyCooldowns));
  byId("providers-refresh").addEventListener("click", guarded("providers", reloadProviders));
  for (const button of document.querySelectorAll("#usage-range button")) {
    button.addEventListener("click", guarded("usage", () => chooseRange(button.getAttribute("data-range"))));
  }
  byId("usage-refresh").addEventListener("click", guarded("usage", reloadUsage));
  byId("preset-platform").addEventListener("change", (e) => {
    note("preset", "", "");
    choosePlatform(e.target.value);
  });
  byId("preset-account").addEventListener("input", fillAccountId);
  byId("preset-model-search").addEventListener("input", (e) => {
    state.preset.search = e.target.value;
    renderPresetModels();
  });
  byId("preset-fetch-models").addEventListener("click", guarded("preset", fetchPresetModels));
  byId("preset-key").addEventListener("input", () => renderKeyCount("preset"));
  byId("custom-key").addEventListener("input", () => renderKeyCount("custom"));
  byId("preset-form").addEventListener("submit", guarded("preset", submitPreset));
  byId("custom-form").addEventListener("submit", guarded("custom", submitCustom));
  byId("token-api-random").addEventListener("click", () => { byId("token-api").value = randomToken(); });
  byId("token-api-save").addEventListener("click", guarded("tokens", saveApiToken));
  byId("token-admin-save").addEventListener("click", guarded("tokens", saveAdminToken));
  byId("settings-save").addEventListener("click", guarded("settings", saveSettings));
  byId("client-form").addEventListener("submit", guarded("clients", submitClient));
  byId("openrouter-refresh").addEventListener("click", guarded("openrouter", reloadOpenRouter));
  byId("connect-model").addEventListener("change", (e) => {
    state.connect.model = e.target.value;
    renderConnect();
  });
  byId("connect-window").addEventListener("change", (e) => {
    const tokens = Number(e.target.value);
    state.connect.window = Number.isInteger(tokens) && tokens > 0 ? tokens : DEFAULT_WINDOW;
    renderConnect();
  });
}

wire();
renderAll();
if (state.token) enter().catch((err) => showLogin(err.message));
</script>
</body>
</html>
"""
