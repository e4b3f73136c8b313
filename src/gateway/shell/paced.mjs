// The translated relay's loop (SPEC §18), in JavaScript: the one part of the Worker that runs per
// batch of a long answer. Python stays the product's language; this is here because each wake of
// the isolate into Python costs several times what the same wake costs in JavaScript (Pyodide's
// event loop, futures and proxies around it), and a long answer is dozens of wakes. So the loop
// that reads the upstream on the pacing schedule, frames its events and splices the common ones
// (text, reasoning, a call's arguments) into the translator's templates runs here, and it calls
// Python (the translator, synchronously) only for a batch holding an event that changes the
// answer's structure: shell/translation.py is the rest of the relay, surfaces/splice.mjs the splice.
//
// Reading on the schedule. The upstream is piped natively into an inbox, an IdentityTransformStream,
// read in BYOB `readAtLeast(minimum)` batches: the runtime gathers bytes until `minimum`, with no
// JavaScript per chunk. `minimum` is what the stream's pace brings by just before the batch's
// deadline (the last batch sent, plus the schedule's hold), so a steady stream costs one wake a
// batch. A timer at the deadline covers a stream that slows: a read cannot give up the part it
// holds, so what came so far is taken from a tee's spare branch, which the runtime fills as the
// stream comes; both are counted by position, so no byte goes out twice. The first read is not
// held, nor any once the answer's finish reason is in, nor the end.
//
// The rules the Python relay kept before hold here too: a stall (no bytes for the stall period)
// aborts the upstream; a failed upstream leaves the inbox open, and closing it hands over what it
// holds, so nothing is lost and a complete answer still ends as complete; a caller who went away
// is seen at the next enqueue (or its cancel) and stops the upstream.

import { joined, Splicer } from "../surfaces/splice.mjs";

// One read takes up to this many bytes; a batch never waits for more than a quarter of them.
const READ_BYTES = 64 * 1024;
const MAX_MINIMUM = READ_BYTES / 4;
// A batch's read is sized to end this far into its hold, so that a steady stream's reads end
// before the deadline's timer and it never fires.
const BEFORE_DEADLINE = 0.9;
// The spare branch keeps everything since it was last read; past this much, it is read anyway.
const SPARE_KEPT_BYTES = 256 * 1024;

/**
 * Relay `init.body` (the upstream's OpenAI chat SSE after its head) to the caller's side until
 * the answer is over, then call `init.finish(end, bytes, tail, record, raw)`: `end` is "over" (the
 * translator ended it: closed), "halt" (the translator asked to stop: a rescue's watch holds an
 * error; left open), "eof" (the upstream ended), "cut" (it failed), "stalled", "gone" (the caller
 * went away) or "failed" (the translator threw); `bytes` read; `tail` the unfinished last event;
 * `record` and `raw` what was spliced since the translator was last called (Splicer.take). What
 * `finish` returns (a rescue's task) is waited for. The promise settles when all is done: give it
 * to waitUntil.
 *
 * init: body; aborter (the upstream request's AbortController); controller and cancelled (the caller's
 * side's controller, and the array its cancel pushes to); tail (the head's unfinished event);
 * state (the translator's, JSON: {plan, over, complete, halt, raw, ended}); translate(whole,
 * record, raw, bytes) → [out, state] and finish (Python, called synchronously; destroyed at the
 * end; not called once a state says the stream's end is done); schedule (JSON: [[until|null, hold ms], …], core/pacing.py);
 * stallMs; secrets (the keys never to pass on).
 */
export function relay(init) {
  return new Promise((resolve) => {
    const relaying = new PacedRelay(init, resolve);
    relaying.safely(() => relaying.start());
  });
}

class PacedRelay {
  constructor(init, resolve) {
    this.init = init;
    this.resolve = resolve;
    this.splicer = new Splicer(Array.from(init.secrets));
    this.splicer.tail = init.tail.slice();
    this.schedule = JSON.parse(init.schedule);
    this.complete = false;
    this.ended = false;
    this.upstreamFailed = false;
    this.stalled = false;
    this.consumed = 0; // bytes relayed
    this.mainPos = 0; // bytes the inbox's reads gave
    this.sparePos = 0; // bytes the spare branch's reads gave
    this.spareBusy = false;
    this.pace = 0; // bytes per ms
    this.timer = undefined;
    this.apply(init.state);
  }

  start() {
    if (this.over || this.halt) {
      this.finish(this.over ? "over" : "halt"); // the head ended the answer, or broke it in-band
      return;
    }
    const { body } = this.init;
    const held = this.schedule.length > 0;
    const [main, spare] = held ? body.tee() : [body, null];
    this.inbox = new IdentityTransformStream();
    // The upstream closes the inbox when it ends; when it fails (or is aborted), the inbox is left
    // open, and closing it hands over the batch that waits in it.
    main.pipeTo(this.inbox.writable, { preventAbort: true }).then(
      () => {},
      () => {
        if (this.ended) return;
        this.upstreamFailed = true;
        this.inbox.writable.close().catch(() => {});
      },
    );
    this.reader = this.inbox.readable.getReader({ mode: "byob" });
    this.spare = spare?.getReader({ mode: "byob" });
    this.buffer = new Uint8Array(READ_BYTES);
    this.started = this.lastFlush = this.lastProgress = this.lastRead = Date.now();
    this.read(1);
    this.arm();
  }

  // Every entry from the event loop runs through here: a bug in the loop must still end the
  // caller's stream honestly (the translator's error end), never leave it open.
  safely(step) {
    try {
      step();
    } catch {
      this.finish("failed");
    }
  }

