// Python side of the local runtime: npm pyodide 314 (the Python of production), the project's
// pinned wheels, the two modules workerd provides, and src/ mounted where workerd puts it.
import fs from "node:fs";
import path from "node:path";
import { loadPyodide } from "pyodide";


// workerd mounts the worker's files under /session/metadata and puts the main module's folder on
// sys.path (PLATFORM-NOTES §3.1).
const WORKER_DIR = "/session/metadata";

// The flags that a compatibility date >= 2026-09-08 turns on and that the SDK reads.
const COMPAT_FLAGS = {
  python_request_headers_preserve_commas: true,
  python_workflows_implicit_dependencies: true,
};

/**
 * The `_pyodide_entrypoint_helper` module. `patchWaitUntil` mirrors workerd's: a Python awaitable
 * handed to `ctx.waitUntil` is a borrowed proxy, so it is copied, awaited, then destroyed.
 */
function entrypointHelper(env) {
  const notHere = (name) => () => {
    throw new Error(`${name} is not available in the local runtime`);
  };
  return {
    cloudflareWorkersModule: { env, waitUntil: notHere("cloudflare:workers waitUntil") },
    cloudflareSocketsModule: {},
    doAnImport: notHere("doAnImport"),
    patch_env_helper: notHere("patch_env"),
    patchWaitUntil(ctx) {
      if (ctx.__patched) return;
      const waitUntil = ctx.waitUntil.bind(ctx);
      ctx.waitUntil = (awaitable) => {
        const owned = typeof awaitable?.copy === "function" ? awaitable.copy() : awaitable;
        const settled = Promise.resolve(owned).finally(() => owned?.destroy?.());
        waitUntil(settled);
      };
      ctx.__patched = true;
    },
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
 * modules registered, `srcDir` mounted and on sys.path. Nothing of the Worker is imported yet.
 */
export const WORKER_PATH = WORKER_DIR;

export async function loadPython({ srcDir, wheelDir, env }) {
  installWorkerdStreams();
  const pyodide = await loadPyodide({ stdout: (s) => console.log(s), stderr: (s) => console.error(s) });
  const wheels = fs.readdirSync(wheelDir).filter((f) => f.endsWith(".whl")).sort();
  if (wheels.length === 0) throw new Error(`no wheels in ${wheelDir}: run scripts/setup`);
  for (const wheel of wheels) {
    pyodide.unpackArchive(new Uint8Array(fs.readFileSync(path.join(wheelDir, wheel))), "wheel");
  }
  pyodide.registerJsModule("_pyodide_entrypoint_helper", entrypointHelper(env));
  pyodide.registerJsModule("_cloudflare_compat_flags", COMPAT_FLAGS);
  pyodide.FS.mkdirTree(WORKER_DIR);
  pyodide.mountNodeFS(WORKER_DIR, path.resolve(srcDir));
  pyodide.FS.mkdirTree("/runtime");
  pyodide.FS.writeFile("/runtime/_local_dispatch.py", fs.readFileSync(new URL("./dispatch.py", import.meta.url)));
  pyodide.runPython(`
import sys
sys.path[:0] = ["${WORKER_DIR}", "/runtime"]
`);
  return pyodide;
}

/**
 * `loadPython`, then import the entry module and warn about unusable secrets in `env` (the
 * Worker's own rule, `gateway.core.credentials`, so the warning and the 503 cannot disagree).
 * @returns the Python coroutine functions `dispatch(ctx, env, request)` (a fetch event) and
 * `scheduled(ctx, env, controller)` (a Cron Trigger's event), and `module` (dispatch.py itself).
 */
export async function loadWorker({ srcDir, wheelDir, entryModule, env }) {
  const pyodide = await loadPython({ srcDir, wheelDir, env });
  const dispatch = pyodide.pyimport("_local_dispatch");
  await dispatch.load(entryModule);
  dispatch.warn_about_credentials(env);
  return { pyodide, dispatch: dispatch.dispatch, scheduled: dispatch.scheduled, module: dispatch };
}
