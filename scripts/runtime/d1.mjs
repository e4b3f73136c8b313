// D1 for the local runtime: Miniflare's own D1 (workerd's SQLite-backed simulator), persisted in
// wrangler's layout so `wrangler d1 execute --local --persist-to DIR` reads the same database.
//
// Miniflare hands out proxy stubs whose constructor name is not "D1Database", so the workers SDK
// would not wrap them (None would bind as undefined, results would stay JsProxies). These two thin
// classes carry the production names and forward each call, which makes the SDK's _EnvWrapper treat
// the binding exactly as on workerd (PLATFORM-NOTES §2.4, §4.4).
import path from "node:path";
import { Miniflare } from "miniflare";

export class D1PreparedStatement {
  #stmt;
  constructor(stmt) {
    this.#stmt = stmt;
  }
  /** @internal the Miniflare statement, for batch(). */
  get stub() {
    return this.#stmt;
  }
  bind(...values) {
    return new D1PreparedStatement(this.#stmt.bind(...values));
  }
  first(column) {
    return column === undefined ? this.#stmt.first() : this.#stmt.first(column);
  }
  all() {
    return this.#stmt.all();
  }
  run() {
    return this.#stmt.run();
  }
  raw(options) {
    return options === undefined ? this.#stmt.raw() : this.#stmt.raw(options);
  }
}

export class D1Database {
  #db;
  #trace;
  constructor(db, trace) {
    this.#db = db;
    this.#trace = trace;
  }
  prepare(query) {
    this.#trace?.(query);
    return new D1PreparedStatement(this.#db.prepare(query));
  }
  batch(statements) {
    this.#trace?.("batch");
    return this.#db.batch(Array.from(statements, (s) => s.stub));
  }
  exec(query) {
    return this.#db.exec(query);
  }
}

// Miniflare's bundled workerd only accepts compatibility dates it knows; this worker only hosts the
// D1 simulator, so its date is independent of the Python Worker's.
const D1_HOST_COMPAT_DATE = "2026-08-01";

/**
 * Start Miniflare hosting one D1 database and return the production-shaped binding.
 * `trace(sql)`, if given, is called for every statement prepared (the tests count D1 queries).
 * @param {{persistTo: string, databaseId: string, trace?: (sql: string) => void}} options
 */
export async function openD1({ persistTo, databaseId, trace }) {
  const mf = new Miniflare({
    modules: true,
    script: "export default { fetch() { return new Response(null, { status: 404 }); } }",
    compatibilityDate: D1_HOST_COMPAT_DATE,
    d1Databases: { DB: databaseId },
    d1Persist: path.join(persistTo, "v3", "d1"),
  });
  const stub = await mf.getD1Database("DB");
  return { db: new D1Database(stub, trace), dispose: () => mf.dispose() };
}
