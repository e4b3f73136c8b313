// The Clients panel: named API tokens (each shown once), their limits and models; and the tokens fold
// (the API and admin tokens).

import { TOKEN_STORAGE, state, t, byId, el, note, api, guarded, invalid, smallButton, copyText } from "./core.js";

const MIN_TOKEN_CHARS = 16;

// --- Clients (SPEC §14): named tokens, shown once ------------------------------------------

export async function loadClients() {
  const data = await api("GET", "/clients");
  state.clients = data.clients;
  state.defaultClient = data.default_client || null;
}

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

// A client's own stream rescue switch (SPEC §16) as its select's value and back: null follows the
// setting stream_rescue ("").
const RESCUE_CHOICES = [
  ["", "clients.rescueFollow"],
  ["on", "clients.rescueOn"],
  ["off", "clients.rescueOff"],
];

function rescueChoice(value) {
  if (value === true) return "on";
  return value === false ? "off" : "";
}

function rescueValue(choice) {
  return choice === "" ? null : choice === "on";
}

// Which of the three cases holds (SPEC §14): the API token works; it is off and the enabled
// clients are served; it is off and nothing can be served (503).
function defaultClientNote(defaultClient) {
  if (defaultClient.enabled) return "clients.defaultOn";
  return state.clients.some((c) => c.enabled) ? "clients.defaultOff" : "clients.defaultOffNone";
}

export function renderClients() {
  const fallback = byId("default-client");
  const defaultClient = state.defaultClient;
  fallback.textContent = defaultClient ? t(defaultClientNote(defaultClient)) : "";
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
            rescue: rescueChoice(c.stream_rescue),
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
      typeof c.stream_rescue === "boolean"
        ? el(
            "span",
            { class: "muted", "data-testid": "client-rescue-value" },
            t(c.stream_rescue ? "clients.rescueOnValue" : "clients.rescueOffValue"),
          )
        : null,
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
      "div",
      { class: "field" },
      el("label", { for: "client-edit-rescue" }, t("clients.rescue")),
      el(
        "select",
        {
          id: "client-edit-rescue",
          "data-testid": "client-edit-rescue",
          onchange: (e) => {
            draft.rescue = e.target.value;
          },
        },
        RESCUE_CHOICES.map(([value, key]) => el("option", { value, selected: value === draft.rescue }, t(key))),
      ),
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
              stream_rescue: rescueValue(draft.rescue),
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

export async function submitClient() {
  const name = byId("client-name").value.trim();
  if (!name) throw invalid("client-name", t("clients.nameEmpty"));
  const body = { name };
  const rpm = parseRpm(byId("client-rpm").value, "client-rpm");
  const models = parseModels(byId("client-models").value);
  if (rpm !== null) body.rpm = rpm;
  if (models !== null) body.models = models;
  const rescue = rescueValue(byId("client-rescue").value);
  if (rescue !== null) body.stream_rescue = rescue;
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

// --- Tokens ---------------------------------------------------------------------------------

export function renderTokens() {
  const box = byId("tokens");
  box.replaceChildren();
  for (const [key, hint] of [
    ["tokens.apiHint", state.tokenHints.api],
    ["tokens.adminHint", state.tokenHints.admin],
  ]) {
    if (hint) box.append(el("div", null, el("span", { class: "k" }, t(key)), el("span", { class: "mono" }, hint)));
  }
}

export function randomToken() {
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

export async function saveApiToken() {
  await putTokens({ api_token: tokenValue("token-api") });
  await loadClients(); // the default client's state follows the token
  renderClients();
  note("tokens", "ok", t("tokens.apiSaved"));
}

export async function saveAdminToken() {
  const token = tokenValue("token-admin");
  await putTokens({ admin_token: token });
  state.token = token;
  sessionStorage.setItem(TOKEN_STORAGE, token);
  byId("token-admin").value = "";
  note("tokens", "ok", t("tokens.adminSaved"));
}
