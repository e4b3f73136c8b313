// The local runtime: serves the Python Worker the way workerd would, offline.
//
//   node scripts/runtime/server.mjs -- --port 8787 --persist-to .wrangler/state --env-file .dev.vars
//
// (The `--` matters: Node 22 reads `--env-file` anywhere on its command line as its own flag.)
//
// Node's HTTP server turns each request into a Web `Request`, hands it to the Worker's
// `Default.fetch` (via dispatch.py) with `env` (secrets and vars, plus the D1 binding) and a `ctx`
// honouring waitUntil, and streams the Web `Response` back chunk by chunk, unbuffered.
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { openD1 } from "./d1.mjs";
import { loadWorker } from "./python.mjs";

const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);

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

/**
 * The Worker's variables: every name declared in .dev.vars.example or present in the env file;
 * a value already in the process environment wins over the file (SPEC §11).
 */
function workerVars(envFile) {
  const declared = Object.keys(readEnvFile(path.join(ROOT, ".dev.vars.example")));
  const fromFile = readEnvFile(envFile);
  const vars = {};
  for (const name of new Set([...declared, ...Object.keys(fromFile)])) {
    const value = process.env[name] ?? fromFile[name];
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
    throw new Error(`applying the D1 migrations failed:\n${err.stdout}${err.stderr}`);
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

async function main() {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv[0] === "--" ? argv.slice(1) : argv,
    options: {
      port: { type: "string", default: "8787" },
      "persist-to": { type: "string", default: path.join(ROOT, ".wrangler", "state") },
      "env-file": { type: "string", default: path.join(ROOT, ".dev.vars") },
      host: { type: "string", default: "127.0.0.1" },
    },
  });
  const config = readJsonc(path.join(ROOT, "wrangler.jsonc"));
  const binding = config.d1_databases[0];
  const persistTo = path.resolve(values["persist-to"]);
  // LOCAL_RUNTIME_TRACE_D1=1 logs each D1 statement to stderr: the tests count them.
  const trace = process.env.LOCAL_RUNTIME_TRACE_D1 === "1" ? (sql) => console.error(`[d1] ${sql}`) : undefined;
  const env = workerVars(path.resolve(values["env-file"]));
  // The database (migrations, then Miniflare) and Python start side by side; the binding joins
  // `env` before the first request is accepted.
  const [d1, { dispatch }] = await Promise.all([
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

  const pending = new Set();
  const testClock = process.env.LOCAL_RUNTIME_TEST_CLOCK === "1" ? installTestClock() : undefined;
  const server = http.createServer(async (req, res) => {
    if (testClock && req.url === TEST_CLOCK_PATH) return testClock(req, res);
    const ctx = {
      waitUntil(promise) {
        const p = Promise.resolve(promise).catch((err) => console.error("waitUntil task failed:", err));
        pending.add(p);
        p.finally(() => pending.delete(p));
      },
      passThroughOnException() {},
    };
    try {
      const request = await toWebRequest(req, `http://${req.headers.host ?? `${values.host}:${values.port}`}`);
      const response = await dispatch(ctx, env, request);
      await sendWebResponse(response, res);
    } catch (err) {
      // workerd answers an uncaught exception with a bare 500 and logs it.
      console.error("Uncaught exception in fetch:", err);
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(res.headersSent ? undefined : "Internal Server Error");
    }
  });
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve) => server.listen(Number(values.port), values.host, resolve));
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
  console.error(err);
  process.exit(1);
});
