// One request log line, as the local runtime prints it from its host process (workerd.mjs), with
// what its front worker (requestlog.worker.mjs) reports:
//
//   [request] POST /v1/chat/completions 200 OK (412ms) via groq/llama-3.3-70b-versatile after 1 failed [cerebras/llama3.1-8b: rate_limited]
//   [request] POST /v1/chat/completions 200 OK (81ms) via backup/m stream failed: cut
//   [request] POST /v1/chat/completions 200 OK (930ms) via backup/m stream cut, rescued by groq/m (re-ask)
//
// What a line may hold, and nothing else: the method; the path WITHOUT its query string (Gemini
// clients send the API token as `?key=`); the status; the duration; three of the Worker's own
// response headers, which hold provider and model names and failure classes, no secret:
// X-Routed-Via (who served), X-Fallback-Attempts and X-Fallback-Trail (the attempts that failed);
// and, for a stream that ended in-band with an error (its status long sent), the Worker's word for
// why. Never a request header, a token, a key or a body. Control characters are replaced, so a
// crafted path cannot drive the terminal. No Node or workerd API here: both processes import this module.
//
// A stream's failure is known only inside the Worker: the front worker does not see into a stream (that
// would cost JavaScript per chunk). The Worker logs one warning per such stream, naming the
// answer's X-Request-Id (gateway/shell/stream.py, log_failure), before it ends the stream; the
// host process reads the Worker's output, keeps those warnings in a `StreamFailures`,
// and the request's line, printed once the stream has ended, takes its own by id.
const ROUTED_VIA = "x-routed-via";
const FALLBACK_ATTEMPTS = "x-fallback-attempts";
const FALLBACK_TRAIL = "x-fallback-trail";
const REQUEST_ID = "x-request-id";

// Miniflare's choice for `wrangler dev` (core/entry.worker.js, colourFromHTTPStatus).
const STATUS_COLOUR = [
  [200, 300, 32], // green
  [400, 500, 33], // yellow
  [500, 1000, 31], // red
];
const BLUE = 34;
const GREY = 90;

