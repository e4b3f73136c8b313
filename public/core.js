// The page's core, shared by every panel: the one state, the text (t() over I18N), the DOM helpers,
// the admin API, the message lines and field errors, and the models the providers declare.

import { I18N } from "./i18n.js";

export const TOKEN_STORAGE = "fllmapi.adminToken";
export const LANG_STORAGE = "fllmapi.lang";
// The context window the Connect panel assumes until it is told (Llama 3.x, Qwen, gpt-oss: 128k).
export const DEFAULT_WINDOW = 131072;
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

export const state = {
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
  d1: null, // /status's D1 health: {ok, failing_since, error}
  verifyResults: null,
  editing: null, // the draft of the provider being edited: {id, name, platform, …}
  keyDraft: null, // the open "add keys" form: {id: provider id, text}; keys never go back to the DOM
  factDrafts: {}, // the model facts edited and not saved (SPEC §19): provider id -> {model: {field: text}}
  factsOpen: new Set(), // the provider ids whose model facts are unfolded
  preset: { id: "", fetched: [], facts: {}, selected: [], search: "" },
  // Custom add's fetched model list; ticked = lines of its models field. Quick add's and Custom
  // add's facts: what the platform's listing states of each model (POST /models/fetch).
  custom: { fetched: [], facts: {}, search: "" },
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
export function emptyUsage() {
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

export function t(key, vars) {
  const table = I18N[state.lang];
  const text = Object.hasOwn(table, key) ? table[key] : key;
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}

export function applyI18n() {
  document.documentElement.setAttribute("lang", state.lang === "zh" ? "zh-CN" : "en");
  document.title = t("app.title");
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.getAttribute("data-i18n"));
  for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
    node.setAttribute("placeholder", t(node.getAttribute("data-i18n-placeholder")));
  }
}

export function duration(ms) {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return t("time.s", { s });
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  if (h === 0) return s % 60 ? t("time.ms", { m, s: s % 60 }) : t("time.m", { m });
  return m % 60 ? t("time.hm", { h, m: m % 60 }) : t("time.h", { h });
}

export function timeLeft(untilMs) {
  const left = untilMs - Date.now();
  return left > 0 ? duration(left) : t("time.now");
}

// A moment as this browser's wall-clock time (with the day when it is not today).
export function clockTime(ms) {
  const at = new Date(ms);
  const options = { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false };
  if (at.toDateString() !== new Date().toDateString()) Object.assign(options, { month: "short", day: "numeric" });
  return at.toLocaleString(state.lang === "zh" ? "zh-CN" : "en-GB", options);
}

export function locale() {
  return state.lang === "zh" ? "zh-CN" : "en-GB";
}

// --- DOM: text only -------------------------------------------------------------------------

export function byId(id) {
  return document.getElementById(id);
}

// An element with attributes (set with setAttribute; "on…" become listeners; value and checked
// are set as properties, after the attributes, so an input's type is known first) and children
// (nodes, or strings, which append() turns into text nodes).
export function el(tag, attrs, ...children) {
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

export function smallButton(testId, labelKey, onclick, extraClass) {
  const attrs = { type: "button", class: extraClass ? `small ${extraClass}` : "small", "data-testid": testId, onclick };
  return el("button", attrs, t(labelKey));
}

export function note(section, kind, text) {
  state.notes[section] = { kind, text };
  renderNote(section);
}

// A provider's key list has a message line of its own, section "keys-<provider id>" (rebuilt
// with the row, so it may be missing while the row is away).
export function renderNote(section) {
  const node = byId(`${section}-message`);
  if (!node) return;
  const { kind, text } = state.notes[section] || { kind: "", text: "" };
  node.textContent = text;
  node.setAttribute("class", `note ${kind}`);
}

export async function copyText(text, section = "connect", doneKey = "connect.copied") {
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

// --- The admin API --------------------------------------------------------------------------

// Where a 401 for the token in use goes: main.js's showLogin, given at start with onRejected.
let showLogin = () => {};

export function onRejected(handler) {
  showLogin = handler;
}

// The answer's JSON, or throws an Error with the server's error.message. A 401 for the token in
// use returns to the login view (a 401 for a token already replaced is only thrown).
export async function api(method, path, body) {
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

// --- Field errors ---------------------------------------------------------------------------

// An event handler that clears the section's note and field errors, keeps its button disabled
// while it runs and shows any error beside the field it names (``fields``: param -> field id, by
// default the section's PARAM_FIELDS), else in the section's message line.
export function guarded(section, action, fields) {
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
export function invalid(fieldId, message) {
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

export function clearFieldError(input) {
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

// --- The providers' models (the provider rows, the alias table and Connect read them) -------

// A provider's models entry is an id, or {id, kind} when its kind was set (SPEC §12.6); ``kinds``
// holds every model's kind, set or guessed from its id.
export function modelId(entry) {
  return typeof entry === "string" ? entry : entry.id;
}

// Every model the providers declare (of ``kind``, when given), once, in priority order (as
// /v1/models lists them).
export function modelCatalog(kind) {
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
