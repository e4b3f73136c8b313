// The status bar (the cooldowns, clear and verify), the provider rows with their keys and their edit
// form, and adding a provider (Quick add from a platform preset, Custom add).

import {
  state,
  t,
  timeLeft,
  clockTime,
  byId,
  el,
  note,
  api,
  guarded,
  invalid,
  clearFieldError,
  smallButton,
  modelId,
} from "./core.js";
import { renderConnect } from "./connect.js";
import { renderAliases } from "./settings.js";

const ACCOUNT_PLACEHOLDER = "{account_id}";

// --- Status: the cooldowns (SPEC §13) -------------------------------------------------------

export async function loadStatus() {
  const data = await api("GET", "/status");
  const now = Date.now();
  state.cooldowns = data.cooldowns.map((c) => Object.assign({}, c, { untilMs: now + c.remainingMs }));
  state.d1 = data.d1;
}

function timeLeftNode(cooldown) {
  return el("span", { class: "strong", "data-until": cooldown.untilMs }, timeLeft(cooldown.untilMs));
}

export function renderStatus() {
  const d1 = state.d1;
  const banner = byId("d1-health");
  banner.hidden = !d1 || d1.ok;
  if (d1 && !d1.ok) banner.textContent = t("status.d1Failing", { since: clockTime(d1.failing_since), error: d1.error });
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

// --- Cooldowns ------------------------------------------------------------------------------

export async function clearCooldowns() {
  const data = await api("POST", "/cooldowns/clear");
  state.verifyResults = null;
  await reloadProviders();
  note("status", "ok", t("status.cleared", { n: data.cleared }));
}

export async function verifyCooldowns() {
  const data = await api("POST", "/cooldowns/verify");
  state.verifyResults = data.results;
  await reloadProviders();
  note("status", "ok", t("status.verified"));
}

// --- Providers ------------------------------------------------------------------------------

export async function loadProviders() {
  state.providers = (await api("GET", "/providers")).providers;
}

export function renderProviders() {
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

export async function reloadProviders() {
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
    keyState(k, until || providerRests(p)),
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

// Whether the whole provider is cooling down (every model, whatever the key): its keys rest too.
function providerRests(p) {
  return state.cooldowns.some((c) => c.providerId === p.id && c.model === null && (c.keyId ?? null) === null);
}

// Disabled, cooling down (its own cooldown or its provider's: never "in use" while it rests) or in
// use; a key that cannot be decrypted serves nothing, and its error chip says so: no state.
function keyState(k, resting) {
  if (k.key_error) return null;
  const [cls, key] = !k.enabled
    ? ["chip off", "keys.disabled"]
    : resting
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
export function renderKeyCount(form) {
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

export async function loadPlatforms() {
  state.platforms = (await api("GET", "/platforms")).platforms;
}

export function renderPresetForm() {
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

export function renderPresetModels() {
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

function currentPreset() {
  return state.platforms.find((p) => p.id === state.preset.id) || null;
}

// The preset's default models first, then those the platform listed.
function presetModels() {
  const preset = currentPreset();
  return preset ? [...new Set([...preset.default_models, ...state.preset.fetched])] : [];
}

// A name no provider has, whatever its case (the server compares names as SQLite's NOCASE does).
function uniqueName(base) {
  const taken = new Set(state.providers.map((p) => p.name.toLowerCase()));
  let name = base;
  for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base}-${n}`;
  return name;
}

export function choosePlatform(id) {
  state.preset = { id, fetched: [], selected: [], search: "" };
  const preset = currentPreset();
  if (preset) state.preset.selected = [...preset.default_models];
  byId("preset-base-url").value = preset ? preset.base_url : "";
  byId("preset-name").value = preset ? uniqueName(preset.id) : "";
  byId("preset-account").value = "";
  byId("preset-model-search").value = "";
  renderPresetForm();
}

export function fillAccountId() {
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
export async function fetchPresetModels() {
  if (!currentPreset()) throw invalid("preset-platform", t("preset.pickFirst"));
  const target = { base_url: presetEndpoint(), api_key: requiredKeys(byId("preset-key").value, "preset-key")[0] };
  const models = (await api("POST", "/models/fetch", target)).models;
  state.preset.fetched = models;
  renderPresetModels();
  note("preset", "ok", t("preset.fetched", { n: models.length }));
}

export async function submitPreset() {
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

export async function submitCustom() {
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
export function renderCustomModels() {
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
export async function fetchCustomModels() {
  const target = {
    base_url: required(byId("custom-base-url").value, "form.needBaseUrl", "custom-base-url"),
    api_key: requiredKeys(byId("custom-key").value, "custom-key")[0],
  };
  state.custom.fetched = (await api("POST", "/models/fetch", target)).models;
  renderCustomModels();
  note("custom", "ok", t("preset.fetched", { n: state.custom.fetched.length }));
}
