// The local runtime's request log: one line per request on stdout, as `wrangler dev` prints.
//
//   [request] POST /v1/chat/completions 200 OK (412ms) via groq/llama-3.3-70b-versatile after 1 failed [cerebras/llama3.1-8b: rate_limited]
//
// What a line may hold, and nothing else: the method; the path WITHOUT its query string (Gemini
// clients send the API token as `?key=`); the status; the duration; and three of the Worker's own
// response headers, which hold provider and model names and failure classes, no secret:
// X-Routed-Via (who served), X-Fallback-Attempts and X-Fallback-Trail (the attempts that failed).
// Never a request header, a token, a key or a body. Control characters are replaced, so a crafted
// path cannot drive the terminal.
//
// Colour only when stdout is a terminal, and not when NO_COLOR is set (https://no-color.org).

import http from "node:http";

const ROUTED_VIA = "x-routed-via";
const FALLBACK_ATTEMPTS = "x-fallback-attempts";
const FALLBACK_TRAIL = "x-fallback-trail";

// Miniflare's choice for `wrangler dev` (core/entry.worker.js, colourFromHTTPStatus).
const STATUS_COLOUR = [
  [200, 300, 32], // green
  [400, 500, 33], // yellow
  [500, 1000, 31], // red
];
const BLUE = 34;
const GREY = 90;

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** True when lines written to `stream` should carry ANSI colour. */
export function wantsColour(stream, env = process.env) {
  return Boolean(stream.isTTY) && !env.NO_COLOR;
}

/** The path of a request target, without query string or fragment, safe to print. */
export function pathOf(target) {
  const end = target.search(/[?#]/);
  return (end === -1 ? target : target.slice(0, end)).replace(CONTROL, "?");
}

/**
 * The routing facts of a Web `Response`, read once its headers are known: the three headers the
 * line may show (null when absent).
 */
export function routingOf(headers) {
  return {
    via: headers.get(ROUTED_VIA),
    attempts: headers.get(FALLBACK_ATTEMPTS),
    trail: headers.get(FALLBACK_TRAIL),
  };
}

/**
 * One log line (no newline).
 * @param {{method: string, path: string, status: number, statusText: string, durationMs: number,
 *          routing?: {via: string|null, attempts: string|null, trail: string|null},
 *          unfinished?: boolean, colour?: boolean}} entry
 *   `unfinished`: the connection closed before the whole response was sent.
 */
export function formatLine({ method, path, status, statusText, durationMs, routing = {}, unfinished = false, colour = false }) {
  const paint = colour ? (code, text) => `\u001b[${code}m${text}\u001b[0m` : (_code, text) => text;
  const safe = (text) => String(text).replace(CONTROL, "?");
  const statusColour = STATUS_COLOUR.find(([low, high]) => low <= status && status < high)?.[2] ?? BLUE;
  const timing = `(${Math.round(durationMs)}ms${unfinished ? ", client went away" : ""})`;
  const parts = [
    "[request]",
    paint(1, safe(method)),
    pathOf(path),
    paint(statusColour, `${status} ${safe(statusText)}`.trimEnd()),
    paint(GREY, timing),
  ];
  if (routing.via) parts.push(`via ${safe(routing.via)}`);
  if (routing.attempts) {
    const trail = routing.trail ? ` [${safe(routing.trail)}]` : "";
    parts.push(paint(33, `after ${safe(routing.attempts)} failed${trail}`));
  }
  return parts.join(" ");
}

/**
 * Start timing one request; returns the entry the handler fills in (`routing`, `statusText`, from
 * the Worker's Response) and whose `handled()` it calls when it is done.
 *
 * The line is printed once the exchange is over: the response's `close` event (sent, or the
 * caller went away) AND `handled()`, whichever comes last; so no formatting happens before the
 * last byte is handed to the socket. A stream is logged when it ends, its duration the whole
 * stream (what a chat client waits for) rather than the time to its headers; a caller that left
 * early is timed to when it left and marked. performance.now(), not Date.now(): the tests' clock
 * moves Date.now().
 */
export function trackRequest(req, res, colour) {
  const started = performance.now();
  const entry = { routing: undefined, statusText: "", handled };
  let closed;
  let done = false;
  function print() {
    const status = res.statusCode;
    const line = formatLine({
      method: req.method,
      path: req.url,
      status,
      statusText: entry.statusText || http.STATUS_CODES[status] || "",
      durationMs: closed.at - started,
      routing: entry.routing,
      unfinished: !closed.finished,
      colour,
    });
    process.stdout.write(`${line}\n`);
  }
  function handled() {
    done = true;
    if (closed) print();
  }
  res.once("close", () => {
    closed = { at: performance.now(), finished: res.writableFinished };
    if (done) print();
  });
  return entry;
}
