// Workers Static Assets for the Node runtime: the config page's files (wrangler.jsonc `assets`),
// served by Miniflare's own asset router and asset worker, the parts `wrangler dev` and workerd run,
// so `_headers`, HTML handling, ETags and HEAD are production's. Only the step after the router is
// this runtime's: where production's router hands a request without an asset to the Worker, the
// stub user worker here marks it, and the server hands it to the Python Worker.
//
// Paths the config's `run_worker_first` names never reach Miniflare (the Worker's hot path gains no
// hop); its patterns are matched here as production's router matches them: `*` spans anything.
import path from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { ROOT, StartError } from "./devenv.mjs";

const FALLTHROUGH = "x-local-runtime-no-asset";
const STUB = `export default { fetch() { return new Response(null, { status: 404, headers: { "${FALLTHROUGH}": "1" } }); } };`;
// The request's body stays with the Python Worker: the router decides on method and path alone.
const HOP_HEADERS = ["host", "connection", "content-length", "transfer-encoding", "keep-alive"];
// This worker only hosts the assets: its date is independent of the Python Worker's.
const HOST_COMPAT_DATE = "2026-09-08";

/** `run_worker_first` as a test of a path: true when the Worker answers without an asset lookup. */
export function workerFirst(rules) {
  if (rules === true || rules === false) return () => rules;
  const patterns = (rules ?? []).map((rule) => {
    if (!/^\/[\w./*-]*$/.test(rule)) throw new StartError(`run_worker_first rule ${JSON.stringify(rule)}: the local runtime reads only plain paths with *`);
    return new RegExp(`^${rule.replace(/[.]/g, "\\.").replace(/\*/g, ".*")}$`);
  });
  return (pathname) => patterns.some((pattern) => pattern.test(pathname));
}

/**
 * Start Miniflare serving `config.assets` (a wrangler.jsonc `assets` object). `serve(request)`
 * answers with the asset's response, or null when the request is the Worker's.
 */
export async function openAssets(config) {
  const isWorkerFirst = workerFirst(config.run_worker_first);
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: STUB,
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
      const response = await fetch(target, { method: request.method, headers, redirect: "manual" });
      if (response.headers.has(FALLTHROUGH)) {
        await response.body?.cancel();
        return null;
      }
      return response;
    },
    dispose: () => mf.dispose(),
  };
}
