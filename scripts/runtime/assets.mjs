// Workers Static Assets for the Node runtime (assetroutes.mjs says what both runtimes share): a
// Miniflare of its own hosts the files behind its asset router; `serve` asks it for a request that
// is not the Worker's first, and the server hands the rest to the Python Worker.
import path from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { HOST_COMPAT_DATE, STUB_WORKER, fileOrNull, workerFirst } from "./assetroutes.mjs";
import { ROOT } from "./devenv.mjs";

// The request's body stays with the Python Worker: the router decides on method and path alone.
const HOP_HEADERS = ["host", "connection", "content-length", "transfer-encoding", "keep-alive"];

/**
 * Start Miniflare serving `config.assets` (a wrangler.jsonc `assets` object). `serve(request)`
 * answers with the asset's response, or null when the request is the Worker's.
 */
export async function openAssets(config) {
  const isWorkerFirst = workerFirst(config.run_worker_first);
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: STUB_WORKER,
      compatibilityDate: HOST_COMPAT_DATE,
      assets: { directory: path.resolve(ROOT, config.directory), routerConfig: { has_user_worker: true } },
    }),
  );
  const origin = await mf.ready;
  return {
    async serve(request) {
      const url = new URL(request.url);
      if (isWorkerFirst(url.pathname)) return null;
      const headers = new Headers(request.headers);
      for (const name of HOP_HEADERS) headers.delete(name);
      // Node's fetch would ask for gzip and hand back the body decoded, under the gzip header.
      headers.set("accept-encoding", "identity");
      // The path goes onto Miniflare's origin as it is: resolved as a URL, `//host/x` would be
      // another host (this runtime an open proxy).
      const target = new URL(origin);
      target.pathname = url.pathname;
      target.search = url.search;
      return fileOrNull(await fetch(target, { method: request.method, headers, redirect: "manual" }));
    },
    dispose: () => mf.dispose(),
  };
}
