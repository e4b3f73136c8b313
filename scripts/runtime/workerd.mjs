// The workerd runtime: serves the Python Worker on workerd itself, production's runtime, offline.
//
//   node scripts/runtime/workerd.mjs -- --port 8787 --persist-to .wrangler/state --env-file .dev.vars
//
// Miniflare (the pinned npm package, the one wrangler itself runs) starts workerd with the Python
// Worker as wrangler would upload it (src/**/*.py as Python modules, the pinned packages under
// python_modules/, the D1 binding, the env file's variables), its static assets behind Miniflare's
// asset router on a host worker of their own (assetroutes.mjs), Miniflare's D1 (the
// same database files wrangler's `--local` uses), and a small front worker holding the listening
// socket (requestlog.worker.mjs: the request log entry, CF-Connecting-IP, the Cron Trigger). No
// inspector, no wrangler proxy: a request crosses one JS worker on its way to the Python one.
// This process prints workerd's log: each entry the front worker logs becomes its request's line,
// marked when the Python Worker's log said its stream failed (logline.mjs, StreamFailures). workerd
// writes every worker's log to one pipe, as it happens, so a Worker's warning comes before the
// entry of the request whose stream it ended.
//
// Pyodide comes from the dev bundle that scripts/setup builds from npm `pyodide`
// (pyodide_bundle.py); the compatibility flags of wrangler.jsonc gain the two that select it
// (PLATFORM-NOTES §8), so wrangler.jsonc stays as deployed.
//
// Test hooks, never part of the Worker: LOCAL_RUNTIME_TRACE_D1=1 prints each D1 statement to
// stderr through a dev-only main module (workerd_entry.py) in front of src/entry.py, which also
// makes D1 fail on demand (d1fault.py; LOCAL_RUNTIME_D1_FAULT=MODE fails it from the start);
// LOCAL_RUNTIME_SNAPSHOT_DIR=DIR has workerd take the deploy's snapshot into DIR; the tests'
// clock is a preloaded library (testclock.c). workerd's clocks stand still while code runs
// (Spectre mitigation), so no timer inside the isolate can profile the Worker: scripts/profile
// does that in Node's Pyodide (profile.mjs).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import {
  ROOT,
  StartError,
  applyMigrations,
  checkPort,
  readEnv,
  readOptions,
  readWranglerConfig,
  run,
  stopOnSignals,
} from "./devenv.mjs";
import { HOST_COMPAT_DATE, STUB_WORKER } from "./assetroutes.mjs";
import { StreamFailures, entryOf, formatLine } from "./logline.mjs";

const HERE = path.join(ROOT, "scripts", "runtime");
const BUNDLE_DIR = path.join(ROOT, ".cache", "pyodide-bundle");
const PYTHON_MODULES = path.join(ROOT, ".cache", "python_modules");
// The experimental dev release reads pyodide_dev.capnp.bin from the cache folder, unchecked; it
// needs `python_workers_development`, and `no_python_workers_314` so that the date's release flag
// does not outrank it.
const DEV_FLAGS = ["python_workers_development", "no_python_workers_314"];
const WORKER_NAME = "fllmapi-worker";
const FRONT_NAME = "request-log";
const ASSETS_NAME = "assets";
const DEV_MAIN = "_local_entry.py";
const DEV_D1_FAULT = "_local_d1fault.py";

function files(dir, base = dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...files(full, base));
    else found.push(path.relative(base, full));
  }
  return found.sort();
}

/**
 * The Python Worker's modules as wrangler uploads them: the main module first, every .py file of
 * its folder, its .mjs files as ES modules (wrangler.jsonc's rule: the relays' loops), and
 * python_modules/ as data (its JavaScript as ES modules, for the SDK's imports). With the D1 trace
 * on, the dev main module that adds it comes first.
 */
function pythonModules(srcDir, mainFile, traceD1) {
  if (!fs.existsSync(PYTHON_MODULES)) throw new StartError(`no ${PYTHON_MODULES}: run scripts/setup`);
  const own = files(srcDir).filter((file) => file.endsWith(".py"));
  const modules = [];
  if (traceD1) {
    modules.push({
      type: "PythonModule",
      path: path.join(srcDir, DEV_MAIN),
      contents: fs.readFileSync(path.join(HERE, "workerd_entry.py")),
    });
    modules.push({
      type: "PythonModule",
      path: path.join(srcDir, DEV_D1_FAULT),
      contents: fs.readFileSync(path.join(HERE, "d1fault.py")),
    });
  }
  for (const file of [mainFile, ...own.filter((f) => f !== mainFile)]) {
    modules.push({
      type: "PythonModule",
      path: path.join(srcDir, file),
      contents: fs.readFileSync(path.join(srcDir, file)),
    });
  }
  for (const file of files(srcDir).filter((f) => f.endsWith(".mjs"))) {
    modules.push({
      type: "ESModule",
      path: path.join(srcDir, file),
      contents: fs.readFileSync(path.join(srcDir, file)),
    });
  }
  for (const file of files(PYTHON_MODULES)) {
    const script = file.startsWith("workers/") && /\.m?js$/.test(file);
    modules.push({
      type: script ? "ESModule" : "Data",
      path: path.join(srcDir, "python_modules", file),
      contents: fs.readFileSync(path.join(PYTHON_MODULES, file)),
    });
  }
  return modules;
}

