// A provider's model facts (SPEC §19): per model the context window, vision, tools, JSON output
// and free-tier caps as routing uses them, each with where it came from, and the admin's own
// values, edited in place and saved as the provider's models entries.

import { state, t, el, note, api, guarded, invalid, modelId } from "./core.js";
import { reloadProviders } from "./providers.js";

// The facts a models entry may set, in the row's order: the window and the caps are positive
// integers, the rest true/false (unset: the next source's, else unknown).
const NUMBER_FACTS = ["context", "rpm", "rpd", "tpm"];
const FACT_COLUMNS = ["context", "vision", "tools", "json", "rpm", "rpd", "tpm"];
// What an entry keeps as it was whatever the admin edits here.
const KEPT_FIELDS = ["kind", "listed"];
// The provider's own caps, for its models whose entries set none (the first row).
const CAP_FACTS = ["rpm", "rpd", "tpm"];
// The drafts' key of the provider's row: no model id is empty.
const PROVIDER_ROW = "";

// The section of a provider's facts (its message line: facts-<id>-message) and a field's id.
function section(p) {
  return `facts-${p.id}`;
}

function fieldId(p, index, name) {
  return `fact-${p.id}-${index}-${name}`;
}

function entryObject(entry) {
  return typeof entry === "string" ? { id: entry } : entry;
}

// The edits not yet saved of a provider: {model: {field: text}}, kept across re-renders.
function drafts(p) {
  // No prototype: a model may be named "__proto__".
  if (!state.factDrafts[p.id]) state.factDrafts[p.id] = Object.create(null);
  return state.factDrafts[p.id];
}

// A field's text as its control shows it: the draft, else the admin's value ("" when unset).
function shownValue(p, entry, name) {
  const draft = drafts(p)[entry.id];
  if (draft && name in draft) return draft[name];
  const value = entry[name];
  if (value === undefined || value === null) return "";
  return typeof value === "boolean" ? (value ? "yes" : "no") : String(value);
}

// What applies when the admin's value is cleared: the value routing uses when another source
// gave it, else what the listing stored with the entry states (the presets' figure is not shown
// while the admin's value hides it); undefined when nothing is known.
function fallback(entry, known, name) {
  const source = known.sources?.[name];
  if (source && source !== "admin") return known[name];
  return entry.listed ? entry.listed[name] : undefined;
}

function yesNo(value) {
  return t(value ? "facts.yes" : "facts.no");
}

export function modelFacts(p) {
  const open = state.factsOpen.has(p.id);
  const message = state.notes[section(p)] || { kind: "", text: "" };
  const entries = p.models.map(entryObject);
  return el(
    "details",
    {
      class: "facts",
      open,
      "data-testid": "model-facts",
      ontoggle: (e) => {
        if (e.currentTarget.open) state.factsOpen.add(p.id);
        else state.factsOpen.delete(p.id);
      },
    },
    el("summary", { class: "label" }, t("facts.heading", { n: entries.length })),
    el(
      "form",
      { class: "stack", autocomplete: "off", novalidate: true, onsubmit: guarded(section(p), () => saveFacts(p), {}) },
      el("p", { class: "muted" }, t("facts.help")),
      el(
        "div",
        { class: "table-wrap" },
        el(
          "table",
          { class: "facts-table" },
          el(
            "thead",
            null,
            el(
              "tr",
              null,
              el("th", { scope: "col" }, t("facts.model")),
              FACT_COLUMNS.map((name) => el("th", { scope: "col" }, t(`facts.${name}`))),
            ),
          ),
          el(
            "tbody",
            null,
            providerRow(p),
            entries.map((entry, index) => factRow(p, entry, index)),
          ),
        ),
      ),
      el(
        "div",
        { class: "inline" },
        el("button", { type: "submit", class: "primary small", "data-testid": "facts-save" }, t("facts.save")),
        el(
          "p",
          {
            id: `${section(p)}-message`,
            class: `note ${message.kind}`,
            role: "status",
            "data-testid": "facts-message",
          },
          message.text,
        ),
      ),
    ),
  );
}

function factRow(p, entry, index) {
  const known = p.capabilities?.[entry.id] || { sources: {} };
  return el(
    "tr",
    { "data-testid": "facts-row", "data-model": entry.id },
    el("th", { scope: "row", class: "mono" }, entry.id),
    FACT_COLUMNS.map((name) =>
      el(
        "td",
        { "data-field": name },
        NUMBER_FACTS.includes(name)
          ? numberControl(p, entry, index, name, known)
          : choiceControl(p, entry, index, name, known),
        sourceTag(known, name),
      ),
    ),
  );
}

