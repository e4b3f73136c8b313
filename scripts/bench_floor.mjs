// The floor under the free plan's 10 ms (issue 31), for scripts/bench.py: a bare JavaScript Worker
// on the same workerd build as the gateway (Miniflare, as scripts/dev starts it), doing only what
// any relay of a paced answer must do, so its isolate CPU is the least any design can cost on this
// machine. No Python, no translation, no D1:
//   GET /?case=timers&n=N       N timer wakes (10 ms apart), nothing else
//   GET /?case=native&up=URL    the upstream's body piped to the caller (no JavaScript per chunk)
//   GET /?case=chunk&up=URL     each upstream read woken for and enqueued to the caller
//   GET /?case=batch&up=URL     reads of about BATCH_MS of the stream (BYOB readAtLeast, paced)
//   node scripts/bench_floor.mjs PORT    prints "ready" once it listens
import { convertV4MiniflareOptions, Miniflare } from "miniflare";

const WORKER = `
const BATCH_MS = 100;
const READ_BYTES = 65536;

async function relay(body, controller, batched) {
  let reader;
  if (batched) {
    const inbox = new IdentityTransformStream();
    body.pipeTo(inbox.writable).catch(() => {});
    reader = inbox.readable.getReader({ mode: "byob" });
  } else {
    reader = body.getReader();
  }
  let buffer = new Uint8Array(READ_BYTES);
  let minimum = 1;
  let pace = 0;
  for (;;) {
    const asked = Date.now();
    const { value, done } = batched ? await reader.readAtLeast(minimum, buffer) : await reader.read();
    if (value?.byteLength) {
      controller.enqueue(value.slice());
      if (batched) {
        buffer = new Uint8Array(value.buffer);
        const rate = (value.byteLength * 1000) / Math.max(Date.now() - asked, 1);
        pace = pace ? (rate + pace) / 2 : rate;
        minimum = Math.max(1, Math.min(READ_BYTES / 4, Math.floor((pace * BATCH_MS) / 1000)));
      }
    }
    if (done) break;
  }
  controller.close();
}

export default {
  async fetch(request, _env, ctx) {
    const url = new URL(request.url);
    const which = url.searchParams.get("case");
    if (which === "timers") {
      const n = Number(url.searchParams.get("n"));
      for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      return new Response(String(n));
    }
    const upstream = await fetch(url.searchParams.get("up"), { method: "POST", body: "{}" });
    if (which === "native") return new Response(upstream.body, { headers: { "content-type": "text/event-stream" } });
    let controller;
    const readable = new ReadableStream({ start: (c) => { controller = c; } });
    ctx.waitUntil(relay(upstream.body, controller, which === "batch"));
    return new Response(readable, { headers: { "content-type": "text/event-stream" } });
  },
};
`;

const port = Number(process.argv[2]);
const mf = new Miniflare(
  convertV4MiniflareOptions({
    host: "127.0.0.1",
    port,
    workers: [{ name: "floor", modules: true, script: WORKER, compatibilityDate: "2026-09-08" }],
  }),
);
await mf.ready;
console.log("ready");
process.on("SIGTERM", () => mf.dispose().then(() => process.exit(0)));
