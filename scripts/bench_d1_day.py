"""What D1 bills for a day of traffic over several isolates (SPEC §18, issue 30), measured on workerd.

    scripts/bench_d1_day [--requests 100000] [--isolates 10] [--hours 3] [--fraction 1]

Starts the Worker (its D1 is Miniflare's, which reports each statement's ``meta.rows_read`` and
``meta.rows_written`` as D1 bills them, index rows included: the runtime's D1 trace prints them,
scripts/runtime/workerd_entry.py) in front of a fake OpenAI upstream and a fake OpenRouter, with
every feature on: three named clients with an rpm and the API token's client with
``default_client_rpm``, ``ip_rpm`` at seed 004's 20, ``auth_fail_limit`` at 10, usage and events,
a model pinned on OpenRouter, stream rescue on, and the cron every 3 hours of the Worker's clock.

The day: ``--requests`` arrivals spread at random (uniformly, seeded) over ``--hours`` of the
Worker's clock (the tests' clock moves it to each arrival). Isolates are simulated in the one
runtime: each request names the isolate memory that serves it (``X-Dev-Isolate``; its config
snapshot, rate counts, usage book and pins are its own). 20 callers (``CF-Connecting-IP``), each with one
of the four clients' tokens; a caller is served by its home isolate (caller mod isolates) 9 times in
10 and by another at random otherwise, as Cloudflare routes a caller to a nearby location. 0.5 % of
the requests are wrong tokens, in bursts of 12 within a minute from two other IPs (the 11th and
12th of a burst meet the lock). 10 % ask for the OpenRouter model, the rest for two models served by
provider ``a`` (two keys) then ``b``; ``a`` answers 1 % of its requests with a 500, so those fail
over to ``b`` (events, cooldowns). One request in five is streamed. Limits have headroom: a caller
averages 3.5 requests a minute against ``ip_rpm`` 20, a client 17 against its rpm of 60.

``--fraction F`` sends only that share of the day's arrivals (every minute still simulated) and
``--hours H`` simulates only the first H hours; the figures per day are then scaled by 1/F or 24/H,
and the output says so (costs per minute or per rate report do not scale with traffic: the full day at
full traffic is the measure; the scaled ones are estimates). At the end each isolate's unwritten
usage is written by an admin read (its rows written count, not that read's own reads), as that
isolate's next request would.

Prints a table (requests, rows written and read a day, D1 statements and calls a day, statements
per request, the most any request made, rows by table) beside the free plan's limits and SPEC
§18's budget, then the figures as JSON. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.openrouter import FakeOpenRouter, endpoint
from support.runtime import Gateway
from support.upstream import FakeUpstream, Json, Sse, chunk, completion

HOUR_MS, MINUTE_MS = 3_600_000, 60_000
CRON = "0 */3 * * *"
CALLERS, CLIENTS_NAMED, CLIENT_RPM, IP_RPM, AUTH_FAIL_LIMIT = 20, 3, 60, 20, 10
HOME_SHARE, WRONG_SHARE, BURST, OPENROUTER_SHARE, STREAM_SHARE, FAILURE_SHARE = 0.9, 0.005, 12, 0.1, 0.2, 0.01
MODELS, OR_MODEL = ["m1", "m2"], "deepseek/deepseek-chat"
FREE_PLAN = {"written": 100_000, "read": 5_000_000}
BUDGET = {"written": 10_000, "read": 250_000}
_BILLED = re.compile(r"^\[d1-billed\] read=(\d+) written=(\d+) statements=(\d+) by=(\S+)", re.M)
_STMT = re.compile(r"^\[d1-stmt\] read=(\d+) written=(\d+) by=(\S+) (.*)$", re.M)
_REQUEST = re.compile(r"^\[d1-request\] isolate=(\d+) calls=(\d+) statements=(\d+) read=(\d+) written=(\d+)", re.M)
_CRON = re.compile(r"^\[d1-cron\] ", re.M)
_TABLE = re.compile(r"\b(?:INTO|UPDATE|FROM)\s+([A-Za-z_][A-Za-z0-9_]*)", re.I)
_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]


@dataclass(frozen=True)
class Arrival:
    at_ms: int  # from the day's start
    caller: int  # 0..CALLERS-1 a caller; CALLERS, CALLERS+1 a scanner (wrong tokens)
    isolate: int
    model: str
    stream: bool


def kind_of(sql: str) -> str:
    """What a statement's rows are for, by its table (a table this bench does not know is named)."""
    found = _TABLE.search(sql)
    table = found.group(1).lower() if found else "?"
    if table.startswith("usage_event"):
        return "events"
    if table.startswith("usage"):
        return "usage"
    if table.startswith("rate"):
        return "rate windows"
    if table.startswith("openrouter"):
        return "pins"
    if table in ("providers", "provider_keys", "settings", "clients"):
        return "config"
    return table


