// The keys of a provider's row (SPEC §13): each key's hint, state, cooldown and count against its
// free-tier caps (SPEC §19); adding keys, disabling and deleting one.

import { state, t, timeLeft, clockTime, byId, el, note, api, guarded, smallButton } from "./core.js";
import { renderProviders, reloadProviders } from "./providers.js";
import { requiredKeys, keyCountText } from "./formvalues.js";

// The end of a key's cooldown on this browser's clock: from /status (remainingMs, so a skewed
// clock does not matter), else the provider's cooling_until_ms; null when it is not cooling.
export function keyCoolingUntil(k) {
  const ends = state.cooldowns.filter((c) => c.keyId === k.id).map((c) => c.untilMs);
  if (ends.length) return Math.max(...ends);
  return k.cooling_until_ms && k.cooling_until_ms > Date.now() ? k.cooling_until_ms : null;
}

export function keyList(p) {
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
    keyCaps(k),
  );
}

// What this isolate counted of the key per model with a free-tier cap, against the caps known
// ("llama-3.1-8b-instant: 12/30 per min · 340/14400 per day"); nothing when no model has a cap.
// A model at one of its caps is marked: the router passes the key over for it until the window turns.
function keyCaps(k) {
  const caps = (k.caps || []).map((c) => {
    const parts = [
      [c.minute, c.rpm, "keys.capMinute"],
      [c.day, c.rpd, "keys.capDay"],
      [c.minute_tokens, c.tpm, "keys.capTokens"],
    ].filter(([, cap]) => cap !== null && cap !== undefined);
    const full = parts.some(([n, cap]) => n >= cap);
    return el(
      "span",
      { class: full ? "chip warn" : "chip", "data-testid": "key-cap", "data-model": c.model },
      t("keys.capModel", { model: c.model, counts: parts.map(([n, cap, key]) => t(key, { n, cap })).join(" · ") }),
    );
  });
  return caps.length ? el("span", { class: "key-caps", "data-testid": "key-caps" }, caps) : null;
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
