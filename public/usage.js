// The Usage panel: a range's counts as charts and a table, the recent failures, and what the
// OpenRouter pins save.

import { I18N } from "./i18n.js";
import { state, t, clockTime, byId, el, api, locale } from "./core.js";

const HOUR_MS = 3600000;
const DAY_MS = 24 * HOUR_MS;
// The Usage panel's ranges (SPEC §17): how far back, and what one bar of the time chart covers
// (the server counts per UTC hour; 30 d sums them into UTC days).
const USAGE_RANGES = {
  "24h": { ms: DAY_MS, slotMs: HOUR_MS },
  "7d": { ms: 7 * DAY_MS, slotMs: HOUR_MS },
  "30d": { ms: 30 * DAY_MS, slotMs: DAY_MS },
};
// The server lists the newest 200 failures of the last 7 days; the panel asks for all of them.
const EVENTS_LIMIT = 200;
const FAILURES_SHOWN = 20;
// The per-provider counts the totals line and the table show, in order (usage.col.<name>).
const USAGE_COUNTS = ["requests", "successes", "failovers", "errors", "streams_cut", "rescues"];
const SVG_NS = "http://www.w3.org/2000/svg";

// --- Usage and health (SPEC §17): a range's counts by provider and by client, the failures ----
//
// GET /usage answers buckets (one per UTC hour and group that had traffic), groups (one per group
// over the range, most requests first) and totals, each with the same counts. Every chart shows
// its numbers as text beside its bars (the time chart: a legend, its axes and a title per bar).

// The chosen range by provider and by client, and the recent failures. True when they were
// taken; false when the range changed while they were on their way (a later load holds the new one).
export async function loadUsage() {
  const usage = state.usage;
  const seq = ++usage.seq;
  const range = usage.range;
  const to = Date.now();
  const query = `/usage?from=${to - USAGE_RANGES[range].ms}&to=${to}&by=`;
  const [provider, client, events] = await Promise.all([
    api("GET", `${query}provider`),
    api("GET", `${query}client`),
    api("GET", `/events?limit=${EVENTS_LIMIT}`),
  ]);
  if (seq !== usage.seq) return false;
  Object.assign(usage, { shown: range, provider, client, events: events.events });
  return true;
}

export async function reloadUsage() {
  if (await loadUsage()) renderUsage();
}

export async function chooseRange(range) {
  state.usage.range = range;
  renderUsageRange();
  await reloadUsage();
}

function count(n) {
  return Number(n || 0).toLocaleString(locale());
}

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

// The server's id-0 groups, in this page's words: the default API token among clients, "nothing
// served" among providers (every provider failed).
function groupLabel(by, id, name) {
  if (id !== 0) return name;
  return t(by === "client" ? "usage.apiToken" : "usage.noProvider");
}

// A failure class (SPEC §5.1) in this page's words; a class this page does not know, as sent.
function classLabel(cls) {
  return Object.hasOwn(I18N[state.lang], `usage.class.${cls}`) ? t(`usage.class.${cls}`) : cls;
}

// The start of a bar of the time chart: a local hour, or a UTC day.
function slotTime(ms, slotMs) {
  const options =
    slotMs === DAY_MS
      ? { month: "short", day: "numeric", timeZone: "UTC" }
      : { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hour12: false };
  return new Date(ms).toLocaleString(locale(), options);
}

