// The floor under the free plan's CPU (issues 31, 39), for scripts/bench.py: a bare JavaScript Worker
// on the same workerd build as the gateway (Miniflare, as scripts/dev starts it), doing only what
// any relay of a paced answer must do, so its isolate CPU is the least any design can cost on this
// machine. No Python, no translation, no D1:
//   GET /?case=timers&n=N       N timer wakes (10 ms apart), nothing else
//   GET /?case=native&up=URL    the upstream's body piped to the caller (no JavaScript per chunk)
//   GET /?case=chunk&up=URL     each upstream read woken for and enqueued to the caller
//   GET /?case=paced&schedule=JSON&up=URL
//                               on a pacing's schedule (core/pacing.py: [[until, hold], ...]; paced:
//                               no event held past 200 ms in the first 2 s, 1 s after): the reads
//                               sized to end just before each deadline, a timer at the deadline, a
//                               tee's spare branch read if it fires
//   node scripts/bench_floor.mjs PORT    prints "ready" once it listens
import { convertV4MiniflareOptions, Miniflare } from "miniflare";

const WORKER = `
const READ_BYTES = 65536;

// Live: each upstream read woken for and sent on.
async function relay(body, controller) {
  const reader = body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (value?.byteLength) controller.enqueue(value.slice());
    if (done) break;
  }
  controller.close();
}

// The longest an event may wait on a schedule, by the time since the first content event.
function holdOf(schedule, since) {
  for (const [until, hold] of schedule) if (until === null || since < until) return hold;
  return 0;
}

// The least a relay that keeps the schedule does: one BYOB readAtLeast per batch, its minimum the
// bytes the stream's pace brings by just before the deadline; a timer at the deadline; when it
// fires first (the stream slowed), what came so far is taken from a tee's spare branch (the
// pending read cannot give up its part), counted by position so that nothing goes twice.
function paced(body, controller, schedule) {
  const holdMs = (since) => holdOf(schedule, since);
  let finish;
  const finished = new Promise((resolve) => {
    finish = resolve;
  });
  const [main, spare] = body.tee();
  const inbox = new IdentityTransformStream();
  main.pipeTo(inbox.writable).catch(() => {});
  const reader = inbox.readable.getReader({ mode: "byob" });
  const spareReader = spare.getReader({ mode: "byob" });
  const started = Date.now();
  let buffer = new Uint8Array(READ_BYTES);
  let consumed = 0; // bytes sent on
  let mainPos = 0; // bytes the main reads delivered
  let sparePos = 0; // bytes the spare reads delivered
  let lastFlush = started;
  let pace = 0; // bytes per ms
  let timer;
  let spareBusy = false;
  let over = false;
  const take = (view, at) => {
    const end = at + view.byteLength;
    if (end > consumed) controller.enqueue(view.slice(Math.max(0, consumed - at)));
    consumed = Math.max(consumed, end);
  };
  const arm = () => {
    clearTimeout(timer);
    if (!over) timer = setTimeout(onDeadline, Math.max(0, lastFlush + holdMs(lastFlush - started) - Date.now()));
  };
  const onDeadline = () => {
    if (spareBusy || over) return;
    spareBusy = true;
    spareReader.read(new Uint8Array(consumed - sparePos + READ_BYTES)).then(({ value, done }) => {
      spareBusy = false;
      if (value?.byteLength) {
        const at = sparePos;
        sparePos += value.byteLength;
        if (sparePos > consumed) {
          take(value, at);
          lastFlush = Date.now();
        }
      }
      if (!done) arm();
    }, () => {});
  };
  const read = (minimum) => {
    reader.readAtLeast(minimum, buffer).then(({ value, done }) => {
      const now = Date.now();
      if (value?.byteLength) {
        const size = value.byteLength;
        take(value, mainPos);
        mainPos += size;
        buffer = new Uint8Array(value.buffer);
        const rate = size / Math.max(now - lastFlush, 1);
        pace = pace ? (rate + pace) / 2 : rate;
        lastFlush = now;
      }
      if (done) {
        over = true;
        clearTimeout(timer);
        spareReader.cancel().catch(() => {});
        controller.close();
        finish();
        return;
      }
      arm();
      const window = holdMs(now - started) * 0.9;
      read(Math.max(1, Math.min(READ_BYTES / 4, Math.floor(pace * window))));
    }, () => {
      controller.error(new Error("upstream failed"));
      finish();
    });
  };
  arm();
  read(1);
  return finished;
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
    ctx.waitUntil(
      which === "paced"
        ? paced(upstream.body, controller, JSON.parse(url.searchParams.get("schedule")))
        : relay(upstream.body, controller),
    );
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
