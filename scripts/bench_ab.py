"""This tree's CPU per request beside another checkout's, measured side by side (issue 33).

    scripts/bench_ab ../other-checkout [--agent] [--batches 12] [--batch 100]

On this machine a figure drifts by a third between two runs minutes apart (the host's load), more
than most changes cost, so two trees measured one after the other compare badly. Here both run at
once, each on its own workerd (the other tree's ``scripts/dev``, this tree's fake upstream and
node_modules), warmed alike, and take turns: batches of the same non-streamed request, the order
swapped each round, each batch's CPU read from its own runtime processes and, with perf installed,
the part of it spent running the isolates (``bench.IsolateCpu``: the Worker's own CPU, what the
platform limits). The request is a small chat completion, or with ``--agent`` the ~80 KB agent
body of ``bench._agent_body`` on ``/v1/messages`` (issue 39), not streamed. Prints each tree's
median and mean CPU per request, and every batch's. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import support.runtime as runtime
from bench import IsolateCpu, _add_provider, _agent_body, cpu_seconds, workerd_pid
from support.upstream import FakeUpstream, Json, completion

WARMUP = 200
_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]
CHAT = ("/v1/chat/completions", {"model": "m", "messages": _MESSAGES, "max_tokens": 8})
AGENT = ("/v1/messages", {**_agent_body(), "stream": False})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (its scripts/dev serves it)")
    parser.add_argument("--agent", action="store_true", help="the ~80 KB agent body on /v1/messages, not chat")
    parser.add_argument("--batches", type=int, default=12, help="batches per tree")
    parser.add_argument("--batch", type=int, default=100, help="requests per batch")
    arguments = parser.parse_args()
    other_dev = arguments.other.resolve() / "scripts" / "dev"
    upstream = FakeUpstream().start()
    upstream.answer_always(Json(completion("m")))
    env = {"LOCAL_RUNTIME_TRACE_D1": "0", "LD_PRELOAD": ""}  # no test hooks
    request = AGENT if arguments.agent else CHAT
    try:
        with tempfile.TemporaryDirectory() as here_dir, tempfile.TemporaryDirectory() as other_dir:
            trees = {"this tree": runtime.Gateway.start(Path(here_dir), extra_env=env)}
            runtime.DEV = other_dev
            trees[str(arguments.other)] = runtime.Gateway.start(Path(other_dir), extra_env=env)
            try:
                batches = measure(trees, upstream, request, arguments.batches, arguments.batch, Path(here_dir))
            finally:
                for gateway in trees.values():
                    gateway.stop()
    finally:
        upstream.stop()
    size = len(httpx.Request("POST", "http://bench", json=request[1]).content)
    print(f"POST {request[0]}, not streamed, a {size:,}-byte body:")
    for name, figures in batches.items():
        for what, values in figures.items():
            if values:
                print(
                    f"{name}: {what} per request, median {statistics.median(values):.2f} ms, "
                    f"mean {statistics.mean(values):.2f} ms; batches {[round(f, 2) for f in values]}"
                )


def measure(
    trees: dict[str, runtime.Gateway],
    upstream: FakeUpstream,
    request: tuple[str, dict],
    batches: int,
    size: int,
    scratch: Path,
) -> dict[str, dict[str, list[float]]]:
    """Per tree, the runtime's CPU and (with perf) the isolates' CPU per request, batch by batch."""
    headers = {name: _add_provider(gateway, upstream) for name, gateway in trees.items()}
    workerds = {name: workerd_pid(gateway.process.pid) for name, gateway in trees.items()}
    figures: dict[str, dict[str, list[float]]] = {name: {"runtime CPU": [], "isolate CPU": []} for name in trees}
    path, body = request
    with httpx.Client(timeout=30) as client:

        def send(name: str, count: int) -> None:
            for _ in range(count):
                client.post(f"{trees[name].url}{path}", json=body, headers=headers[name]).raise_for_status()

        for name in trees:
            send(name, WARMUP)
        order = list(trees)
        for _ in range(batches):
            for name in order:
                before = cpu_seconds(trees[name].process.pid)
                with IsolateCpu(workerds[name], scratch) as isolate:
                    send(name, size)
                figures[name]["runtime CPU"].append((cpu_seconds(trees[name].process.pid) - before) * 1000 / size)
                if isolate.isolate_ms is not None:
                    figures[name]["isolate CPU"].append(isolate.isolate_ms / size)
            order.reverse()
    return figures


if __name__ == "__main__":
    main()
