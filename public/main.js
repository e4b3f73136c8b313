// The page's entry (index.html loads it): renders every panel, keeps the session (login, logout,
// the status poll) and wires the static markup's events.

import {
  onRejected,
  TOKEN_STORAGE,
  LANG_STORAGE,
  DEFAULT_WINDOW,
  state,
  emptyUsage,
  t,
  applyI18n,
  timeLeft,
  byId,
  note,
  renderNote,
  guarded,
  clearFieldError,
} from "./core.js";
import { loadStatus, renderStatus, clearCooldowns, verifyCooldowns } from "./status.js";
import { loadProviders, renderProviders, reloadProviders } from "./providers.js";
import {
  loadPlatforms,
  renderKeyCount,
  renderPresetForm,
  renderPresetModels,
  choosePlatform,
  fillAccountId,
  fetchPresetModels,
  submitPreset,
  submitCustom,
  renderCustomModels,
  fetchCustomModels,
} from "./addprovider.js";
import { renderConnect } from "./connect.js";
import {
  loadClients,
  renderTokens,
  renderClients,
  submitClient,
  randomToken,
  saveApiToken,
  saveAdminToken,
} from "./clients.js";
import { loadUsage, reloadUsage, chooseRange, renderUsage } from "./usage.js";
import { loadOpenRouter, reloadOpenRouter, renderOpenRouter, renderSavings } from "./openrouter.js";
import { loadSettings, renderSettings, saveSettings } from "./settings.js";

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
  // Clients are read from D1 itself: while D1 fails (the status banner says so) the panel says
  // why it is empty, and the rest of the page works from the gateway's snapshot.
  const clients = loadClients().then(
    () => null,
    (err) => err,
  );
  await Promise.all([loadProviders(), loadPlatforms(), loadSettings(), loadStatus()]);
  const failed = await openrouter;
  const usageFailed = await usage;
  const clientsFailed = await clients;
  state.view = "main";
  state.loginMessage = "";
  state.notes = {};
  if (failed) state.notes.openrouter = { kind: "error", text: failed.message };
  if (usageFailed) state.notes.usage = { kind: "error", text: usageFailed.message };
  if (clientsFailed) state.notes.clients = { kind: "error", text: clientsFailed.message };
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
    factDrafts: {},
    factsOpen: new Set(),
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

onRejected(showLogin);
wire();
renderAll();
if (state.token) enter().catch((err) => showLogin(err.message));
