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
// request then gets one line on stdout (requestlog.mjs).
//
// The port is taken first, before the slow part of the start (migrations, Pyodide), so a busy
// port is reported at once; requests that arrive meanwhile wait until the Worker is loaded.
//
// `--create-env-file` (scripts/dev passes it): when the env file does not exist and none of the
// three secrets is in the process environment, write it from .dev.vars.example with fresh random
// ADMIN_TOKEN, API_TOKEN and ENCRYPTION_KEY, and say so (never printing them).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { openD1 } from "./d1.mjs";
import { loadWorker } from "./python.mjs";
import { routingOf, trackRequest, wantsColour } from "./requestlog.mjs";

const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);
const SECRETS = ["ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY"];

/** A start-up failure the user can fix: printed as one `error: …` line, no stack trace. */
class StartError extends Error {}

function readJsonc(file) {
  // Strip // and /* */ comments outside strings, then trailing commas.
  const text = fs.readFileSync(file, "utf8");
  const stripped = text.replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m, str) => str ?? "");
  return JSON.parse(stripped.replace(/,(\s*[}\]])/g, "$1"));
}

/** dotenv lines: KEY=value, optional quotes, # comments. */
function readEnvFile(file) {
  const vars = {};
  if (!fs.existsSync(file)) return vars;
  for (const line of fs.readFileSync(file, "utf8").split(/\r?\n/)) {
    const m = line.match(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/);
    if (!m) continue;
    let value = m[2];
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    else value = value.replace(/\s+#.*$/, "");
    vars[m[1]] = value;
  }
  return vars;
}

/** Fresh values for the three secrets: tokens well past the 16-character minimum, a 64-hex key. */
function freshSecrets() {
  return {
    ADMIN_TOKEN: `admin-${randomBytes(24).toString("hex")}`,
    API_TOKEN: `api-${randomBytes(24).toString("hex")}`,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  };
}

/**
 * Write `envFile` from .dev.vars.example with fresh secrets, unless it exists or the process
 * environment already provides one of the secrets (then whoever set it manages them).
 * @returns true when the file was written.
 */
function createEnvFile(envFile) {
  if (fs.existsSync(envFile) || SECRETS.some((name) => process.env[name])) return false;
  const secrets = freshSecrets();
  const example = fs.readFileSync(path.join(ROOT, ".dev.vars.example"), "utf8");
  const written = new Set();
  const text = example.replace(/^(ADMIN_TOKEN|API_TOKEN|ENCRYPTION_KEY)=.*$/gm, (_line, name) => {
    written.add(name);
    return `${name}=${secrets[name]}`;
  });
  const absent = SECRETS.filter((name) => !written.has(name)).map((name) => `${name}=${secrets[name]}\n`);
  const header = "# Written by scripts/dev with fresh random secrets (from .dev.vars.example).\n";
  // "wx": never overwrite a file that appeared meanwhile; 0600: it holds secrets.
  fs.writeFileSync(envFile, header + text + absent.join(""), { flag: "wx", mode: 0o600 });
  return true;
}

/**
 * The Worker's variables: every name declared in .dev.vars.example or present in the env file;
 * a value already in the process environment wins over the file (SPEC §11).
 */
function workerVars(envFile) {
  const declared = Object.keys(readEnvFile(path.join(ROOT, ".dev.vars.example")));
  const fromFile = readEnvFile(envFile);
  const vars = {};
  for (const name of new Set([...declared, ...Object.keys(fromFile)])) {
    // An empty variable is no value (e.g. exported by `set -a; . ./.dev.vars` from a blank line).
    const value = process.env[name] || fromFile[name];
    if (value !== undefined && value !== "") vars[name] = value;
  }
  return vars;
}

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

/** Apply pending migrations with wrangler itself, so the local D1 is exactly wrangler's. */
async function applyMigrations(databaseName, persistTo) {
  const wrangler = path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const args = [wrangler, "d1", "migrations", "apply", databaseName, "--local", "--persist-to", persistTo];
  // This same Node (22): wrangler needs it, and PATH may hold an older one.
  try {
    await promisify(execFile)(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
  } catch (err) {
    throw new StartError(`applying the D1 migrations failed:\n${err.stdout}${err.stderr}`);
  }
}

// Tests only (LOCAL_RUNTIME_TEST_CLOCK=1): `POST /__local_runtime/clock {"advance_ms": N}` moves
// the wall clock the Worker reads (Date.now, hence Python's time.time) N ms ahead, so a test can
// let a cooldown age without waiting. Timers still run in real time.
const TEST_CLOCK_PATH = "/__local_runtime/clock";

function installTestClock() {
  const realNow = Date.now;
  let offsetMs = 0;
  Date.now = () => realNow() + offsetMs;
  return async (req, res) => {
    const { advance_ms: advance } = JSON.parse((await readBody(req)).toString() || "{}");
    offsetMs += Number(advance) || 0;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ now_ms: Date.now() }));
  };
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

const USAGE = "usage: scripts/dev [--port N] [--persist-to DIR] [--env-file FILE]";

/** The command line, checked: a wrong flag or port is a StartError, not a stack trace. */
function readOptions(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv[0] === "--" ? argv.slice(1) : argv,
      options: {
        port: { type: "string", default: "8787" },
        "persist-to": { type: "string", default: path.join(ROOT, ".wrangler", "state") },
        "env-file": { type: "string", default: path.join(ROOT, ".dev.vars") },
        host: { type: "string", default: "127.0.0.1" },
        "create-env-file": { type: "boolean", default: false },
      },
    }));
  } catch (err) {
    // Node's message goes on about positionals after `--`; its first sentence is the point.
    throw new StartError(`${err.message.split(". ")[0]}; ${USAGE}`);
  }
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port) || port > 65535) {
    throw new StartError(`--port takes a number from 0 to 65535, not "${values.port}"`);
  }
  return { ...values, port };
}