def arrivals(args: argparse.Namespace, draw: random.Random) -> list[Arrival]:
    """The day's requests, in time order: callers' chat and the scanners' bursts."""
    span_ms = int(args.hours * HOUR_MS)
    full_day = int(24 * HOUR_MS)
    total = args.requests
    wrong = int(total * WRONG_SHARE) // BURST * BURST
    out: list[Arrival] = []
    for _ in range(total - wrong):
        at = draw.randrange(full_day)
        caller = draw.randrange(CALLERS)
        out.append(
            Arrival(
                at,
                caller,
                _isolate_of(caller, args.isolates, draw),
                OR_MODEL if draw.random() < OPENROUTER_SHARE else draw.choice(MODELS),
                draw.random() < STREAM_SHARE,
            )
        )
    for burst in range(wrong // BURST):
        start = draw.randrange(full_day - MINUTE_MS)
        scanner = CALLERS + burst % 2
        for at in sorted(draw.randrange(MINUTE_MS) for _ in range(BURST)):
            out.append(
                Arrival(start + at, scanner, _isolate_of(scanner, args.isolates, draw), draw.choice(MODELS), False)
            )
    kept = [a for a in out if a.at_ms < span_ms and draw.random() < args.fraction]
    return sorted(kept, key=lambda a: a.at_ms)


def _isolate_of(caller: int, isolates: int, draw: random.Random) -> int:
    home = caller % isolates
    return (
        home if draw.random() < HOME_SHARE or isolates == 1 else draw.choice([i for i in range(isolates) if i != home])
    )


class Upstreams:
    """The fake OpenAI upstream (provider ``a`` fails 1 % of its requests with a 500) and the fake
    OpenRouter; each counts the requests it got (kept as counts: a day's records would not fit)."""

    def __init__(self, seed: int) -> None:
        self.openai = FakeUpstream().start()
        self.openrouter = FakeOpenRouter().start()
        self.openrouter.set_endpoints(
            OR_MODEL,
            [
                endpoint("cache", prompt="0.0000003", completion="0.0000009", cache_read="0.00000003", throughput=50.0),
                endpoint("cheap", prompt="0.0000002", completion="0.0000008", caching=False, throughput=60.0),
            ],
        )
        self._draw = random.Random(seed)
        self._lock = threading.Lock()
        self.failed = 0
        self.openai.answer_always(self._answer)

    def _answer(self, recorded) -> object:
        body = recorded.json
        model = body.get("model", "?")
        if recorded.key and recorded.key.startswith("sk-day-a"):
            with self._lock:
                fail = self._draw.random() < FAILURE_SHARE
                self.failed += fail
            if fail:
                return Json({"error": {"message": "upstream overloaded", "type": "server_error"}}, 500)
        if body.get("stream"):
            return Sse([chunk(model, "Hello"), chunk(model, None, "stop")])
        return Json(completion(model))

    def fetches(self) -> int:
        """Requests received so far (chat and endpoint fetches); the records are dropped."""
        with self.openai._lock:
            count = len(self.openai.requests)
            self.openai.requests.clear()
        with self.openrouter._lock:
            count += len(self.openrouter.requests)
            self.openrouter.requests.clear()
        return count

    def stop(self) -> None:
        self.openai.stop()
        self.openrouter.stop()


def configure(gateway: Gateway, upstreams: Upstreams) -> list[str]:
    """Providers, settings and clients; the four tokens callers use (the API token's first)."""
    admin = httpx.Client(
        base_url=f"{gateway.url}/api/admin", timeout=30, headers={"authorization": f"Bearer {gateway.admin_token}"}
    )
    base = upstreams.openai.base_url
    admin.post(
        "/providers",
        json={
            "name": "a",
            "base_url": base,
            "priority": 10,
            "models": MODELS,
            "api_keys": ["sk-day-a-key-0-0123456789", "sk-day-a-key-1-0123456789"],
        },
    ).raise_for_status()
    admin.post(
        "/providers",
        json={"name": "b", "base_url": base, "priority": 20, "models": MODELS, "api_key": "sk-day-b-key-0-0123456789"},
    ).raise_for_status()
    admin.post(
        "/providers",
        json={
            "name": "openrouter",
            "platform": "openrouter",
            "base_url": upstreams.openrouter.base_url,
            "api_key": "sk-or-day-key-0123456789",
            "models": [OR_MODEL],
        },
    ).raise_for_status()
    admin.put(
        "/settings",
        json={
            "ip_rpm": IP_RPM,
            "auth_fail_limit": AUTH_FAIL_LIMIT,
            "default_client_rpm": CLIENT_RPM,
            "openrouter_origin": upstreams.openrouter.origin,
            "openrouter_pinning": 1,
            "stream_rescue": 1,
        },
    ).raise_for_status()
    tokens = [gateway.api_token]
    tokens += [
        admin.post("/clients", json={"name": f"team-{c}", "rpm": CLIENT_RPM}).raise_for_status().json()["token"]
        for c in range(CLIENTS_NAMED)
    ]
    admin.close()
    return tokens


class Day:
    """Sends the arrivals in time order, a few at once, moving the Worker's clock to each group's
    first arrival (only between groups: no request is in flight when it jumps)."""

    def __init__(self, gateway: Gateway, tokens: list[str], concurrency: int) -> None:
        self.gateway = gateway
        self.tokens = tokens
        self.concurrency = concurrency
        self.statuses: Counter[int] = Counter()
        self.max_failed_attempts = 0
        self._local = threading.local()
        self._lock = threading.Lock()

    def _client(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = httpx.Client(base_url=f"{self.gateway.url}/v1", timeout=60)
        return client

    def send(self, a: Arrival) -> None:
        token = self.tokens[a.caller % len(self.tokens)] if a.caller < CALLERS else f"fk-wrong-{a.caller}-{a.at_ms}"
        headers = {
            "authorization": f"Bearer {token}",
            "cf-connecting-ip": f"198.51.100.{a.caller + 1}",
            "x-dev-isolate": str(a.isolate),
        }
        body = {"model": a.model, "messages": _MESSAGES, "stream": a.stream}
        with self._client().stream("POST", "/chat/completions", json=body, headers=headers) as answer:
            answer.read()
        attempts = int(answer.headers.get("x-fallback-attempts", "0") or 0)
        with self._lock:
            self.statuses[answer.status_code] += 1
            self.max_failed_attempts = max(self.max_failed_attempts, attempts)

    def run(
        self, plan: list[Arrival], day_start_ms: int, cron_every_ms: int, hours: float, upstreams: Upstreams
    ) -> int:
        """Send ``plan``; fire the cron at each of its times; the upstream fetches made."""
        fetches = 0
        next_cron = 0
        with ThreadPoolExecutor(self.concurrency) as pool:
            for i in range(0, len(plan), self.concurrency):
                group = plan[i : i + self.concurrency]
                while next_cron <= group[0].at_ms:
                    self._move_clock(day_start_ms + next_cron)
                    self.cron()
                    next_cron += cron_every_ms
                self._move_clock(day_start_ms + group[0].at_ms)
                list(pool.map(self.send, group))
                if i % 2000 < self.concurrency:
                    fetches += upstreams.fetches()
        while next_cron < hours * HOUR_MS:
            self._move_clock(day_start_ms + next_cron)
            self.cron()
            next_cron += cron_every_ms
        return fetches + upstreams.fetches()

    def cron(self) -> None:
        httpx.get(f"{self.gateway.url}/cdn-cgi/handler/scheduled", params={"cron": CRON}, timeout=60).raise_for_status()

    def _move_clock(self, target_ms: int) -> None:
        ahead = target_ms - self.gateway.now_ms()
        if ahead > 0:
            self.gateway.advance_clock(ahead)


def flush_isolates(gateway: Gateway, isolates: int) -> None:
    """Each isolate's unwritten usage, written by the admin's usage read (a forced write)."""
    gateway.advance_clock(MINUTE_MS)
    with httpx.Client(
        base_url=f"{gateway.url}/api/admin", timeout=60, headers={"authorization": f"Bearer {gateway.admin_token}"}
    ) as admin:
        for k in range(isolates):
            admin.get("/usage", headers={"x-dev-isolate": str(k)}).raise_for_status()


def settled_size(gateway: Gateway) -> int:
    """The runtime log's size once it stops growing (the log crosses a pipe, so it may lag)."""
    size = -1
    while size != gateway.log_path.stat().st_size:
        size = gateway.log_path.stat().st_size
        time.sleep(0.5)  # waiting for the log to settle, not timing a behaviour
    return size


def log_between(gateway: Gateway, start: int, end: int) -> str:
    with gateway.log_path.open("rb") as log:
        log.seek(start)
        return log.read(end - start).decode(errors="replace")


def tally(day_log: str, final_log: str, scale: float) -> dict:
    """The day's D1 figures from the trace's lines: the requests' per day (× ``scale``), the cron's
    scaled to its 8 runs a day, the final flush's rows written as they are."""
    cron_runs = len(_CRON.findall(day_log))
    cron_scale = 24 / 3 / cron_runs if cron_runs else 0.0
    read = written = statements = calls = 0.0
    for r, w, n, by in _BILLED.findall(day_log):
        factor = cron_scale if by == "cron" else scale
        read, written, statements, calls = (
            read + int(r) * factor,
            written + int(w) * factor,
            statements + int(n) * factor,
            calls + factor,
        )
    final_written = sum(int(w) for _, w, _, _ in _BILLED.findall(final_log))
    by_kind: dict[str, list[float]] = {}
    for r, w, by, sql in _STMT.findall(day_log):
        factor = cron_scale if by == "cron" else scale
        kind = by_kind.setdefault(kind_of(sql), [0.0, 0.0])
        kind[0] += int(r) * factor
        kind[1] += int(w) * factor
    for _, w, _, sql in _STMT.findall(final_log):
        if int(w):
            by_kind.setdefault(kind_of(sql), [0.0, 0.0])[1] += int(w)
    per_request = [tuple(map(int, m)) for m in _REQUEST.findall(day_log)]
    requests = len(per_request)
    return {
        "requests_traced": requests,
        "rows_written_per_day": round(written + final_written),
        "rows_read_per_day": round(read),
        "statements_per_day": round(statements),
        "calls_per_day": round(calls),
        "statements_per_request_mean": round(sum(r[2] for r in per_request) / max(requests, 1), 3),
        "requests_with_d1_share": round(sum(1 for r in per_request if r[1]) / max(requests, 1), 3),
        "max_statements_one_request": max((r[2] for r in per_request), default=0),
        "max_calls_one_request": max((r[1] for r in per_request), default=0),
        "cron_runs": cron_runs,
        "final_flush_rows_written": final_written,
        "by_kind_per_day": {
            k: {"read": round(v[0]), "written": round(v[1])}
            for k, v in sorted(by_kind.items(), key=lambda kv: (-kv[1][1], -kv[1][0]))
        },
    }


def table(figures: dict, method: str) -> str:
    d1 = figures["d1"]
    rows = [
        "| resource | free plan | SPEC §18 budget | this Worker, measured |",
        "|---|---|---|---|",
        f"| requests / day | 100,000 | 100,000 over {figures['isolates']} isolates | {figures['requests_per_day']:,} |",
        f"| D1 rows written / day | {FREE_PLAN['written']:,} | ≤ {BUDGET['written']:,} "
        f"| {d1['rows_written_per_day']:,} |",
        f"| D1 rows read / day | {FREE_PLAN['read']:,} | ≤ {BUDGET['read']:,} | {d1['rows_read_per_day']:,} |",
        f"| D1 statements / day (calls: a batch is one) | — | — "
        f"| {d1['statements_per_day']:,} ({d1['calls_per_day']:,} calls) |",
        f"| D1 statements per request, mean (share of requests with any) | — | 0 on the warm path "
        f"| {d1['statements_per_request_mean']} ({d1['requests_with_d1_share']:.0%}) |",
        f"| most D1 statements (calls) one request made, waitUntil included | 50 subrequests | counted "
        f"| {d1['max_statements_one_request']} ({d1['max_calls_one_request']}) |",
        f"| most upstream fetches one request made (mean) | 50 subrequests | counted "
        f"| {figures['max_fetches_one_request']} ({figures['fetches_per_request_mean']}) |",
        "",
        "| rows by table, a day | written | read |",
        "|---|---|---|",
    ]
    rows += [f"| {k} | {v['written']:,} | {v['read']:,} |" for k, v in d1["by_kind_per_day"].items()]
    return "\n".join([f"Method: {method}", "", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000, help="requests in a whole day")
    parser.add_argument("--isolates", type=int, default=10)
    parser.add_argument("--hours", type=float, default=3, help="simulate the first H hours (scaled to a day)")
    parser.add_argument("--fraction", type=float, default=1.0, help="send this share of the arrivals (scaled)")
    parser.add_argument("--concurrency", type=int, default=6, help="requests in flight at once")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--keep-log", type=Path, help="copy the runtime's log (its D1 trace) here")
    args = parser.parse_args()
    draw = random.Random(args.seed)
    plan = arrivals(args, draw)
    scale = 24 / args.hours / args.fraction
    method = (
        f"{len(plan):,} requests sent over {args.hours:g} h of the Worker's clock "
        f"({args.fraction:g} of {args.requests:,} a day's arrivals), {args.isolates} simulated isolates, "
        f"{CALLERS} callers; per-day figures = measured × {scale:g} (the cron's: × 8 / its runs)"
    )
    upstreams = Upstreams(args.seed)
    started = time.monotonic()
    # The runtime's D1 on a memory file system where there is one: the rows billed are the same,
    # and SQLite's syncs on disk made each D1 write take tens of ms here.
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as workdir:
        gateway = Gateway.start(Path(workdir))
        try:
            tokens = configure(gateway, upstreams)
            now = gateway.now_ms()
            day_start = now - now % HOUR_MS + HOUR_MS  # the next whole hour, so hours are whole
            gateway.advance_clock(day_start - now)
            day_from = settled_size(gateway)
            day = Day(gateway, tokens, args.concurrency)
            sending = time.monotonic()
            fetches = day.run(plan, day_start, 3 * HOUR_MS, args.hours, upstreams)
            sent_s = time.monotonic() - sending
            final_from = settled_size(gateway)
            flush_isolates(gateway, args.isolates)
            end = settled_size(gateway)
            day_log, final_log = log_between(gateway, day_from, final_from), log_between(gateway, final_from, end)
        finally:
            gateway.stop()
            upstreams.stop()
            if args.keep_log:
                shutil.copyfile(gateway.log_path, args.keep_log)
    figures = {
        "method": method,
        "isolates": args.isolates,
        "requests_sent": len(plan),
        "requests_per_day": round(len(plan) * scale),
        "statuses": dict(sorted(day.statuses.items())),
        "upstream_failures_injected": upstreams.failed,
        "fetches_per_request_mean": round(fetches / max(len(plan), 1), 3),
        "max_fetches_one_request": 1 + day.max_failed_attempts,
        "d1": tally(day_log, final_log, scale),
        "run_seconds": round(time.monotonic() - started),
        "requests_per_second": round(len(plan) / sent_s, 1),
    }
    print(table(figures, method))
    print()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
