// The status bar (SPEC §13): D1's health, the cooldowns, and clearing or verifying them.

import { state, t, timeLeft, clockTime, byId, el, note, api } from "./core.js";
import { reloadProviders } from "./providers.js";

// --- Status: the cooldowns (SPEC §13) -------------------------------------------------------

export async function loadStatus() {
  const data = await api("GET", "/status");
  const now = Date.now();
  state.cooldowns = data.cooldowns.map((c) => Object.assign({}, c, { untilMs: now + c.remainingMs }));
  state.d1 = data.d1;
}

export function timeLeftNode(cooldown) {
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
