// One request log line, as both local runtimes print it (the Node runtime from its HTTP server,
// requestlog.mjs; workerd from its front worker, requestlog.worker.mjs):
//
//   [request] POST /v1/chat/completions 200 OK (412ms) via groq/llama-3.3-70b-versatile after 1 failed [cerebras/llama3.1-8b: rate_limited]
//
// What a line may hold, and nothing else: the method; the path WITHOUT its query string (Gemini
// clients send the API token as `?key=`); the status; the duration; and three of the Worker's own
// response headers, which hold provider and model names and failure classes, no secret:
// X-Routed-Via (who served), X-Fallback-Attempts and X-Fallback-Trail (the attempts that failed).
// Never a request header, a token, a key or a body. Control characters are replaced, so a crafted
// path cannot drive the terminal. No Node or workerd API here: both import this module.
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

// RFC 9110's reason phrases, as Node's http.STATUS_CODES has them: a Response built without a
// statusText (the Worker's) is logged with its status's phrase.
const REASONS = {
  100: "Continue", 101: "Switching Protocols", 102: "Processing", 103: "Early Hints", 200: "OK",
  201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content",
  205: "Reset Content", 206: "Partial Content", 207: "Multi-Status", 208: "Already Reported", 226: "IM Used",
  300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
  305: "Use Proxy", 307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
  401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required",
  408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed",
  413: "Payload Too Large", 414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
  417: "Expectation Failed", 418: "I'm a Teapot", 421: "Misdirected Request", 422: "Unprocessable Entity",
  423: "Locked", 424: "Failed Dependency", 425: "Too Early", 426: "Upgrade Required",
  428: "Precondition Required", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
  451: "Unavailable For Legal Reasons", 500: "Internal Server Error", 501: "Not Implemented",
  502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
  506: "Variant Also Negotiates", 507: "Insufficient Storage", 508: "Loop Detected",
  509: "Bandwidth Limit Exceeded", 510: "Not Extended", 511: "Network Authentication Required",
};

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

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
  return parts.join(" ");
}

