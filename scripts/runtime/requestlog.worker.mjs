// The workerd runtime's front worker (workerd.mjs): the listening socket's service, in front of the
// Python Worker. It does what the Node runtime's front door does and Cloudflare's edge does in
// production, nothing more: names the caller in CF-Connecting-IP, fires the Cron Trigger on
// `/cdn-cgi/handler/scheduled` as `wrangler dev` does, and prints one log line per request
// (logline.mjs) once its answer has been sent, the whole stream for a stream.
//
// Bindings: WORKER (the Python Worker), COLOUR (JSON: whether lines carry ANSI colour).
import { formatLine, routingOf } from "./logline.mjs";

const SCHEDULED_PATH = "/cdn-cgi/handler/scheduled";

/** The caller's address as Cloudflare's edge names it, unless the request already names one. */
function withCaller(request) {
  const peer = request.cf?.clientIp;
  if (!peer || request.headers.has("cf-connecting-ip")) return request;
  const named = new Request(request);
  named.headers.set("CF-Connecting-IP", peer.replace(/^::ffff:/, ""));
  return named;
}

async function runScheduled(url, worker) {
  const query = url.searchParams;
  await worker.scheduled({ cron: query.get("cron") ?? "", scheduledTime: new Date(Number(query.get("time")) || Date.now()) });
  return new Response("Ran scheduled event", { headers: { "content-type": "text/plain" } });
}

export default {
  async fetch(request, env, ctx) {
    const started = performance.now();
    const url = new URL(request.url);
    const log = (response, unfinished) =>
      console.log(
        formatLine({
          method: request.method,
          path: url.pathname + url.search,
          status: response.status,
          statusText: response.statusText,
          durationMs: performance.now() - started,
          routing: routingOf(response.headers),
          unfinished,
          colour: env.COLOUR,
        }),
      );
    let response;
    try {
      response = url.pathname === SCHEDULED_PATH ? await runScheduled(url, env.WORKER) : await env.WORKER.fetch(withCaller(request));
    } catch (err) {
      // As workerd answers a Worker's uncaught exception: a bare 500, the error in the log.
      console.error("Uncaught exception in fetch:", err);
      response = new Response("Internal Server Error", { status: 500, headers: { "content-type": "text/plain" } });
    }
    if (!response.body) {
      log(response, false);
      return response;
    }
    // A native stream in between tells when the last byte went out, or that the caller left.
    const { readable, writable } = new IdentityTransformStream();
    ctx.waitUntil(
      response.body.pipeTo(writable).then(
        () => log(response, false),
        () => log(response, true),
      ),
    );
    return new Response(readable, response);
  },
};
