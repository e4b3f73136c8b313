// The relay's splice (SPEC §18): a batch of the upstream's OpenAI chat SSE turned into the
// surface's bytes without a call into Python, when every event in it is the next piece of text,
// reasoning or a call's arguments that the translator's plan covers (surfaces/contract.py, Plan).
// Any other event (the finish, usage, an error, a new block or call, [DONE], anything it cannot
// read as the Python decoder would) makes the whole batch Python's: `splice` answers null.
//
// It reads each event as surfaces/chat.py's ChatStreamDecoder does, and frames the stream as
// core/sse.py does (`normalized`, `split_events`), so the same events give the same bytes either
// way; tests/unit/surfaces/test_splice.py holds the two side by side on one corpus. Pure: no I/O,
// no clock.

// A chunk that may carry more than text, as the decoder's fast path reads it (_MORE_THAN_TEXT, a
// bytes pattern: its \s is ASCII whitespace only).
const MARKERS =
  /"(?:tool_calls|reasoning|reasoning_content|error)"|"usage"[ \t\n\r\f\v]*:[ \t\n\r\f\v]*\{|"finish_reason"[ \t\n\r\f\v]*:[ \t\n\r\f\v]*"/;
// The decoder's fast path takes the first string after this in a line (_CONTENT, a str pattern:
// its \s is Python's str whitespace, which is not JavaScript's; a line holds no "\n").
const SPACE = "[\\t\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*";
const CONTENT = new RegExp(`"content"${SPACE}:${SPACE}"`);
// The same, as the first in each data line of a batch.
const LINE_CONTENT = new RegExp(`^data:[^\\n]*?"content"${SPACE}:${SPACE}"`, "gm");
// A string the fast path can take as it is: no escape, no control character.
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON forbids them raw in a string: these are what it looks for
const PLAIN = /^[^\\\x00-\x1f]*$/;
// What a chat stream passed on as it came must not carry past the relay: how the answer ends.
const ENDING = /"usage"\s*:\s*\{|"finish_reason"\s*:\s*"/;
// Gemini's strings also escape the line separators older google-genai releases split at.
const LINE_SEPARATORS = /[\u2028\u2029\u0085]/g;
const LF = 10;
const CR = 13;

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const NOTHING = new Uint8Array(0);
const encoder = new TextEncoder();

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

// Python's truth of a JSON value (`a or b` in the decoder).
const truthy = (value) =>
  Array.isArray(value) ? value.length > 0 : isObject(value) ? Object.keys(value).length > 0 : Boolean(value);

// A new array of `a` then `b` (never a view of a read's buffer, which the next read takes back).
export function joined(a, b) {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}

// core/sse.py's `normalized`: every line ending "\n"; a last "\r" held back (it may be half of a
// "\r\n"). Returns [bytes, held].
function normalized(bytes) {
  if (!bytes.includes(CR)) return [bytes, bytes.subarray(0, 0)];
  let end = bytes.byteLength;
  const held = bytes[end - 1] === CR ? bytes.subarray(end - 1) : bytes.subarray(0, 0);
  end -= held.byteLength;
  const out = new Uint8Array(end);
  let size = 0;
  for (let i = 0; i < end; i++) {
    const byte = bytes[i];
    if (byte !== CR) out[size++] = byte;
    else if (bytes[i + 1] !== LF) out[size++] = LF; // a "\r\n"'s "\n" follows and stays
  }
  return [out.subarray(0, size), held];
}

// The index just past the last blank line ("\n\n"), or -1.
function lastBlank(bytes) {
  for (let i = bytes.byteLength - 1; i > 0; i--) {
    if (bytes[i] === LF && bytes[i - 1] === LF) return i + 1;
  }
  return -1;
}

// The index of the quote that ends the JSON string starting at `start` (just past its opening
// quote), before `end`; -1 when there is none.
function closingQuote(text, start, end) {
  for (let i = start; i < end; i++) {
    const char = text.charCodeAt(i);
    if (char === 92)
      i++; // a backslash: the next character is escaped
    else if (char === 34) return i;
  }
  return -1;
}

// The JSON string that starts at `start` (just past its opening quote), decoded, as the decoder's
// `scanstring` reads it; undefined when it is not a whole valid string.
function stringAt(text, start) {
  const close = closingQuote(text, start, text.length);
  if (close < 0) return undefined;
  try {
    return JSON.parse(text.slice(start - 1, close + 1));
  } catch {
    return undefined;
  }
}

export class Splicer {
  constructor(secrets = []) {
    this.secrets = secrets;
    this.tail = new Uint8Array(0); // an unfinished event: the bytes after the last blank line
    this.plan = null;
    this.keepRaw = false;
    this.raw = [];
    this.reset();
  }

  // The translator's plan (Plan.as_json(), or null: every batch is Python's); `keepRaw`: hand the
  // events back as they came too (a rescue's watch keeps them, and so does the verbatim mode).
  setPlan(plan, keepRaw) {
    this.plan = plan;
    this.keepRaw = keepRaw || plan?.mode === "verbatim";
    this.args = new Map((plan?.args ?? []).map(([index, pre, post]) => [index, pre === null ? null : [pre, post]]));
    this.counter = plan?.counter?.[0] ?? 0;
    this.chunks = 0;
  }

  reset() {
    this.texts = [];
    this.reasonings = [];
    this.fragments = new Map();
    this.units = 0;
  }

  // The whole events that `bytes` completes, normalized (null: none yet); the rest waits.
  frame(bytes) {
    const [buffer, held] = normalized(this.tail.byteLength ? joined(this.tail, bytes) : bytes);
    const end = lastBlank(buffer);
    this.tail = joined(end < 0 ? buffer : buffer.subarray(end), held);
    return end < 0 ? null : buffer.subarray(0, end);
  }

  // What the plan lets it splice of the whole events `whole` (a Uint8Array): the surface's bytes
  // for them, and the rest, from the first event it cannot splice, for Python to translate (null:
  // none). A plan whose outputs merge a batch's deltas (runs, fields) splices a batch whole or
  // not at all: the same batch then makes the same bytes as Python's.
  splice(whole) {
    const plan = this.plan;
    if (plan === null) return [NOTHING, whole];
    let text;
    try {
      text = decoder.decode(whole);
    } catch {
      return [NOTHING, whole]; // not UTF-8: the decoder drops what it cannot read
    }
    const deltas = [];
    const verbatim = plan.mode === "verbatim";
    let cut = text.length; // where Python's part starts
    // Most batches hold nothing but text: one look at the whole batch says so, and the lines are
    // then read by the decoder's fast path alone; any other batch is read event by event.
    const suspect = text.includes('"error"') || text.includes("[DONE]") || (verbatim ? ENDING : MARKERS).test(text);
    if (!suspect) {
      if (!verbatim && !this.textLines(text, deltas)) return [NOTHING, whole];
    } else {
      cut = this.events(text, deltas, verbatim);
      if (cut === 0 || (cut < text.length && (plan.mode === "runs" || plan.mode === "fields"))) return [NOTHING, whole];
    }
    const mine = cut === text.length ? text : text.slice(0, cut);
    const rest = cut === text.length ? null : encoder.encode(text.slice(cut));
    this.keep(deltas);
    if (this.keepRaw) this.raw.push(mine);
    if (verbatim && rest === null && !this.secrets.some((secret) => text.includes(secret)))
      return [whole.slice(), null];
    return [encoder.encode(this.scrubbed(verbatim ? mine : this.render(deltas))), rest];
  }

  // Read `text`'s events in order into `deltas`; the index of the first one the plan does not
  // cover (or `text.length`: none), whose deltas are not kept.
  events(text, deltas, verbatim) {
    for (let start = 0; start < text.length; ) {
      const end = text.indexOf("\n\n", start);
      const kept = deltas.length;
      for (const line of text.slice(start, end).split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        if (
          data.startsWith("[DONE]") ||
          data.includes('"error"') ||
          (verbatim ? ENDING.test(data) : !this.read(data, deltas))
        ) {
          deltas.length = kept;
          return start;
        }
      }
      start = end + 2;
    }
    return text.length;
  }

  // What was spliced since the last call (contract.Spliced's record, as JSON) and the events as
  // they came; both start over.
  take() {
    const record = {
      text: [this.texts.join(""), this.texts.length],
      reasoning: [this.reasonings.join(""), this.reasonings.length],
      args: [...this.fragments].map(([index, parts]) => [index, parts.join("")]),
      units: this.units,
    };
    const raw = this.raw.join("");
    this.raw = [];
    this.reset();
    return [JSON.stringify(record), raw];
  }

  // The text of a batch with no marker in it: per data line, the first "content" string; false
  // when one is not a whole string on its line (the decoder drops such a line: Python's to say).
  textLines(text, deltas) {
    LINE_CONTENT.lastIndex = 0;
    for (let found = LINE_CONTENT.exec(text); found !== null; found = LINE_CONTENT.exec(text)) {
      const start = LINE_CONTENT.lastIndex;
      const end = text.indexOf("\n", start);
      let close = text.indexOf('"', start);
      if (close < 0 || close > end) return false;
      let piece = text.slice(start, close);
      if (!PLAIN.test(piece)) {
        close = closingQuote(text, start, end);
        if (close < 0) return false;
        try {
          piece = JSON.parse(text.slice(start - 1, close + 1));
        } catch {
          return false;
        }
      }
      if (piece !== "" && !this.delta("text", piece, undefined, deltas)) return false;
      LINE_CONTENT.lastIndex = end;
    }
    return true;
  }

  // One data line's deltas into `deltas` ([kind, text, index]); false when it is not one the plan
  // covers, or not read for sure as the decoder reads it.
  read(data, deltas) {
    if (!MARKERS.test(data)) {
      const found = CONTENT.exec(data);
      if (found === null) return true; // no text: the decoder finds nothing either
      const text = stringAt(data, found.index + found[0].length);
      if (text === undefined) return false;
      return text === "" || this.delta("text", text, undefined, deltas);
    }
    let chunk;
    try {
      chunk = JSON.parse(data);
    } catch {
      return false;
    }
    if (!isObject(chunk) || "error" in chunk || isObject(chunk.usage)) return false;
    const choices = chunk.choices;
    if (!Array.isArray(choices) || !isObject(choices[0])) return true;
    const choice = choices[0];
    const delta = choice.delta;
    if (isObject(delta)) {
      const reasoning = truthy(delta.reasoning_content) ? delta.reasoning_content : delta.reasoning;
      if (typeof reasoning === "string" && reasoning && !this.delta("reasoning", reasoning, undefined, deltas))
        return false;
      const content = delta.content;
      if (typeof content === "string" && content && !this.delta("text", content, undefined, deltas)) return false;
      const calls = delta.tool_calls;
      if (Array.isArray(calls)) {
        for (const call of calls) {
          if (isObject(call) && !this.call(call, deltas)) return false;
        }
      }
    }
    const reason = choice.finish_reason;
    return !(typeof reason === "string" && reason);
  }

  // A known call's arguments fragment (a new call, or one without an index, is Python's).
  call(call, deltas) {
    const index = call.index;
    if (!Number.isInteger(index) || !this.args.has(index)) return false;
    const fn = isObject(call.function) ? call.function : {};
    const fragment = fn.arguments;
    if (isObject(fragment)) return false; // the decoder encodes it itself
    return typeof fragment !== "string" || !fragment || this.delta("args", fragment, index, deltas);
  }

  delta(kind, text, index, deltas) {
    if (kind !== "args" && this.plan.mode === "each" && !this.plan[kind]) return false;
    if (kind === "args" && this.plan.mode === "each" && this.args.get(index) === null) return false;
    deltas.push([kind, text, index]);
    return true;
  }

  render(deltas) {
    const plan = this.plan;
    if (plan.mode === "each") {
      let out = "";
      for (const [kind, text, index] of deltas) {
        const [pre, post] = kind === "args" ? this.args.get(index) : plan[kind];
        out += pre + this.string(text) + post;
        if (plan.counter) out += this.counter++ + plan.counter[1];
      }
      this.units += deltas.length;
      return out;
    }
    if (plan.mode === "runs") {
      const parts = [];
      let run = [];
      let kind = null;
      for (const [each, text] of deltas) {
        if (each === "args") continue; // a call goes out whole at the end
        if (run.length && each !== kind) {
          parts.push(this.part(kind, run));
          run = [];
        }
        kind = each;
        run.push(text);
      }
      if (run.length) parts.push(this.part(kind, run));
      if (!parts.length) return "";
      const [first, next, close] = plan.chunk;
      this.units++;
      return (this.chunks++ ? next : first) + parts.join(",") + close;
    }
    // fields
    const texts = deltas.filter(([kind]) => kind === "text").map(([, text]) => text);
    const thoughts = deltas.filter(([kind]) => kind === "reasoning").map(([, text]) => text);
    if (!texts.length && !thoughts.length) return "";
    const [pre, mid, post] = plan.line;
    this.units++;
    const thinking = thoughts.length ? mid + this.string(thoughts.join("")) : "";
    return pre + (texts.length ? this.string(texts.join("")) : '""') + thinking + post;
  }

  part(kind, run) {
    const [pre, post] = this.plan[kind];
    return pre + this.string(run.join("")) + post;
  }

  string(text) {
    const json = JSON.stringify(text);
    if (this.plan.escape !== "gemini") return json;
    return json.replace(LINE_SEPARATORS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }

  keep(deltas) {
    for (const [kind, text, index] of deltas) {
      if (kind === "text") this.texts.push(text);
      else if (kind === "reasoning") this.reasonings.push(text);
      else {
        const parts = this.fragments.get(index);
        if (parts) parts.push(text);
        else this.fragments.set(index, [text]);
      }
    }
  }

  // The provider's key is never passed on, should the upstream echo it (as Python's relay does).
  scrubbed(out) {
    for (const secret of this.secrets) {
      if (out.includes(secret)) out = out.replaceAll(secret, "[redacted]");
    }
    return out;
  }
}