/** Listen on host:port; a port that cannot be had is a StartError naming it and the way out. */
async function listen(server, host, port) {
  try {
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const another = "choose another with `scripts/dev --port N`";
    if (err.code === "EADDRINUSE") {
      throw new StartError(`port ${port} on ${host} is already in use (another scripts/dev?); ${another}`);
    }
    if (err.code === "EACCES") throw new StartError(`no permission to listen on port ${port}; ${another}`);
    throw new StartError(`cannot listen on ${host}:${port} (${err.code ?? err.message})`);
  }
}

/**
 * The HTTP server: each request waits for `worker` (the loaded Worker: `dispatch` and `scheduled`), runs
 * it with `env` and a `ctx` whose waitUntil promises are kept in `pending`, and is logged.
 */
function createServer({ worker, env, pending, origin }) {
  const colour = wantsColour(process.stdout);
  const testClock = process.env.LOCAL_RUNTIME_TEST_CLOCK === "1" ? installTestClock() : undefined;
  const profiling = process.env.LOCAL_RUNTIME_PROFILE === "1";
  const server = http.createServer(async (req, res) => {
    if (testClock && req.url === TEST_CLOCK_PATH) return testClock(req, res);
    const entry = trackRequest(req, res, colour);
    const ctx = {
      waitUntil(promise) {
        const p = Promise.resolve(promise).catch((err) => console.error("waitUntil task failed:", err));
        pending.add(p);
        p.finally(() => pending.delete(p));
      },
      passThroughOnException() {},
    };
    try {
      const { dispatch, scheduled, module } = await worker;
      if (req.url.startsWith(SCHEDULED_PATH)) return await runScheduled(scheduled, ctx, env, req, res);
      if (profiling && req.url.startsWith(PROFILE_PATH)) {
        const requests = Number(new URL(req.url, "http://localhost").searchParams.get("requests")) || 1;
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(module.profile_report(requests));
      }
      const request = await toWebRequest(req, `http://${req.headers.host ?? origin}`);
      const response = await dispatch(ctx, env, request);
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

/**
 * The Worker's `env` from the env file, written first if asked and absent. (Unusable secrets are
 * warned about once Python is loaded, by the Worker's own rule: python.mjs.)
 */
function readEnv(envFile, create) {
  if (create && createEnvFile(envFile)) {
    const relative = path.relative(process.cwd(), envFile);
    const shown = relative.startsWith("..") ? envFile : `./${relative}`;
    console.log(
      `Created ${shown} with fresh ADMIN_TOKEN, API_TOKEN and ENCRYPTION_KEY: sign in to the config page ` +
        `with its ADMIN_TOKEN; load them into a shell with: set -a; . ${shown}; set +a`,
    );
  }
  return workerVars(envFile);
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
  const values = readOptions(process.argv.slice(2));
  const config = readJsonc(path.join(ROOT, "wrangler.jsonc"));
  const binding = config.d1_databases[0];
  const persistTo = path.resolve(values["persist-to"]);
  // LOCAL_RUNTIME_TRACE_D1=1 logs each D1 statement to stderr: the tests count them.
  const trace = process.env.LOCAL_RUNTIME_TRACE_D1 === "1" ? (sql) => console.error(`[d1] ${sql}`) : undefined;

  let workerLoaded;
  const worker = new Promise((resolve) => {
    workerLoaded = resolve;
  });
  const env = {};
  const pending = new Set();
  const server = createServer({ worker, env, pending, origin: `${values.host}:${values.port}` });
  await listen(server, values.host, values.port);
  Object.assign(env, readEnv(path.resolve(values["env-file"]), values["create-env-file"]));

  // The database (migrations, then Miniflare) and Python start side by side; the binding joins
  // `env` before the first request is let through.
  const [d1, { dispatch, scheduled, module }] = await Promise.all([
    applyMigrations(binding.database_name, persistTo).then(() =>
      openD1({ persistTo, databaseId: binding.database_id, trace }),
    ),
    loadWorker({
      srcDir: path.join(ROOT, path.dirname(config.main)),
      wheelDir: path.join(ROOT, ".cache", "wheels"),
      entryModule: path.basename(config.main, ".py"),
      env,
    }),
  ]);
  env[binding.binding] = d1.db;
  if (process.env.LOCAL_RUNTIME_PROFILE === "1") module.start_profiling();
  workerLoaded({ dispatch, scheduled, module });
  console.log(`Ready on http://${values.host}:${server.address().port}`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeAllConnections();
    await Promise.allSettled(pending);
    await d1.dispose();
    process.exit(0);
  };
  // Miniflare installs its own exit hooks, which end the process by re-raising the signal (exit
  // code 130/143); this runtime disposes Miniflare itself and exits 0.
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.removeAllListeners(signal);
    process.on(signal, stop);
  }
}

// workerd logs an unhandled rejection and goes on serving; so does the local runtime.
process.on("unhandledRejection", (err) => console.error("Uncaught (in promise):", err));

main().catch((err) => {
  // A StartError is for the user (one line); anything else is a bug of the runtime (its stack).
  console.error(err instanceof StartError ? `error: ${err.message}` : err);
  process.exit(1);
});
