"""What one load of the config page costs on the local runtime, workerd (docs/performance.md).

    scripts/bench_page [--root DIR]

A page load is ``GET /`` and every file the page names (its style, script and the modules the
script imports), fetched as a browser's first visit does (no cache: the page is ``no-store``).
Prints the median and p90 time of a whole load, the runtime processes' CPU time per
load, the bytes sent (uncompressed), and which answers came from Workers Static Assets (the
asset worker's ETag; the Python Worker's answers have none). ``--root`` measures another checkout of
the project (e.g. a ``git worktree`` of an older commit) with this script's tools.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent

WARMUP = 50
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "300"))


def page_files(client: httpx.Client) -> list[str]:
    """``/`` and the files it loads, in the order a browser finds them."""
    html = client.get("/").text
    files, queue = ["/"], re.findall(r'<(?:script[^>]*src|link[^>]*href)="(/[\w./-]+\.(?:js|css))"', html)
    while queue:
        path = queue.pop(0)
        if path in files:  # a module several others import is fetched once
            continue
        files.append(path)
        if path.endswith(".js"):
            # Its static imports of the page's own modules (an import list may take several lines).
            queue += [
                f"/{name}" for name in re.findall(r'^import [^;]*? from "\./([\w.-]+)";$', client.get(path).text, re.M)
            ]
    return files


def measure(gateway) -> dict[str, object]:
    from bench import timed_cpu  # after main() put the measured checkout's launcher first

    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        files = page_files(client)

        def load() -> None:
            for path in files:
                client.get(path).raise_for_status()

        timed_cpu(gateway, load, WARMUP)
        samples, cpu_ms = timed_cpu(gateway, load, ROUNDS)
        answers = [client.get(path) for path in files]
    return {
        "files": files,
        "bytes": sum(len(a.content) for a in answers),
        "load_median_ms": round(statistics.median(samples), 2),
        "load_p90_ms": round(statistics.quantiles(samples, n=10)[-1], 2),
        "runtime_cpu_ms_per_load": round(cpu_ms, 2),
        "served_as_assets": [a.request.url.path for a in answers if "etag" in a.headers],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the checkout to measure")
    args = parser.parse_args()
    # The measured checkout's own launcher, imported before scripts/bench imports this one's.
    sys.path.insert(0, str(args.root.resolve() / "tests"))
    from support.runtime import Gateway

    sys.path.insert(0, str(HERE))

    # A checkout from before 2026-12-03 had two runtimes, the Node one by default: workerd, as here.
    older = {"runtime": "workerd"} if "runtime" in inspect.signature(Gateway.start).parameters else {}
    with tempfile.TemporaryDirectory() as workdir:
        gateway = Gateway.start(Path(workdir), extra_env={"LOCAL_RUNTIME_TRACE_D1": "0", "LD_PRELOAD": ""}, **older)
        try:
            figures = measure(gateway)
        finally:
            gateway.stop()
    print(json.dumps({"root": str(args.root), "rounds": ROUNDS, **figures}, indent=2))


if __name__ == "__main__":
    main()
