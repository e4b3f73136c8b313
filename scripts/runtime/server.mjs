// The local runtime: serves the Python Worker the way workerd would, offline.
//
//   node --disallow-code-generation-from-strings scripts/runtime/server.mjs -- --port 8787 \
//     --persist-to .wrangler/state --env-file .dev.vars
//
// (The `--` matters: Node 22 reads `--env-file` anywhere on its command line as its own flag.
// The Node flag is required: workerd forbids `eval` and `new Function`, and so must the runtime
// that stands in for it, or code that needs them would pass every local test and fail deployed.)
//
// Node's HTTP server turns each request into a Web `Request`, hands it to the Worker's
// `Default.fetch` (via dispatch.py) with `env` (secrets and vars, plus the D1 binding) and a `ctx`
// honouring waitUntil, and streams the Web `Response` back chunk by chunk, unbuffered. Each
// request then gets one line on stdout (requestlog.mjs), marked when its stream failed, as the
// Worker's warnings on Python's stderr say (logline.mjs, StreamFailures). The config page's files
// (wrangler.jsonc `assets`) are Miniflare's to serve, as in production (assets.mjs).
//
// The port is taken first, before the slow part of the start (migrations, Pyodide), so a busy
// port is reported at once; requests that arrive meanwhile wait until the Worker is loaded.
//
// `--create-env-file` (scripts/dev passes it): when the env file does not exist and none of the
// three secrets is in the process environment, write it from .dev.vars.example with fresh random
// ADMIN_TOKEN, API_TOKEN and ENCRYPTION_KEY, and say so (never printing them).
import http from "node:http";
import path from "node:path";
import { openAssets } from "./assets.mjs";
import { openD1 } from "./d1.mjs";
import { ROOT, StartError, applyMigrations, listen, readEnv, readOptions, readWranglerConfig, run, stopOnSignals } from "./devenv.mjs";
import { loadWorker } from "./python.mjs";
import { StreamFailures, routingOf, trackRequest, wantsColour } from "./requestlog.mjs";

// Methods the fetch standard forbids in a Request (Node's undici refuses to build one).
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