// An SVG element with attributes and children (nodes, or strings as text).
function svgEl(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function renderUsageRange() {
  for (const button of document.querySelectorAll("#usage-range button")) {
    button.setAttribute("aria-pressed", String(button.getAttribute("data-range") === state.usage.range));
  }
}

export function renderUsage() {
  const usage = state.usage;
  renderUsageRange();
  const box = byId("usage");
  box.replaceChildren();
  box.setAttribute("data-shown", usage.shown); // the range of the counts on show
  const data = usage.provider;
  if (!data) return; // not loaded: the panel's note says why
  if (!data.groups.length) {
    box.append(el("p", { class: "muted", "data-testid": "usage-empty" }, t("usage.empty")));
  } else {
    box.append(
      usageTotals(data.totals),
      timeChart(data),
      el("div", { class: "grid2" }, tokensChart(usage.client), latencyChart(data)),
      providerTable(data),
    );
  }
  box.append(failureList(usage.events));
}

function usageTotals(totals) {
  return el(
    "div",
    { class: "meta usage-totals", "data-testid": "usage-totals" },
    USAGE_COUNTS.map((name) =>
      el(
        "span",
        { "data-testid": "usage-total", "data-stat": name },
        el("span", { class: "k" }, t(`usage.col.${name}`)),
        el("span", { class: "strong" }, count(name === "errors" ? totals.error_count : totals[name])),
      ),
    ),
  );
}

function chart(testId, title, legend, ...body) {
  return el(
    "figure",
    { class: "chart", "data-testid": testId },
    el("figcaption", null, el("h3", null, title), legend),
    ...body,
  );
}

// A legend entry: the colour of its bars, its name and (for a series with a total) the total.
function legendItem(series, label, total) {
  return el(
    "li",
    { "data-series": series },
    el("span", { class: `swatch s-${series}`, "aria-hidden": "true" }),
    label,
    total === undefined
      ? null
      : el("span", { class: "strong", "data-testid": "usage-legend-total" }, ` ${count(total)}`),
  );
}

// Requests and errors per bar over the whole range, bars without traffic included.
function timeSlots(data, slotMs) {
  const floor = (ms) => ms - (ms % slotMs);
  const hours = data.buckets.map((b) => floor(b.hour));
  const first = Math.min(floor(data.from), ...hours);
  const last = Math.max(floor(data.to - 1), ...hours);
  const slots = [];
  for (let at = first; at <= last; at += slotMs) slots.push({ at, requests: 0, errors: 0 });
  for (const b of data.buckets) {
    const slot = slots[(floor(b.hour) - first) / slotMs];
    slot.requests += b.requests;
    slot.errors += b.error_count;
  }
  return slots;
}

// A bar of the time chart: 10 units per slot, 100 high, requests left and errors right.
function columnBar(x, value, top, series) {
  const height = value ? Math.max(1.5, (value / top) * 100) : 0;
  return svgEl("rect", { class: `s-${series}`, x, y: 100 - height, width: 4.5, height, "data-value": value });
}

function timeChart(data) {
  const slotMs = USAGE_RANGES[state.usage.shown].slotMs;
  const slots = timeSlots(data, slotMs);
  const top = Math.max(1, ...slots.map((s) => Math.max(s.requests, s.errors)));
  const title = t("usage.timeChart");
  const svg = svgEl(
    "svg",
    {
      viewBox: `0 0 ${slots.length * 10} 100`,
      preserveAspectRatio: "none",
      role: "img",
      "aria-label": title,
    },
    slots.map((s, i) =>
      svgEl(
        "g",
        {
          "data-testid": "usage-slot",
          "data-time": s.at,
          "data-requests": s.requests,
          "data-errors": s.errors,
        },
        svgEl(
          "title",
          null,
          t("usage.slotTitle", { time: slotTime(s.at, slotMs), requests: count(s.requests), errors: count(s.errors) }),
        ),
        columnBar(i * 10 + 0.5, s.requests, top, "req"),
        columnBar(i * 10 + 5, s.errors, top, "err"),
      ),
    ),
  );
  const middle = slots[Math.floor(slots.length / 2)];
  return chart(
    "usage-chart-time",
    title,
    el(
      "ul",
      { class: "legend" },
      legendItem("req", t("usage.col.requests"), data.totals.requests),
      legendItem("err", t("usage.col.errors"), data.totals.error_count),
      el("li", { class: "muted" }, t(slotMs === DAY_MS ? "usage.perDay" : "usage.perHour")),
    ),
    el(
      "div",
      { class: "plot" },
      el(
        "div",
        { class: "y-axis", "aria-hidden": "true" },
        el("span", { "data-testid": "usage-y-top" }, count(top)),
        el("span", null, "0"),
      ),
      svg,
      el(
        "div",
        { class: "x-axis", "aria-hidden": "true" },
        [slots[0], middle, slots[slots.length - 1]].map((s) => el("span", null, slotTime(s.at, slotMs))),
      ),
    ),
  );
}

// A horizontal bar (0..top) and its number as text; wraps under the bar when the row is narrow.
function hbar(series, value, top, text, testId) {
  const width = value ? Math.max(0.5, (value / top) * 100) : 0;
  return el(
    "div",
    { class: "hbar" },
    svgEl(
      "svg",
      { viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
      svgEl("rect", { class: "track", width: 100, height: 10 }),
      svgEl("rect", { class: `s-${series}`, width, height: 10, "data-value": value }),
    ),
    el("span", { class: "hbar-value", "data-testid": testId, "data-value": value }, text),
  );
}

function tokenText(n, estimated, key) {
  return estimated ? t(`${key}Est`, { n: count(n), e: count(estimated) }) : t(key, { n: count(n) });
}

// Input and output tokens of each client: as reported plus as estimated (SPEC §17 counts them apart).
function tokensChart(data) {
  const groups = (data ? data.groups : [])
    .map((g) => ({
      g,
      input: g.tokens.input + g.tokens.estimated_input,
      output: g.tokens.output + g.tokens.estimated_output,
    }))
    .filter((c) => c.input || c.output);
  const top = Math.max(1, ...groups.map((c) => Math.max(c.input, c.output)));
  const rows = groups.map(({ g, input, output }) =>
    el(
      "div",
      {
        class: "hbar-group",
        "data-testid": "usage-client",
        "data-group": g.group,
        "data-id": g.id,
      },
      el("span", { class: "strong" }, groupLabel("client", g.id, g.group)),
      hbar("in", input, top, tokenText(input, g.tokens.estimated_input, "usage.tokensIn"), "usage-tokens-in"),
      hbar("out", output, top, tokenText(output, g.tokens.estimated_output, "usage.tokensOut"), "usage-tokens-out"),
    ),
  );
  return chart(
    "usage-chart-tokens",
    t("usage.tokensChart"),
    el("ul", { class: "legend" }, legendItem("in", t("usage.input")), legendItem("out", t("usage.output"))),
    el("p", { class: "muted" }, t("usage.tokensHelp")),
    rows.length ? el("div", { class: "hbars" }, rows) : el("p", { class: "muted" }, t("usage.noTokens")),
  );
}

function ms(value) {
  return value === null || value === undefined ? t("status.none") : t("usage.ms", { n: count(Math.round(value)) });
}

// p95 as a light bar with p50 over it, and both as text.
function latencyBar(q, top, key, testId) {
  const width = (v) => (v ? Math.max(0.5, (v / top) * 100) : 0);
  return el(
    "div",
    { class: "hbar" },
    svgEl(
      "svg",
      { viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
      svgEl("rect", { class: "track", width: 100, height: 10 }),
      svgEl("rect", { class: "s-p95", width: width(q.p95), height: 10, "data-value": q.p95 }),
      svgEl("rect", { class: "s-p50", width: width(q.p50), height: 10, "data-value": q.p50 }),
    ),
    el(
      "span",
      { class: "hbar-value", "data-testid": testId, "data-p50": q.p50, "data-p95": q.p95 },
      t(key, { p50: ms(q.p50), p95: ms(q.p95) }),
    ),
  );
}

// Latency to the first byte and to the end per provider (the server's p50 and p95, null without a sample).
function latencyChart(data) {
  const measured = data.groups.filter((g) => g.latency_ms.first_byte.p95 !== null || g.latency_ms.end.p95 !== null);
  const values = measured.flatMap((g) => [g.latency_ms.first_byte.p95, g.latency_ms.end.p95]);
  const top = Math.max(1, ...values.filter((v) => v !== null));
  const rows = measured.map((g) =>
    el(
      "div",
      {
        class: "hbar-group",
        "data-testid": "usage-latency",
        "data-group": g.group,
        "data-id": g.id,
      },
      el("span", { class: "strong" }, groupLabel("provider", g.id, g.group)),
      latencyBar(g.latency_ms.first_byte, top, "usage.firstByte", "usage-latency-first"),
      latencyBar(g.latency_ms.end, top, "usage.toEnd", "usage-latency-end"),
    ),
  );
  return chart(
    "usage-chart-latency",
    t("usage.latencyChart"),
    el("ul", { class: "legend" }, legendItem("p50", t("usage.p50")), legendItem("p95", t("usage.p95"))),
    rows.length ? el("div", { class: "hbars" }, rows) : el("p", { class: "muted" }, t("usage.noLatency")),
  );
}

// The errors of a group by class, most first: "rate limited 3", "timeout 1".
function errorClasses(errors) {
  const classes = Object.entries(errors || {})
    .filter(([, n]) => n)
    .sort((a, b) => b[1] - a[1]);
  if (!classes.length) return t("status.none");
  return el(
    "span",
    { class: "classes" },
    classes.map(([cls, n]) =>
      el(
        "span",
        { class: "chip warn", "data-class": cls, "data-value": n, title: cls },
        `${classLabel(cls)} ${count(n)}`,
      ),
    ),
  );
}

function providerTable(data) {
  const num = (name, value) => el("td", { class: "num", "data-stat": name }, count(value));
  const head = ["provider", "requests", "successes", "failovers", "errors", "classes", "streams_cut", "rescues"];
  return el(
    "div",
    { class: "stack" },
    el("h3", null, t("usage.table")),
    el(
      "div",
      { class: "table-wrap" },
      el(
        "table",
        { class: "ranked", "data-testid": "usage-providers" },
        el(
          "thead",
          null,
          el(
            "tr",
            null,
            head.map((name) =>
              el(
                "th",
                {
                  class: name === "provider" || name === "classes" ? null : "num",
                  scope: "col",
                },
                t(`usage.col.${name}`),
              ),
            ),
          ),
        ),
        el(
          "tbody",
          null,
          data.groups.map((g) =>
            el(
              "tr",
              {
                "data-testid": "usage-provider",
                "data-group": g.group,
                "data-id": g.id,
              },
              el("td", { class: "strong", "data-stat": "provider" }, groupLabel("provider", g.id, g.group)),
              num("requests", g.requests),
              num("successes", g.successes),
              num("failovers", g.failovers),
              num("errors", g.error_count),
              el("td", { "data-stat": "classes" }, errorClasses(g.errors)),
              num("streams_cut", g.streams_cut),
              num("rescues", g.rescues),
            ),
          ),
        ),
      ),
    ),
  );
}

function failureList(events) {
  const usage = state.usage;
  const shown = usage.showAll ? events : events.slice(0, FAILURES_SHOWN);
  const toggle =
    events.length > FAILURES_SHOWN
      ? el(
          "button",
          {
            type: "button",
            class: "small",
            "data-testid": "usage-failures-toggle",
            "aria-expanded": String(usage.showAll),
            onclick: () => {
              usage.showAll = !usage.showAll;
              renderUsage();
            },
          },
          usage.showAll ? t("usage.showFewer", { n: FAILURES_SHOWN }) : t("usage.showAll", { n: events.length }),
        )
      : null;
  return el(
    "div",
    { class: "stack", "data-testid": "usage-failures" },
    el("div", { class: "between" }, el("h3", null, t("usage.failures")), toggle),
    events.length
      ? el("ul", { class: "plain" }, shown.map(failureEntry))
      : el("p", { class: "muted", "data-testid": "usage-failures-empty" }, t("usage.noFailures")),
  );
}

function failureEntry(e) {
  return el(
    "li",
    { class: "entry", "data-testid": "usage-failure", "data-class": e.class, "data-time": e.time },
    el("span", { class: "mono", "data-testid": "usage-failure-time" }, clockTime(e.time)),
    el(
      "span",
      { class: "strong", "data-testid": "usage-failure-provider" },
      groupLabel("provider", e.provider_id, e.provider),
    ),
    e.key_id
      ? el("span", { class: "chip mono", "data-testid": "usage-failure-key" }, t("status.key", { id: e.key_id }))
      : null,
    el("span", { class: "chip mono", "data-testid": "usage-failure-model" }, e.model),
    el("span", { class: "chip warn", "data-testid": "usage-failure-class", title: e.class }, classLabel(e.class)),
    el(
      "span",
      { "data-testid": "usage-failure-status" },
      e.status === null ? t("status.none") : t("status.http", { status: e.status }),
    ),
    el(
      "span",
      null,
      el("span", { class: "k" }, t("usage.client")),
      el("span", { "data-testid": "usage-failure-client" }, groupLabel("client", e.client_id, e.client)),
    ),
    el("span", { class: "chip off" }, e.surface),
    e.message ? el("span", { class: "msg", "data-testid": "usage-failure-message" }, e.message) : null,
  );
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
