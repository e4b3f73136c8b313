// Runs a Python file inside Node's Pyodide (npm pyodide 314, the Python of production), with the
// project's pinned wheels, the two modules workerd provides, and the Worker's source mounted where
// workerd puts it (its path is passed to the file as sys.argv[1]) but not imported:
//   node scripts/runtime/profile.mjs FILE        (scripts/profile runs it)
// Why it exists beside workerd: workerd's clocks stand still while code runs (Spectre mitigation),
// so no timer inside its isolate can measure the Worker's own work; here cProfile and
// time.process_time can (scripts/bench_relay.py). It serves no request and runs no test.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { loadPyodide } from "pyodide";

const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);

// workerd mounts the worker's files under /session/metadata and puts the main module's folder on
// sys.path (PLATFORM-NOTES §3.1).
const WORKER_DIR = "/session/metadata";

// The flags that a compatibility date >= 2026-09-08 turns on and that the SDK reads.
const COMPAT_FLAGS = {
  python_request_headers_preserve_commas: true,
  python_workflows_implicit_dependencies: true,
};

/**
 * The `_pyodide_entrypoint_helper` module that the SDK imports: `doAnImport` loads one of the
 * Worker's JavaScript modules (an .mjs file of src/, by its name in the bundle), as workerd's does.
 */
function entrypointHelper() {
  const notHere = (name) => () => {
    throw new Error(`${name} is not available in scripts/profile`);
  };
  return {
    cloudflareWorkersModule: { env: {}, waitUntil: notHere("cloudflare:workers waitUntil") },
    cloudflareSocketsModule: {},
    doAnImport: (name) => import(pathToFileURL(path.join(ROOT, "src", name)).href),
    patch_env_helper: notHere("patch_env"),
    patchWaitUntil: notHere("patchWaitUntil"),
  };
}

/**
 * workerd's own stream APIs that the Worker uses, given to Node (where Python's `js` is Node's
 * globalThis) as workerd defines them:
 * - `IdentityTransformStream`: workerd's native byte pipe (no JavaScript runs per chunk there);
 *   here a writable whose chunks are queued into a byte stream.
 * - `ReadableStreamBYOBReader.readAtLeast(min, view)`: resolves once `min` bytes were read into
 *   `view`, or with fewer when the stream ends (then `done: false`; the next read says `done`).
 *   Node's own `read(view, {min})` never settles when the stream closes short of `min`.
 */
function installWorkerdStreams() {
  globalThis.IdentityTransformStream ??= class IdentityTransformStream {
    constructor() {
      let readable;
      let writable;
      // A byte stream, as workerd's is (BYOB reads gather several writes).
      this.readable = new ReadableStream(
        {
          type: "bytes",
          start: (controller) => {
            readable = controller;
          },
          cancel: (reason) => writable.error(reason),
        },
        { highWaterMark: 0 },
      );
      this.writable = new WritableStream({
        start: (controller) => {
          writable = controller;
        },
        write: (chunk) => readable.enqueue(new Uint8Array(chunk)),
        close: () => {
          readable.close();
          readable.byobRequest?.respond(0); // a waiting BYOB read ends with the stream
        },
        abort: (reason) => readable.error(reason),
      });
    }
  };
  ReadableStreamBYOBReader.prototype.readAtLeast ??= async function readAtLeast(min, view) {
    const { buffer, byteOffset, byteLength } = view;
    let filled = 0;
    let space = buffer;
    while (filled < min) {
      const { value, done } = await this.read(new Uint8Array(space, byteOffset + filled, byteLength - filled));
      if (value) {
        space = value.buffer;
        filled += value.byteLength;
      }
      if (done) return { value: new Uint8Array(space, byteOffset, filled), done: filled === 0 };
    }
    return { value: new Uint8Array(space, byteOffset, filled), done: false };
  };
}

/**
 * Load Pyodide as workerd would present it to the Worker: the wheels installed, the workerd
 * modules registered, src/ mounted (not on sys.path: the file run puts it there).
 */
async function loadPython() {
  const wheelDir = path.join(ROOT, ".cache", "wheels");
  installWorkerdStreams();
  const pyodide = await loadPyodide({ stdout: (s) => console.log(s), stderr: (s) => console.error(s) });
  const wheels = fs
    .readdirSync(wheelDir)
    .filter((f) => f.endsWith(".whl"))
    .sort();
  if (wheels.length === 0) throw new Error(`no wheels in ${wheelDir}: run scripts/setup`);
  for (const wheel of wheels) {
    pyodide.unpackArchive(new Uint8Array(fs.readFileSync(path.join(wheelDir, wheel))), "wheel");
  }
  pyodide.registerJsModule("_pyodide_entrypoint_helper", entrypointHelper());
  pyodide.registerJsModule("_cloudflare_compat_flags", COMPAT_FLAGS);
  pyodide.FS.mkdirTree(WORKER_DIR);
  pyodide.mountNodeFS(WORKER_DIR, path.join(ROOT, "src"));
  return pyodide;
}

const file = process.argv[2];
const pyodide = await loadPython();
pyodide.globals.set("_argv", pyodide.toPy([file, WORKER_DIR]));
pyodide.runPython("import sys; sys.argv = list(_argv); del _argv");
await pyodide.runPythonAsync(fs.readFileSync(file, "utf8"));
