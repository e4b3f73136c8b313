// The Settings panel: the settings by group, each in its unit, and the model alias table.

import { state, t, byId, el, note, api, guarded, invalid, smallButton, modelCatalog } from "./core.js";
import { reloadOpenRouter } from "./openrouter.js";

const ALIASES_KEY = "model_aliases";
// The rate limits (SPEC §14): the API's null turns them off instead of restoring the env value or
// the default, so the page never sends null for them: no reset button, and an empty field is refused.
const LIMIT_KEYS = ["default_client_rpm", "ip_rpm", "auth_fail_limit"];
// Switches (1 on, 0 off): the row says which beside the field.
const SWITCH_KEYS = ["openrouter_pinning", "stream_rescue"];
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
      "routing_strategy",
      "routing_cooldown_ceiling_ms",
      "max_consecutive_upstream_fails",
      "same_model_retry_max_ms",
      "stream_stall_ms",
      "stream_pacing",
      "stream_rescue",
      "max_body_bytes",
      "subrequest_limit",
    ],
  ],
  ["limits", LIMIT_KEYS],
  ["openrouter", ["openrouter_pinning", "openrouter_lock_idle_ms", "openrouter_origin"]],
  ["usage", ["usage_flush_minutes"]],
];
// The aliases the example button adds: Claude Code's small background model to a small model
// (the page picks the first one a provider declares), everything else it asks for to auto.
const CLAUDE_EXAMPLE = [
  ["claude-*haiku*", null],
  ["claude-*", "auto"],
];

// --- Settings -------------------------------------------------------------------------------

export async function loadSettings() {
  state.settings = (await api("GET", "/settings")).settings;
  state.settingDrafts = {};
  state.aliasDraft = null;
}

// The settings by group (SETTING_GROUPS), each a row: label, field (in its unit), unit, source,
// "use default"; the help under it.
export function renderSettings() {
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
  // A setting whose GET /settings answer lists its choices (the routing strategy, SPEC §19) is a
  // select of them, each labelled choice.<setting>.<name>.
  const control = setting.choices
    ? el(
        "select",
        { id, "data-testid": id, onchange: oninput },
        setting.choices.map((name) =>
          el("option", { value: name, selected: name === draft }, t(`choice.${key}.${name}`)),
        ),
      )
    : el("input", settingInput(key, id, draft, oninput));
  return el(
    "div",
    { class: "setting", "data-testid": "setting-row", "data-setting": key },
    el("label", { for: id }, t(`setting.${key}`)),
    el(
      "div",
      { class: "setting-controls" },
      control,
      unit ? el("span", { class: "unit", "data-testid": "setting-unit" }, t(`unit.${unit}`)) : null,
      el(
        "span",
        { class: setting.source === "d1" ? "chip ok" : "chip", "data-testid": "setting-source" },
        t(`settingSource.${setting.source}`),
      ),
      LIMIT_KEYS.includes(key) && setting.value === 0 ? el("span", { class: "muted" }, t("settings.off")) : null,
      SWITCH_KEYS.includes(key)
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

// The attributes of a setting's input: a text field for an origin, else a number in its unit.
function settingInput(key, id, draft, oninput) {
  const unit = SETTING_UNITS[key];
  return ORIGIN_KEYS.includes(key)
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
    : {
        id,
        type: "number",
        min: "0",
        max: SWITCH_KEYS.includes(key) ? "1" : null,
        step: unit ? "any" : "1",
        value: draft,
        "data-testid": id,
        oninput,
      };
}

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
// A value outside the setting's bounds (GET /settings gives them in the API's unit) is refused
// beside its field in the page's unit, before the server would refuse it in milliseconds or bytes.
function checkRange(key, value, field) {
  const { minimum, maximum } = state.settings[key];
  if (minimum === undefined || (value >= minimum && value <= maximum)) return;
  const unit = SETTING_UNITS[key];
  const max = shownSetting(key, maximum);
  const range = { min: shownSetting(key, minimum), max: unit ? `${max} ${t(`unit.${unit}`)}` : max };
  throw invalid(`setting-${key}`, t("settings.range", { ...field, ...range }));
}

export async function saveSettings() {
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
    if (state.settings[key].choices) {
      if (text !== state.settings[key].value) body[key] = text;
    } else if (text === "" && LIMIT_KEYS.includes(key)) {
      throw invalid(`setting-${key}`, t("settings.limitEmpty", field));
    } else if (text === "") {
      if (state.settings[key].source === "d1") body[key] = null;
    } else if (ORIGIN_KEYS.includes(key)) {
      if (!isOrigin(text)) throw invalid(`setting-${key}`, t("settings.badOrigin", field));
      if (text !== state.settings[key].value) body[key] = text;
    } else if (unit) {
      if (!/^\d+(\.\d+)?$/.test(text)) throw invalid(`setting-${key}`, t("settings.notNumber", field));
      const value = Math.round(Number(text) * FACTORS[unit]);
      checkRange(key, value, field);
      if (value !== state.settings[key].value) body[key] = value;
    } else if (!/^\d+$/.test(text)) {
      throw invalid(`setting-${key}`, t("settings.notInteger", field));
    } else {
      checkRange(key, Number(text), field);
      if (Number(text) !== state.settings[key].value) body[key] = Number(text);
    }
  }
  if (!Object.keys(body).length) {
    note("settings", "", t("settings.unchanged"));
    return;
  }
  await putSettings(body);
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

export function renderAliases() {
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
