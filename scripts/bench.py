"""What the gateway adds per proxied request, on workerd, the local runtime (docs/performance.md).

    scripts/bench

Starts the fake upstream and the Worker (scripts/dev), then for each case sends the same requests
straight to the upstream and through the gateway, and prints:
- latency: median and p90 of each path and the median added by the gateway;
- CPU: the runtime processes' CPU time per request (scripts/dev's Node and its child workerd);
- SSE: time to the first body byte, direct and through the gateway;
- streaming: CPU per chunk of a long stream that arrives as fast as it can;
- pinning (SPEC §15): the same non-streamed request through an OpenRouter provider (a fake
  OpenRouter on 127.0.0.1) with its model pinned, beside the same fake unpinned;
- limits (SPEC §14): the same non-streamed request from a rate-limited client with ``ip_rpm`` on
  (counted in the isolate; below half the limits, as here, no D1 query), beside the default
  (only the failed-auth lock on: no D1 query when warm);
- the rest of the OpenAI surface (SPEC §12.6): an embeddings call (eight inputs) and a
  transcription upload (a 256 KB WAV), straight and through the gateway: added latency and CPU;
- surfaces (SPEC §12): per translated surface, the added latency of a non-streamed call and the
  runtime's CPU per streamed event beside the OpenAI pass-through;
- paced (issues 18 and 31): per surface, a 1,000-event answer at a model's pace (50 events/s, one
  per upstream read), an agent's turn (an ~80 KB ``/v1/messages`` body, a 300-event answer) and a
  non-streamed chat request: the CPU of the whole request, and the part spent running the isolates
  (from a perf profile, when perf is installed): what the free plan's 10 ms limit counts;
- floor (issue 31): the same measure of a bare JavaScript Worker on the same workerd
  (scripts/bench_floor.mjs) doing only the wakes any relay of that answer needs: what no design
  can go below on this machine;
- router (SPEC §19, issue 33): an agent's requests (the ~80 KB ``/v1/messages`` body, for ``auto``)
  with a small-context model first in the chain: upstream fetches and failed attempts per request,
  when the window is learned (only the first request spends an attempt on it) and when the
  admin set it (none does), and the runtime's CPU per request;
- in Pyodide (``surfaces_in_process``, scripts/profile running scripts/bench_relay.py): the
  Worker's own work per event, which no timer inside workerd can measure (its clocks stand still
  while code runs).
Figures, not assertions: nothing here fails on a slow machine. Last, SPEC §18's CPU rows as one
table. ``--free-plan`` runs only paced and floor (about five minutes); ``--router`` only router.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from gateway.core.pacing import Pacing, hold_ms
from gateway.core.pacing import schedule as pacing_schedule
from support.holds import Holds, paced_answer, read_timed
from support.openrouter import FakeOpenRouter, endpoint
from support.runtime import Gateway, free_port
from support.upstream import FakeUpstream, Json, Sse, chunk, completion

WARMUP = 200  # V8 and the upstream connection pool settle first: the figures are steady-state
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1000"))
STREAM_CHUNKS = 500
ROOT = Path(__file__).resolve().parents[1]
SURFACE_EVENTS = 1000
# Each surface: (path, non-streamed body, streamed body) for model "m".
_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]
SURFACES = {
    "anthropic": (
        "/v1/messages",
        {"model": "m", "max_tokens": 8, "messages": _MESSAGES},
        {"model": "m", "max_tokens": 8, "messages": _MESSAGES, "stream": True},
    ),
    "responses": (
        "/v1/responses",
        {"model": "m", "input": "Say hello."},
        {"model": "m", "input": "Say hello.", "stream": True},
    ),
    "gemini": (
        "/v1beta/models/m:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "Say hello."}]}]},
        {"contents": [{"role": "user", "parts": [{"text": "Say hello."}]}]},
    ),
    "ollama": (
        "/api/chat",
        {"model": "m", "messages": _MESSAGES, "stream": False},
        {"model": "m", "messages": _MESSAGES},
    ),
}


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").iterdir():
            todo += [int(child) for child in (task / "children").read_text().split()]
    return pids


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and its descendants (scripts/dev's Node and its child workerd), from each
    live thread's schedstat: nanoseconds, where /proc/PID/stat counts 10 ms ticks."""
    total = 0
    for each in process_tree(pid):
        for task in Path(f"/proc/{each}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except FileNotFoundError:  # the thread ended meanwhile
                pass
    return total / 1e9


def timed(send, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        send()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def timed_cpu(gateway: Gateway, send, rounds: int) -> tuple[list[float], float]:
    """``timed(send, rounds)`` and the runtime process's CPU ms per send meanwhile."""
    cpu_before = cpu_seconds(gateway.process.pid)
    samples = timed(send, rounds)
    return samples, (cpu_seconds(gateway.process.pid) - cpu_before) * 1000 / rounds


def first_byte_ms(client: httpx.Client, url: str, body: dict, headers: dict) -> float:
    start = time.perf_counter()
    with client.stream("POST", url, json=body, headers=headers) as response:
        chunks = response.iter_raw()
        next(chunks)
        elapsed = (time.perf_counter() - start) * 1000
        for _ in chunks:
            pass
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--free-plan",
        action="store_true",
        help="only the free plan's CPU cases (paced answers, agent turn, non-stream, floor)",
    )
    parser.add_argument("--router", action="store_true", help="only the router's case (SPEC §19)")
    parser.add_argument(
        "--pacing",
        choices=[*Pacing, "all"],
        default=Pacing.PACED.value,
        help="the stream_pacing the paced answers are relayed under (all: each in turn; SPEC §18)",
    )
    arguments = parser.parse_args()
    only_free_plan = arguments.free_plan
    pacings = list(Pacing) if arguments.pacing == "all" else [Pacing(arguments.pacing)]
    upstream = FakeUpstream().start()
    try:
        with tempfile.TemporaryDirectory() as workdir, wake_probe(), Floor(upstream) as floor:
            # No test hooks: no D1 trace, no preloaded test clock.
            gateway = Gateway.start(Path(workdir), extra_env={"LOCAL_RUNTIME_TRACE_D1": "0", "LD_PRELOAD": ""})
            try:
                if arguments.router:
                    print(json.dumps({"router": router(gateway, upstream)}, indent=2))
                    return
                figures = (
                    free_plan(gateway, upstream, pacings, floor)
                    if only_free_plan
                    else run(gateway, upstream, pacings, floor)
                )
            finally:
                gateway.stop()
            figures["floor"] = floor.alone()
    finally:
        upstream.stop()
    if not only_free_plan:
        figures["surfaces_in_process"] = in_process()
    print(json.dumps({"rounds": ROUNDS, **figures}, indent=2))
    print()
    print(free_plan_table(figures["paced"], figures["floor"]))


def free_plan(gateway: Gateway, upstream: FakeUpstream, pacings: list[Pacing], floor: Floor) -> dict[str, object]:
    """``paced`` alone, after the provider is added and the Worker warmed by ``WARMUP // 4`` requests."""
    api = _add_provider(gateway, upstream)
    with httpx.Client(timeout=60) as client:
        for _ in range(WARMUP // 4):
            upstream.queue(Json(completion("m")))
            client.post(
                f"{gateway.url}/v1/chat/completions", json={"model": "m", "messages": _MESSAGES}, headers=api
            ).raise_for_status()
        return {"paced": paced(gateway, upstream, client, api, pacings, floor)}


def _add_provider(gateway: Gateway, upstream: FakeUpstream) -> dict[str, str]:
    """Add the fake upstream as the provider of model ``m``; the API token's headers."""
    httpx.post(
        f"{gateway.url}/api/admin/providers",
        headers={"authorization": f"Bearer {gateway.admin_token}"},
        json={"name": "bench", "base_url": upstream.base_url, "api_key": "sk-bench-key-0123456789", "models": ["m"]},
    ).raise_for_status()
    return {"authorization": f"Bearer {gateway.api_token}"}


def run(gateway: Gateway, upstream: FakeUpstream, pacings: list[Pacing], floor: Floor) -> dict[str, object]:
    api = _add_provider(gateway, upstream)
    body = {"model": "m", "messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 8}
    answer = Json(completion("m"))
    direct_url, gateway_url = f"{upstream.base_url}/chat/completions", f"{gateway.url}/v1/chat/completions"
    results: dict[str, object] = {}

    with httpx.Client(timeout=30) as client:

        def direct() -> None:
            upstream.queue(answer)
            client.post(direct_url, json=body).raise_for_status()

        def through(headers: dict = api) -> None:
            upstream.queue(answer)
            client.post(gateway_url, json=body, headers=headers).raise_for_status()

        timed(direct, WARMUP)
        timed(through, WARMUP)
        direct_ms = timed(direct, ROUNDS)
        through_ms, cpu_ms = timed_cpu(gateway, through, ROUNDS)
        results["json"] = {
            "direct_median_ms": round(statistics.median(direct_ms), 2),
            "gateway_median_ms": round(statistics.median(through_ms), 2),
            "gateway_p90_ms": round(statistics.quantiles(through_ms, n=10)[-1], 2),
            "added_median_ms": round(statistics.median(through_ms) - statistics.median(direct_ms), 2),
            "runtime_cpu_ms_per_request": round(cpu_ms, 2),
        }

        results["limits"] = limits(gateway, client, through, direct_ms)
        results["pinning"] = pinning(gateway, client)

        stream_body = {**body, "stream": True}
        events = [chunk("m", "Hello"), chunk("m", None, "stop")]
        firsts_direct, firsts_gateway = [], []
        for _ in range(50):
            upstream.queue(Sse(events))
            firsts_direct.append(first_byte_ms(client, direct_url, stream_body, {}))
            upstream.queue(Sse(events))
            firsts_gateway.append(first_byte_ms(client, gateway_url, stream_body, api))
        results["sse_first_byte"] = {
            "direct_median_ms": round(statistics.median(firsts_direct), 2),
            "gateway_median_ms": round(statistics.median(firsts_gateway), 2),
            "added_median_ms": round(statistics.median(firsts_gateway) - statistics.median(firsts_direct), 2),
        }

        long_stream = Sse([chunk("m", f"t{i}") for i in range(STREAM_CHUNKS)] + [chunk("m", None, "stop")])
        upstream.queue(long_stream)
        first_byte_ms(client, gateway_url, stream_body, api)  # warm
        short = Sse([chunk("m", None, "stop")])
        cpu_before = cpu_seconds(gateway.process.pid)
        for _ in range(10):
            upstream.queue(short)
            first_byte_ms(client, gateway_url, stream_body, api)
        cpu_short = cpu_seconds(gateway.process.pid) - cpu_before
        cpu_before = cpu_seconds(gateway.process.pid)
        for _ in range(10):
            upstream.queue(long_stream)
            first_byte_ms(client, gateway_url, stream_body, api)
        cpu_long = cpu_seconds(gateway.process.pid) - cpu_before
        results["stream"] = {
            "chunks": STREAM_CHUNKS,
            "runtime_cpu_us_per_chunk": round((cpu_long - cpu_short) * 1e6 / (10 * STREAM_CHUNKS), 1),
        }

        results["openai_surface"] = openai_surface(gateway, client)
        results["surfaces"] = surfaces(gateway, upstream, client, api, direct_ms)
        results["paced"] = paced(gateway, upstream, client, api, pacings, floor)
        results["rescue"] = rescue(gateway, upstream, client, api, stream_body, events, long_stream)
    results["router"] = router(gateway, upstream)
    return results


ROUTER_REQUESTS = 20
# What a platform answers a request past a model's window (OpenAI's wording).
_TOO_LONG = Json(
    {"error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}},
    status=400,
)


def router(gateway: Gateway, upstream: FakeUpstream) -> dict:
    """An agent's ``auto`` requests with a small-context model first (SPEC §19): per request, the
    upstream fetches, the failed attempts and the runtime's CPU, first with the window unknown to
    the gateway (learned from the first failure), then with the admin's ``context`` set."""
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    api = {"authorization": f"Bearer {gateway.api_token}"}
    body = {**_agent_body(), "model": "auto", "stream": False}
    figures: dict[str, dict[str, float]] = {}
    with httpx.Client(timeout=60) as client:
        for case, entry in (("window_learned", "tiny"), ("window_set_by_admin", {"id": "tiny", "context": 8192})):
            providers = client.get(f"{gateway.url}/api/admin/providers", headers=admin).json()["providers"]
            for provider in providers:
                client.delete(f"{gateway.url}/api/admin/providers/{provider['id']}", headers=admin)
            for name, model, priority in (("small", entry, 1), ("large", "m", 2)):
                client.post(
                    f"{gateway.url}/api/admin/providers",
                    headers=admin,
                    json={
                        "name": name,
                        "base_url": upstream.base_url,
                        "api_key": "sk-bench-key-0123456789",
                        "models": [model],
                        "priority": priority,
                    },
                ).raise_for_status()
            upstream.reset()
            upstream.answer_always(_TOO_LONG, model="tiny")
            upstream.answer_always(Json(completion("m")), model="m")
            failed, cpu_before = 0, 0.0
            for n in range(ROUTER_REQUESTS):
                if n == 1:  # the CPU of warm requests: the first reads the new configuration
                    cpu_before = cpu_seconds(gateway.process.pid)
                answer = client.post(f"{gateway.url}/v1/messages", json=body, headers=api)
                answer.raise_for_status()
                failed += int(answer.headers.get("x-fallback-attempts", "0"))
            cpu_ms = (cpu_seconds(gateway.process.pid) - cpu_before) * 1000 / (ROUTER_REQUESTS - 1)
            figures[case] = {
                "requests": ROUTER_REQUESTS,
                "fetches_per_request": len(upstream.requests) / ROUTER_REQUESTS,
                "failed_attempts": failed,
                "warm_runtime_cpu_ms_per_request": round(cpu_ms, 2),
            }
    return figures


def rescue(
    gateway: Gateway,
    upstream: FakeUpstream,
    client: httpx.Client,
    api: dict,
    stream_body: dict,
    events: list,
    long_stream: Sse,
) -> dict:
    """Stream rescue (SPEC §16) on: what a healthy chat stream costs then (it is relayed in whole
    events rather than by the native pipe), and what a rescue adds: from the cut stream's last
    byte to the first rescued byte at the caller, both upstreams answering at once (the gateway's
    own part: the rescue's loop, its subrequest, the seam's hold-back) and as the admin status
    reports it (``wait_ms``: from the break to the rescue's first event)."""
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    settings, url = f"{gateway.url}/api/admin/settings", f"{gateway.url}/v1/chat/completions"
    made = (
        client.post(
            f"{gateway.url}/api/admin/providers",
            headers=admin,
            json={
                "name": "bench-b",
                "base_url": upstream.base_url,
                "api_key": "sk-bench-key-9876543210",
                "models": ["m"],
                "priority": 99,
            },
        )
        .raise_for_status()
        .json()["provider"]
    )
    figures: dict[str, float] = {}
    try:
        for word, on in (("off", 0), ("on", 1)):
            client.put(settings, headers=admin, json={"stream_rescue": on}).raise_for_status()
            firsts = []
            for _ in range(50):
                upstream.queue(Sse(events))
                firsts.append(first_byte_ms(client, url, stream_body, api))
            upstream.queue(long_stream)
            first_byte_ms(client, url, stream_body, api)  # warm
            cpu_before = cpu_seconds(gateway.process.pid)
            for _ in range(10):
                upstream.queue(long_stream)
                first_byte_ms(client, url, stream_body, api)
            figures[f"{word}_sse_first_byte_median_ms"] = round(statistics.median(firsts), 2)
            figures[f"{word}_runtime_cpu_ms_per_{STREAM_CHUNKS}_chunk_answer"] = round(
                (cpu_seconds(gateway.process.pid) - cpu_before) * 1000 / 10, 2
            )
        gaps, waits = [], []
        cut = Sse([chunk("m", "The quick brown"), chunk("m", " fox")], done=False, reset=True)
        rest = Sse([chunk("m", " jumps over the lazy dog."), chunk("m", None, "stop")])
        for _ in range(20):
            upstream.queue(cut, rest)
            with client.stream("POST", url, json=stream_body, headers=api) as response:
                last_before, first_after = 0.0, 0.0
                for line in response.iter_lines():
                    now = time.perf_counter()
                    if '"x_rescued_from"' in line and not first_after:
                        first_after = now
                    elif line.startswith("data: {") and not first_after:
                        last_before = now
            gaps.append((first_after - last_before) * 1000)
            status = client.get(f"{gateway.url}/api/admin/status", headers=admin).json()
            waits.append(status["rescues"][0]["wait_ms"])
        return {
            **figures,
            "rescue_gap_at_caller_median_ms": round(statistics.median(gaps), 2),
            "rescue_wait_ms_median": statistics.median(waits),
        }
    finally:
        client.delete(f"{gateway.url}/api/admin/providers/{made['id']}", headers=admin)
        client.put(settings, headers=admin, json={"stream_rescue": None})


def limits(gateway: Gateway, client: httpx.Client, through, direct_ms: list[float]) -> dict:
    """``through`` again, as a client with an rpm and with ``ip_rpm`` on (limits never reached)."""
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    settings = f"{gateway.url}/api/admin/settings"
    made = client.post(f"{gateway.url}/api/admin/clients", headers=admin, json={"name": "bench", "rpm": 1_000_000})
    named = made.raise_for_status().json()
    client.put(settings, headers=admin, json={"ip_rpm": 1_000_000}).raise_for_status()
    token = {"authorization": f"Bearer {named['token']}"}
    try:
        timed(lambda: through(token), WARMUP)
        limited_ms, cpu_ms = timed_cpu(gateway, lambda: through(token), ROUNDS)
    finally:
        client.put(settings, headers=admin, json={"ip_rpm": 0}).raise_for_status()
        client.delete(f"{gateway.url}/api/admin/clients/{named['client']['id']}", headers=admin)
    return {
        "added_median_ms": round(statistics.median(limited_ms) - statistics.median(direct_ms), 2),
        "runtime_cpu_ms_per_request": round(cpu_ms, 2),
    }


def pinning(gateway: Gateway, client: httpx.Client) -> dict:
    """A request for an OpenRouter model, pinned (a splice into the body, a pin renewal in
    memory) and with pinning off, against the same fake OpenRouter."""
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    api = {"authorization": f"Bearer {gateway.api_token}"}
    fake = FakeOpenRouter().start()
    fake.set_endpoints("or/m", [endpoint("a"), endpoint("b", caching=False)])
    settings = f"{gateway.url}/api/admin/settings"
    client.put(settings, headers=admin, json={"openrouter_origin": fake.origin}).raise_for_status()
    made = (
        client.post(
            f"{gateway.url}/api/admin/providers",
            headers=admin,
            json={
                "name": "or",
                "platform": "openrouter",
                "base_url": fake.base_url,
                "api_key": "sk-or-bench-0123456789",
                "models": ["or/m"],
            },
        )
        .raise_for_status()
        .json()["provider"]
    )
    body = {"model": "or/m", "messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 8}
    url = f"{gateway.url}/v1/chat/completions"
    figures = {}
    try:
        for name, on in (("unpinned_median_ms", 0), ("pinned_median_ms", 1)):
            client.put(settings, headers=admin, json={"openrouter_pinning": on}).raise_for_status()
            send = lambda: client.post(url, json=body, headers=api).raise_for_status()
            timed(send, WARMUP)
            samples, cpu_ms = timed_cpu(gateway, send, ROUNDS)
            figures[name] = round(statistics.median(samples), 2)
            figures[name.replace("median_ms", "runtime_cpu_ms_per_request")] = round(cpu_ms, 2)
        figures["endpoint_fetches"] = fake.endpoint_fetches("or/m")
    finally:
        client.delete(f"{gateway.url}/api/admin/providers/{made['id']}", headers=admin)
        client.put(settings, headers=admin, json={"openrouter_pinning": None, "openrouter_origin": None})
        fake.stop()
    return figures


def _wav(seconds: int, rate: int = 16000) -> bytes:
    """A WAV file of ``seconds`` of 16-bit mono silence: what a voice front end uploads."""
    frames = b"\0\0" * seconds * rate
    header = (
        b"RIFF"
        + struct.pack("<I", 36 + len(frames))
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
    )
    return header + b"data" + struct.pack("<I", len(frames)) + frames


def openai_surface(gateway: Gateway, client: httpx.Client) -> dict:
    """An embeddings call and a transcription upload, straight to the fake and through the
    gateway (the fake's own answers for these paths, support/endpoints.py)."""
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    api = {"authorization": f"Bearer {gateway.api_token}"}
    upstream_url = httpx.get(f"{gateway.url}/api/admin/providers", headers=admin).json()["providers"][0]["base_url"]
    made = (
        client.post(
            f"{gateway.url}/api/admin/providers",
            headers=admin,
            json={
                "name": "kinds",
                "base_url": upstream_url,
                "api_key": "sk-bench-key-0123456789",
                "models": ["text-embedding-3-small", "whisper-1"],
            },
        )
        .raise_for_status()
        .json()["provider"]
    )
    embeddings = {"model": "text-embedding-3-small", "input": [f"a sentence to embed, number {i}" for i in range(8)]}
    audio = _wav(8)
    upload = {"files": {"file": ("memo.wav", audio, "audio/wav")}, "data": {"model": "whisper-1"}}
    cases = {
        "embeddings": lambda base, headers: client.post(f"{base}/embeddings", json=embeddings, headers=headers),
        "transcription_256kb": lambda base, headers: client.post(
            f"{base}/audio/transcriptions", headers=headers, **upload
        ),
    }
    figures: dict[str, object] = {"upload_bytes": len(audio)}
    try:
        for name, send in cases.items():
            direct = lambda: send(upstream_url, {}).raise_for_status()
            through = lambda: send(f"{gateway.url}/v1", api).raise_for_status()
            rounds = max(50, ROUNDS // 4)
            timed(direct, 50)
            timed(through, 50)
            direct_ms = timed(direct, rounds)
            through_ms, cpu_ms = timed_cpu(gateway, through, rounds)
            figures[name] = {
                "direct_median_ms": round(statistics.median(direct_ms), 2),
                "gateway_median_ms": round(statistics.median(through_ms), 2),
                "added_median_ms": round(statistics.median(through_ms) - statistics.median(direct_ms), 2),
                "runtime_cpu_ms_per_request": round(cpu_ms, 2),
            }
    finally:
        client.delete(f"{gateway.url}/api/admin/providers/{made['id']}", headers=admin)
    return figures


def _stream_url(gateway: Gateway, name: str, path: str) -> str:
    if name == "gemini":
        return f"{gateway.url}/v1beta/models/m:streamGenerateContent?alt=sse"
    return gateway.url + path


def surfaces(gateway: Gateway, upstream: FakeUpstream, client: httpx.Client, api: dict, direct_ms: list[float]) -> dict:
    """Per surface: added latency of a non-streamed call, runtime CPU per streamed event."""
    answer = Json(completion("m"))
    long_stream = Sse([chunk("m", f" t{i}") for i in range(SURFACE_EVENTS)] + [chunk("m", None, "stop")])
    short = Sse([chunk("m", "hi"), chunk("m", None, "stop")])
    rounds = max(ROUNDS // 5, 50)
    figures: dict[str, dict[str, float]] = {}
    for name, (path, body, stream_body) in SURFACES.items():

        def call() -> None:
            upstream.queue(answer)
            client.post(gateway.url + path, json=body, headers=api).raise_for_status()

        timed(call, WARMUP // 4)
        through_ms = timed(call, rounds)
        url = _stream_url(gateway, name, path)

        def stream(step: Sse) -> None:
            upstream.queue(step)
            with client.stream("POST", url, json=stream_body, headers=api) as response:
                for _ in response.iter_raw():
                    pass

        stream(long_stream)  # warm
        cpu_before = cpu_seconds(gateway.process.pid)
        for _ in range(5):
            stream(short)
        cpu_short = cpu_seconds(gateway.process.pid) - cpu_before
        cpu_before = cpu_seconds(gateway.process.pid)
        for _ in range(5):
            stream(long_stream)
        cpu_long = cpu_seconds(gateway.process.pid) - cpu_before
        figures[name] = {
            "added_median_ms_non_stream": round(statistics.median(through_ms) - statistics.median(direct_ms), 2),
            "runtime_cpu_us_per_event": round((cpu_long - cpu_short) * 1e6 / (5 * SURFACE_EVENTS), 1),
        }
    return figures


def workerd_pid(root: int) -> int | None:
    """The workerd process under ``root`` (scripts/dev's, or the floor's launcher)."""
    for pid in process_tree(root):
        if Path(f"/proc/{pid}/comm").read_text().strip() == "workerd":
            return pid
    return None


def _thread_cpu_ms(pid: int) -> float:
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e6


# Where a sample of workerd's main thread is the Worker's own CPU, what the platform's limit counts:
# under the frame every run of an isolate's code is under, or on a stack of Python suspended and
# resumed through JSPI (each such stack is rooted at this builtin: the stack switch ends the
# unwinding there, so its samples never reach IoContext::runImpl).
_IN_ISOLATE = ("workerd::IoContext::runImpl", "Builtins_WasmReturnPromiseOnSuspendAsm")


def _isolate_share(perf_data: Path) -> float | None:
    """The share of workerd's main thread spent running isolates, from a ``perf record -g``
    profile of it; None without perf or samples."""
    script = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip,sym"], capture_output=True, text=True)
    samples = [sample for sample in script.stdout.split("\n\n") if sample.strip()]
    inside = sum(any(frame in sample for frame in _IN_ISOLATE) for sample in samples)
    return inside / len(samples) if samples else None


class IsolateCpu:
    """The CPU of workerd's main thread over a ``with`` block (``main_ms``) and, from a perf
    profile of that thread, the part spent running isolates (``isolate_ms``: under
    ``IoContext::runImpl`` or on a JSPI stack of Python; the Worker's own CPU, what the platform
    limits; the rest is the runtime's I/O). ``isolate_ms`` is None without perf. With the wake
    probe in place (``wake_probe``), ``wakes``: how many times the thread entered an isolate."""

    def __init__(self, workerd: int, scratch: Path) -> None:
        self._workerd = workerd
        self._data = scratch / f"perf-{time.monotonic_ns()}.data"
        self.main_ms = 0.0
        self.isolate_ms: float | None = None
        self.wakes: int | None = None

    def __enter__(self) -> IsolateCpu:
        perf = shutil.which("perf")
        record = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "5000", "-g", "-t", str(self._workerd)]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self._recorder = subprocess.Popen([*record, "-o", str(self._data)], **quiet) if perf else None
        self._counter = None
        if perf and _WAKE_EVENT is not None:
            count = ["perf", "stat", "-x", ",", "-e", _WAKE_EVENT, "-t", str(self._workerd)]
            self._counter = subprocess.Popen(count, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.2)  # perf attaches
        self._main_before = _thread_cpu_ms(self._workerd)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.main_ms = _thread_cpu_ms(self._workerd) - self._main_before
        if self._recorder is not None:
            self._recorder.send_signal(signal.SIGINT)
            self._recorder.wait()
            share = _isolate_share(self._data)
            self.isolate_ms = None if share is None else self.main_ms * share
        if self._counter is not None:
            self._counter.send_signal(signal.SIGINT)
            _out, err = self._counter.communicate()
            counted = err.strip().splitlines()[-1].split(",")[0] if err.strip() else ""
            self.wakes = int(counted) if counted.isdigit() else None

    def figures(self, requests: int = 1) -> dict[str, float]:
        """The main thread's and (with perf) the Worker's CPU in ms, per request of ``requests``."""
        row = {"workerd_main_thread_cpu_ms": round(self.main_ms / requests, 1)}
        if self.isolate_ms is not None:
            row["isolate_cpu_ms"] = round(self.isolate_ms / requests, 1)
        if self.wakes is not None:
            row["wakes"] = round(self.wakes / requests)
        return row


# The perf event counting entries into an isolate (``wake_probe``), while it is in place.
_WAKE_EVENT: str | None = None
_PROBE = "fllmapi_bench_wake"


@contextmanager
def wake_probe() -> Iterator[None]:
    """A uprobe on workerd's ``IoContext::runImpl``, the frame every run of an isolate's code
    starts in (a request, a resolved promise, a timer: a wake), for ``IsolateCpu`` to count, on
    every worker of the process (the dev front worker's too, and the floor's own). Needs perf
    and root; without them nothing is counted."""
    global _WAKE_EVENT
    binary = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "node"), "-p", 'require("workerd").default'],
        cwd=ROOT, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    offset = _file_offset(binary, "_ZN7workerd9IoContext7runImpl") if shutil.which("perf") and binary else None
    added = offset is not None and subprocess.run(
        ["perf", "probe", "-q", "-x", binary, "-a", f"{_PROBE}={offset:#x}"], capture_output=True
    ).returncode == 0  # fmt: skip
    _WAKE_EVENT = f"probe_workerd:{_PROBE}" if added else None
    try:
        yield
    finally:
        if added:
            subprocess.run(["perf", "probe", "-q", "-d", f"probe_workerd:{_PROBE}"], capture_output=True)
        _WAKE_EVENT = None


def _file_offset(binary: str, prefix: str) -> int | None:
    """The file offset of the first code symbol named ``prefix``… in ``binary`` (perf probe takes
    offsets, nm gives addresses: the executable segment maps one to the other)."""
    symbols = subprocess.run(["nm", binary], capture_output=True, text=True).stdout
    address = next(
        (
            int(f[0], 16)
            for f in map(str.split, symbols.splitlines())
            if len(f) == 3 and f[1] == "T" and f[2].startswith(prefix)
        ),
        None,
    )
    segments = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True).stdout
    for fields in map(str.split, segments.splitlines()):
        if fields[:1] == ["LOAD"] and "E" in fields[6:-1] and address is not None:
            offset, start, size = int(fields[1], 16), int(fields[2], 16), int(fields[5], 16)
            if start <= address < start + size:
                return address - start + offset
    return None


def _drain(client: httpx.Client, url: str, body: dict, headers: dict) -> int:
    """Send ``body`` and read the answer to its end; the number of reads it took."""
    writes = 0
    with client.stream("POST", url, json=body, headers=headers) as response:
        for _ in response.iter_raw():
            writes += 1
    return writes


def _agent_body() -> dict:
    """A Claude Code-sized ``/v1/messages`` body, ~80 KB: a long system prompt, 16 tools with
    schemas, and a conversation of tool calls and results."""
    tools = [
        {
            "name": f"tool_{i}",
            "description": "Does one thing of a coding agent's work, described at length. " * 20,
            "input_schema": {
                "type": "object",
                "properties": {
                    f"arg_{j}": {"type": "string", "description": "An argument, described. " * 4} for j in range(6)
                },
                "required": ["arg_0"],
            },
        }
        for i in range(16)
    ]
    messages: list[dict] = []
    for i in range(12):
        messages.append({"role": "user", "content": [{"type": "text", "text": "Please look at the next file. " * 20}]})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading it."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i}",
                        "name": "tool_1",
                        "input": {"arg_0": f"src/module_{i}.py"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "def f():\n    return 1\n" * 60}
                ],
            }
        )
    messages.append({"role": "user", "content": "Now write the summary."})
    return {
        "model": "m",
        "max_tokens": 4096,
        "stream": True,
        "system": "You are a careful coding agent. " * 800,
        "tools": tools,
        "messages": messages,
    }


PACED_EVENTS = int(os.environ.get("BENCH_PACED_EVENTS", "1000"))
AGENT_EVENTS = 300
PACE_S = 0.02  # 50 events/s, one per upstream read: a model's pace
NON_STREAM_REQUESTS = 50
FLOOR_TIMERS = 200
# What the caller's side adds to a hold beyond the schedule (loopback, the client's read, the
# runtime's own turn): a hold within the schedule plus this counts as within it.
HOLD_SLACK_MS = 50


def _schedule_json(pacing: Pacing) -> str:
    return json.dumps(pacing_schedule(pacing))


def paced(
    gateway: Gateway, upstream: FakeUpstream, client: httpx.Client, api: dict, pacings: list[Pacing], floor: Floor
) -> dict:
    """The free plan's CPU (SPEC §18): per pacing and per path, one whole streamed request of
    ``PACED_EVENTS`` events arriving at 50 events/s, one per upstream read (the request's own cost
    included); an agent's turn (an ~80 KB ``/v1/messages`` body, a 300-event answer); then a
    non-streamed chat request (the mean of ``NON_STREAM_REQUESTS``). Each row: the runtime
    processes' CPU less their idle CPU over the same time, workerd's main thread, the Worker's own
    CPU (``IsolateCpu``), the writes to the caller and the longest any event was held, and by how
    much the worst exceeded the schedule (``support.holds``); and beside it, measured right after
    it (this machine drifts by a third within minutes), the floor relaying the same answer on the
    same schedule (``floor``; the pass-through's: the native pipe)."""
    paths = {
        "openai": ("/v1/chat/completions", {"model": "m", "messages": _MESSAGES, "stream": True}),
        **{name: (path, stream_body) for name, (path, _body, stream_body) in SURFACES.items()},
    }
    start = time.monotonic()
    idle_before = cpu_seconds(gateway.process.pid)
    time.sleep(5)  # the idle baseline: the processes' background CPU, to subtract
    idle_rate = (cpu_seconds(gateway.process.pid) - idle_before) / (time.monotonic() - start)
    workerd = workerd_pid(gateway.process.pid)
    assert workerd is not None, "scripts/dev runs workerd"
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    figures: dict[str, dict[str, dict[str, float]]] = {}

    def measure(send: Callable[[], dict | None], requests: int = 1) -> dict[str, float]:
        start, cpu_before = time.monotonic(), cpu_seconds(gateway.process.pid)
        with IsolateCpu(workerd, scratch) as cpu:
            extra = send()
        elapsed = time.monotonic() - start
        return {
            "cpu_ms": round((cpu_seconds(gateway.process.pid) - cpu_before - idle_rate * elapsed) * 1000 / requests, 1),
            **cpu.figures(requests),
            **(extra or {}),
        }

    def streamed(url: str, body: dict, answer: Sse, pacing: Pacing) -> dict[str, float]:
        upstream.queue(answer)
        reads = read_timed(client, url, body, api)
        holds = Holds.of(reads, answer.sent)
        over = holds.over(lambda since: hold_ms(pacing, int(since)) + HOLD_SLACK_MS, answer.sent)
        return {"writes_to_caller": len(reads), "worst_hold_ms": round(holds.worst_ms), "held_too_long": len(over)}

    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        for pacing in pacings:
            client.put(f"{gateway.url}/api/admin/settings", json={"stream_pacing": pacing.value}, headers=admin)
            rows = figures[pacing.value] = {}
            cases = {
                name: (_stream_url(gateway, name, path), body, PACED_EVENTS) for name, (path, body) in paths.items()
            }
            cases["agent_turn"] = (gateway.url + "/v1/messages", _agent_body(), AGENT_EVENTS)
            for name, (url, body, events) in cases.items():
                upstream.queue(paced_answer(50, PACE_S))  # warm this path under this pacing
                _drain(client, url, body, api)
                answer = paced_answer(events, PACE_S)
                rows[name] = measure(partial(streamed, url, body, answer, pacing))
                rows[name]["floor"] = floor.relay(None if name == "openai" else pacing, events)
        client.put(f"{gateway.url}/api/admin/settings", json={"stream_pacing": None}, headers=admin)

        def non_stream() -> None:
            for _ in range(NON_STREAM_REQUESTS):
                upstream.queue(Json(completion("m")))
                client.post(
                    gateway.url + "/v1/chat/completions", json={"model": "m", "messages": _MESSAGES}, headers=api
                ).raise_for_status()

        non_streamed = measure(non_stream, NON_STREAM_REQUESTS)
    return {
        "events": PACED_EVENTS,
        "events_per_s": round(1 / PACE_S),
        "agent_turn_body_bytes": len(json.dumps(_agent_body())),
        "idle_cpu_ms_per_s": round(idle_rate * 1000, 2),
        "per_pacing": figures,
        "non_stream_chat": non_streamed,
    }


class Floor:
    """What any Worker pays on this machine for what a relay of the paced answer must do
    (scripts/bench_floor.mjs: a bare JavaScript Worker on the same workerd, served beside the
    gateway): ``relay(pacing, events)`` relays an answer on ``pacing``'s schedule (live: a wake per
    upstream read; None: piped natively); ``alone()`` measures ``FLOOR_TIMERS`` timer wakes and
    nothing else. Each the Worker's own CPU (``IsolateCpu``), its writes and worst hold."""

    def __init__(self, upstream: FakeUpstream) -> None:
        self._upstream = upstream

    def __enter__(self) -> Floor:
        port = free_port()
        env = {**os.environ, "PATH": f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"}
        self._server = subprocess.Popen(
            ["node", str(ROOT / "scripts" / "bench_floor.mjs"), str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._server.stdout is not None and self._server.stdout.readline().strip() == "ready"
        workerd = workerd_pid(self._server.pid)
        assert workerd is not None, "Miniflare runs workerd"
        self._workerd = workerd
        self._base = f"http://127.0.0.1:{port}/"
        self._scratch = tempfile.TemporaryDirectory()
        self._client = httpx.Client(timeout=120)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._client.close()
        self._scratch.cleanup()
        self._server.terminate()
        self._server.wait(timeout=30)

    def relay(self, pacing: Pacing | None, events: int) -> dict[str, float]:
        if pacing is None:
            params = "case=native"
        elif pacing is Pacing.LIVE:
            params = "case=chunk"
        else:
            params = f"case=paced&schedule={_schedule_json(pacing)}"
        url = f"{self._base}?{params}&up={self._upstream.base_url}/chat/completions"
        self._upstream.queue(paced_answer(50, PACE_S))  # warm
        _drain(self._client, url, {}, {})
        answer = paced_answer(events, PACE_S)
        self._upstream.queue(answer)
        with IsolateCpu(self._workerd, Path(self._scratch.name)) as cpu:
            reads = read_timed(self._client, url, {}, {})
        row = {"writes_to_caller": len(reads), **cpu.figures()}
        if pacing is not None:
            row["worst_hold_ms"] = round(Holds.of(reads, answer.sent).worst_ms)
        return row

    def alone(self) -> dict[str, dict[str, float]]:
        self._client.get(self._base, params={"case": "timers", "n": 20}).raise_for_status()  # warm
        with IsolateCpu(self._workerd, Path(self._scratch.name)) as cpu:
            self._client.get(self._base, params={"case": "timers", "n": FLOOR_TIMERS}).raise_for_status()
        return {"timers": {"wakes": FLOOR_TIMERS, **cpu.figures()}}


# The free plan's rows (SPEC §18; issue 39's bar): each path's label and key in ``paced``, the
# floor it is judged against, and how: at most FACTOR times the floor plus EXTRA ms.
_TRANSLATED = [
    ("Anthropic /v1/messages", "anthropic"),
    ("Responses /v1/responses", "responses"),
    ("Gemini :streamGenerateContent", "gemini"),
    ("Ollama /api/chat", "ollama"),
]
_FLOOR_FACTOR = 1.5
_REQUEST_MS = 3
_AGENT_REQUEST_MS = 6
_MAX_WRITES = 40


def _bar(row: dict, floor_row: dict, factor: float, extra: float) -> tuple[str, bool | None]:
    """The row's Worker CPU against ``factor`` × the floor's + ``extra`` ms."""
    ours, floor_ms = row.get("isolate_cpu_ms"), floor_row.get("isolate_cpu_ms")
    if ours is None or floor_ms is None:
        return "n/a (no perf)", None
    bar = round(factor * floor_ms + extra, 1)
    return f"≤ {bar} ms", ours <= bar


def free_plan_table(paced_figures: dict, floor_figures: dict) -> str:
    """SPEC §18's CPU rows as one table per pacing: each path's Worker CPU, wakes, writes and worst
    hold, beside the floor (a bare JavaScript Worker relaying the same answer on the same
    schedule, measured right after it) and the bar it sets: for the translated surfaces, the
    median of their four floors."""

    def cell(row: dict) -> str:
        value = row.get("isolate_cpu_ms")
        return "n/a (no perf)" if value is None else f"{value} ms"

    def line(label: str, row: dict, bar: tuple[str, bool | None]) -> str:
        verdict = {True: "yes", False: "**no**", None: ""}[bar[1]]
        hold = f"{row['worst_hold_ms']} ms" if "worst_hold_ms" in row else ""
        late = row.get("held_too_long")
        hold += f" ({late} late)" if late else ""
        floor_row = row.get("floor", {})
        floor = f"{cell(floor_row)}, {floor_row.get('wakes', '')} wakes, {floor_row.get('writes_to_caller', '')} writes"
        return (
            f"| {label} | {cell(row)} | {row.get('wakes', '')} | {row.get('writes_to_caller', '')} | {hold} "
            f"| {floor} | {bar[0]} | {verdict} |"
        )

    tables = []
    for pacing, rows in paced_figures["per_pacing"].items():
        lines = [
            f"`stream_pacing` = `{pacing}`, a 1,000-event answer at 50 events/s (20 s):",
            "",
            "| case | Worker CPU | wakes | writes | worst hold | floor, measured right after | bar | met |",
            "|---|---|---|---|---|---|---|---|",
        ]
        # The translated rows' floors relay the same answer: their median sets the bar of each
        # (one floor run strays by a fifth either way here).
        floors = [
            rows[key]["floor"]["isolate_cpu_ms"]
            for _, key in _TRANSLATED
            if "isolate_cpu_ms" in rows.get(key, {}).get("floor", {})
        ]
        translated_floor = {"isolate_cpu_ms": statistics.median(floors)} if floors else {}
        for label, key in _TRANSLATED:
            row = rows.get(key, {})
            bar = _bar(row, translated_floor, _FLOOR_FACTOR, _REQUEST_MS)
            if pacing == Pacing.PACED.value and row.get("writes_to_caller", 0) > _MAX_WRITES:
                bar = (bar[0] + f", ≤ {_MAX_WRITES} writes", False)
            lines.append(line(label, row, bar))
        through = rows.get("openai", {})
        lines.append(
            line("chat pass-through (native pipe)", through, _bar(through, through.get("floor", {}), 1, _REQUEST_MS))
        )
        agent = rows.get("agent_turn", {})
        agent_bar = _bar(agent, agent.get("floor", {}), _FLOOR_FACTOR, _AGENT_REQUEST_MS)
        lines.append(line("agent turn: ~80 KB body, 300 events", agent, agent_bar))
        tables.append("\n".join(lines))
    non_stream = paced_figures["non_stream_chat"]
    value = non_stream.get("isolate_cpu_ms")
    met = "" if value is None else ("yes" if value <= _REQUEST_MS else "**no**")
    tables.append(
        "| non-streamed chat | Worker CPU | bar | met |\n|---|---|---|---|\n"
        f"| per request | {cell(non_stream)} | ≤ {_REQUEST_MS} ms | {met} |"
    )
    timers = floor_figures.get("timers", {})
    tables.append(f"A wake here: {cell(timers)} for {FLOOR_TIMERS} timer wakes of a bare JS Worker.")
    return "\n\n".join(tables)


def in_process() -> object:
    """scripts/bench_relay.py inside Pyodide (scripts/profile): the Worker's own work per event, per surface."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "profile"), str(ROOT / "scripts" / "bench_relay.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    start = done.stdout.find("{")
    if done.returncode != 0 or start < 0:
        return {"error": (done.stderr or done.stdout)[-500:]}
    return json.loads(done.stdout[start:])


if __name__ == "__main__":
    main()
