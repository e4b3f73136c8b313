// D1 for the local runtime: Miniflare's own D1 (workerd's SQLite-backed simulator), persisted in
// wrangler's layout so `wrangler d1 execute --local --persist-to DIR` reads the same database.
//
// Every query runs on workerd's own D1 binding, inside a bridge Worker that Miniflare hosts beside
// the database; this process sends it one request per query or batch. These two classes carry the
// production names ("D1Database", "D1PreparedStatement"), which makes the SDK's _EnvWrapper treat
// the binding exactly as on workerd (PLATFORM-NOTES §2.4, §4.4): None binds as null, and results
// come back as plain objects the SDK converts.
import path from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";

/** A value as JSON: `undefined` and bytes kept apart, so D1 sees exactly what was bound. */
function encode(value) {
  if (value === undefined) return { $undefined: true };
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    const bytes = value instanceof ArrayBuffer ? new Uint8Array(value) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    return { $bytes: Buffer.from(bytes).toString("base64") };
  }
  return value;
}

export class D1PreparedStatement {
  #database;
  #query;
  #params;
  constructor(database, query, params = []) {
    this.#database = database;
    this.#query = query;
    this.#params = params;
  }
  /** @internal [sql, params] as the bridge takes them. */
  get wire() {
    return [this.#query, this.#params.map(encode)];
  }
  bind(...values) {
    return new D1PreparedStatement(this.#database, this.#query, values);
  }
  first(column) {
    return this.#database.call({ method: "first", column, statements: [this.wire] });
  }
  all() {
    return this.#database.call({ method: "all", statements: [this.wire] });
  }
  run() {
    return this.#database.call({ method: "run", statements: [this.wire] });
  }
  raw(options) {
    return this.#database.call({ method: "raw", options, statements: [this.wire] });
  }
}

function rowsWritten(results) {
  return Array.isArray(results) ? results.reduce((sum, r) => sum + (r?.meta?.rows_written ?? 0), 0) : 0;
}

export class D1Database {
  #call;
  #trace;
  constructor(call, trace) {
    this.#call = call;
    this.#trace = trace;
  }
  /** @internal one round trip to the bridge Worker. */
  call(message) {
    return this.#call(message);
  }
  prepare(query) {
    this.#trace?.(query);
    return new D1PreparedStatement(this, query);
  }
  batch(statements) {
    this.#trace?.("batch");
    const done = this.#call({ method: "batch", statements: Array.from(statements, (s) => s.wire) });
    // With the trace on, the rows a batch wrote as D1 counts them (scripts/bench_usage_rows reads it).
    return this.#trace ? done.then((results) => (console.error(`[d1-rows] ${rowsWritten(results)}`), results)) : done;
  }
  exec(query) {
    return this.#call({ method: "exec", query });
  }
}

// The Worker Miniflare hosts beside the database: it runs each call on workerd's own D1 binding and
// answers its result as JSON. One HTTP round trip per query or batch (Miniflare's binding proxy
// makes one per prepare, bind and run: about 25 ms per batch, 12 ms of it CPU in this process).
const BRIDGE = `
const decode = (v) =>
  v && typeof v === "object" && v.$undefined ? undefined
  : v && typeof v === "object" && typeof v.$bytes === "string" ? Uint8Array.from(atob(v.$bytes), (c) => c.charCodeAt(0))
  : v;
export default {
  async fetch(request, env) {
    const { method, statements = [], column, options, query } = await request.json();
    try {
      if (method === "exec") return Response.json({ result: await env.DB.exec(query) });
      const prepared = statements.map(([sql, params]) => env.DB.prepare(sql).bind(...params.map(decode)));
      if (method === "batch") return Response.json({ result: await env.DB.batch(prepared) });
      const [statement] = prepared;
      const result =
        method === "first" ? await (column === undefined ? statement.first() : statement.first(column))
        : method === "raw" ? await (options === undefined ? statement.raw() : statement.raw(options))
        : await statement[method]();
      return Response.json({ result });
    } catch (error) {
      return Response.json({ error: String(error?.message ?? error) });
    }
  },
};
`;

// This worker only hosts the D1 simulator: its date is independent of the Python Worker's.
const D1_HOST_COMPAT_DATE = "2026-09-08";

/**
 * Start Miniflare hosting one D1 database and return the production-shaped binding.
 * `trace(sql)`, if given, is called for every statement prepared (the tests count D1 queries).
 * @param {{persistTo: string, databaseId: string, trace?: (sql: string) => void}} options
 */
export async function openD1({ persistTo, databaseId, trace }) {
  // Miniflare 5 takes the v4 options through its own adapter, as wrangler's `d1 execute` does.
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: BRIDGE,
      compatibilityDate: D1_HOST_COMPAT_DATE,
      d1Databases: { DB: databaseId },
      resourcePersistencePath: path.join(persistTo, "v3"),
    }),
  );
  const url = await mf.ready;
  const call = async (message) => {
    const response = await fetch(url, { method: "POST", body: JSON.stringify(message) });
    const { result, error } = await response.json();
    if (error !== undefined) throw new Error(error);
    return result ?? null;
  };
  return { db: new D1Database(call, trace), dispose: () => mf.dispose() };
}
