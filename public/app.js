import { I18N } from "./i18n.js";

const TOKEN_STORAGE = "fllmapi.adminToken";
const LANG_STORAGE = "fllmapi.lang";
const ACCOUNT_PLACEHOLDER = "{account_id}";
const MIN_TOKEN_CHARS = 16;
const POLL_MS = 10000;
const TICK_MS = 1000;
// Sections with a message line (#<section>-message) that note() writes to.
const SECTIONS = [
  "status",
  "usage",
  "providers",
  "preset",
  "custom",
  "tokens",
  "settings",
  "clients",
  "openrouter",
  "connect",
];
const ALIASES_KEY = "model_aliases";
// The rate limits (SPEC §14): the API's null turns them off instead of restoring the env value or
// the default, so the page never sends null for them: no reset button, and an empty field is refused.
const LIMIT_KEYS = ["default_client_rpm", "ip_rpm", "auth_fail_limit"];
// Settings whose value is an origin (text, SPEC §15), not a number: a text field, checked as an origin.
const ORIGIN_KEYS = ["openrouter_origin"];
// The settings the page shows and takes in a unit of its own (the API keeps ms and bytes): the
// unit's i18n key is unit.<unit>, and one unit is FACTORS[unit] of the API's.
const SETTING_UNITS = {
  routing_cooldown_ceiling_ms: "min",
  same_model_retry_max_ms: "s",
  stream_stall_ms: "s",
  max_body_bytes: "MB",
  openrouter_lock_idle_ms: "min",
};
const FACTORS = { s: 1000, min: 60000, MB: 1024 * 1024 };
// The settings panel's groups, in order (settings.group.<id>); a setting in none goes to the first.
const SETTING_GROUPS = [
  [
    "routing",
    [
      "routing_cooldown_ceiling_ms",
      "max_consecutive_upstream_fails",
      "same_model_retry_max_ms",
      "stream_stall_ms",
      "max_body_bytes",
    ],
  ],
  ["limits", LIMIT_KEYS],
  ["openrouter", ["openrouter_pinning", "openrouter_lock_idle_ms", "openrouter_origin"]],
];
// Where a 400's error.param (SPEC §8.2: the field it names) is shown, per section: the id of the
// field; a param with no field here goes to the section's message line.
const PARAM_FIELDS = {
  preset: {
    name: "preset-name",
    base_url: "preset-base-url",
    api_key: "preset-key",
    api_keys: "preset-key",
    models: "preset-models",
  },
  custom: {
    name: "custom-name",
    platform: "custom-platform",
    base_url: "custom-base-url",
    api_key: "custom-key",
    api_keys: "custom-key",
    models: "custom-models",
    priority: "custom-priority",
    timeout_ms: "custom-timeout",
  },
  clients: { name: "client-name", rpm: "client-rpm", models: "client-models" },
  tokens: { api_token: "token-api", admin_token: "token-admin" },
  settings: (param) => `setting-${param.toLowerCase()}`,
};
// The aliases the example button adds: Claude Code's small background model to a small model
// (the page picks the first one a provider declares), everything else it asks for to auto.
const CLAUDE_EXAMPLE = [
  ["claude-*haiku*", null],
  ["claude-*", "auto"],
];
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
  lang: initialLang(),
  token: sessionStorage.getItem(TOKEN_STORAGE) || "",
  view: "login",
  loginMessage: "",
  providers: [],
  platforms: [],
  settings: {},
  settingDrafts: {},
  aliasDraft: null, // [{pattern, target}] once the alias rows were edited, else null (the saved table)
  connect: { client: "claude", model: "auto", window: DEFAULT_WINDOW },
  cooldowns: [], // /status entries, each with untilMs on this browser's clock
  verifyResults: null,
  editing: null, // the draft of the provider being edited: {id, name, platform, …}
  keyDraft: null, // the open "add keys" form: {id: provider id, text}; keys never go back to the DOM
  preset: { id: "", fetched: [], selected: [], search: "" },
  custom: { fetched: [], search: "" }, // Custom add's fetched model list; ticked = lines of its models field
  tokenHints: { api: null, admin: null },
  clients: [],
  defaultClient: null, // GET /clients default_client: {enabled}; null when the answer has none
  newToken: null, // {name, token} of the client just created: shown once, never fetched again
  clientEdit: null, // the draft of the client being edited: {id, rpm, models}
  openrouter: null, // GET /openrouter (SPEC §15): {pinning, origin, lock_idle_ms, models}; null until loaded
  usage: emptyUsage(), // the Usage panel (SPEC §17): the range, its answers and the failures
  notes: {}, // section -> {kind, text}
  timers: [],
};

// range: "24h" | "7d" | "30d"; shown: the range of the answers held; provider and client:
// GET /usage by=provider and by=client (null until loaded); events: GET /events, newest first;
// seq: the last load started, so an answer for a range left meanwhile is dropped.
function emptyUsage() {
  return { range: "24h", shown: "24h", provider: null, client: null, events: [], showAll: false, seq: 0 };
}

// --- Text -----------------------------------------------------------------------------------

// The language chosen with the toggle; until one was, the browser's (Chinese for zh*, else English).
function initialLang() {
  const chosen = localStorage.getItem(LANG_STORAGE);
  if (chosen === "en" || chosen === "zh") return chosen;
  return String(navigator.language || "")
    .toLowerCase()
    .startsWith("zh")
    ? "zh"
    : "en";
}

function t(key, vars) {
  const table = I18N[state.lang];
  const text = Object.hasOwn(table, key) ? table[key] : key;
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
  const node = byId(`${section}-message`);
  if (!node) return;
  const { kind, text } = state.notes[section] || { kind: "", text: "" };
  node.textContent = text;
  node.setAttribute("class", `note ${kind}`);
}

// --- The admin API --------------------------------------------------------------------------