  holdAt(now) {
    const since = now - this.started;
    for (const [until, hold] of this.schedule) {
      if (until === null || since < until) return hold;
    }
    return 0;
  }

  // The timer: the batch's deadline while one applies, else the stall check.
  arm() {
    clearTimeout(this.timer);
    if (this.ended) return;
    const now = Date.now();
    const hold = this.complete || this.spareBusy ? 0 : this.holdAt(this.lastFlush);
    if (hold > 0) {
      this.timer = setTimeout(() => this.safely(() => this.deadline()), Math.max(0, this.lastFlush + hold - now));
    } else {
      const stall = Math.max(0, this.lastProgress + this.init.stallMs - now);
      this.timer = setTimeout(() => this.safely(() => this.stallCheck()), stall);
    }
  }

  stallCheck() {
    if (this.ended) return;
    if (Date.now() - this.lastProgress >= this.init.stallMs) {
      this.stalled = true;
      this.init.aborter.abort(); // the pipe fails, the inbox is closed, the read ends
      return;
    }
    this.arm();
  }

  read(minimum) {
    this.reader.readAtLeast(minimum, this.buffer).then(
      (result) => this.safely(() => this.fromInbox(result)),
      () => this.finish(this.stalled ? "stalled" : "cut"),
    );
  }

  fromInbox({ value, done }) {
    if (this.ended) return;
    const now = Date.now();
    if (value?.byteLength) {
      const size = value.byteLength;
      const at = this.mainPos;
      this.mainPos += size;
      const rate = size / Math.max(now - this.lastRead, 1);
      this.pace = this.pace ? (this.pace + rate) / 2 : rate;
      this.lastRead = now;
      if (this.mainPos > this.consumed) this.deliver(value.subarray(this.consumed - at), now);
      this.buffer = new Uint8Array(value.buffer); // the read hands its buffer back
    }
    if (this.ended) return;
    if (done) {
      this.finish(this.stalled ? "stalled" : this.upstreamFailed ? "cut" : "eof");
      return;
    }
    const hold = this.holdAt(now);
    const minimum =
      this.complete || hold === 0
        ? 1
        : Math.max(1, Math.min(MAX_MINIMUM, Math.floor(this.pace * hold * BEFORE_DEADLINE)));
    this.read(minimum);
    if (!this.spareBusy && this.spare && this.consumed - this.sparePos > SPARE_KEPT_BYTES) this.readSpare();
    this.arm();
  }

  // The deadline passed with the batch's read still waiting: take what came from the spare branch.
  deadline() {
    if (this.ended || this.spareBusy) return;
    this.readSpare();
    this.arm();
  }

  readSpare() {
    this.spareBusy = true;
    this.spare.read(new Uint8Array(this.consumed - this.sparePos + READ_BYTES)).then(
      ({ value }) =>
        this.safely(() => {
          this.spareBusy = false;
          if (this.ended) return;
          if (value?.byteLength) {
            const at = this.sparePos;
            this.sparePos += value.byteLength;
            if (this.sparePos > this.consumed) this.deliver(value.subarray(this.consumed - at), Date.now());
          }
          this.arm();
        }),
      () => {
        this.spareBusy = false; // the upstream failed: the inbox says so
      },
    );
  }

  // New bytes, in order: framed, spliced (and what cannot be, translated), and sent on in one write.
  deliver(bytes, now) {
    this.consumed += bytes.byteLength;
    this.lastProgress = this.lastFlush = now;
    const whole = this.splicer.frame(bytes);
    if (whole === null) return;
    const [spliced, rest] = this.splicer.splice(whole);
    if (rest === null) {
      this.send(spliced);
      return;
    }
    const [record, raw] = this.splicer.take();
    let answer;
    try {
      answer = this.init.translate(rest, record, raw, this.consumed);
    } catch {
      this.finish("failed");
      return;
    }
    const [out, state] = answer;
    this.apply(state);
    this.send(spliced.byteLength ? joined(spliced, out) : out);
    if (this.over) {
      this.close();
      this.finish("over");
    } else if (this.halt) this.finish("halt");
  }

  apply(state) {
    const { plan, over, complete, halt, raw, ended } = JSON.parse(state);
    this.splicer.setPlan(plan, raw);
    this.over = over;
    this.complete = complete;
    this.halt = halt;
    this.pythonEnded = ended; // the stream's end is done: nothing to call back for
  }

  send(bytes) {
    if (!bytes.byteLength || this.gone) return;
    try {
      this.init.controller.enqueue(bytes);
    } catch {
      this.gone = true;
    }
    if (this.gone || this.init.cancelled.length > 0) {
      this.gone = true;
      this.finish("gone");
    }
  }

  close() {
    try {
      this.init.controller.close();
    } catch {
      this.gone = true;
    }
  }

  finish(end) {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    if (end !== "eof") {
      // It may still be sending (the answer was over at [DONE], the caller went away, a rescue
      // takes over): stopped at its source, which a pipe would notice only at its next chunk.
      this.reader?.cancel().catch(() => {});
      if (!this.reader) this.init.body.cancel().catch(() => {});
      this.init.aborter.abort();
    }
    this.spare?.cancel().catch(() => {});
    const [record, raw] = this.splicer.take();
    const { translate, finish } = this.init;
    let after;
    try {
      if (!this.pythonEnded) after = finish(end, this.consumed, this.splicer.tail, record, raw);
    } catch {
      // the caller's side is left as it is: nothing more can be said on it
    }
    // A rescue (a Python task) ends the stream itself; the relay is over when it is.
    Promise.resolve(after)
      .catch(() => {})
      .finally(() => {
        after?.destroy?.();
        translate.destroy();
        finish.destroy();
        this.resolve();
      });
  }
}
