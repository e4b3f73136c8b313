// The Node runtime's request log: one line per request on stdout (logline.mjs), as `wrangler dev`
// prints. Colour only when stdout is a terminal, and not when NO_COLOR is set (https://no-color.org).
import { formatLine } from "./logline.mjs";

export { StreamFailures, routingOf } from "./logline.mjs";

/** True when lines written to `stream` should carry ANSI colour. */
export function wantsColour(stream, env = process.env) {
  return Boolean(stream.isTTY) && !env.NO_COLOR;
}

/**
 * Start timing one request; returns the entry the handler fills in (`routing`, `statusText`, from
 * the Worker's Response) and whose `handled()` it calls when it is done. `failures`: the
 * StreamFailures the Worker's stderr feeds, where the line finds its stream's failure.
 *
 * The line is printed once the exchange is over: the response's `close` event (sent, or the
 * caller went away) AND `handled()`, whichever comes last; so no formatting happens before the
 * last byte is handed to the socket. A stream is logged when it ends, its duration the whole
 * stream (what a chat client waits for) rather than the time to its headers; a caller that left
 * early is timed to when it left and marked. performance.now(), not Date.now(): the tests' clock
 * moves Date.now().
 */
export function trackRequest(req, res, colour, failures) {
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
      statusText: entry.statusText,
      durationMs: closed.at - started,
      routing: entry.routing,
      failure: failures.take(entry.routing?.requestId),
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
