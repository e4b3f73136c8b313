// The OpenRouter panel: per pinned model its lock and the ranked candidates; and what the pins save,
// shown in the Usage panel (#usage-savings).

import { state, t, duration, clockTime, byId, el, api, locale } from "./core.js";

// --- OpenRouter pinning (SPEC §15): per model the pin and the ranked candidates ---------------

export async function loadOpenRouter() {
  state.openrouter = await api("GET", "/openrouter");
}

export async function reloadOpenRouter() {
  await loadOpenRouter();
  renderOpenRouter();
  renderSavings(); // the Usage panel shows the pins' estimates
}

function metaItem(labelKey, value) {
  return el("span", null, el("span", { class: "k" }, t(labelKey)), value);
}

// A number to 3 significant digits, grouped as this language writes it.
function significant(value) {
  return Number(value).toLocaleString(locale(), { maximumSignificantDigits: 3 });
}

// A price in USD per token, shown per million tokens: "$0.27 / M".
function pricePerMillion(perToken) {
  const n = Number(perToken) * 1e6;
  if (perToken === null || perToken === undefined || !Number.isFinite(n)) return t("status.none");
  const shown = n > 0 && n < 0.001 ? "<0.001" : String(Number(n.toPrecision(3)));
  return t("openrouter.price", { n: shown });
}

export function renderOpenRouter() {
  const data = state.openrouter;
  const head = byId("openrouter-state");
  const box = byId("openrouter");
  head.replaceChildren();
  box.replaceChildren();
  if (!data) return;
  head.append(
    el(
      "span",
      { class: data.pinning ? "chip ok" : "chip off", "data-testid": "openrouter-state" },
      t(data.pinning ? "openrouter.on" : "openrouter.off"),
    ),
  );
  box.append(
    el(
      "div",
      { class: "meta", "data-testid": "openrouter-meta" },
      metaItem("openrouter.origin", el("span", { class: "mono" }, data.origin)),
      metaItem("openrouter.idle", duration(data.lock_idle_ms)),
    ),
  );
  if (!data.pinning) box.append(el("p", { class: "note", "data-testid": "openrouter-off" }, t("openrouter.offNote")));
  if (!data.models.length)
    box.append(el("p", { class: "muted", "data-testid": "openrouter-empty" }, t("openrouter.empty")));
  for (const pin of data.models) box.append(pinRow(pin));
}

function pinRow(pin) {
  const lock = pin.lock;
  return el(
    "article",
    { class: "provider", "data-testid": "openrouter-model", "data-model": pin.model },
    el(
      "div",
      { class: "provider-head" },
      el("span", { class: "strong mono", "data-testid": "openrouter-model-id" }, pin.model),
      lock
        ? el(
            "span",
            { class: "chip ok", "data-testid": "openrouter-lock" },
            t("openrouter.lockedTo", { slug: lock.slug }),
            " · ",
            t("openrouter.until", { time: clockTime(lock.until) }),
          )
        : el("span", { class: "chip off", "data-testid": "openrouter-lock" }, t("openrouter.notPinned")),
    ),
    el(
      "div",
      { class: "meta", "data-testid": "openrouter-counts" },
      metaItem("openrouter.failures", String(pin.failures)),
      metaItem("openrouter.switches", String(pin.switches)),
      metaItem("openrouter.refreshed", pin.refreshed_at ? clockTime(pin.refreshed_at) : t("openrouter.never")),
    ),
    pin.candidates.length
      ? candidateTable(pin)
      : el("p", { class: "muted", "data-testid": "openrouter-no-candidates" }, t("openrouter.noCandidates")),
  );
}

