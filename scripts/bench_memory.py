"""How the serving process's memory grows under load (issue 18).

Starts the Worker on workerd in front of the fake upstream, sends ``--requests`` requests (default
20,000) in a repeating mix of four
(chat JSON, chat SSE, Anthropic Messages SSE, Responses JSON: the pass-through and translated
paths), and prints the resident memory (RSS, from /proc) of the process that runs the Worker (workerd)
and of the runtime's whole process tree, every ``--every`` requests (default 2,000), then the growth
from the first sample
to the last and over the second half (a leak keeps its rate; a warm-up levels off). The goal is
flat within noise: a per-request leak would recycle a production isolate (128 MB), losing its
cooldowns and speed memory and failing the requests in flight.

Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench import process_tree, workerd_pid
from support.runtime import Gateway
from support.upstream import FakeUpstream, Json, Sse, chunk, completion

CLIENTS = 4
_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]
# (path, body): the mix, repeated.
MIX = (
    ("/v1/chat/completions", {"model": "j", "messages": _MESSAGES}),
    ("/v1/chat/completions", {"model": "s", "messages": _MESSAGES, "stream": True}),
    ("/v1/messages", {"model": "s", "max_tokens": 8, "messages": _MESSAGES, "stream": True}),
    ("/v1/responses", {"model": "j", "input": "Say hello."}),
)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _serving(gateway: Gateway) -> int:
    """The process that runs the Worker: workerd, a child of scripts/dev's Node."""
    pid = workerd_pid(gateway.process.pid)
    if pid is None:
        raise RuntimeError("no workerd process under the launcher")
    return pid


def measure(requests: int, every: int, upstream: FakeUpstream) -> dict:
    with tempfile.TemporaryDirectory() as workdir:
        gateway = Gateway.start(Path(workdir), extra_env={"LOCAL_RUNTIME_TRACE_D1": "0", "LD_PRELOAD": ""})
        try:
            admin = {"authorization": f"Bearer {gateway.admin_token}"}
            httpx.post(
                f"{gateway.url}/api/admin/providers",
                headers=admin,
                json={
                    "name": "mem",
                    "base_url": upstream.base_url,
                    "api_key": "sk-memory-key-0123456789",
                    "models": ["j", "s"],
                },
            ).raise_for_status()
            headers = {"authorization": f"Bearer {gateway.api_token}"}
            serving = _serving(gateway)
            samples = []
            with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:

                def send(n: int) -> None:
                    path, body = MIX[n % len(MIX)]
                    client.post(path, json=body).raise_for_status()

                with ThreadPoolExecutor(CLIENTS) as pool:
                    for done in range(every, requests + 1, every):
                        list(pool.map(send, range(done - every, done)))
                        tree = sum(_rss_mb(pid) for pid in process_tree(gateway.process.pid))
                        samples.append(
                            {
                                "requests": done,
                                "serving_rss_mb": round(_rss_mb(serving), 1),
                                "tree_rss_mb": round(tree, 1),
                            }
                        )
                        print(samples[-1], file=sys.stderr, flush=True)
        finally:
            gateway.stop()
    first, middle, last = samples[0], samples[len(samples) // 2], samples[-1]
    return {
        "samples": samples,
        "serving_growth_mb": round(last["serving_rss_mb"] - first["serving_rss_mb"], 1),
        "tree_growth_mb": round(last["tree_rss_mb"] - first["tree_rss_mb"], 1),
        "growth_from_to": [first["requests"], last["requests"]],
        # A leak grows at the same rate throughout; a warm-up (V8 heaps reaching their size) stops.
        "serving_growth_second_half_mb": round(last["serving_rss_mb"] - middle["serving_rss_mb"], 1),
        "second_half_from_to": [middle["requests"], last["requests"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2_000)
    args = parser.parse_args()
    upstream = FakeUpstream().start()
    upstream.answer_always(Json(completion("j")), model="j")
    upstream.answer_always(Sse([chunk("s", f" t{i}") for i in range(20)] + [chunk("s", None, "stop")]), model="s")
    try:
        print(json.dumps(measure(args.requests, args.every, upstream), indent=2))
    finally:
        upstream.stop()


if __name__ == "__main__":
    main()
