"""D1 rows the usage counts write per day (SPEC §17, §18; issues 20 and 30), measured on workerd.

    scripts/bench_usage_rows [--requests 10000] [--hours 24] [--flush-minutes 10]

Starts the Worker (its D1 is Miniflare's, which reports each batch's ``meta.rows_written`` as D1
bills it: the runtime's D1 trace prints it, scripts/runtime/workerd_entry.py) in front of the fake
upstream, with 3 named clients and 4
providers of 2 keys and 5 models each, and sends ``--requests`` chat requests spread evenly over
``--hours`` of the Worker's clock (the tests' clock moves it ahead between requests: a day takes a
few minutes): each from a client and for a model drawn at random (seeded), every fifth one
streamed. The Worker is one isolate: SPEC §18's budget (100,000 requests a day over 10 isolates) is
10 such isolates at 10,000 requests a day each, and since each isolate writes its own row per hour,
their rows add up (``rows_written_per_day_10_isolates``). Prints the rows written by the usage
flushes, the flushes (batches), the rows per flush, the parts (rows) that hold the period and the
largest part's size, and the requests D1 sums from them. No failures: a failure's event rides in
its hour's part and costs no row of its own. Figures, not assertions.
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
from support.d1 import d1_execute
from support.runtime import Gateway
from support.upstream import FakeUpstream, Sse, chunk

CLIENTS, PROVIDERS, KEYS, MODELS = 3, 4, 2, 5
_ROWS = re.compile(r"^\[d1-rows\] (\d+)$", re.MULTILINE)
_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--flush-minutes", type=int, default=10, help="the setting usage_flush_minutes")
    args = parser.parse_args()
    step_ms = int(args.hours * 3_600_000 / args.requests)
    draw = random.Random(20)
    upstream = FakeUpstream().start()
    with tempfile.TemporaryDirectory() as workdir:
        gateway = Gateway.start(Path(workdir), extra_env={"USAGE_FLUSH_MINUTES": str(args.flush_minutes)})
        try:
            admin = httpx.Client(
                base_url=f"{gateway.url}/api/admin",
                timeout=30,
                headers={"authorization": f"Bearer {gateway.admin_token}"},
            )
            models = []
            for p in range(PROVIDERS):
                names = [f"p{p}-m{m}" for m in range(MODELS)]
                models += names
                keys = [f"sk-bench-p{p}-k{k}-0123456789" for k in range(KEYS)]
                admin.post(
                    "/providers",
                    json={"name": f"p{p}", "base_url": upstream.base_url, "api_keys": keys, "models": names},
                ).raise_for_status()
            tokens = [
                admin.post("/clients", json={"name": f"c{c}"}).raise_for_status().json()["token"]
                for c in range(CLIENTS)
            ]
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
                    api.post(
                        "/chat/completions", json=body, headers={"authorization": f"Bearer {draw.choice(tokens)}"}
                    ).raise_for_status()
                    gateway.advance_clock(step_ms)
            # The last interval's counts: written by an admin read, as the next due request would.
            admin.get("/usage").raise_for_status()
            # Config reloads write nothing: the batches that wrote are the flushes.
            rows = [int(n) for n in _ROWS.findall(gateway.log())[before:] if n != "0"]
            upserts = sum(s.startswith("INSERT INTO usage_parts") for s in gateway.d1_statements()[statements_before:])
            since = start_ms - start_ms % 3_600_000
            [stored] = d1_execute(
                gateway.persist_to,
                f"SELECT COUNT(*) AS n, MAX(LENGTH(buckets)) AS size, "
                f"SUM(json_array_length(buckets)) AS b FROM usage_parts "
                f"WHERE hour_ms >= {since}",
            )
            [counted] = d1_execute(
                gateway.persist_to,
                f"SELECT SUM(b.value ->> 5) AS r FROM usage_parts p, json_each(p.buckets) b WHERE p.hour_ms >= {since}",
            )
        finally:
            gateway.stop()
            upstream.stop()
    per_day = sum(rows) * 24 / args.hours
    print(
        json.dumps(
            {
                "requests": args.requests,
                "hours": args.hours,
                "flush_minutes": args.flush_minutes,
                "dimensions": f"{CLIENTS} clients x {PROVIDERS} providers x {KEYS} keys x {MODELS} models",
                "flush_batches": len(rows),
                "upsert_statements": upserts,
                "rows_written": sum(rows),
                "rows_written_per_flush": round(sum(rows) / max(len(rows), 1), 3),
                "rows_written_per_request": round(sum(rows) / args.requests, 4),
                "rows_written_per_day_1_isolate": round(per_day),
                "rows_written_per_day_10_isolates": round(10 * per_day),
                "parts_stored": stored["n"],
                "buckets_in_parts": stored["b"],
                "largest_part_bytes": stored["size"],
                "requests_counted": counted["r"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