// The candidates best first (as the server ranks them); the pinned one highlighted.
function candidateTable(pin) {
  const locked = pin.lock ? pin.lock.slug : null;
  const columns = [
    ["openrouter.col.rank", "num"],
    ["openrouter.col.slug", null],
    ["openrouter.col.score", "num"],
    ["openrouter.col.prompt", "num"],
    ["openrouter.col.completion", "num"],
    ["openrouter.col.cacheRead", "num"],
    ["openrouter.col.caching", null],
    ["openrouter.col.throughput", "num"],
    ["openrouter.col.state", null],
  ];
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      { class: "ranked", "data-testid": "openrouter-candidates" },
      el(
        "thead",
        null,
        el(
          "tr",
          null,
          columns.map(([key, cls]) => el("th", { class: cls, scope: "col" }, t(key))),
        ),
      ),
      el(
        "tbody",
        null,
        pin.candidates.map((c, index) => candidateRow(c, index, c.slug === locked)),
      ),
    ),
  );
}

function candidateRow(c, index, locked) {
  const num = (text) => el("td", { class: "num" }, text);
  const throughput =
    c.throughput === null || c.throughput === undefined
      ? t("status.none")
      : t("openrouter.tps", { n: significant(c.throughput) });
  return el(
    "tr",
    { class: locked ? "locked" : null, "data-testid": "openrouter-candidate", "data-slug": c.slug },
    num(String(index + 1)),
    el("td", { class: "mono" }, c.slug),
    num(significant(c.score)),
    num(pricePerMillion(c.prompt)),
    num(pricePerMillion(c.completion)),
    num(pricePerMillion(c.input_cache_read)),
    el("td", null, t(c.caching ? "openrouter.yes" : "openrouter.no")),
    num(throughput),
    el(
      "td",
      null,
      locked ? el("span", { class: "chip ok", "data-testid": "openrouter-pinned" }, t("openrouter.pinned")) : null,
      c.cooled_until
        ? el(
            "span",
            { class: "chip warn", "data-testid": "openrouter-cooling" },
            t("openrouter.coolingUntil", { time: clockTime(c.cooled_until) }),
          )
        : null,
    ),
  );
}

// --- Savings (seed 003): shown in the Usage panel, from GET /openrouter ---------------------

// 10000000 -> "10M" (en), "1000万" (zh); en-US, as en-GB writes "10m".
function compact(n) {
  const options = { notation: "compact", maximumFractionDigits: 1 };
  return Number(n).toLocaleString(state.lang === "zh" ? "zh-CN" : "en-US", options);
}

function usd(n) {
  const small = n !== 0 && Math.abs(n) < 0.01;
  const digits = small ? { maximumSignificantDigits: 2 } : { minimumFractionDigits: 2, maximumFractionDigits: 2 };
  return `$${Number(n).toLocaleString(locale(), digits)}`;
}

// What each pinned OpenRouter model saves against its official provider (seed 003's estimate, from
// GET /openrouter): a line per model that has an estimate.
export function renderSavings() {
  const box = byId("usage-savings");
  box.replaceChildren();
  const models = state.openrouter ? state.openrouter.models.filter((m) => m.estimate) : [];
  if (!models.length) return;
  box.append(
    el("h3", null, t("usage.savings")),
    el(
      "ul",
      { class: "plain" },
      models.map((m) =>
        el(
          "li",
          {
            class: "entry",
            "data-testid": "usage-savings",
            "data-model": m.model,
          },
          el("span", { class: "strong mono" }, m.model),
          el("span", { class: "msg" }, savingsText(m.estimate)),
        ),
      ),
    ),
  );
}

function savingsText(e) {
  const vars = {
    pinned: e.pinned,
    official: e.official,
    pinnedUsd: usd(e.pinned_usd),
    input: compact(e.input_tokens),
    output: compact(e.output_tokens),
    hit: Math.round(e.hit_rate * 100),
  };
  if (e.official === null || e.official_usd === null) return t("usage.savingsUnknown", vars);
  if (e.official === e.pinned) return t("usage.savingsSame", vars);
  const saved = e.savings_usd === null ? e.official_usd - e.pinned_usd : e.savings_usd;
  Object.assign(vars, { officialUsd: usd(e.official_usd), savings: usd(Math.abs(saved)) });
  return t(saved >= 0 ? "usage.savingsLine" : "usage.costsLine", vars);
}