// The body is collected before dispatch: adapting Node's stream to a Web stream per request costs
// more than the copy, and the Worker still sees a ReadableStream body, as on workerd.
async function toWebRequest(req, origin) {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  // As Miniflare's entry worker does for `wrangler dev`: the peer's address unless the request
  // names one (Cloudflare's edge always sets it in production; tests name callers this way).
  if (!headers.has("cf-connecting-ip") && req.socket.remoteAddress) {
    headers.set("CF-Connecting-IP", req.socket.remoteAddress.replace(/^::ffff:/, ""));
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(origin + req.url, { method: req.method, headers, body: hasBody ? await readBody(req) : undefined });
}

async function sendWebResponse(response, res) {
  const headers = {};
  for (const [name, value] of response.headers) {
    if (name === "set-cookie") continue;
    headers[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers["set-cookie"] = cookies;
  res.writeHead(response.status, response.statusText || undefined, headers);
  if (!response.body) return res.end();
  const reader = response.body.getReader();
  // Like workerd, a caller that goes away cancels the Worker's body with an Error.
  res.on("close", () => reader.cancel(new Error("the client disconnected")).catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end();
}

// Benchmarks only (LOCAL_RUNTIME_PROFILE=1): the Worker's Python runs under cProfile from the start;
// `GET /__local_runtime/profile?requests=N` answers where its time went since the last such call,
// by phase of a request (dispatch.py's profile_report), and starts counting again.
const PROFILE_PATH = "/__local_runtime/profile";

// As `wrangler dev` does: `GET /cdn-cgi/handler/scheduled?cron=<expression>[&time=<ms>]` fires the
// Worker's `scheduled` handler (a Cron Trigger) and answers once it finished.
const SCHEDULED_PATH = "/cdn-cgi/handler/scheduled";

async function runScheduled(scheduled, ctx, env, req, res) {
  const query = new URL(req.url, "http://localhost").searchParams;
  const controller = {
    type: "scheduled",
    cron: query.get("cron") ?? "",
    scheduledTime: Number(query.get("time")) || Date.now(),
    noRetry() {},
  };
  await scheduled(ctx, env, controller);
  res.writeHead(200, { "content-type": "text/plain" });
  res.end("Ran scheduled event");
}

/**
 * The HTTP server: each request waits for `worker` (the loaded Worker: `dispatch` and `scheduled`), runs
 * it with `env` and a `ctx` whose waitUntil promises are kept in `pending`, and is logged, with the
 * stream failure `failures` holds for it.
 */
function createServer({ worker, env, pending, origin, failures }) {
  const colour = wantsColour(process.stdout);
  const profiling = process.env.LOCAL_RUNTIME_PROFILE === "1";
  const server = http.createServer(async (req, res) => {
    const entry = trackRequest(req, res, colour, failures);
    const ctx = {
      waitUntil(promise) {
        const p = Promise.resolve(promise).catch((err) => console.error("waitUntil task failed:", err));
        pending.add(p);
        p.finally(() => pending.delete(p));
      },
      passThroughOnException() {},
    };
    try {
      const { dispatch, scheduled, module, assets } = await worker;
      if (req.url.startsWith(SCHEDULED_PATH)) return await runScheduled(scheduled, ctx, env, req, res);
      if (profiling && req.url.startsWith(PROFILE_PATH)) {
        const requests = Number(new URL(req.url, "http://localhost").searchParams.get("requests")) || 1;
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(module.profile_report(requests));
      }
      if (FORBIDDEN_METHODS.has(req.method)) {
        // workerd hands such a request to the Worker (405 there); Node's Request cannot carry it.
        res.writeHead(501, { "content-type": "text/plain" });
        return res.end(`the Node runtime cannot hand a ${req.method} request to the Worker (use --runtime workerd)\n`);
      }
      const request = await toWebRequest(req, `http://${req.headers.host ?? origin}`);
      const response = (await assets?.serve(request)) ?? (await dispatch(ctx, env, request));
      entry.routing = routingOf(response.headers);
      entry.statusText = response.statusText;
      await sendWebResponse(response, res);
    } catch (err) {
      // workerd answers an uncaught exception with a bare 500 and logs it.
      console.error("Uncaught exception in fetch:", err);
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(res.headersSent ? undefined : "Internal Server Error");
    } finally {
      entry.handled();
    }
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

/** As on workerd: code generation from strings is refused (the Node flag must be set). */
function refuseEval() {
  try {
    eval("0");
  } catch (err) {
    if (err instanceof EvalError) return;
    throw err;
  }
  throw new StartError("start the local runtime with `node --disallow-code-generation-from-strings` (workerd forbids eval)");
}

async function main() {
  refuseEval();
  const options = readOptions(process.argv.slice(2));
  const config = readWranglerConfig();
  const binding = config.d1_databases[0];
  // LOCAL_RUNTIME_TRACE_D1=1 logs each D1 statement to stderr: the tests count them.
  const trace = process.env.LOCAL_RUNTIME_TRACE_D1 === "1" ? (sql) => console.error(`[d1] ${sql}`) : undefined;

  let workerLoaded;
  const worker = new Promise((resolve) => {
    workerLoaded = resolve;
  });
  const env = {};
  const pending = new Set();
  const failures = new StreamFailures();
  const server = createServer({ worker, env, pending, origin: `${options.host}:${options.port}`, failures });
  await listen(server, options.host, options.port);
  Object.assign(env, readEnv(options.envFile, options["create-env-file"]));

  // The database (migrations, then Miniflare) and Python start side by side; the binding joins
  // `env` before the first request is let through.
  const [d1, assets, { pyodide, dispatch, scheduled, module }] = await Promise.all([
    applyMigrations(binding.database_name, options.persistTo).then(() =>
      openD1({ persistTo: options.persistTo, databaseId: binding.database_id, trace }),
    ),
    config.assets && openAssets(config.assets),
    loadWorker({
      srcDir: path.join(ROOT, path.dirname(config.main)),
      wheelDir: path.join(ROOT, ".cache", "wheels"),
      entryModule: path.basename(config.main, ".py"),
      env,
    }),
  ]);
  env[binding.binding] = d1.db;
  // Python's stderr, printed as before, also feeds the request lines their streams' failures. A
  // line of it is handed over as Python writes it, so a failure is kept before its stream ends.
  pyodide.setStderr({
    batched: (line) => {
      failures.note(line);
      console.error(line);
    },
  });
  if (process.env.LOCAL_RUNTIME_PROFILE === "1") module.start_profiling();
  workerLoaded({ dispatch, scheduled, module, assets });
  console.log(`Ready on http://${options.host}:${server.address().port}`);

  stopOnSignals(async () => {
    server.close();
    server.closeAllConnections();
    await Promise.allSettled(pending);
    await Promise.all([d1.dispose(), assets?.dispose()]);
  });
}

// workerd logs an unhandled rejection and goes on serving; so does the local runtime.
process.on("unhandledRejection", (err) => console.error("Uncaught (in promise):", err));

run(main);
