// The relay's splice (src/gateway/surfaces/splice.mjs) driven from a Python test, one JSON
// command a line on stdin, one JSON answer a line on stdout; bytes travel as base64:
//   {"op": "new", "secrets": [...], "tail": b64}      a fresh Splicer, its tail the head's rest
//   {"op": "plan", "plan": {...} | null, "raw": bool}  → {}
//   {"op": "batch", "bytes": b64}  → {"whole": b64 | null, "out": b64 | null, "rest": b64 | null}:
//                                     the whole events the bytes complete, what was spliced of
//                                     them, and the rest, for Python (null: none)
//   {"op": "take"}                 → {"record": str, "raw": str}
//   {"op": "tail"}                 → {"tail": b64}
import readline from "node:readline";
import { Splicer } from "../../src/gateway/surfaces/splice.mjs";

const b64 = (bytes) => (bytes === null ? null : Buffer.from(bytes).toString("base64"));
const bytesOf = (text) => new Uint8Array(Buffer.from(text, "base64"));

let splicer = null;
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = JSON.parse(line);
  let answer = {};
  if (command.op === "new") {
    splicer = new Splicer(command.secrets);
    splicer.tail = bytesOf(command.tail);
  } else if (command.op === "plan") {
    splicer.setPlan(command.plan, command.raw);
  } else if (command.op === "batch") {
    const whole = splicer.frame(bytesOf(command.bytes));
    const [out, rest] = whole === null ? [null, null] : splicer.splice(whole);
    answer = { whole: b64(whole), out: b64(out), rest: b64(rest) };
  } else if (command.op === "take") {
    const [record, raw] = splicer.take();
    answer = { record, raw };
  } else if (command.op === "tail") {
    answer = { tail: b64(splicer.tail) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
