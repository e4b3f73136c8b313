// The provider rows (their cooldowns, models, model facts and keys), a provider's edit form, and
// reloadProviders.
// A row holds its keys (keys.js), its model facts (modelfacts.js) and the status bar's cooldowns
// (status.js), whose actions reload the rows: those modules and this one import each other's
// functions, which run only after every module has loaded (an ES module cycle without top-level
// use is safe).

import { state, t, byId, el, note, api, guarded, smallButton, modelId } from "./core.js";
import { renderConnect } from "./connect.js";
import { renderAliases } from "./settings.js";
import { loadStatus, renderStatus, timeLeftNode } from "./status.js";
import { keyList, keyCoolingUntil } from "./keys.js";
import { modelFacts, withStoredFacts } from "./modelfacts.js";
import { required, modelLines, integer, timeoutMs } from "./formvalues.js";

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
    p.models.length ? modelFacts(p) : null,
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

// The edit form's line of an entry: the id, then the kind when it was set (its facts are not on
// the line: saving keeps them, withStoredFacts).
function modelLine(entry) {
  return typeof entry === "string" || !entry.kind ? modelId(entry) : `${entry.id} ${entry.kind}`;
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
    models: withStoredFacts(p, modelLines(d.models, id("models"))),
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
