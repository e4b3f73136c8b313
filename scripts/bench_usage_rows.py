"""D1 rows the usage counts write per day (SPEC §17, issue 20), measured on workerd.

    scripts/bench_usage_rows [--requests 10000] [--hours 24]

Starts the Worker (its D1 is Miniflare's, which reports each batch's ``meta.rows_written`` as D1
bills it: the runtime's D1 trace prints it, scripts/runtime/workerd_entry.py) in front of the fake upstream, with 3 named clients and 4
providers of 2 keys and 5 models each, and sends ``--requests`` chat requests spread evenly over
``--hours`` of the Worker's clock (the tests' clock moves it ahead between requests: a day takes a
few minutes): each from a client and for a model drawn at random (seeded), every fifth one
streamed. Prints the rows written by the usage flushes, the flushes (batches), the buckets that
hold the day, and the rows written per request. No failures: each failed attempt adds an event (one
row, and one deleted once 200 are kept). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.d1 import d1_execute  # noqa: E402
from support.runtime import Gateway  # noqa: E402
from support.upstream import FakeUpstream, Sse, chunk  # noqa: E402

CLIENTS, PROVIDERS, KEYS, MODELS = 3, 4, 2, 5
_ROWS = re.compile(r"^\[d1-rows\] (\d+)$", re.MULTILINE)
_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=24)
    args = parser.parse_args()
    step_ms = int(args.hours * 3_600_000 / args.requests)
    draw = random.Random(20)
    upstream = FakeUpstream().start()
    with tempfile.TemporaryDirectory() as workdir:
        gateway = Gateway.start(Path(workdir))
        try:
            admin = httpx.Client(base_url=f"{gateway.url}/api/admin", timeout=30,
                                 headers={"authorization": f"Bearer {gateway.admin_token}"})
            models = []
            for p in range(PROVIDERS):
                names = [f"p{p}-m{m}" for m in range(MODELS)]
                models += names
                keys = [f"sk-bench-p{p}-k{k}-0123456789" for k in range(KEYS)]
                admin.post("/providers", json={"name": f"p{p}", "base_url": upstream.base_url, "api_keys": keys,
                                               "models": names}).raise_for_status()
            tokens = [admin.post("/clients", json={"name": f"c{c}"}).raise_for_status().json()["token"]
                      for c in range(CLIENTS)]
            start_ms = gateway.now_ms()
            before = len(_ROWS.findall(gateway.log()))
            statements_before = len(gateway.d1_statements())
            with httpx.Client(base_url=f"{gateway.url}/v1", timeout=30) as api:
                for i in range(args.requests):
                    model = draw.choice(models)
                    body = {"model": model, "messages": _MESSAGES}
                    if i % 5 == 0:
                        upstream.queue(Sse([chunk(model, "Hello"), chunk(model, None, "stop")]), model=model)
                        body["stream"] = True
                    api.post("/chat/completions", json=body,
                             headers={"authorization": f"Bearer {draw.choice(tokens)}"}).raise_for_status()
                    gateway.advance_clock(step_ms)
            # The last minute's counts: written by an admin read, as the next request would.
            admin.get("/usage").raise_for_status()
            # Config reloads write nothing: the batches that wrote are the flushes.
            rows = [int(n) for n in _ROWS.findall(gateway.log())[before:] if n != "0"]
            upserts = sum(s.startswith("INSERT INTO usage_buckets") for s in gateway.d1_statements()[statements_before:])
            [stored] = d1_execute(gateway.persist_to, f"SELECT COUNT(*) AS n, SUM(requests) AS r FROM usage_buckets "
                                                      f"WHERE hour_ms >= {start_ms - start_ms % 3_600_000}")
        finally:
            gateway.stop()
            upstream.stop()
    print(json.dumps({
        "requests": args.requests,
        "hours": args.hours,
        "dimensions": f"{CLIENTS} clients x {PROVIDERS} providers x {KEYS} keys x {MODELS} models",
        "flush_batches": len(rows),
        "upsert_statements": upserts,
        "rows_written": sum(rows),
        "rows_written_per_request": round(sum(rows) / args.requests, 3),
        "bucket_rows_stored": stored["n"],
        "requests_counted": stored["r"],
    }, indent=2))


if __name__ == "__main__":
    main()
