// The dev contract (SPEC §11) apart from serving, which is workerd.mjs's: the command line,
// wrangler.jsonc, the env file (written with fresh secrets when absent), the port check and the D1
// migrations.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs, promisify } from "node:util";

export const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);
const SECRETS = ["ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY"];
const USAGE = "usage: scripts/dev [--port N] [--persist-to DIR] [--env-file FILE]";

/** A start-up failure the user can fix: printed as one `error: …` line, no stack trace. */
export class StartError extends Error {}

/** wrangler.jsonc, parsed: comments (outside strings) and trailing commas removed. */
export function readWranglerConfig(file = path.join(ROOT, "wrangler.jsonc")) {
  const text = fs.readFileSync(file, "utf8");
  const stripped = text.replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (_match, str) => str ?? "");
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

/**
 * The Worker's `env` from the env file, written first if asked and absent. (Unusable secrets are
 * warned about by workerd.mjs, by the Worker's own rule.)
 */
export function readEnv(envFile, create) {
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

/** The command line, checked: a wrong flag or port is a StartError, not a stack trace. */
export function readOptions(argv) {
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
  return { ...values, port, persistTo: path.resolve(values["persist-to"]), envFile: path.resolve(values["env-file"]) };
}

/**
 * Check that host:port can be had, then release it for workerd, which binds it itself; the port it
 * got. A port that cannot be had is a StartError naming it and the way out.
 */
export async function checkPort(host, port) {
  const server = http.createServer();
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
  const got = server.address().port;
  await new Promise((resolve) => server.close(resolve));
  return got;
}

/** Apply pending migrations with wrangler itself, so the local D1 is exactly wrangler's. */
export async function applyMigrations(databaseName, persistTo) {
  const wrangler = path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const args = [wrangler, "d1", "migrations", "apply", databaseName, "--local", "--persist-to", persistTo];
  // This same Node (22): wrangler needs it, and PATH may hold an older one.
  try {
    await promisify(execFile)(process.execPath, args, {
      cwd: ROOT,
      // No telemetry, and no fetch of Cloudflare's cf.json (the request.cf stand-in): offline.
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
    });
  } catch (err) {
    throw new StartError(`applying the D1 migrations failed:\n${err.stdout}${err.stderr}`);
  }
}

/**
 * Run the runtime's `main`: a StartError is for the user (one line), anything else is a bug of the
 * runtime (its stack). Either way the process exits 1.
 */
export function run(main) {
  main().catch((err) => {
    console.error(err instanceof StartError ? `error: ${err.message}` : err);
    process.exit(1);
  });
}

/** Stop on SIGINT/SIGTERM with `stop()`, then exit 0 (Miniflare's own hooks would re-raise). */
export function stopOnSignals(stop) {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    await stop();
    process.exit(0);
  };
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.removeAllListeners(signal);
    process.on(signal, handler);
  }
}