// RFC 9110's reason phrases, as Node's http.STATUS_CODES has them: a Response built without a
// statusText (the Worker's) is logged with its status's phrase.
const REASONS = {
  100: "Continue",
  101: "Switching Protocols",
  102: "Processing",
  103: "Early Hints",
  200: "OK",
  201: "Created",
  202: "Accepted",
  203: "Non-Authoritative Information",
  204: "No Content",
  205: "Reset Content",
  206: "Partial Content",
  207: "Multi-Status",
  208: "Already Reported",
  226: "IM Used",
  300: "Multiple Choices",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  305: "Use Proxy",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Payload Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  416: "Range Not Satisfiable",
  417: "Expectation Failed",
  418: "I'm a Teapot",
  421: "Misdirected Request",
  422: "Unprocessable Entity",
  423: "Locked",
  424: "Failed Dependency",
  425: "Too Early",
  426: "Upgrade Required",
  428: "Precondition Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  451: "Unavailable For Legal Reasons",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
  506: "Variant Also Negotiates",
  507: "Insufficient Storage",
  508: "Loop Detected",
  509: "Bandwidth Limit Exceeded",
  510: "Not Extended",
  511: "Network Authentication Required",
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it takes out of a printed path
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** The path of a request target, without query string or fragment, safe to print. */
export function pathOf(target) {
  const end = target.search(/[?#]/);
  return (end === -1 ? target : target.slice(0, end)).replace(CONTROL, "?");
}

/**
 * The routing facts of a Web `Response`, read once its headers are known: the three headers the
 * line may show, and the request id its stream's failure would name (null when absent).
 */
export function routingOf(headers) {
  return {
    via: headers.get(ROUTED_VIA),
    attempts: headers.get(FALLBACK_ATTEMPTS),
    trail: headers.get(FALLBACK_TRAIL),
    requestId: headers.get(REQUEST_ID),
  };
}

// The Worker's warning about a stream that ended in-band with an error (stream.py, log_failure):
// `stream failed: <reason> (via <provider/model>, request <id>)`. The id has no space; the
// reason is one of a few words, none holding " (via ".
const STREAM_FAILED = /^stream failed: (.+?) \(via .*, request (\S+)\)$/;
// And its line about a stream it rescued (SPEC §16; stream.py, log_rescue):
// `stream rescued: <fault> (via <provider/model>, request <id>) by <provider/model> (<method>)`.
const STREAM_RESCUED = /^stream rescued: (.+?) \(via .*, request (\S+)\) by (.+) \((.+)\)$/;
// A failure whose line was printed before it came (a caller that left as the stream failed) is
// never taken: beyond this many kept, the oldest are forgotten.
const FAILURES_KEPT = 100;

/** The stream failures the Worker reported, by request id, until each request's line takes its own. */
export class StreamFailures {
  #reasons = new Map();

  /** Keep the failure that `message` (one line of the Worker's output) reports, if it reports one. */
  note(message) {
    const failed = STREAM_FAILED.exec(message);
    const rescued = failed ? null : STREAM_RESCUED.exec(message);
    if (failed) this.#reasons.set(failed[2], { text: `stream failed: ${failed[1]}`, colour: 31 });
    else if (rescued)
      this.#reasons.set(rescued[2], {
        text: `stream ${rescued[1]}, rescued by ${rescued[3]} (${rescued[4]})`,
        colour: 32,
      });
    else return;
    if (this.#reasons.size > FAILURES_KEPT) this.#reasons.delete(this.#reasons.keys().next().value);
  }

  /** How the stream of request `requestId` failed or was rescued (`{text, colour}`), once; null
   *  when neither (or no id). */
  take(requestId) {
    const reason = requestId ? this.#reasons.get(requestId) : undefined;
    if (reason === undefined) return null;
    this.#reasons.delete(requestId);
    return reason;
  }
}

/**
 * One log line (no newline).
 * @param {{method: string, path: string, status: number, statusText: string, durationMs: number,
 *          routing?: {via: string|null, attempts: string|null, trail: string|null},
 *          failure?: string|null, unfinished?: boolean, colour?: boolean}} entry
 *   `failure`: why the stream ended in-band with an error, or who rescued it (`StreamFailures.take`).
 *   `unfinished`: the connection closed before the whole response was sent.
 */
export function formatLine({
  method,
  path,
  status,
  statusText,
  durationMs,
  routing = {},
  failure = null,
  unfinished = false,
  colour = false,
}) {
  const paint = colour ? (code, text) => `\u001b[${code}m${text}\u001b[0m` : (_code, text) => text;
  const safe = (text) => String(text).replace(CONTROL, "?");
  const statusColour = STATUS_COLOUR.find(([low, high]) => low <= status && status < high)?.[2] ?? BLUE;
  const reason = statusText || REASONS[status] || "";
  const timing = `(${Math.round(durationMs)}ms${unfinished ? ", client went away" : ""})`;
  const parts = [
    "[request]",
    paint(1, safe(method)),
    pathOf(path),
    paint(statusColour, `${status} ${safe(reason)}`.trimEnd()),
    paint(GREY, timing),
  ];
  if (routing.via) parts.push(`via ${safe(routing.via)}`);
  if (routing.attempts) {
    const trail = routing.trail ? ` [${safe(routing.trail)}]` : "";
    parts.push(paint(33, `after ${safe(routing.attempts)} failed${trail}`));
  }
  if (failure) parts.push(paint(failure.colour, safe(failure.text)));
  return parts.join(" ");
}

// The workerd front worker hands each request's entry to its host as one log message: this tag,
// then the entry's JSON. The host adds the stream's failure, which only it can know, and prints.
const ENTRY_TAG = "[request-entry] ";

/** The log message that carries `entry` (formatLine's fields, but `failure` and `colour`). */
export function entryMessage(entry) {
  return ENTRY_TAG + JSON.stringify(entry);
}

/** The entry a log message carries, or null for any other message. */
export function entryOf(message) {
  return message.startsWith(ENTRY_TAG) ? JSON.parse(message.slice(ENTRY_TAG.length)) : null;
}
