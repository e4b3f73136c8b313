// Workers Static Assets (wrangler.jsonc `assets`) in the local runtime: loaded by workerd.mjs and by
// its front worker (requestlog.worker.mjs) alike, so plain JavaScript only.
//
// Miniflare's own asset router and asset worker serve the files, so `_headers`, HTML handling,
// ETags and HEAD are production's. Two steps are the runtime's: paths `run_worker_first` names go
// straight to the Python Worker (matched here as production's router matches them: `*` spans
// anything), and where production's router hands a request without an asset to the Worker, the
// asset host's stub user worker marks the answer (NO_ASSET) and the runtime hands it over.

const NO_ASSET = "x-local-runtime-no-asset";
export const STUB_WORKER = `export default { fetch() { return new Response(null, { status: 404, headers: { "${NO_ASSET}": "1" } }); } };`;
// The asset host only serves files: its date is independent of the Python Worker's.
export const HOST_COMPAT_DATE = "2026-09-08";

/** `run_worker_first` as a test of a path: true when the Worker answers without an asset lookup. */
export function workerFirst(rules) {
  if (rules === true || rules === false) return () => rules;
  const patterns = (rules ?? []).map((rule) => {
    if (!/^\/[\w./*-]*$/.test(rule))
      throw new Error(`run_worker_first rule ${JSON.stringify(rule)}: the local runtime reads only plain paths with *`);
    return new RegExp(`^${rule.replace(/[.]/g, "\\.").replace(/\*/g, ".*")}$`);
  });
  return (pathname) => patterns.some((pattern) => pattern.test(pathname));
}

/** The asset host's answer, or null when it has no such file (the request is the Worker's). */
export async function fileOrNull(answer) {
  if (!answer.headers.has(NO_ASSET)) return answer;
  await answer.body?.cancel();
  return null;
}
