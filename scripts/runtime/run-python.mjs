// Runs a Python file inside the local runtime's Pyodide, with the Worker's source mounted where
// workerd puts it (its path is passed to the file as sys.argv[1]) but not imported:
//   node scripts/runtime/run-python.mjs FILE [--src DIR]
// The tests use it for checks that must happen in the Python of production.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { WORKER_PATH, loadPython } from "./python.mjs";

const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { src: { type: "string", default: path.join(ROOT, "src") } },
});
const pyodide = await loadPython({ srcDir: values.src, wheelDir: path.join(ROOT, ".cache", "wheels"), env: {} });
pyodide.runPython(`import sys; sys.argv = ["${positionals[0]}", "${WORKER_PATH}"]`);
await pyodide.runPythonAsync(fs.readFileSync(positionals[0], "utf8"));
