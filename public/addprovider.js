// Adding a provider: Quick add from a platform preset, Custom add.

import { state, t, byId, el, note, api, invalid, clearFieldError } from "./core.js";
import { reloadProviders } from "./providers.js";
import { required, modelLines, integer, timeoutMs, requiredKeys, keyCountText } from "./formvalues.js";

const ACCOUNT_PLACEHOLDER = "{account_id}";

// The count line under a create form's key field ("preset" or "custom").
export function renderKeyCount(form) {
  byId(`${form}-key-count`).textContent = keyCountText(byId(`${form}-key`).value);
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
  state.preset = { id, fetched: [], facts: {}, selected: [], search: "" };
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
  const { models, facts } = await api("POST", "/models/fetch", target);
  state.preset.fetched = models;
  state.preset.facts = facts || {};
  renderPresetModels();
  note("preset", "ok", t("preset.fetched", { n: models.length }));
}

export async function submitPreset() {
  const preset = currentPreset();
  if (!preset) throw invalid("preset-platform", t("preset.pickFirst"));
  const models = presetModels()
    .filter((m) => state.preset.selected.includes(m))
    .map((m) => withListing(m, state.preset.facts));
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

// A models entry (an id, or {id, kind}) with what the platform's listing states of it (``facts``,
// from POST /models/fetch) as its ``listed`` object (SPEC §19); as it was when the listing states nothing.
function withListing(entry, facts) {
  const id = typeof entry === "string" ? entry : entry.id;
  const listed = Object.hasOwn(facts, id) ? facts[id] : null;
  if (!listed || !Object.keys(listed).length) return entry;
  return typeof entry === "string" ? { id, listed } : { ...entry, listed };
}

// --- Custom add -----------------------------------------------------------------------------

export async function submitCustom() {
  const body = {
    name: required(byId("custom-name").value, "form.needName", "custom-name"),
    platform: byId("custom-platform").value.trim() || "custom",
    base_url: required(byId("custom-base-url").value, "form.needBaseUrl", "custom-base-url"),
    api_keys: requiredKeys(byId("custom-key").value, "custom-key"),
    models: modelLines(byId("custom-models").value, "custom-models").map((m) => withListing(m, state.custom.facts)),
    priority: integer(byId("custom-priority").value, 100, "form.priority", "custom-priority"),
    timeout_ms: timeoutMs(byId("custom-timeout").value, "custom-timeout"),
  };
  await api("POST", "/providers", body);
  byId("custom-form").reset();
  state.custom = { fetched: [], facts: {}, search: "" };
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
  const { models, facts } = await api("POST", "/models/fetch", target);
  state.custom.fetched = models;
  state.custom.facts = facts || {};
  renderCustomModels();
  note("custom", "ok", t("preset.fetched", { n: state.custom.fetched.length }));
}