// The provider's caps: rpm, rpd and tpm for every model whose own entry sets none.
function providerRow(p) {
  const caps = { id: PROVIDER_ROW, ...(p.caps || {}) };
  return el(
    "tr",
    { "data-testid": "facts-provider-row" },
    el("th", { scope: "row" }, t("facts.provider")),
    FACT_COLUMNS.map((name) =>
      el(
        "td",
        { "data-field": name },
        CAP_FACTS.includes(name)
          ? el("input", {
              id: fieldId(p, "provider", name),
              type: "number",
              min: "1",
              step: "1",
              class: "fact",
              value: shownValue(p, caps, name),
              "aria-label": t("facts.fieldOf", { field: t(`facts.${name}`), model: t("facts.provider") }),
              "data-testid": `provider-cap-${name}`,
              oninput: remember(p, caps, name),
            })
          : null,
      ),
    ),
  );
}

function remember(p, entry, name) {
  return (e) => {
    const draft = drafts(p);
    draft[entry.id] = Object.assign(draft[entry.id] || {}, { [name]: e.target.value });
  };
}

function numberControl(p, entry, index, name, known) {
  const other = fallback(entry, known, name);
  return el("input", {
    id: fieldId(p, index, name),
    type: "number",
    min: "1",
    step: "1",
    class: "fact",
    value: shownValue(p, entry, name),
    placeholder: other === undefined ? null : String(other),
    "aria-label": t("facts.fieldOf", { field: t(`facts.${name}`), model: entry.id }),
    "data-testid": `fact-${name}`,
    oninput: remember(p, entry, name),
  });
}

// Unset (what applies then: another source's value, else unknown), yes or no.
function choiceControl(p, entry, index, name, known) {
  const other = fallback(entry, known, name);
  const value = shownValue(p, entry, name);
  const unset = other === undefined ? t("facts.unknown") : t("facts.inherited", { value: yesNo(other) });
  return el(
    "select",
    {
      id: fieldId(p, index, name),
      class: "fact",
      "aria-label": t("facts.fieldOf", { field: t(`facts.${name}`), model: entry.id }),
      "data-testid": `fact-${name}`,
      onchange: remember(p, entry, name),
    },
    el("option", { value: "", selected: value === "" }, unset),
    el("option", { value: "yes", selected: value === "yes" }, t("facts.yes")),
    el("option", { value: "no", selected: value === "no" }, t("facts.no")),
  );
}

// Where the value routing uses came from; a learned window says the bound it learned.
function sourceTag(known, name) {
  const source = known.sources?.[name];
  if (!source) return null;
  const text = source === "learned" ? t("facts.learnedBound", { n: known[name] }) : t(`factSource.${source}`);
  return el("span", { class: `fact-source ${source}`, "data-testid": "fact-source", "data-source": source }, text);
}

// The entry with the admin's values as the controls hold them (kind and listing kept); an entry
// with only its id is its id. A number that is not a positive integer is refused beside its field.
function editedEntry(p, stored, index) {
  const entry = { id: stored.id };
  for (const name of KEPT_FIELDS) if (stored[name] !== undefined) entry[name] = stored[name];
  for (const name of FACT_COLUMNS) {
    const text = shownValue(p, stored, name).trim();
    if (text === "") continue;
    entry[name] = NUMBER_FACTS.includes(name)
      ? positive(text, fieldId(p, index, name), stored.id, name)
      : text === "yes";
  }
  return Object.keys(entry).length > 1 ? entry : entry.id;
}

function positive(text, id, model, name) {
  if (/^\d+$/.test(text) && Number(text) > 0 && Number.isSafeInteger(Number(text))) return Number(text);
  throw invalid(id, t("facts.notPositive", { field: t(`facts.${name}`), model }));
}

// The provider's caps as its row holds them; null when none is set.
function editedCaps(p) {
  const stored = { id: PROVIDER_ROW, ...(p.caps || {}) };
  const caps = {};
  for (const name of CAP_FACTS) {
    const text = shownValue(p, stored, name).trim();
    if (text !== "") caps[name] = positive(text, fieldId(p, "provider", name), t("facts.provider"), name);
  }
  return Object.keys(caps).length ? caps : null;
}

async function saveFacts(p) {
  const models = p.models.map((entry, index) => editedEntry(p, entryObject(entry), index));
  await api("PUT", `/providers/${p.id}`, { models, caps: editedCaps(p) });
  delete state.factDrafts[p.id];
  await reloadProviders();
  note(section(p), "ok", t("facts.saved", { name: p.name }));
}

// The edit form's models, each keeping the facts and listing its stored entry had (the form's
// lines hold only ids and kinds): an entry of a model the form no longer lists is dropped.
export function withStoredFacts(p, entries) {
  const stored = new Map(p.models.map((entry) => [modelId(entry), entryObject(entry)]));
  return entries.map((entry) => {
    const line = entryObject(entry);
    const before = stored.get(line.id);
    if (!before) return entry;
    const merged = { ...before, ...line };
    if (!("kind" in line)) delete merged.kind;
    return Object.keys(merged).length > 1 ? merged : merged.id;
  });
}
