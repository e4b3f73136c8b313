#!/usr/bin/env python3
"""Anthropic ``POST /v1/messages`` through the gateway and through LiteLLM, beside the direct upstream.

Stdlib only (system python3 >= 3.10). scripts/bench_peers_messages starts the fake upstream
(../shared/bench/fast_upstream.py), LiteLLM and the gateway and runs this; it only sends requests
to loopback and reads /proc. The method is ../shared/bench/overhead.py's, for the Anthropic surface.

WHAT IT MEASURES
  Targets: "direct" is the upstream's own OpenAI /v1/chat/completions with the content a gateway
  asks it for (the baseline); each gateway target is its POST /v1/messages, which it translates
  into that upstream call and the answer back into Anthropic's format.
  0. Preflight: each gateway's stream must be an Anthropic event stream (message_start, then
     content_block_delta events, message_stop last, each `event:` naming its data's type) whose
     text is the upstream's, and its non-streamed answer a message with the upstream's text;
     exit 3 otherwise.
  1. Sequential, interleaved: R rounds; in each, every target gets a block of N sequential
     requests per mode ("stream": time to the first body byte and to the end of the stream;
     "nonstream": time to the whole JSON). One keep-alive connection per block, primed by one
     untimed request. Per target: median of the R round medians and pooled p90; "added" = median
     over the rounds of (target's round median - direct's round median of the same round).
  2. CPU ms per request of each gateway's process tree (utime+stime+cutime+cstime of the pid and
     its descendants in /proc/PID/stat) read around each timed block, minus the idle rate sampled
     first (--idle-seconds) times the block's wall time.
  3. Concurrency: C clients (asyncio, one keep-alive connection each) stream /v1/messages for D
     seconds per gateway after a short warm-up: requests/s, latency p50/p90, CPU ms/request, and
     the client's own CPU % (it shares the machine with what it measures).

  python3 scripts/bench_peers_messages.py --direct http://127.0.0.1:9110/v1 \\
    --gateway name=ours,url=http://127.0.0.1:8797/v1,key=TOKEN,pid=PID \\
    --gateway name=litellm,url=http://127.0.0.1:9210/v1,key=sk-...,pid=PID [--rounds 7 ...]
  Exit status: 0 ok; 3 a preflight failed; 4 more than 1 % of the requests failed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import socket
import statistics
import sys
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

CLK_TCK = os.sysconf("SC_CLK_TCK")
PROMPT = [{"role": "user", "content": "Say hello."}]
MODES = ("stream", "nonstream")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- targets


@dataclass
class Target:
    name: str
    url: str  # base URL, ".../v1"
    anthropic: bool
    headers: dict[str, str]
    pid: int | None = None
    host: str = field(init=False)
    port: int = field(init=False)
    path: str = field(init=False)

    def __post_init__(self) -> None:
        u = urllib.parse.urlsplit(self.url)
        if u.scheme != "http" or u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit(f"{self.name}: {self.url!r} is not a loopback http:// URL")
        self.host, self.port = u.hostname, u.port or 80
        self.path = u.path.rstrip("/") + ("/messages" if self.anthropic else "/chat/completions")

    def body(self, stream: bool) -> bytes:
        req: dict = {"model": "m1", "max_tokens": 64, "messages": PROMPT, "stream": stream}
        if stream and not self.anthropic:
            # what the gateways ask the upstream for, so the baseline stream carries the same events
            req["stream_options"] = {"include_usage": True}
        return json.dumps(req).encode()

    def ended(self, data: bytes) -> bool:
        """Whether a whole stream arrived (cheap: checked on every timed request)."""
        return (b"message_stop" if self.anthropic else b"[DONE]") in data[-128:]


def parse_gateway(spec: str) -> Target:
    f = dict(part.split("=", 1) for part in spec.split(",") if "=" in part)
    if not {"name", "url", "key"} <= f.keys():
        raise SystemExit(f"--gateway {spec!r}: needs name=, url=, key= (and optionally pid=)")
    headers = {"x-api-key": f["key"], "anthropic-version": "2023-06-01"}
    return Target(f["name"], f["url"], True, headers, int(f["pid"]) if f.get("pid") else None)


# ----------------------------------------------------------------------------- CPU (as overhead.py)


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("latin-1")
    except OSError:
        return None
    return data[data.rindex(")") + 2 :].split()  # fields from #3 (state) on; the name may hold spaces


def cpu_ms(root: int) -> float:
    """utime+stime+cutime+cstime of root and every descendant (the runtime's workerd is a child)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and (st := _stat(int(d))):
            children.setdefault(int(st[1]), []).append(int(d))
    ticks, todo = 0, [root]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        if st := _stat(p):
            ticks += sum(int(x) for x in st[11:15])
    return ticks * 1000 / CLK_TCK


def idle_rates(targets: list[Target], seconds: float) -> dict[str, float]:
    """Background CPU ms per second of each pid, subtracted from the timed blocks."""
    pids = {t.name: t.pid for t in targets if t.pid}
    if not pids or seconds <= 0:
        return {}
    before = {k: cpu_ms(p) for k, p in pids.items()}
    t0 = time.perf_counter()
    time.sleep(seconds)
    wall = time.perf_counter() - t0
    return {k: (cpu_ms(p) - before[k]) / wall for k, p in pids.items()}


# ----------------------------------------------------------------------------- checking answers


def sse_events(data: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) per SSE event."""
    out = []
    for block in data.replace(b"\r\n", b"\n").decode().split("\n\n"):
        name, lines = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].strip())
        if lines:
            out.append((name, "\n".join(lines)))
    return out


def openai_text(data: bytes, stream: bool) -> str:
    if not stream:
        return json.loads(data)["choices"][0]["message"]["content"]
    return "".join(
        (c.get("delta") or {}).get("content") or ""
        for _, d in sse_events(data)
        if d != "[DONE]"
        for c in json.loads(d)["choices"]
    )


def check_anthropic(data: bytes, stream: bool, want: str) -> str:
    """Raises ValueError unless data is a valid Anthropic answer with text want; returns a summary."""
    if not stream:
        msg = json.loads(data)
        if msg.get("type") != "message" or msg.get("role") != "assistant":
            raise ValueError(f"not an assistant message: {data[:300]!r}")
        text = "".join(b.get("text", "") for b in msg.get("content", []) if b.get("type") == "text")
        if text != want:
            raise ValueError(f"text {text!r} is not the upstream's {want!r}")
        return f"message, stop_reason {msg.get('stop_reason')}, usage {msg.get('usage')}"
    events = [(name, json.loads(d)) for name, d in sse_events(data)]
    types = [e.get("type") for _, e in events]
    if not types or types[0] != "message_start" or types[-1] != "message_stop":
        raise ValueError(f"events {types} do not run from message_start to message_stop")
    if "content_block_delta" not in types or "error" in types:
        raise ValueError(f"events {types}: no content_block_delta, or an error")
    if unnamed := [t for (name, e), t in zip(events, types) if name != t]:
        raise ValueError(f"events whose `event:` line does not name their type: {unnamed[:3]}")
    text = "".join(
        e["delta"].get("text", "")
        for _, e in events
        if e["type"] == "content_block_delta" and e["delta"].get("type") == "text_delta"
    )
    if text != want:
        raise ValueError(f"text {text!r} is not the upstream's {want!r}")
    runs: list[list] = []  # the sequence, runs collapsed: "content_block_delta x20"
    for t in types:
        if runs and runs[-1][0] == t:
            runs[-1][1] += 1
        else:
            runs.append([t, 1])
    return ", ".join(t if n == 1 else f"{t} x{n}" for t, n in runs)


# ----------------------------------------------------------------------------- sequential client


class RequestError(Exception):
    pass


@dataclass
class Sample:
    total_ms: float
    ttfb_ms: float
    data: bytes


class Conn:
    """One keep-alive HTTP/1.1 connection to a target."""

    def __init__(self, t: Target, timeout: float) -> None:
        self.t, self.timeout = t, timeout
        self.headers = {"content-type": "application/json", **t.headers}
        self.bodies = {s: t.body(s) for s in (True, False)}
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn:
            self.conn.close()
            self.conn = None

    def request(self, stream: bool, retry: bool = True) -> Sample:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.t.host, self.t.port, timeout=self.timeout)
            self.conn.connect()  # before t0: a block's first request is its untimed primer
            self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            retry = False
        t0 = time.perf_counter()
        try:
            self.conn.request("POST", self.t.path, self.bodies[stream], self.headers)
            resp = self.conn.getresponse()
            if stream:
                parts = [resp.read1(65536)]
                tf = time.perf_counter()
                while chunk := resp.read1(65536):
                    parts.append(chunk)
            else:
                # read() and not read1(): read1 never marks a content-length body finished, and
                # http.client then refuses the connection's next request
                parts = [resp.read()]
                tf = time.perf_counter()
            t1 = time.perf_counter()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
            self.close()
            if retry:  # the server dropped an idle keep-alive connection: once more on a new one
                return self.request(stream, retry=False)
            raise RequestError(f"connection error: {e!r}") from e
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise RequestError(f"{type(e).__name__}: {e}") from e
        data = b"".join(parts)
        if resp.status != 200:
            self.close()
            raise RequestError(f"HTTP {resp.status}: {data[:300]!r}")
        if stream and not self.t.ended(data):
            self.close()
            raise RequestError(f"stream cut short: ...{data[-200:]!r}")
        if resp.will_close:
            self.close()
        return Sample((t1 - t0) * 1000, (tf - t0) * 1000, data)


def preflight(direct: Target, gateways: list[Target], timeout: float) -> list[str]:
    problems = []
    want = {}
    for stream in (True, False):
        mode = "stream" if stream else "nonstream"
        c = Conn(direct, timeout)
        try:
            want[stream] = openai_text(c.request(stream).data, stream)
            log(f"  preflight {direct.name:<8} {mode:<9} ok, text {want[stream]!r}")
        except (RequestError, ValueError, KeyError, IndexError) as e:
            return [f"{direct.name} {mode}: {e}"]
        finally:
            c.close()
        for t in gateways:
            c = Conn(t, timeout)
            try:
                summary = check_anthropic(c.request(stream).data, stream, want[stream])
                log(f"  preflight {t.name:<8} {mode:<9} ok: {summary}")
            except (RequestError, ValueError, KeyError, TypeError, AttributeError) as e:
                problems.append(f"{t.name} ({t.url}) {mode}: {e}")
            finally:
                c.close()
    return problems


@dataclass
class Record:
    rounds: list[list[Sample]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu_ms: float = 0.0
    wall_s: float = 0.0
    requests: int = 0


def sequential(targets: list[Target], modes: list[str], rounds: int, n: int, timeout: float) -> dict:
    data = {m: {t.name: Record() for t in targets} for m in modes}
    for rnd in range(rounds):
        for t in targets:
            for m in modes:
                stream, rec, c = m == "stream", data[m][t.name], Conn(t, timeout)
                samples: list[Sample] = []
                errs: list[str] = []
                try:
                    c.request(stream)  # primer: a live connection, untimed
                except RequestError as e:
                    errs.append(f"primer: {e}")
                gc.collect()
                gc.disable()  # no client GC pause inside a timed block
                cpu0 = cpu_ms(t.pid) if t.pid else 0.0
                t0 = time.perf_counter()
                for i in range(n):
                    try:
                        samples.append(c.request(stream))
                    except RequestError as e:
                        errs.append(str(e))
                        if len(errs) >= 3 and not samples:  # down or hanging: skip the rest of the block
                            errs += ["skipped"] * (n - i - 1)
                            break
                wall = time.perf_counter() - t0
                if t.pid:
                    rec.cpu_ms += cpu_ms(t.pid) - cpu0
                gc.enable()
                c.close()
                for s in samples:
                    s.data = b""  # checked already; do not keep every body
                rec.rounds.append(samples)
                rec.errors += errs
                rec.wall_s += wall
                rec.requests += len(samples) + len(errs)
        log(f"  round {rnd + 1}/{rounds} done")
    return data


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


def analyse(raw: dict, direct: Target, targets: list[Target], idle: dict[str, float]) -> dict:
    out: dict = {}
    for m, per in raw.items():
        metrics: dict[str, Callable[[Sample], float]] = (
            {"ttfb": lambda s: s.ttfb_ms, "total": lambda s: s.total_ms}
            if m == "stream"
            else {"latency": lambda s: s.total_ms}
        )
        res: dict = {}
        for t in targets:
            rec: Record = per[t.name]
            e: dict = {"requests": rec.requests, "errors": len(rec.errors), "error_samples": rec.errors[:3]}
            for metric, get in metrics.items():
                rmeds = [statistics.median(get(s) for s in r) for r in rec.rounds if r]
                e[metric] = {
                    "median": statistics.median(rmeds) if rmeds else None,
                    "round_medians": rmeds,
                    "p90": pct([get(s) for r in rec.rounds for s in r], 90),
                }
            if t.pid:
                n = max(rec.requests, 1)
                e["cpu_ms_per_req"] = {
                    "raw": rec.cpu_ms / n,
                    "idle_corrected": (rec.cpu_ms - idle.get(t.name, 0.0) * rec.wall_s) / n,
                }
            res[t.name] = e
        for t in targets:
            if t is direct:
                continue
            for metric in metrics:
                ours, base = res[t.name][metric], res[direct.name][metric]
                diffs = [a - b for a, b in zip(ours["round_medians"], base["round_medians"])]
                ours["added"] = statistics.median(diffs) if diffs else None
        out[m] = res
    return out


# ----------------------------------------------------------------------------- concurrency


class AioConn:
    """One keep-alive connection speaking just enough HTTP/1.1 (content-length or chunked)."""

    def __init__(self, t: Target) -> None:
        self.t = t
        body = t.body(True)
        head = [
            f"POST {t.path} HTTP/1.1",
            f"Host: {t.host}:{t.port}",
            "Content-Type: application/json",
            *(f"{k}: {v}" for k, v in t.headers.items()),
            f"Content-Length: {len(body)}",
        ]
        self.req = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        self.r: asyncio.StreamReader | None = None
        self.w: asyncio.StreamWriter | None = None

    def close(self) -> None:
        if self.w:
            self.w.close()
        self.r = self.w = None

    async def request(self) -> float:
        if self.r is None:
            self.r, self.w = await asyncio.open_connection(self.t.host, self.t.port, limit=1 << 20)
        t0 = time.perf_counter()
        self.w.write(self.req)
        await self.w.drain()
        lines = (await self.r.readuntil(b"\r\n\r\n")).decode("latin-1").lower().split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        hdrs = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        hdrs = {k.strip(): v.strip() for k, v in hdrs.items()}
        if "chunked" in hdrs.get("transfer-encoding", ""):
            parts = []
            while size := int((await self.r.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16):
                parts.append((await self.r.readexactly(size + 2))[:-2])  # the chunk and its CRLF
            while await self.r.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            data = b"".join(parts)
        elif "content-length" in hdrs:
            data = await self.r.readexactly(int(hdrs["content-length"]))
        else:
            data = await self.r.read()
            hdrs["connection"] = "close"
        t1 = time.perf_counter()
        if hdrs.get("connection") == "close":
            self.close()
        if status != 200 or not self.t.ended(data):
            self.close()
            raise RequestError(f"HTTP {status}: ...{data[-200:]!r}")
        return (t1 - t0) * 1000


async def load(t: Target, clients: int, seconds: float, timeout: float) -> tuple[list[float], list[str]]:
    lat: list[float] = []
    errors: list[str] = []
    end = time.perf_counter() + seconds

    async def client() -> None:
        c = AioConn(t)
        while time.perf_counter() < end:
            try:
                lat.append(await asyncio.wait_for(c.request(), timeout))
            except (
                TimeoutError,
                RequestError,
                OSError,
                ValueError,
                IndexError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
            ) as e:
                errors.append(f"{type(e).__name__}: {e}"[:300])
                c.close()
                await asyncio.sleep(0.01)
        c.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return lat, errors


def concurrency(gateways: list[Target], args: argparse.Namespace) -> dict:
    out = {}
    for t in gateways:
        if args.conc_warmup > 0:
            asyncio.run(load(t, args.concurrency, args.conc_warmup, args.timeout))
        me = os.getpid()
        cpu0, me0, t0 = cpu_ms(t.pid) if t.pid else 0.0, cpu_ms(me), time.perf_counter()
        lat, errors = asyncio.run(load(t, args.concurrency, args.duration, args.timeout))
        wall = time.perf_counter() - t0
        cpu = cpu_ms(t.pid) - cpu0 if t.pid else None
        out[t.name] = {
            "completed": len(lat),
            "errors": len(errors),
            "error_samples": sorted(set(errors))[:3],
            "rps": len(lat) / wall,
            "p50_ms": pct(lat, 50),
            "p90_ms": pct(lat, 90),
            "cpu_ms_per_req": cpu / max(len(lat), 1) if cpu is not None else None,
            "cpu_pct": cpu / 10 / wall if cpu is not None else None,
            "client_cpu_pct": (cpu_ms(me) - me0) / 10 / wall,
        }
        log(f"  concurrency {t.name:<8} {out[t.name]['rps']:.0f} req/s, {len(errors)} errors")
        time.sleep(1)  # let the last streams' tails settle before the next target
    return out


# ----------------------------------------------------------------------------- report


def fmt(v: float | None, nd: int = 2, sign: bool = False) -> str:
    return "-" if v is None else (f"{v:+.{nd}f}" if sign else f"{v:.{nd}f}")


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def report(result: dict) -> str:
    meta, out = result["meta"], []
    out.append(
        f"# /v1/messages: gateway vs LiteLLM  {meta['started']}  cpus={meta['cpus']} "
        f"load(before)={meta['loadavg_before']}"
    )
    seq = result.get("sequential", {})
    if "stream" in seq:
        out.append(
            f"\n## stream (ms)  {meta['rounds']} rounds x {meta['requests']} req; ttfb = first body byte; "
            "added = paired vs direct (OpenAI stream)"
        )
        rows = [
            [
                name,
                fmt(e["ttfb"]["median"]),
                fmt(e["ttfb"].get("added"), sign=True),
                fmt(e["total"]["median"]),
                fmt(e["total"]["p90"]),
                fmt(e["total"].get("added"), sign=True),
                fmt(e.get("cpu_ms_per_req", {}).get("idle_corrected")),
                str(e["errors"]),
            ]
            for name, e in seq["stream"].items()
        ]
        out.append(table(["target", "ttfb", "added", "total", "total p90", "added", "cpu ms/req", "errors"], rows))
    if "nonstream" in seq:
        out.append(f"\n## non-stream (ms)  {meta['rounds']} rounds x {meta['requests']} req; added = paired vs direct")
        rows = [
            [
                name,
                fmt(e["latency"]["median"]),
                fmt(e["latency"]["p90"]),
                fmt(e["latency"].get("added"), sign=True),
                fmt(e.get("cpu_ms_per_req", {}).get("idle_corrected")),
                str(e["errors"]),
            ]
            for name, e in seq["nonstream"].items()
        ]
        out.append(table(["target", "latency", "p90", "added", "cpu ms/req", "errors"], rows))
    if idle := result.get("idle_cpu_ms_per_s"):
        out.append(
            "cpu ms/req is idle-corrected; idle CPU (ms per s): " + ", ".join(f"{k}={v:.1f}" for k, v in idle.items())
        )
    if conc := result.get("concurrency"):
        out.append(f"\n## concurrency  {meta['concurrency']} clients x {meta['duration']} s, streamed /v1/messages")
        rows = [
            [
                name,
                fmt(e["rps"], 0),
                str(e["errors"]),
                fmt(e["p50_ms"]),
                fmt(e["p90_ms"]),
                fmt(e["cpu_ms_per_req"]),
                fmt(e["cpu_pct"], 0),
                fmt(e["client_cpu_pct"], 0),
            ]
            for name, e in conc.items()
        ]
        header = ["target", "req/s", "errors", "p50 ms", "p90 ms", "cpu ms/req", "cpu %", "client cpu %"]
        out.append(table(header, rows))
    for part in (*seq.values(), conc or {}):
        for name, e in part.items():
            if e.get("error_samples"):
                out.append(f"errors {name}: {e['error_samples'][:2]}")
    return "\n".join(out)


# ----------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--direct", required=True, help="the upstream's OpenAI base URL (.../v1): the baseline")
    ap.add_argument("--gateway", action="append", required=True, help="name=..,url=.../v1,key=..[,pid=..]")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--requests", type=int, default=30, help="timed requests per target, mode and round")
    ap.add_argument("--warmup", type=int, default=50, help="untimed requests per target and mode first")
    ap.add_argument("--modes", default="stream,nonstream")
    ap.add_argument("--idle-seconds", type=float, default=3.0)
    ap.add_argument("--concurrency", type=int, default=16, help="clients (0: skip the phase)")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per gateway at --concurrency")
    ap.add_argument("--conc-warmup", type=float, default=2.0)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--out", help="write the JSON result here")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES) or args.rounds < 0 or args.requests < 1:
        ap.error("--modes takes stream,nonstream; --rounds >= 0, --requests >= 1")

    direct = Target("direct", args.direct, False, {"authorization": "Bearer k-ok"})
    gateways = [parse_gateway(g) for g in args.gateway]
    targets = [direct, *gateways]
    result: dict = {
        "meta": {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in os.getloadavg()],
            "rounds": args.rounds,
            "requests": args.requests,
            "warmup": args.warmup,
            "modes": modes,
            "concurrency": args.concurrency,
            "duration": args.duration,
            "targets": {t.name: {"url": f"http://{t.host}:{t.port}{t.path}", "pid": t.pid} for t in targets},
        }
    }
    log("preflight")
    if problems := preflight(direct, gateways, args.timeout):
        for p in problems:
            log(f"PREFLIGHT FAILED: {p}")
        return 3
    if args.rounds:
        for t in targets:
            c = Conn(t, args.timeout)
            for m in modes:
                for _ in range(args.warmup):
                    try:
                        c.request(m == "stream")
                    except RequestError:
                        pass
            c.close()
        log(f"  warmed up: {args.warmup} requests per target and mode")
    result["idle_cpu_ms_per_s"] = idle_rates(targets, args.idle_seconds)
    if args.rounds:
        log(f"sequential: {args.rounds} rounds x {args.requests} requests x {modes}")
        result["sequential"] = analyse(
            sequential(targets, modes, args.rounds, args.requests, args.timeout),
            direct,
            targets,
            result["idle_cpu_ms_per_s"],
        )
    if args.concurrency > 0:
        log(f"concurrency: {args.concurrency} clients x {args.duration}s")
        result["concurrency"] = concurrency(gateways, args)
    result["meta"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    result["report"] = report(result)
    print(result["report"], flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
        log(f"wrote {args.out}")
    seq, conc = result.get("sequential", {}).values(), result.get("concurrency", {}).values()
    errors = sum(e["errors"] for m in seq for e in m.values()) + sum(e["errors"] for e in conc)
    sent = sum(e["requests"] for m in seq for e in m.values()) + sum(e["completed"] + e["errors"] for e in conc)
    return 4 if errors > 0.01 * max(sent, 1) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