// The answer's JSON, or throws an Error with the server's error.message. A 401 for the token in
// use returns to the login view (a 401 for a token already replaced is only thrown).
async function api(method, path, body) {
  const token = state.token;
  const init = { method, headers: { authorization: `Bearer ${token}` } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api/admin${path}`, init);
  } catch {
    throw new Error(t("error.network"));
  }
  const data = await response.json().catch(() => null);
  if (response.status === 401) {
    if (token === state.token) showLogin(t("login.rejected"));
    throw new Error(t("login.rejected"));
  }
  if (!response.ok) {
    const error = data?.error || {};
    const failure = new Error(error.message || t("error.status", { status: response.status }));
    failure.param = typeof error.param === "string" ? error.param : null;
    throw failure;
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
  const data = await api("GET", "/clients");
  state.clients = data.clients;
  state.defaultClient = data.default_client || null;
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
  const query = `/usage?from=${to - USAGE_RANGES[range].ms}&to=${to}&by=`;
  const [provider, client, events] = await Promise.all([
    api("GET", `${query}provider`),
    api("GET", `${query}client`),
    api("GET", `/events?limit=${EVENTS_LIMIT}`),
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
  const openrouter = loadOpenRouter().then(
    () => null,
    (err) => err,
  );
  const usage = loadUsage().then(
    () => null,
    (err) => err,
  );
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
    token: "",
    view: "login",
    loginMessage: message,
    editing: null,
    keyDraft: null,
    verifyResults: null,
    clients: [],
    newToken: null,
    clientEdit: null,
    openrouter: null,
    usage: emptyUsage(),
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
  return state.cooldowns.map((c) => `${c.providerId}#${c.keyId}/${c.model}`).join(",");
}

// The status bar follows /status; provider rows re-render only when their badges change.
async function poll() {
  if (document.hidden || state.view !== "main") return;
  const before = cooldownKey();
  try {
    await loadStatus();
  } catch {
    return; // a 401 already went back to the login view; anything else waits for the next poll
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

// An event handler that clears the section's note and field errors, keeps its button disabled
// while it runs and shows any error beside the field it names (``fields``: param -> field id, by
// default the section's PARAM_FIELDS), else in the section's message line.
function guarded(section, action, fields) {
  return async (event) => {
    if (event.type === "submit") event.preventDefault();
    const button = event.submitter || event.currentTarget;
    const isButton = button instanceof HTMLButtonElement;
    note(section, "", "");
    clearFieldErrors(section);
    if (isButton) button.disabled = true;
    try {
      await action(event);
    } catch (err) {
      const input = errorField(err, fields || PARAM_FIELDS[section]);
      if (input) showFieldError(input, err.message, section);
      else note(section, "error", err.message);
    } finally {
      if (isButton) button.disabled = false;
    }
  };
}

// An error a form check found in one field (its id), shown beside it.
function invalid(fieldId, message) {
  return Object.assign(new Error(message), { field: fieldId });
}

// The field an error belongs to: the form check's, or the one the server's param names
// ("api_keys.0" names api_keys); null when there is none on the page.
function errorField(err, fields) {
  let id = err.field || null;
  if (!id && err.param && fields) {
    const name = err.param.split(/[.[]/)[0];
    id = typeof fields === "function" ? fields(name) : fields[name];
  }
  const input = id ? byId(id) : null;
  return input?.isConnected ? input : null;
}

// The message under its field, tied to it with aria-describedby; the field is marked invalid and
// focused. Typing in the field clears it (clearFieldError).
function showFieldError(input, message, section) {
  clearFieldError(input);
  const id = `${input.id}-error`;
  const node = el(
    "p",
    {
      id,
      class: "field-error",
      role: "alert",
      "data-testid": "field-error",
      "data-section": section,
      "data-for": input.id,
    },
    message,
  );
  const parent = input.parentElement;
  (parent.matches(".inline, .setting-controls") ? parent : input).after(node);
  const described = (input.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
  input.setAttribute("aria-describedby", described.concat([id]).join(" "));
  input.setAttribute("aria-invalid", "true");
  const fold = input.closest("details");
  if (fold) fold.open = true;
  if (typeof input.focus === "function") input.focus();
}

function clearFieldError(input) {
  if (!input?.id) return;
  const id = `${input.id}-error`;
  const node = byId(id);
  if (node) node.remove();
  const described = (input.getAttribute("aria-describedby") || "").split(" ").filter((d) => d && d !== id);
  if (described.length) input.setAttribute("aria-describedby", described.join(" "));
  else input.removeAttribute("aria-describedby");
  input.removeAttribute("aria-invalid");
}

function clearFieldErrors(section) {
  for (const node of document.querySelectorAll(`.field-error[data-section="${section}"]`)) {
    clearFieldError(byId(node.getAttribute("data-for")));
    node.remove();
  }
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
    renderCustomModels();
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
  const key = provider?.keys.find((k) => k.id === keyId);
  const label = t("status.key", { id: keyId }) + (key?.hint ? ` · ${key.hint}` : "");
  return el("span", { class: "chip mono", "data-testid": "cooldown-key" }, label);
}

function cooldownEntry(c) {
  return el(
    "li",
    { class: "entry", "data-testid": "cooldown-entry" },
    el("span", { class: "strong" }, c.name),
    keyChip(c.providerId, c.keyId),
    el("span", { class: "chip mono" }, c.model === null ? t("status.allModels") : c.model),
    el("span", { class: "chip warn" }, t(`source.${c.source}`)),
    el("span", null, el("span", { class: "k" }, t("status.left")), timeLeftNode(c)),
    el(
      "span",
      null,
      el("span", { class: "k" }, t("status.lastStatus")),
      c.lastStatus === null ? t("status.none") : t("status.http", { status: c.lastStatus }),
    ),
    c.lastMessage ? el("span", { class: "msg" }, c.lastMessage) : null,
  );
}

function verifyChip(ok) {
  // ok is null for a cooldown cleared without a probe (one verify sends a bounded number)
  if (ok === null) return el("span", { class: "chip off" }, t("status.verifySkipped"));
  return el("span", { class: ok ? "chip ok" : "chip bad" }, t(ok ? "status.verifyOk" : "status.verifyFailed"));
}

function verifyList(results) {
  const items = results.map((r) =>
    el(
      "li",
      { class: "entry", "data-testid": "verify-result" },
      verifyChip(r.ok),
      el("span", { class: "strong" }, r.name),
      keyChip(r.providerId, r.keyId),
      el("span", null, r.status === null ? t("status.none") : t("status.http", { status: r.status })),
      r.message ? el("span", { class: "msg" }, r.message) : null,
    ),
  );
  return el(
    "div",
    { "data-testid": "verify-results" },
    el("h3", null, t("status.verifyHeading")),
    items.length ? el("ul", { class: "plain" }, items) : el("p", { class: "muted" }, t("status.verifyNothing")),
  );
}

function renderProviders() {
  byId("providers-count").textContent = t("providers.count", { n: state.providers.length });
  const box = byId("providers");
  box.replaceChildren();
  if (!state.providers.length) box.append(el("p", { class: "muted" }, t("providers.empty")));
  for (const provider of state.providers) box.append(providerRow(provider));
}

function providerRow(p) {
  const row = el(
    "article",
    { class: p.enabled ? "provider" : "provider off", "data-testid": "provider-row" },
    el(
      "div",
      { class: "provider-head" },
      el("span", { class: "strong", "data-testid": "provider-name" }, p.name),
      el("span", { class: "chip" }, p.platform),
      el(
        "span",
        { class: p.enabled ? "chip ok" : "chip off" },
        t(p.enabled ? "provider.enabled" : "provider.disabled"),
      ),
      cooldownBadges(p),
      providerActions(p),
    ),
    el("div", { class: "provider-line" }, el("span", { class: "mono url" }, p.base_url), providerMeta(p)),
    el(
      "div",
      { class: "models" },
      p.models.map((m) => modelChip(p, modelId(m))),
    ),
    keyList(p),
  );
  if (state.editing && state.editing.id === p.id) row.append(editor(p));
  return row;
}

// The provider's own and its models' cooldowns; a key's cooldown shows in its key row, and the
// provider is cooling as well when every usable key is (SPEC §13), until the first one ends.
function cooldownBadges(p) {
  const badges = state.cooldowns
    .filter((c) => c.providerId === p.id && (c.keyId === null || c.keyId === undefined))
    .map((c) =>
      el(
        "span",
        { class: "chip warn", "data-testid": "provider-cooldown" },
        c.model === null ? t("cooldown.badge") : t("cooldown.badgeModel", { model: c.model }),
        " ",
        timeLeftNode(c),
      ),
    );
  const usable = p.keys.filter((k) => k.enabled && !k.key_error);
  const ends = usable.map(keyCoolingUntil);
  if (usable.length && ends.every((until) => until !== null)) {
    badges.push(
      el(
        "span",
        { class: "chip warn", "data-testid": "provider-cooldown" },
        t("cooldown.badgeKeys"),
        " ",
        timeLeftNode({ untilMs: Math.min(...ends) }),
      ),
    );
  }
  return badges;
}

function smallButton(testId, labelKey, onclick, extraClass) {
  const attrs = { type: "button", class: extraClass ? `small ${extraClass}` : "small", "data-testid": testId, onclick };
  return el("button", attrs, t(labelKey));
}

function providerActions(p) {
  return el(
    "span",
    { class: "actions" },
    smallButton("provider-edit", "provider.edit", () => startEdit(p)),
    smallButton(
      "provider-toggle",
      p.enabled ? "provider.disable" : "provider.enable",
      guarded("providers", () => toggleProvider(p)),
    ),
    smallButton(
      "provider-delete",
      "provider.delete",
      guarded("providers", () => deleteProvider(p)),
      "danger",
    ),
  );
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
  const section = `keys-${p.id}`;
  const message = state.notes[section] || { kind: "", text: "" };
  const adding = state.keyDraft !== null && state.keyDraft.id === p.id;
  const usable = p.keys.some((k) => k.enabled && !k.key_error);
  return el(
    "div",
    { class: "keys", "data-testid": "provider-keys" },
    el(
      "div",
      { class: "keys-head" },
      el("span", { class: "label" }, t("keys.heading", { n: p.keys.length })),
      adding ? null : smallButton("key-add", "keys.add", () => openKeyForm(p)),
    ),
    el(
      "ul",
      { class: "plain" },
      p.keys.map((k) => keyRow(p, k)),
    ),
    usable ? null : el("p", { class: "note error", "data-testid": "keys-none-usable" }, t("keys.noneUsable")),
    adding ? keyForm(p) : null,
    el(
      "p",
      { id: `${section}-message`, class: `note ${message.kind}`, role: "status", "data-testid": "key-message" },
      message.text,
    ),
  );
}

function keyRow(p, k) {
  const until = keyCoolingUntil(k);
  const section = `keys-${p.id}`;
  return el(
    "li",
    { class: k.enabled ? "key" : "key off", "data-testid": "provider-key", "data-key-id": k.id },
    el("span", { class: "mono k" }, `#${k.id}`),
    el("span", { class: "mono", "data-testid": "key-hint" }, k.hint || t("status.none")),
    keyState(k, until),
    k.key_error ? el("span", { class: "chip bad", "data-testid": "key-error" }, t("keys.unreadable")) : null,
    until
      ? el(
          "span",
          { class: "chip warn", "data-testid": "key-cooling" },
          t("keys.coolingUntil", { time: clockTime(until) }),
          " · ",
          el("span", { "data-until": until }, timeLeft(until)),
        )
      : null,
    el(
      "span",
      { class: "actions" },
      smallButton(
        "key-toggle",
        k.enabled ? "keys.disable" : "keys.enable",
        guarded(section, () => toggleKey(p, k)),
      ),
      smallButton(
        "key-delete",
        "provider.delete",
        guarded(section, () => deleteKey(p, k)),
        "danger",
      ),
    ),
  );
}

// Disabled, cooling down (never "in use" while it rests) or in use.
function keyState(k, until) {
  const [cls, key] = !k.enabled
    ? ["chip off", "keys.disabled"]
    : until
      ? ["chip warn", "keys.cooling"]
      : ["chip ok", "keys.inUse"];
  return el("span", { class: cls, "data-testid": "key-state" }, t(key));
}

function keyForm(p) {
  const draft = state.keyDraft;
  const id = `key-add-${p.id}`;
  const count = el("p", { class: "muted", "data-testid": "key-add-count" }, keyCountText(draft.text));
  return el(
    "form",
    {
      class: "editor stack",
      autocomplete: "off",
      onsubmit: guarded(`keys-${p.id}`, () => addKeys(p), { api_key: id, api_keys: id }),
    },
    el(
      "div",
      { class: "field" },
      el("label", { for: id }, t("keys.input")),
      el("textarea", {
        id,
        class: "mono secret",
        rows: "3",
        autocomplete: "off",
        spellcheck: "false",
        value: draft.text,
        placeholder: t("form.keysPlaceholder"),
        "data-testid": "key-add-input",
        oninput: (e) => {
          draft.text = e.target.value;
          count.textContent = keyCountText(draft.text);
        },
      }),
      count,
    ),
    el(
      "div",
      { class: "inline" },
      el("button", { type: "submit", class: "primary", "data-testid": "key-add-submit" }, t("keys.submit")),
      el("button", { type: "button", "data-testid": "key-add-cancel", onclick: closeKeyForm }, t("edit.cancel")),
    ),
  );
}

// The keys in a field: one per line, blank lines and repeats dropped.
function keyLines(text) {
  return [
    ...new Set(
      String(text)
        .split("\n")
        .map((k) => k.trim())
        .filter(Boolean),
    ),
  ];
}

function requiredKeys(text, fieldId) {
  const keys = keyLines(text);
  if (!keys.length) throw invalid(fieldId, t("form.needKey"));
  return keys;
}

function keyCountText(text) {
  const n = keyLines(text).length;
  return n ? t("form.keysCount", { n }) : t("form.keysHelp");
}

// The count line under a create form's key field ("preset" or "custom").
function renderKeyCount(form) {
  byId(`${form}-key-count`).textContent = keyCountText(byId(`${form}-key`).value);
}

function openKeyForm(p) {
  state.keyDraft = { id: p.id, text: "" };
  note(`keys-${p.id}`, "", "");
  renderProviders();
  const input = byId(`key-add-${p.id}`);
  if (input) input.focus();
}

function closeKeyForm() {
  state.keyDraft = null;
  renderProviders();
}

// One POST per key, in order; at the first refusal the keys not yet added stay in the field and
// the server's message is shown.
async function addKeys(p) {
  const keys = requiredKeys(state.keyDraft.text, `key-add-${p.id}`);
  let added = 0;
  try {
    for (const key of keys) {
      await api("POST", `/providers/${p.id}/keys`, { api_key: key });
      added += 1;
    }
  } catch (err) {
    state.keyDraft.text = keys.slice(added).join("\n");
    if (added) await reloadProviders().catch(() => {});
    throw new Error(added ? t("keys.addStopped", { n: added, total: keys.length, message: err.message }) : err.message);
  }
  state.keyDraft = null;
  await reloadProviders();
  note(`keys-${p.id}`, "ok", t("keys.added", { n: added }));
}

async function toggleKey(p, k) {
  await api("PUT", `/providers/${p.id}/keys/${k.id}`, { enabled: !k.enabled });
  await reloadProviders();
  note(`keys-${p.id}`, "ok", t(k.enabled ? "keys.disabledNote" : "keys.enabledNote", { id: k.id }));
}

// The server refuses the last key (409) with a message of its own, shown as it is.
async function deleteKey(p, k) {
  const hint = k.hint || t("status.none");
  if (!confirm(t("keys.confirmDelete", { id: k.id, hint, name: p.name }))) return;
  await api("DELETE", `/providers/${p.id}/keys/${k.id}`);
  await reloadProviders();
  note(`keys-${p.id}`, "ok", t("keys.deleted", { id: k.id }));
}

function draftInput(draft, key, attrs) {
  return el(
    "input",
    Object.assign(
      {
        value: draft[key],
        oninput: (e) => {
          draft[key] = e.target.value;
        },
      },
      attrs,
    ),
  );
}

function field(labelKey, id, control) {
  return el("div", { class: "field" }, el("label", { for: id }, t(labelKey)), control);
}

function editor(p) {
  const d = state.editing;
  const id = (name) => `edit-${name}-${p.id}`;
  const fields = {
    name: id("name"),
    platform: id("platform"),
    base_url: id("base-url"),
    api_key: id("key"),
    models: id("models"),
    priority: id("priority"),
    timeout_ms: id("timeout"),
  };
  return el(
    "form",
    { class: "editor stack", autocomplete: "off", onsubmit: guarded("providers", () => saveEdit(p), fields) },
    el(
      "div",
      { class: "row2" },
      field("form.name", id("name"), draftInput(d, "name", { id: id("name"), "data-testid": "edit-name" })),
      field(
        "form.platform",
        id("platform"),
        draftInput(d, "platform", { id: id("platform"), "data-testid": "edit-platform" }),
      ),
    ),
    field(
      "form.baseUrl",
      id("base-url"),
      draftInput(d, "base_url", {
        id: id("base-url"),
        class: "mono",
        "data-testid": "edit-base-url",
        spellcheck: "false",
      }),
    ),
    field(
      "form.key",
      id("key"),
      draftInput(d, "api_key", {
        id: id("key"),
        type: "password",
        class: "mono",
        autocomplete: "new-password",
        placeholder: t("edit.keyPlaceholder"),
        "data-testid": "edit-key",
      }),
    ),
    field(
      "form.models",
      id("models"),
      el("textarea", {
        id: id("models"),
        value: d.models,
        spellcheck: "false",
        "data-testid": "edit-models",
        oninput: (e) => {
          d.models = e.target.value;
        },
      }),
    ),
    el(
      "div",
      { class: "row2" },
      field(
        "form.priority",
        id("priority"),
        draftInput(d, "priority", { id: id("priority"), type: "number", step: "1", "data-testid": "edit-priority" }),
      ),
      field(
        "form.timeout",
        id("timeout"),
        draftInput(d, "timeout", {
          id: id("timeout"),
          type: "number",
          min: "0",
          step: "any",
          placeholder: t("form.timeoutPlaceholder"),
          "data-testid": "edit-timeout",
        }),
      ),
    ),
    el(
      "label",
      { class: "check" },
      el("input", {
        type: "checkbox",
        checked: d.enabled,
        "data-testid": "edit-enabled",
        onchange: (e) => {
          d.enabled = e.target.checked;
        },
      }),
      el("span", null, t("edit.enabled")),
    ),
    el(
      "div",
      { class: "inline" },
      el("button", { type: "submit", class: "primary", "data-testid": "edit-save" }, t("edit.save")),
      el("button", { type: "button", "data-testid": "edit-cancel", onclick: cancelEdit }, t("edit.cancel")),
    ),
  );
}

function renderPresetForm() {
  const select = byId("preset-platform");
  select.replaceChildren(
    el("option", { value: "" }, t("preset.choose")),
    ...state.platforms.map((p) => el("option", { value: p.id }, p.name)),
  );
  select.value = state.preset.id;
  const preset = currentPreset();
  byId("preset-account-field").hidden = !preset?.base_url.includes(ACCOUNT_PLACEHOLDER);
  byId("preset-fetch-models").disabled = !preset?.models_url;
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
  box.append(...modelChecklist(presetModels(), state.preset.selected, state.preset.search, tickModel, "preset-model"));
}

// A model list as checkboxes, those matching ``search`` (any case) only; Quick add's and Custom add's.
function modelChecklist(models, selected, search, onTick, testId) {
  const query = search.trim().toLowerCase();
  const shown = models.filter((m) => m.toLowerCase().includes(query));
  if (!shown.length) return [el("p", { class: "muted" }, t("preset.noMatch"))];
  return shown.map((model) =>
    el(
      "label",
      { class: "check", "data-testid": testId },
      el("input", {
        type: "checkbox",
        value: model,
        checked: selected.includes(model),
        onchange: (e) => onTick(model, e.target.checked),
      }),
      el("span", { class: "mono" }, model),
    ),
  );
}

function renderPresetCount() {
  const total = presetModels().length;
  byId("preset-model-count").textContent = currentPreset()
    ? t("preset.modelCount", { selected: state.preset.selected.length, total })
    : "";
}

function renderTokens() {
  const box = byId("tokens");
  box.replaceChildren();
  for (const [key, hint] of [
    ["tokens.apiHint", state.tokenHints.api],
    ["tokens.adminHint", state.tokenHints.admin],
  ]) {
    if (hint) box.append(el("div", null, el("span", { class: "k" }, t(key)), el("span", { class: "mono" }, hint)));
  }
}

// The settings by group (SETTING_GROUPS), each a row: label, field (in its unit), unit, source,
// "use default"; the help under it.
function renderSettings() {
  const box = byId("settings");
  box.replaceChildren();
  const keys = Object.keys(state.settings).filter((key) => key !== ALIASES_KEY); // the table: renderAliases
  const grouped = SETTING_GROUPS.map(([id, members]) => [id, members.filter((key) => keys.includes(key))]);
  const known = new Set(SETTING_GROUPS.flatMap(([, members]) => members));
  grouped[0][1].push(...keys.filter((key) => !known.has(key)));
  for (const [id, members] of grouped) {
    if (!members.length) continue;
    box.append(
      el(
        "div",
        { class: "setting-group", "data-testid": "setting-group", "data-group": id },
        el("h3", null, t(`settings.group.${id}`)),
        members.map(settingRow),
      ),
    );
  }
  renderAliases();
}

// A setting's value as its field shows it: in the page's unit (up to 3 decimals), else as stored.
function shownSetting(key, value) {
  const unit = SETTING_UNITS[key];
  return unit ? String(Number((value / FACTORS[unit]).toFixed(3))) : String(value);
}

function settingRow(key) {
  const setting = state.settings[key];
  const id = `setting-${key}`;
  const unit = SETTING_UNITS[key];
  const draft = key in state.settingDrafts ? state.settingDrafts[key] : shownSetting(key, setting.value);
  const oninput = (e) => {
    state.settingDrafts[key] = e.target.value;
  };
  const input = ORIGIN_KEYS.includes(key)
    ? {
        id,
        class: "mono",
        inputmode: "url",
        spellcheck: "false",
        autocomplete: "off",
        value: draft,
        "data-testid": id,
        oninput,
      }
    : { id, type: "number", min: "0", step: unit ? "any" : "1", value: draft, "data-testid": id, oninput };
  return el(
    "div",
    { class: "setting", "data-testid": "setting-row", "data-setting": key },
    el("label", { for: id }, t(`setting.${key}`)),
    el(
      "div",
      { class: "setting-controls" },
      el("input", input),
      unit ? el("span", { class: "unit", "data-testid": "setting-unit" }, t(`unit.${unit}`)) : null,
      el(
        "span",
        { class: setting.source === "d1" ? "chip ok" : "chip", "data-testid": "setting-source" },
        t(`settingSource.${setting.source}`),
      ),
      LIMIT_KEYS.includes(key) && setting.value === 0 ? el("span", { class: "muted" }, t("settings.off")) : null,
      key === "openrouter_pinning"
        ? el("span", { class: "muted" }, t(setting.value ? "settings.on" : "settings.off"))
        : null,
      setting.source === "d1" && !LIMIT_KEYS.includes(key)
        ? smallButton(
            "setting-reset",
            "settings.reset",
            guarded("settings", () => putSettings({ [key]: null })),
            "ghost",
          )
        : null,
    ),
    el("p", { class: "muted" }, t(`settingHelp.${key}`)),
  );
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
  return typeof entry === "string" ? entry : `${entry.id} ${entry.kind}`;
}

function modelChip(p, id) {
  const kind = p.kinds[id] || "chat";
  return el(
    "span",
    { class: "chip mono", "data-testid": "model-chip", "data-kind": kind },
    kind === "chat" ? id : `${id} · ${t(`kind.${kind}`)}`,
  );
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
  const list = el(
    "div",
    { class: "stack" },
    rows.map((row, index) => aliasRow(row, index)),
  );
  if (!rows.length) list.append(el("p", { class: "muted", "data-testid": "alias-empty" }, t("aliases.empty")));
  box.append(
    el(
      "div",
      { class: "between" },
      el("h3", null, t(`setting.${ALIASES_KEY}`)),
      el(
        "span",
        { class: "setting-controls" },
        el(
          "span",
          { class: setting.source === "d1" ? "chip ok" : "chip", "data-testid": "alias-source" },
          t(`settingSource.${setting.source}`),
        ),
        setting.source === "d1"
          ? smallButton(
              "alias-reset",
              "settings.reset",
              guarded("settings", () => putSettings({ [ALIASES_KEY]: null })),
              "ghost",
            )
          : null,
      ),
    ),
    el("p", { class: "muted" }, t(`settingHelp.${ALIASES_KEY}`)),
    list,
    el(
      "div",
      { class: "setting-controls" },
      smallButton("alias-add", "aliases.add", () => editAliases((r) => r.concat([{ pattern: "", target: "" }]))),
      smallButton("alias-example", "aliases.example", () => editAliases(addClaudeExample)),
      smallButton("alias-save", "settings.save", guarded("settings", saveSettings), "primary"),
    ),
    el(
      "datalist",
      { id: "alias-models" },
      ["auto", ...modelCatalog()].map((m) => el("option", { value: m })),
    ),
  );
}

function aliasRow(row, index) {
  const input = (key, testId, labelKey, placeholderKey, extra) =>
    el(
      "input",
      Object.assign(
        {
          value: row[key],
          class: "mono",
          spellcheck: "false",
          "data-testid": testId,
          "aria-label": `${t(labelKey)} ${index + 1}`,
          placeholder: t(placeholderKey),
          oninput: (e) => {
            row[key] = e.target.value;
          },
        },
        extra,
      ),
    );
  return el(
    "div",
    { class: "alias-row", "data-testid": "alias-row" },
    input("pattern", "alias-pattern", "aliases.pattern", "aliases.patternPlaceholder", { class: "mono pattern" }),
    el("span", { class: "arrow", "aria-hidden": "true" }, "→"),
    input("target", "alias-target", "aliases.target", "aliases.targetPlaceholder", { list: "alias-models" }),
    smallButton(
      "alias-remove",
      "aliases.remove",
      () => editAliases((rows) => rows.filter((_, i) => i !== index)),
      "ghost",
    ),
  );
}

function editAliases(change) {
  state.aliasDraft = change(aliasRows().slice());
  renderAliases();
}

function addClaudeExample(rows) {
  const small = modelCatalog("chat")[0] || "auto";
  const taken = new Set(rows.map((r) => r.pattern.trim().toLowerCase()));
  const added = CLAUDE_EXAMPLE.filter(([pattern]) => !taken.has(pattern)).map(([pattern, target]) => ({
    pattern,
    target: target || small,
  }));
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
    const row = { model, label: `${model} (fllmapi-worker)`, behavesAs: CLAUDE_BEHAVES_AS };
    const compact =
      contextWindow >= CLAUDE_MIN_COMPACT && contextWindow < CLAUDE_KNOWN_WINDOW
        ? [`export CLAUDE_CODE_AUTO_COMPACT_WINDOW="${contextWindow}"`]
        : [];
    return [
      json("connect.claudeFile", { modelPicker: { options: [row] } }),
      shell([
        `export ANTHROPIC_BASE_URL="${origin}"`,
        `export ANTHROPIC_AUTH_TOKEN="${token}"`,
        `export ANTHROPIC_MODEL="${model}"`,
        `export ANTHROPIC_DEFAULT_HAIKU_MODEL="${model}"`,
        ...compact,
        "claude",
      ]),
      headless([`claude -p "${task}"`]),
    ];
  }
  if (client === "codex") {
    return [
      {
        label: "connect.codexFile",
        text: [
          `model = "${model}"`,
          'model_provider = "fllmapi"',
          `model_context_window = ${contextWindow}`,
          "",
          "[model_providers.fllmapi]",
          'name = "fllmapi-worker"',
          `base_url = "${origin}/v1"`,
          'env_key = "FLLMAPI_API_KEY"',
          'wire_api = "responses"',
        ].join("\n"),
      },
      shell([`export FLLMAPI_API_KEY="${token}"`, "codex"]),
      headless([`codex exec --skip-git-repo-check "${task}"`]),
    ];
  }
  if (client === "gemini") {
    const named = model === "auto" ? t("connect.modelPlaceholder") : model;
    return [
      json("connect.geminiFile", { security: { auth: { selectedType: "gemini-api-key" } } }),
      shell([`export GOOGLE_GEMINI_BASE_URL="${origin}"`, `export GEMINI_API_KEY="${token}"`, `gemini -m "${named}"`]),
      headless(["export GEMINI_CLI_TRUST_WORKSPACE=true", `gemini -m "${named}" -p "${task}"`]),
    ];
  }
  if (client === "openai") {
    return [
      {
        label: "connect.python",
        text: [
          "from openai import OpenAI",
          "",
          `client = OpenAI(base_url="${origin}/v1", api_key="${token}")`,
          'answer = client.chat.completions.create(model="' +
            model +
            '", messages=[{"role": "user", "content": "Hello"}])',
          "print(answer.choices[0].message.content)",
        ].join("\n"),
      },
    ];
  }
  return [
    { label: "apps.cherry", text: `${t("apps.address")}: ${origin}\n${t("apps.key")}: ${token}` },
    { label: "apps.openwebui", text: `${t("apps.url")}: ${origin}/v1\n${t("apps.key")}: ${token}` },
    {
      label: "apps.ollama",
      text: `${t("apps.host")}: ${origin}\n${t("apps.header")}: Authorization: Bearer ${token}`,
    },
  ];
}

function renderConnect() {
  const tabs = byId("connect-tabs");
  tabs.replaceChildren(
    ...CLIENTS.map((id) =>
      el(
        "button",
        {
          type: "button",
          role: "tab",
          "aria-selected": String(id === state.connect.client),
          "data-testid": "connect-tab",
          "data-client": id,
          onclick: () => {
            state.connect.client = id;
            note("connect", "", "");
            renderConnect();
          },
        },
        t(`client.${id}`),
      ),
    ),
  );
  const model = connectModel();
  const select = byId("connect-model");
  select.replaceChildren(
    el("option", { value: "auto" }, t("connect.auto")),
    ...modelCatalog("chat").map((m) => el("option", { value: m }, m)),
  );
  select.value = model;
  const client = state.connect.client;
  byId("connect-window-field").hidden = client !== "claude" && client !== "codex";
  byId("connect-window").value = String(state.connect.window);
  const box = byId("connect");
  box.replaceChildren(el("p", { class: "muted", "data-testid": "connect-help" }, t(`clientHelp.${client}`)));
  for (const snippet of clientSnippets(client, location.origin, model, state.connect.window)) {
    box.append(
      el(
        "div",
        { class: "snippet", "data-testid": "connect-snippet", "data-client": client, "data-label": snippet.label },
        el(
          "div",
          { class: "between" },
          el("span", { class: "label mono" }, t(snippet.label)),
          smallButton(
            "connect-copy",
            "connect.copy",
            guarded("connect", () => copyText(snippet.text)),
          ),
        ),
        el("pre", { class: "code mono", "data-testid": "connect-code" }, snippet.text),
      ),
    );
  }
}

async function copyText(text, section = "connect", doneKey = "connect.copied") {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
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
  const models = text
    .split(/[\n,]/)
    .map((m) => m.trim())
    .filter(Boolean);
  return models.length ? models : null;
}

// An rpm field: "" -> null (no limit); otherwise a whole number >= 1, else throws.
function parseRpm(text, fieldId) {
  const value = text.trim();
  if (!value) return null;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw invalid(fieldId, t("clients.rpmInvalid"));
  return Number(value);
}

function renderClients() {
  const fallback = byId("default-client");
  const defaultClient = state.defaultClient;
  fallback.textContent = defaultClient ? t(defaultClient.enabled ? "clients.defaultOn" : "clients.defaultOff") : "";
  fallback.setAttribute("class", defaultClient && !defaultClient.enabled ? "note warn-text" : "note muted");
  const tokenBox = byId("client-token-box");
  tokenBox.replaceChildren();
  if (state.newToken) {
    const { name, token } = state.newToken;
    tokenBox.append(
      el(
        "div",
        { class: "stack", "data-testid": "client-token-once" },
        el("span", { class: "strong" }, t("clients.token", { name })),
        el("pre", { class: "code mono", "data-testid": "client-token" }, token),
        el(
          "span",
          { class: "actions" },
          smallButton(
            "client-token-copy",
            "clients.copy",
            guarded("clients", () => copyText(token, "clients", "clients.copied")),
          ),
          smallButton(
            "client-token-dismiss",
            "clients.dismiss",
            () => {
              state.newToken = null;
              note("clients", "", "");
              renderClients();
            },
            "ghost",
          ),
        ),
      ),
    );
  }
  const box = byId("clients");
  box.replaceChildren();
  if (!state.clients.length) box.append(el("p", { class: "muted" }, t("clients.empty")));
  for (const client of state.clients) box.append(clientRow(client));
}

function clientRow(c) {
  const editing = state.clientEdit && state.clientEdit.id === c.id;
  const row = el(
    "article",
    { class: c.enabled ? "provider" : "provider off", "data-testid": "client-row", "data-client": c.name },
    el(
      "div",
      { class: "provider-head" },
      el("span", { class: "strong", "data-testid": "client-row-name" }, c.name),
      el("span", { class: "chip mono", "data-testid": "client-hint" }, c.token_hint),
      el(
        "span",
        { class: c.enabled ? "chip ok" : "chip off", "data-testid": "client-state" },
        t(c.enabled ? "clients.enabled" : "clients.disabled"),
      ),
      el(
        "span",
        { class: "actions" },
        smallButton("client-edit", "clients.edit", () => {
          state.clientEdit = {
            id: c.id,
            rpm: c.rpm === null ? "" : String(c.rpm),
            models: (c.models || []).join("\n"),
          };
          renderClients();
        }),
        smallButton(
          "client-toggle",
          c.enabled ? "clients.disable" : "clients.enable",
          guarded("clients", () => updateClient(c, { enabled: !c.enabled })),
        ),
        smallButton(
          "client-revoke",
          "clients.revoke",
          guarded("clients", () => revokeClient(c)),
          "danger",
        ),
      ),
    ),
    el(
      "div",
      { class: "provider-line" },
      el(
        "span",
        { class: "muted", "data-testid": "client-rpm-value" },
        c.rpm === null ? t("clients.noRpm") : t("clients.rpmValue", { n: c.rpm }),
      ),
      el(
        "span",
        { class: "models", "data-testid": "client-models-value" },
        c.models === null
          ? el("span", { class: "chip" }, t("clients.allModels"))
          : c.models.map((m) => el("span", { class: "chip mono" }, m)),
      ),
    ),
  );
  if (editing) row.append(clientEditor(c));
  return row;
}

function clientEditor(c) {
  const draft = state.clientEdit;
  return el(
    "div",
    { class: "stack", "data-testid": "client-editor" },
    el(
      "div",
      { class: "field" },
      el("label", { for: "client-edit-rpm" }, t("clients.rpm")),
      el("input", {
        id: "client-edit-rpm",
        "data-testid": "client-edit-rpm",
        type: "number",
        min: "1",
        step: "1",
        value: draft.rpm,
        placeholder: t("clients.rpmPlaceholder"),
        oninput: (e) => {
          draft.rpm = e.target.value;
        },
      }),
    ),
    el(
      "div",
      { class: "field" },
      el("label", { for: "client-edit-models" }, t("clients.models")),
      el("textarea", {
        id: "client-edit-models",
        "data-testid": "client-edit-models",
        spellcheck: "false",
        value: draft.models,
        oninput: (e) => {
          draft.models = e.target.value;
        },
      }),
    ),
    el(
      "span",
      { class: "actions" },
      smallButton(
        "client-edit-save",
        "clients.save",
        guarded(
          "clients",
          () =>
            updateClient(c, {
              rpm: parseRpm(draft.rpm, "client-edit-rpm"),
              models: parseModels(draft.models),
            }),
          { rpm: "client-edit-rpm", models: "client-edit-models" },
        ),
        "primary",
      ),
      smallButton(
        "client-edit-cancel",
        "clients.cancel",
        () => {
          state.clientEdit = null;
          renderClients();
        },
        "ghost",
      ),
    ),
  );
}

async function submitClient() {
  const name = byId("client-name").value.trim();
  if (!name) throw invalid("client-name", t("clients.nameEmpty"));
  const body = { name };
  const rpm = parseRpm(byId("client-rpm").value, "client-rpm");
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
  const saved = (await api("PUT", `/clients/${c.id}`, body)).client;
  state.clientEdit = null;
  await loadClients();
  renderClients();
  note("clients", "ok", t("clients.saved", { name: saved.name }));
}

async function revokeClient(c) {
  if (!confirm(t("clients.confirmRevoke", { name: c.name, hint: c.token_hint }))) return;
  await api("DELETE", `/clients/${c.id}`);
  if (state.clientEdit && state.clientEdit.id === c.id) state.clientEdit = null;
  await loadClients();
  renderClients();
  note("clients", "ok", t("clients.revoked", { name: c.name }));
}

// --- OpenRouter pinning (SPEC §15): per model the pin and the ranked candidates ---------------

async function reloadOpenRouter() {
  await loadOpenRouter();
  renderOpenRouter();
  renderSavings(); // the Usage panel shows the pins' estimates
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
  head.append(
    el(
      "span",
      { class: data.pinning ? "chip ok" : "chip off", "data-testid": "openrouter-state" },
      t(data.pinning ? "openrouter.on" : "openrouter.off"),
    ),
  );
  box.append(
    el(
      "div",
      { class: "meta", "data-testid": "openrouter-meta" },
      metaItem("openrouter.origin", el("span", { class: "mono" }, data.origin)),
      metaItem("openrouter.idle", duration(data.lock_idle_ms)),
    ),
  );
  if (!data.pinning) box.append(el("p", { class: "note", "data-testid": "openrouter-off" }, t("openrouter.offNote")));
  if (!data.models.length)
    box.append(el("p", { class: "muted", "data-testid": "openrouter-empty" }, t("openrouter.empty")));
  for (const pin of data.models) box.append(pinRow(pin));
}

function pinRow(pin) {
  const lock = pin.lock;
  return el(
    "article",
    { class: "provider", "data-testid": "openrouter-model", "data-model": pin.model },
    el(
      "div",
      { class: "provider-head" },
      el("span", { class: "strong mono", "data-testid": "openrouter-model-id" }, pin.model),
      lock
        ? el(
            "span",
            { class: "chip ok", "data-testid": "openrouter-lock" },
            t("openrouter.lockedTo", { slug: lock.slug }),
            " · ",
            t("openrouter.until", { time: clockTime(lock.until) }),
          )
        : el("span", { class: "chip off", "data-testid": "openrouter-lock" }, t("openrouter.notPinned")),
    ),
    el(
      "div",
      { class: "meta", "data-testid": "openrouter-counts" },
      metaItem("openrouter.failures", String(pin.failures)),
      metaItem("openrouter.switches", String(pin.switches)),
      metaItem("openrouter.refreshed", pin.refreshed_at ? clockTime(pin.refreshed_at) : t("openrouter.never")),
    ),
    pin.candidates.length
      ? candidateTable(pin)
      : el("p", { class: "muted", "data-testid": "openrouter-no-candidates" }, t("openrouter.noCandidates")),
  );
}

// The candidates best first (as the server ranks them); the pinned one highlighted.
function candidateTable(pin) {
  const locked = pin.lock ? pin.lock.slug : null;
  const columns = [
    ["openrouter.col.rank", "num"],
    ["openrouter.col.slug", null],
    ["openrouter.col.score", "num"],
    ["openrouter.col.prompt", "num"],
    ["openrouter.col.completion", "num"],
    ["openrouter.col.cacheRead", "num"],
    ["openrouter.col.caching", null],
    ["openrouter.col.throughput", "num"],
    ["openrouter.col.state", null],
  ];
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      { class: "ranked", "data-testid": "openrouter-candidates" },
      el(
        "thead",
        null,
        el(
          "tr",
          null,
          columns.map(([key, cls]) => el("th", { class: cls, scope: "col" }, t(key))),
        ),
      ),
      el(
        "tbody",
        null,
        pin.candidates.map((c, index) => candidateRow(c, index, c.slug === locked)),
      ),
    ),
  );
}

function candidateRow(c, index, locked) {
  const num = (text) => el("td", { class: "num" }, text);
  const throughput =
    c.throughput === null || c.throughput === undefined
      ? t("status.none")
      : t("openrouter.tps", { n: significant(c.throughput) });
  return el(
    "tr",
    { class: locked ? "locked" : null, "data-testid": "openrouter-candidate", "data-slug": c.slug },
    num(String(index + 1)),
    el("td", { class: "mono" }, c.slug),
    num(significant(c.score)),
    num(pricePerMillion(c.prompt)),
    num(pricePerMillion(c.completion)),
    num(pricePerMillion(c.input_cache_read)),
    el("td", null, t(c.caching ? "openrouter.yes" : "openrouter.no")),
    num(throughput),
    el(
      "td",
      null,
      locked ? el("span", { class: "chip ok", "data-testid": "openrouter-pinned" }, t("openrouter.pinned")) : null,
      c.cooled_until
        ? el(
            "span",
            { class: "chip warn", "data-testid": "openrouter-cooling" },
            t("openrouter.coolingUntil", { time: clockTime(c.cooled_until) }),
          )
        : null,
    ),
  );
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
  return `$${Number(n).toLocaleString(locale(), digits)}`;
}

// The server's id-0 groups, in this page's words: the default API token among clients, "nothing
// served" among providers (every provider failed).
function groupLabel(by, id, name) {
  if (id !== 0) return name;
  return t(by === "client" ? "usage.apiToken" : "usage.noProvider");
}

// A failure class (SPEC §5.1) in this page's words; a class this page does not know, as sent.
function classLabel(cls) {
  return Object.hasOwn(I18N[state.lang], `usage.class.${cls}`) ? t(`usage.class.${cls}`) : cls;
}

// The start of a bar of the time chart: a local hour, or a UTC day.
function slotTime(ms, slotMs) {
  const options =
    slotMs === DAY_MS
      ? { month: "short", day: "numeric", timeZone: "UTC" }
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
  box.setAttribute("data-shown", usage.shown); // the range of the counts on show
  const data = usage.provider;
  if (!data) return; // not loaded: the panel's note says why
  if (!data.groups.length) {
    box.append(el("p", { class: "muted", "data-testid": "usage-empty" }, t("usage.empty")));
  } else {
    box.append(
      usageTotals(data.totals),
      timeChart(data),
      el("div", { class: "grid2" }, tokensChart(usage.client), latencyChart(data)),
      providerTable(data),
    );
  }
  box.append(failureList(usage.events));
}

function usageTotals(totals) {
  return el(
    "div",
    { class: "meta usage-totals", "data-testid": "usage-totals" },
    USAGE_COUNTS.map((name) =>
      el(
        "span",
        { "data-testid": "usage-total", "data-stat": name },
        el("span", { class: "k" }, t(`usage.col.${name}`)),
        el("span", { class: "strong" }, count(name === "errors" ? totals.error_count : totals[name])),
      ),
    ),
  );
}

function chart(testId, title, legend, ...body) {
  return el(
    "figure",
    { class: "chart", "data-testid": testId },
    el("figcaption", null, el("h3", null, title), legend),
    ...body,
  );
}

// A legend entry: the colour of its bars, its name and (for a series with a total) the total.
function legendItem(series, label, total) {
  return el(
    "li",
    { "data-series": series },
    el("span", { class: `swatch s-${series}`, "aria-hidden": "true" }),
    label,
    total === undefined
      ? null
      : el("span", { class: "strong", "data-testid": "usage-legend-total" }, ` ${count(total)}`),
  );
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
  return svgEl("rect", { class: `s-${series}`, x, y: 100 - height, width: 4.5, height, "data-value": value });
}

function timeChart(data) {
  const slotMs = USAGE_RANGES[state.usage.shown].slotMs;
  const slots = timeSlots(data, slotMs);
  const top = Math.max(1, ...slots.map((s) => Math.max(s.requests, s.errors)));
  const title = t("usage.timeChart");
  const svg = svgEl(
    "svg",
    {
      viewBox: `0 0 ${slots.length * 10} 100`,
      preserveAspectRatio: "none",
      role: "img",
      "aria-label": title,
    },
    slots.map((s, i) =>
      svgEl(
        "g",
        {
          "data-testid": "usage-slot",
          "data-time": s.at,
          "data-requests": s.requests,
          "data-errors": s.errors,
        },
        svgEl(
          "title",
          null,
          t("usage.slotTitle", { time: slotTime(s.at, slotMs), requests: count(s.requests), errors: count(s.errors) }),
        ),
        columnBar(i * 10 + 0.5, s.requests, top, "req"),
        columnBar(i * 10 + 5, s.errors, top, "err"),
      ),
    ),
  );
  const middle = slots[Math.floor(slots.length / 2)];
  return chart(
    "usage-chart-time",
    title,
    el(
      "ul",
      { class: "legend" },
      legendItem("req", t("usage.col.requests"), data.totals.requests),
      legendItem("err", t("usage.col.errors"), data.totals.error_count),
      el("li", { class: "muted" }, t(slotMs === DAY_MS ? "usage.perDay" : "usage.perHour")),
    ),
    el(
      "div",
      { class: "plot" },
      el(
        "div",
        { class: "y-axis", "aria-hidden": "true" },
        el("span", { "data-testid": "usage-y-top" }, count(top)),
        el("span", null, "0"),
      ),
      svg,
      el(
        "div",
        { class: "x-axis", "aria-hidden": "true" },
        [slots[0], middle, slots[slots.length - 1]].map((s) => el("span", null, slotTime(s.at, slotMs))),
      ),
    ),
  );
}

// A horizontal bar (0..top) and its number as text; wraps under the bar when the row is narrow.
function hbar(series, value, top, text, testId) {
  const width = value ? Math.max(0.5, (value / top) * 100) : 0;
  return el(
    "div",
    { class: "hbar" },
    svgEl(
      "svg",
      { viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
      svgEl("rect", { class: "track", width: 100, height: 10 }),
      svgEl("rect", { class: `s-${series}`, width, height: 10, "data-value": value }),
    ),
    el("span", { class: "hbar-value", "data-testid": testId, "data-value": value }, text),
  );
}

function tokenText(n, estimated, key) {
  return estimated ? t(`${key}Est`, { n: count(n), e: count(estimated) }) : t(key, { n: count(n) });
}

// Input and output tokens of each client: as reported plus as estimated (SPEC §17 counts them apart).
function tokensChart(data) {
  const groups = (data ? data.groups : [])
    .map((g) => ({
      g,
      input: g.tokens.input + g.tokens.estimated_input,
      output: g.tokens.output + g.tokens.estimated_output,
    }))
    .filter((c) => c.input || c.output);
  const top = Math.max(1, ...groups.map((c) => Math.max(c.input, c.output)));
  const rows = groups.map(({ g, input, output }) =>
    el(
      "div",
      {
        class: "hbar-group",
        "data-testid": "usage-client",
        "data-group": g.group,
        "data-id": g.id,
      },
      el("span", { class: "strong" }, groupLabel("client", g.id, g.group)),
      hbar("in", input, top, tokenText(input, g.tokens.estimated_input, "usage.tokensIn"), "usage-tokens-in"),
      hbar("out", output, top, tokenText(output, g.tokens.estimated_output, "usage.tokensOut"), "usage-tokens-out"),
    ),
  );
  return chart(
    "usage-chart-tokens",
    t("usage.tokensChart"),
    el("ul", { class: "legend" }, legendItem("in", t("usage.input")), legendItem("out", t("usage.output"))),
    el("p", { class: "muted" }, t("usage.tokensHelp")),
    rows.length ? el("div", { class: "hbars" }, rows) : el("p", { class: "muted" }, t("usage.noTokens")),
  );
}

function ms(value) {
  return value === null || value === undefined ? t("status.none") : t("usage.ms", { n: count(Math.round(value)) });
}

// p95 as a light bar with p50 over it, and both as text.
function latencyBar(q, top, key, testId) {
  const width = (v) => (v ? Math.max(0.5, (v / top) * 100) : 0);
  return el(
    "div",
    { class: "hbar" },
    svgEl(
      "svg",
      { viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
      svgEl("rect", { class: "track", width: 100, height: 10 }),
      svgEl("rect", { class: "s-p95", width: width(q.p95), height: 10, "data-value": q.p95 }),
      svgEl("rect", { class: "s-p50", width: width(q.p50), height: 10, "data-value": q.p50 }),
    ),
    el(
      "span",
      { class: "hbar-value", "data-testid": testId, "data-p50": q.p50, "data-p95": q.p95 },
      t(key, { p50: ms(q.p50), p95: ms(q.p95) }),
    ),
  );
}

// Latency to the first byte and to the end per provider (the server's p50 and p95, null without a sample).
function latencyChart(data) {
  const measured = data.groups.filter((g) => g.latency_ms.first_byte.p95 !== null || g.latency_ms.end.p95 !== null);
  const values = measured.flatMap((g) => [g.latency_ms.first_byte.p95, g.latency_ms.end.p95]);
  const top = Math.max(1, ...values.filter((v) => v !== null));
  const rows = measured.map((g) =>
    el(
      "div",
      {
        class: "hbar-group",
        "data-testid": "usage-latency",
        "data-group": g.group,
        "data-id": g.id,
      },
      el("span", { class: "strong" }, groupLabel("provider", g.id, g.group)),
      latencyBar(g.latency_ms.first_byte, top, "usage.firstByte", "usage-latency-first"),
      latencyBar(g.latency_ms.end, top, "usage.toEnd", "usage-latency-end"),
    ),
  );
  return chart(
    "usage-chart-latency",
    t("usage.latencyChart"),
    el("ul", { class: "legend" }, legendItem("p50", t("usage.p50")), legendItem("p95", t("usage.p95"))),
    rows.length ? el("div", { class: "hbars" }, rows) : el("p", { class: "muted" }, t("usage.noLatency")),
  );
}

// The errors of a group by class, most first: "rate limited 3", "timeout 1".
function errorClasses(errors) {
  const classes = Object.entries(errors || {})
    .filter(([, n]) => n)
    .sort((a, b) => b[1] - a[1]);
  if (!classes.length) return t("status.none");
  return el(
    "span",
    { class: "classes" },
    classes.map(([cls, n]) =>
      el(
        "span",
        { class: "chip warn", "data-class": cls, "data-value": n, title: cls },
        `${classLabel(cls)} ${count(n)}`,
      ),
    ),
  );
}

function providerTable(data) {
  const num = (name, value) => el("td", { class: "num", "data-stat": name }, count(value));
  const head = ["provider", "requests", "successes", "failovers", "errors", "classes", "streams_cut", "rescues"];
  return el(
    "div",
    { class: "stack" },
    el("h3", null, t("usage.table")),
    el(
      "div",
      { class: "table-wrap" },
      el(
        "table",
        { class: "ranked", "data-testid": "usage-providers" },
        el(
          "thead",
          null,
          el(
            "tr",
            null,
            head.map((name) =>
              el(
                "th",
                {
                  class: name === "provider" || name === "classes" ? null : "num",
                  scope: "col",
                },
                t(`usage.col.${name}`),
              ),
            ),
          ),
        ),
        el(
          "tbody",
          null,
          data.groups.map((g) =>
            el(
              "tr",
              {
                "data-testid": "usage-provider",
                "data-group": g.group,
                "data-id": g.id,
              },
              el("td", { class: "strong", "data-stat": "provider" }, groupLabel("provider", g.id, g.group)),
              num("requests", g.requests),
              num("successes", g.successes),
              num("failovers", g.failovers),
              num("errors", g.error_count),
              el("td", { "data-stat": "classes" }, errorClasses(g.errors)),
              num("streams_cut", g.streams_cut),
              num("rescues", g.rescues),
            ),
          ),
        ),
      ),
    ),
  );
}

function failureList(events) {
  const usage = state.usage;
  const shown = usage.showAll ? events : events.slice(0, FAILURES_SHOWN);
  const toggle =
    events.length > FAILURES_SHOWN
      ? el(
          "button",
          {
            type: "button",
            class: "small",
            "data-testid": "usage-failures-toggle",
            "aria-expanded": String(usage.showAll),
            onclick: () => {
              usage.showAll = !usage.showAll;
              renderUsage();
            },
          },
          usage.showAll ? t("usage.showFewer", { n: FAILURES_SHOWN }) : t("usage.showAll", { n: events.length }),
        )
      : null;
  return el(
    "div",
    { class: "stack", "data-testid": "usage-failures" },
    el("div", { class: "between" }, el("h3", null, t("usage.failures")), toggle),
    events.length
      ? el("ul", { class: "plain" }, shown.map(failureEntry))
      : el("p", { class: "muted", "data-testid": "usage-failures-empty" }, t("usage.noFailures")),
  );
}

function failureEntry(e) {
  return el(
    "li",
    { class: "entry", "data-testid": "usage-failure", "data-class": e.class, "data-time": e.time },
    el("span", { class: "mono", "data-testid": "usage-failure-time" }, clockTime(e.time)),
    el(
      "span",
      { class: "strong", "data-testid": "usage-failure-provider" },
      groupLabel("provider", e.provider_id, e.provider),
    ),
    e.key_id
      ? el("span", { class: "chip mono", "data-testid": "usage-failure-key" }, t("status.key", { id: e.key_id }))
      : null,
    el("span", { class: "chip mono", "data-testid": "usage-failure-model" }, e.model),
    el("span", { class: "chip warn", "data-testid": "usage-failure-class", title: e.class }, classLabel(e.class)),
    el(
      "span",
      { "data-testid": "usage-failure-status" },
      e.status === null ? t("status.none") : t("status.http", { status: e.status }),
    ),
    el(
      "span",
      null,
      el("span", { class: "k" }, t("usage.client")),
      el("span", { "data-testid": "usage-failure-client" }, groupLabel("client", e.client_id, e.client)),
    ),
    el("span", { class: "chip off" }, e.surface),
    e.message ? el("span", { class: "msg", "data-testid": "usage-failure-message" }, e.message) : null,
  );
}

// What each pinned OpenRouter model saves against its official provider (seed 003's estimate, from
// GET /openrouter): a line per model that has an estimate.
function renderSavings() {
  const box = byId("usage-savings");
  box.replaceChildren();
  const models = state.openrouter ? state.openrouter.models.filter((m) => m.estimate) : [];
  if (!models.length) return;
  box.append(
    el("h3", null, t("usage.savings")),
    el(
      "ul",
      { class: "plain" },
      models.map((m) =>
        el(
          "li",
          {
            class: "entry",
            "data-testid": "usage-savings",
            "data-model": m.model,
          },
          el("span", { class: "strong mono" }, m.model),
          el("span", { class: "msg" }, savingsText(m.estimate)),
        ),
      ),
    ),
  );
}

function savingsText(e) {
  const vars = {
    pinned: e.pinned,
    official: e.official,
    pinnedUsd: usd(e.pinned_usd),
    input: compact(e.input_tokens),
    output: compact(e.output_tokens),
    hit: Math.round(e.hit_rate * 100),
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
  renderAliases(); // the target suggestions and the connect panel's models follow the providers
  renderConnect();
}

function startEdit(p) {
  state.editing = {
    id: p.id,
    name: p.name,
    platform: p.platform,
    base_url: p.base_url,
    api_key: "",
    models: p.models.map(modelLine).join("\n"),
    priority: String(p.priority),
    timeout: p.timeout_ms === null ? "" : String(p.timeout_ms / 1000),
    enabled: p.enabled,
  };
  renderProviders();
}

function cancelEdit() {
  state.editing = null;
  renderProviders();
}

async function saveEdit(p) {
  const d = state.editing;
  const id = (name) => `edit-${name}-${p.id}`;
  const body = {
    name: required(d.name, "form.needName", id("name")),
    platform: d.platform.trim() || "custom",
    base_url: required(d.base_url, "form.needBaseUrl", id("base-url")),
    models: modelLines(d.models, id("models")),
    priority: integer(d.priority, 100, "form.priority", id("priority")),
    timeout_ms: timeoutMs(d.timeout, id("timeout")),
    enabled: d.enabled,
  };
  if (d.api_key.trim()) body.api_key = d.api_key.trim(); // empty keeps the stored key
  const saved = (await api("PUT", `/providers/${p.id}`, body)).provider;
  state.editing = null;
  await reloadProviders();
  note("providers", "ok", t("provider.saved", { name: saved.name }));
}

async function toggleProvider(p) {
  await api("PUT", `/providers/${p.id}`, { enabled: !p.enabled });
  await reloadProviders();
  note("providers", "ok", t(p.enabled ? "provider.disabledNote" : "provider.enabledNote", { name: p.name }));
}

async function deleteProvider(p) {
  if (!confirm(t("provider.confirmDelete", { name: p.name }))) return;
  await api("DELETE", `/providers/${p.id}`);
  if (state.editing && state.editing.id === p.id) state.editing = null;
  await reloadProviders();
  note("providers", "ok", t("provider.deleted", { name: p.name }));
}

// --- Form values ----------------------------------------------------------------------------

function required(value, messageKey, fieldId) {
  const text = String(value).trim();
  if (!text) throw invalid(fieldId, t(messageKey));
  return text;
}

// One model per line: its id, or its id and a kind after a space ("bge-m3 embedding").
function modelLines(text, fieldId) {
  const models = text
    .split("\n")
    .map((m) => m.trim())
    .filter(Boolean)
    .map((line) => {
      const [id, kind, ...rest] = line.split(/\s+/);
      return kind && !rest.length ? { id, kind: kind.toLowerCase() } : line;
    });
  if (!models.length) throw invalid(fieldId, t("form.needModels"));
  return models;
}

function integer(value, fallback, labelKey, fieldId) {
  const text = String(value).trim();
  if (text === "") return fallback;
  if (!/^-?\d+$/.test(text)) throw invalid(fieldId, t("form.notInteger", { field: t(labelKey) }));
  return Number(text);
}

// A timeout field holds seconds (the API takes ms); empty: the default.
function timeoutMs(value, fieldId) {
  const text = String(value).trim();
  if (text === "") return null;
  const seconds = Number(text);
  if (!(seconds > 0)) throw invalid(fieldId, t("form.badTimeout"));
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
  for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
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
  const baseUrl = required(byId("preset-base-url").value, "form.needBaseUrl", "preset-base-url");
  if (baseUrl.includes(ACCOUNT_PLACEHOLDER)) throw invalid("preset-account", t("preset.needAccount"));
  return baseUrl;
}

// The model list is fetched with the first key given.
async function fetchPresetModels() {
  if (!currentPreset()) throw invalid("preset-platform", t("preset.pickFirst"));
  const target = { base_url: presetEndpoint(), api_key: requiredKeys(byId("preset-key").value, "preset-key")[0] };
  const models = (await api("POST", "/models/fetch", target)).models;
  state.preset.fetched = models;
  renderPresetModels();
  note("preset", "ok", t("preset.fetched", { n: models.length }));
}

async function submitPreset() {
  const preset = currentPreset();
  if (!preset) throw invalid("preset-platform", t("preset.pickFirst"));
  const models = presetModels().filter((m) => state.preset.selected.includes(m));
  if (!models.length) throw invalid("preset-models", t("form.needModels"));
  const name = byId("preset-name").value.trim() || uniqueName(preset.id);
  const body = {
    name,
    platform: preset.id,
    base_url: presetEndpoint(),
    api_keys: requiredKeys(byId("preset-key").value, "preset-key"),
    models,
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
    name: required(byId("custom-name").value, "form.needName", "custom-name"),
    platform: byId("custom-platform").value.trim() || "custom",
    base_url: required(byId("custom-base-url").value, "form.needBaseUrl", "custom-base-url"),
    api_keys: requiredKeys(byId("custom-key").value, "custom-key"),
    models: modelLines(byId("custom-models").value, "custom-models"),
    priority: integer(byId("custom-priority").value, 100, "form.priority", "custom-priority"),
    timeout_ms: timeoutMs(byId("custom-timeout").value, "custom-timeout"),
  };
  await api("POST", "/providers", body);
  byId("custom-form").reset();
  state.custom = { fetched: [], search: "" };
  renderCustomModels();
  renderKeyCount("custom");
  await reloadProviders();
  note("custom", "ok", t("custom.added", { name: body.name }));
}

// The ids in Custom add's models field (a line's first word; a kind may follow it).
function customModelIds() {
  return byId("custom-models")
    .value.split("\n")
    .map((line) => line.trim().split(/\s+/)[0])
    .filter(Boolean);
}

// The fetched list (hidden until fetched), ticked as the models field holds them.
function renderCustomModels() {
  const box = byId("custom-models-list");
  const { fetched, search } = state.custom;
  box.hidden = !fetched.length;
  box.replaceChildren(
    ...(fetched.length ? modelChecklist(fetched, customModelIds(), search, tickCustomModel, "custom-model") : []),
  );
}

// Ticking adds the model's line to the field; unticking removes its line.
function tickCustomModel(model, on) {
  const area = byId("custom-models");
  const lines = area.value
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .filter((line) => line.split(/\s+/)[0] !== model);
  area.value = (on ? lines.concat([model]) : lines).join("\n");
  clearFieldError(area);
}

// As Quick add's: the platform's own list, with the first key given.
async function fetchCustomModels() {
  const target = {
    base_url: required(byId("custom-base-url").value, "form.needBaseUrl", "custom-base-url"),
    api_key: requiredKeys(byId("custom-key").value, "custom-key")[0],
  };
  state.custom.fetched = (await api("POST", "/models/fetch", target)).models;
  renderCustomModels();
  note("custom", "ok", t("preset.fetched", { n: state.custom.fetched.length }));
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
  if (value.length < MIN_TOKEN_CHARS) throw invalid(id, t("tokens.tooShort", { n: MIN_TOKEN_CHARS }));
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
const ORIGIN_PATTERN = /^https?:\/\/(?:\[[0-9a-f:.]+\]|[^\s/?#@:[\]]+)(?::\d{1,5})?\/?$/i;

function isOrigin(text) {
  return ORIGIN_PATTERN.test(text);
}

// Only what changed is sent; an emptied field (or an alias table with no row) drops the saved
// value (back to env or default), except a rate limit's, which is refused (null would turn it off).
// A field in a unit (SETTING_UNITS) is sent in the API's: 2 min -> 120000 ms, 1 MB -> 1048576 bytes.
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
    const field = { field: t(`setting.${key}`) };
    const unit = SETTING_UNITS[key];
    if (text === "" && LIMIT_KEYS.includes(key)) {
      throw invalid(`setting-${key}`, t("settings.limitEmpty", field));
    } else if (text === "") {
      if (state.settings[key].source === "d1") body[key] = null;
    } else if (ORIGIN_KEYS.includes(key)) {
      if (!isOrigin(text)) throw invalid(`setting-${key}`, t("settings.badOrigin", field));
      if (text !== state.settings[key].value) body[key] = text;
    } else if (unit) {
      if (!/^\d+(\.\d+)?$/.test(text)) throw invalid(`setting-${key}`, t("settings.notNumber", field));
      const value = Math.round(Number(text) * FACTORS[unit]);
      if (value !== state.settings[key].value) body[key] = value;
    } else if (!/^\d+$/.test(text)) {
      throw invalid(`setting-${key}`, t("settings.notInteger", field));
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
    button.addEventListener(
      "click",
      guarded("usage", () => chooseRange(button.getAttribute("data-range"))),
    );
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
  byId("custom-fetch-models").addEventListener("click", guarded("custom", fetchCustomModels));
  byId("custom-model-search").addEventListener("input", (e) => {
    state.custom.search = e.target.value;
    renderCustomModels();
  });
  byId("custom-models").addEventListener("input", renderCustomModels);
  // A field's error goes as soon as the field changes.
  const clearOwn = (e) => clearFieldError(e.target.closest("[aria-invalid]") || e.target);
  document.addEventListener("input", clearOwn);
  document.addEventListener("change", clearOwn);
  byId("preset-form").addEventListener("submit", guarded("preset", submitPreset));
  byId("custom-form").addEventListener("submit", guarded("custom", submitCustom));
  byId("token-api-random").addEventListener("click", () => {
    byId("token-api").value = randomToken();
  });
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
