// The workerd runtime's front worker (workerd.mjs): the listening socket's service, in front of the
// Python Worker. It does what Cloudflare's edge does in production, nothing
// more: names the caller in CF-Connecting-IP, fires the Cron Trigger on
// `/cdn-cgi/handler/scheduled` as `wrangler dev` does, and logs one entry per request once its
// answer has been sent, the whole stream for a stream. The host process (workerd.mjs) prints the
// entry as the request's line (logline.mjs), with what only it can know: whether the stream failed,
// which the Python Worker's own log says.
//
// What waits for the end of a stream holds the line's few fields, not the request or the
// response (a stream may last minutes; the isolate's heap is not collected the sooner for it).
//
// It also stands where Cloudflare's asset router stands: a path `run_worker_first` names goes to
// the Python Worker, any other asks the asset host first (assetroutes.mjs).
//
// Bindings: WORKER (the Python Worker), ASSETS (the asset host, when wrangler.jsonc has assets),
// RUN_WORKER_FIRST (its rules).
import { fileOrNull, workerFirst } from "./assetroutes.mjs";
import { entryMessage, routingOf } from "./logline.mjs";

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
  await worker.scheduled({
    cron: query.get("cron") ?? "",
    scheduledTime: new Date(Number(query.get("time")) || Date.now()),
  });
  return new Response("Ran scheduled event", { headers: { "content-type": "text/plain" } });
}

let isWorkerFirst; // the rules, compiled at the first request (env is not there before)

/** The file's answer, or null when the request is the Worker's (the router found no file). */
async function asset(request, url, env) {
  isWorkerFirst ??= workerFirst(env.RUN_WORKER_FIRST);
  if (!env.ASSETS || isWorkerFirst(url.pathname)) return null;
  // The router decides on method and path: the body stays with the Worker.
  return fileOrNull(
    await env.ASSETS.fetch(new Request(request.url, { method: request.method, headers: request.headers })),
  );
}

async function answer(request, url, env) {
  const worker = env.WORKER;
  try {
    if (url.pathname === SCHEDULED_PATH) return await runScheduled(url, worker);
    return (await asset(request, url, env)) ?? (await worker.fetch(withCaller(request)));
  } catch (err) {
    // As workerd answers a Worker's uncaught exception: a bare 500, the error in the log.
    console.error("Uncaught exception in fetch:", err);
    return new Response("Internal Server Error", { status: 500, headers: { "content-type": "text/plain" } });
  }
}

export default {
  async fetch(request, env, ctx) {
    const started = performance.now();
    const url = new URL(request.url);
    const response = await answer(request, url, env);
    const entry = {
      method: request.method,
      path: url.pathname, // never the query (a Gemini client's key may be in it): the entry leaves the isolate
      status: response.status,
      statusText: response.statusText,
      routing: routingOf(response.headers),
    };
    const log = (unfinished) =>
      console.log(entryMessage({ ...entry, durationMs: performance.now() - started, unfinished }));
    if (!response.body) {
      log(false);
      return response;
    }
    // A native stream in between tells when the last byte went out, or that the caller left.
    const { readable, writable } = new IdentityTransformStream();
    ctx.waitUntil(
      response.body.pipeTo(writable).then(
        () => log(false),
        () => log(true),
      ),
    );
    return new Response(readable, response);
  },
};
