// The Usage panel's charts (SPEC §17), inline SVG: requests and errors over time, tokens per client,
// latency per provider. Every chart shows its numbers as text beside its bars (the time chart: a
// legend, its axes and a title per bar).

import { t, el, locale } from "./core.js";

export const HOUR_MS = 3600000;
export const DAY_MS = 24 * HOUR_MS;
const SVG_NS = "http://www.w3.org/2000/svg";

export function count(n) {
  return Number(n || 0).toLocaleString(locale());
}

// The server's id-0 groups, in this page's words: the default API token among clients, "nothing
// served" among providers (every provider failed).
export function groupLabel(by, id, name) {
  if (id !== 0) return name;
  return t(by === "client" ? "usage.apiToken" : "usage.noProvider");
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

export function timeChart(data, slotMs) {
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
export function tokensChart(data) {
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
export function latencyChart(data) {
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