/** Warnings about unusable secrets, by the Worker's own rule (gateway.core.credentials), in CPython. */
function warnAboutCredentials(srcDir, env) {
  const values = Object.fromEntries(
    ["ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY"].filter((n) => env[n]).map((n) => [n, env[n]]),
  );
  const script =
    "import json, sys; from gateway.core.credentials import problems; print('\\n'.join(problems(json.load(sys.stdin))))";
  const out = execFileSync(path.join(ROOT, ".venv", "bin", "python"), ["-c", script], {
    input: JSON.stringify(values),
    env: { ...process.env, PYTHONPATH: srcDir },
  }).toString();
  for (const problem of out.split("\n").filter(Boolean)) console.error(`warning: ${problem}`);
}

/**
 * The printer of workerd's log lines: the Worker's and the front worker's output, each to its own
 * stream; a request entry from the front worker as its line, on stdout, with `colour` or not.
 */
function logPrinter(colour) {
  const failures = new StreamFailures();
  return ({ level, message }) => {
    const entry = entryOf(message);
    if (entry) {
      const failure = failures.take(entry.routing.requestId);
      process.stdout.write(`${formatLine({ ...entry, failure, colour })}\n`);
      return;
    }
    failures.note(message);
    if (level === "error" || level === "warn") process.stderr.write(`${message}\n`);
    else process.stdout.write(`${message}\n`);
  };
}

async function main() {
  const options = readOptions(process.argv.slice(2));
  const config = readWranglerConfig();
  const binding = config.d1_databases[0];
  const srcDir = path.join(ROOT, path.dirname(config.main));
  const bundle = path.join(BUNDLE_DIR, "pyodide_dev.capnp.bin");
  if (!fs.existsSync(bundle)) throw new StartError(`no ${bundle}: run scripts/setup`);
  const port = await checkPort(options.host, options.port);
  const vars = readEnv(options.envFile, options["create-env-file"]);
  warnAboutCredentials(srcDir, vars);
  await applyMigrations(binding.database_name, options.persistTo);

  const traceD1 = process.env.LOCAL_RUNTIME_TRACE_D1 === "1";
  const modules = pythonModules(srcDir, path.basename(config.main), traceD1);
  // LOCAL_RUNTIME_D1_FAULT (with the trace): the dev module's initial D1 fault mode (d1fault.py).
  const devVars =
    traceD1 && process.env.LOCAL_RUNTIME_D1_FAULT ? { LOCAL_RUNTIME_D1_FAULT: process.env.LOCAL_RUNTIME_D1_FAULT } : {};
  // Miniflare runs the binary this variable names; the wrapper adds the bundle's folder.
  process.env.MINIFLARE_WORKERD_PATH = path.join(HERE, "workerd-with-bundle.sh");
  process.env.WORKERD_BINARY = createRequire(import.meta.url)("workerd").default;
  process.env.PYODIDE_BUNDLE_DIR = BUNDLE_DIR;
  // LOCAL_RUNTIME_SNAPSHOT_DIR (a test): workerd takes the Worker's dedicated snapshot as a deploy
  // does, refusing what the snapshot forbids (a JS object kept at module level), into that folder.
  if (process.env.LOCAL_RUNTIME_SNAPSHOT_DIR)
    process.env.PYTHON_SNAPSHOT_DIR = path.resolve(process.env.LOCAL_RUNTIME_SNAPSHOT_DIR);
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: options.host,
      port: 0, // Miniflare's own entry socket: unused, the front worker's socket serves
      logRequests: false,
      handleStructuredLogs: logPrinter(Boolean(process.stdout.isTTY) && !process.env.NO_COLOR),
      resourcePersistencePath: path.join(options.persistTo, "v3"),
      workers: [
        {
          name: WORKER_NAME,
          modulesRoot: srcDir,
          modules,
          compatibilityDate: config.compatibility_date,
          compatibilityFlags: [...config.compatibility_flags, ...DEV_FLAGS],
          d1Databases: { [binding.binding]: binding.database_id },
          bindings: { ...vars, ...devVars },
        },
        {
          name: FRONT_NAME,
          modulesRoot: HERE,
          modules: [
            { type: "ESModule", path: path.join(HERE, "requestlog.worker.mjs") },
            { type: "ESModule", path: path.join(HERE, "logline.mjs") },
            { type: "ESModule", path: path.join(HERE, "assetroutes.mjs") },
          ],
          compatibilityDate: config.compatibility_date,
          serviceBindings: { WORKER: WORKER_NAME, ...(config.assets && { ASSETS: ASSETS_NAME }) },
          bindings: { RUN_WORKER_FIRST: config.assets?.run_worker_first ?? true },
          unsafeDirectSockets: [{ host: options.host, port }],
        },
        // The config page's files behind Miniflare's asset router and worker, on a host worker of
        // their own: a worker with assets is reached only through the router, whose proxy fails
        // a Python Worker's Cron Trigger, so the Python Worker carries none (assetroutes.mjs).
        ...(config.assets
          ? [
              {
                name: ASSETS_NAME,
                modules: true,
                script: STUB_WORKER,
                compatibilityDate: HOST_COMPAT_DATE,
                assets: {
                  directory: path.resolve(ROOT, config.assets.directory),
                  routerConfig: { has_user_worker: true },
                },
              },
            ]
          : []),
      ],
    }),
  );
  try {
    await mf.ready;
  } catch (err) {
    if (err?.code === "ERR_ADDRESS_IN_USE") {
      throw new StartError(
        `port ${port} on ${options.host} is already in use (another scripts/dev?); choose another with \`scripts/dev --port N\``,
      );
    }
    throw err;
  }
  // workerd loads the Python isolate on its first request: Ready means the Worker answers. The
  // entry socket routes to the first worker, the Python one, so this request is not logged.
  await (await mf.dispatchFetch(`http://${options.host}/__local_runtime/ready`)).arrayBuffer();
  console.log(`Ready on http://${options.host}:${port}`);

  stopOnSignals(() => mf.dispose());
}

run(main);
