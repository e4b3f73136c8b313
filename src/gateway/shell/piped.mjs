// The pass-through relay (SPEC §2.6, §18), in JavaScript: an OpenAI chat stream relayed as it
// came, after its head, by workerd's native pipe: no JavaScript, and no Python, per chunk. What
// runs here is the little a pass-through must still do, where a wake costs least: the stall
// watch, the stream's last bytes kept to judge how it ended, and the stream_error event when it
// did not end properly. shell/stream.py (Relay) holds the Python side: it judges the end and counts
// the stream, called synchronously once, at the end.
//
// The upstream's body is tee'd: one branch goes to the caller by `pipeTo`, the other is drained
// only by the watchdog, a few times per stall period, in whole-queue BYOB reads that keep the last
// bytes (and after the pipe ends, to its end). A stream over before the watchdog's first look
// (most are) wakes the isolate for the head's write, the pipe's end and a read or two of the
// watched branch. The pipe leaves both ends to this relay: the caller's side stays open for the
// stream_error event, and the upstream is cancelled here (a tee branch's cancel waits for the
// other branch's, so the pipe must not wait for it).

// The watchdog looks this many times per stall period, so a stall is seen within 1.25 periods.
const STALL_CHECKS = 4;
// One drain read takes up to this many queued bytes at once (BYOB).
const DRAIN_BYTES = 64 * 1024;
// How much of the stream's end is kept to judge how it ended (core/sse.py's TAIL_BYTES).
const TAIL_BYTES = 2048;
const NOTHING_YET = Symbol("nothing yet");

/**
 * Pass `init.body` (the upstream's body after `init.head`, the bytes read up to its first event)
 * to the caller. Returns {readable, done}: the caller's side, and the promise to give waitUntil.
 * At the end it calls `init.finish(end, bytes, tail)` (Python, synchronously: how it ended,
 * "eof", "cut", "stalled", "gone" or "failed"; the bytes read after the head; its last bytes),
 * which answers the bytes to write before the caller's side closes (a stream_error event, or
 * none), and is destroyed then.
 *
 * init: body, aborter (the upstream request's AbortController), head, stallMs, finish.
 */
export function pipe(init) {
  const out = new IdentityTransformStream();
  const writer = out.writable.getWriter();
  // The head is written now, before the answer is even returned: its write completes when the
  // runtime reads the body, so the first bytes leave at once.
  const headWritten = writer.write(init.head.slice());
  return { readable: out.readable, done: new Piped(init, out, writer).run(headWritten) };
}

class Piped {
  constructor(init, out, writer) {
    this.init = init;
    this.out = out;
    this.writer = writer;
    this.tail = init.head.slice(-TAIL_BYTES);
    this.bytes = 0;
    this.pending = null; // a watched branch's read not yet settled
    this.ended = false; // the watched branch ended
    this.failed = false; // ... with an error
    this.stalled = false;
  }

  async run(headWritten) {
    const { init } = this;
    if (!(await settled(headWritten))) {
      // The caller went away before the head left.
      init.body.cancel().catch(() => {});
      return this.report("gone");
    }
    // Released only once the head is written: workerd drops a released writer's queued writes.
    this.writer.releaseLock();
    let end;
    try {
      end = await this.forward();
    } catch {
      end = "failed"; // a bug here must still end the caller's stream honestly
    }
    return this.report(end);
  }

  async forward() {
    const { init } = this;
    const [toCaller, watched] = init.body.tee();
    this.reader = watched.getReader({ mode: "byob" });
    const options = { preventClose: true, preventAbort: true, preventCancel: true };
    let progress = Date.now();
    const period = init.stallMs / STALL_CHECKS;
    const watch = async () => {
      if (this.ended) return;
      if (await this.drain(false)) progress = Date.now();
      else if (Date.now() - progress >= init.stallMs) {
        this.stalled = true;
        init.aborter.abort(); // the pipe fails, and the caller gets stream_stalled
        return;
      }
      timer = setTimeout(watch, period);
    };
    let timer = setTimeout(watch, period);
    const piped = await settled(toCaller.pipeTo(this.out.writable, options));
    clearTimeout(timer);
    this.writer = this.out.writable.getWriter();
    // An errored side has no desiredSize: the caller went away. (workerd may end the pipe
    // without an error then; the upstream must be cancelled all the same.)
    const gone = typeof this.writer.desiredSize !== "number";
    if (!piped || gone) {
      const cancelled = toCaller.cancel();
      await settled(this.reader.cancel());
      await settled(cancelled);
      if (gone) return "gone";
      return this.stalled ? "stalled" : "cut";
    }
    // The pipe read the upstream to its end, so the branch holds all that is left: a read made
    // now that comes back short emptied it (its "done" need not be waited for).
    while (!this.ended) {
      const fresh = this.pending === null;
      const read = await this.drain(true);
      if (fresh && read > 0 && read < DRAIN_BYTES) break;
    }
    return this.failed ? "cut" : "eof";
  }

  // Read what the watched branch holds (`wait`: also wait for the next bytes); keep the last
  // TAIL_BYTES. The bytes read; a failed read ends the branch as failed.
  async drain(wait) {
    let got = 0;
    for (;;) {
      this.pending ??= this.reader.read(new Uint8Array(DRAIN_BYTES));
      // A read with bytes queued is already settled and wins the race; else it stays pending
      // (kept for the next drain) and the sentinel wins.
      const read = wait ? this.pending : Promise.race([this.pending, NOTHING_YET]);
      let result;
      try {
        result = await read;
      } catch {
        this.pending = null;
        this.ended = this.failed = true;
        return got;
      }
      if (result === NOTHING_YET) return got;
      this.pending = null;
      if (result.done) {
        this.ended = true;
        return got;
      }
      const view = result.value;
      got += view.byteLength;
      this.bytes += view.byteLength;
      this.tail = keepTail(this.tail, view);
      if (wait) return got;
    }
  }

  report(end) {
    let last = null;
    try {
      last = this.init.finish(end, this.bytes, this.tail);
    } catch {
      // the stream ends as it is: nothing more can be said on it
    }
    if (last?.byteLength) this.writer.write(last).catch(() => {});
    this.writer.close().catch(() => {});
    this.init.finish.destroy();
  }
}

function settled(promise) {
  return promise.then(
    () => true,
    () => false,
  );
}

function keepTail(tail, view) {
  const start = Math.max(0, view.byteLength - TAIL_BYTES);
  const joined = new Uint8Array(tail.byteLength + view.byteLength - start);
  joined.set(tail);
  joined.set(view.subarray(start), tail.byteLength);
  return joined.slice(-TAIL_BYTES);
}
