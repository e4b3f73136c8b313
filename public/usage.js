// The Usage panel (SPEC §17): a range's counts by provider and by client, as charts
// (usagecharts.js), totals and a table, and the recent failures.
//
// GET /usage answers buckets (one per UTC hour and group that had traffic), groups (one per group
// over the range, most requests first) and totals, each with the same counts.

import { I18N } from "./i18n.js";
import { state, t, clockTime, byId, el, api } from "./core.js";
import { HOUR_MS, DAY_MS, count, groupLabel, timeChart, tokensChart, latencyChart } from "./usagecharts.js";

// The Usage panel's ranges (SPEC §17): how far back, and what one bar of the time chart covers
// (the server counts per UTC hour; 30 d sums them into UTC days).
const USAGE_RANGES = {
  "24h": { ms: DAY_MS, slotMs: HOUR_MS },
  "7d": { ms: 7 * DAY_MS, slotMs: HOUR_MS },
  "30d": { ms: 30 * DAY_MS, slotMs: DAY_MS },
};
const FAILURES_SHOWN = 20;
// The per-provider counts the totals line and the table show, in order (usage.col.<name>).
const USAGE_COUNTS = ["requests", "successes", "failovers", "errors", "streams_cut", "rescues"];

// The chosen range by provider and by client, and the recent failures: as many as the server
// keeps (GET /events without a limit lists them all), so the page holds no count of its own. True
// when they were taken; false when the range changed while they were on their way (a later load
// holds the new one).
export async function loadUsage() {
  const usage = state.usage;
  const seq = ++usage.seq;
  const range = usage.range;
  const to = Date.now();
  const query = `/usage?from=${to - USAGE_RANGES[range].ms}&to=${to}&by=`;
  const [provider, client, events] = await Promise.all([
    api("GET", `${query}provider`),
    api("GET", `${query}client`),
    api("GET", "/events"),
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

// A failure class (SPEC §5.1) in this page's words; a class this page does not know, as sent.
function classLabel(cls) {
  return Object.hasOwn(I18N[state.lang], `usage.class.${cls}`) ? t(`usage.class.${cls}`) : cls;
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
      timeChart(data, USAGE_RANGES[usage.shown].slotMs),
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
