"""This tree's CPU per request beside another checkout's, measured side by side (issue 33).

    scripts/bench_ab ../other-checkout [--batches 12] [--batch 100]

On this machine a figure drifts by a third between two runs minutes apart (the host's load), more
than most changes cost, so two trees measured one after the other compare badly. Here both run at
once, each on its own workerd (the other tree's ``scripts/dev``, this tree's fake upstream and
node_modules), warmed alike, and take turns: batches of the same non-streamed chat request, the
order swapped each round, each batch's CPU read from its own runtime processes. Prints each tree's
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
from bench import _add_provider, cpu_seconds
from support.upstream import FakeUpstream, Json, completion

WARMUP = 200
BODY = {"model": "m", "messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 8}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (its scripts/dev serves it)")
    parser.add_argument("--batches", type=int, default=12, help="batches per tree")
    parser.add_argument("--batch", type=int, default=100, help="requests per batch")
    arguments = parser.parse_args()
    other_dev = arguments.other.resolve() / "scripts" / "dev"
    upstream = FakeUpstream().start()
    upstream.answer_always(Json(completion("m")))
    env = {"LOCAL_RUNTIME_TRACE_D1": "0", "LD_PRELOAD": ""}  # no test hooks
    try:
        with tempfile.TemporaryDirectory() as here_dir, tempfile.TemporaryDirectory() as other_dir:
            trees = {"this tree": runtime.Gateway.start(Path(here_dir), extra_env=env)}
            runtime.DEV = other_dev
            trees[str(arguments.other)] = runtime.Gateway.start(Path(other_dir), extra_env=env)
            try:
                batches = measure(trees, upstream, arguments.batches, arguments.batch)
            finally:
                for gateway in trees.values():
                    gateway.stop()
    finally:
        upstream.stop()
    for name, figures in batches.items():
        print(
            f"{name}: runtime CPU per request, median {statistics.median(figures):.2f} ms, "
            f"mean {statistics.mean(figures):.2f} ms; batches {[round(f, 1) for f in figures]}"
        )


def measure(trees: dict[str, runtime.Gateway], upstream: FakeUpstream, batches: int, size: int) -> dict:
    headers = {name: _add_provider(gateway, upstream) for name, gateway in trees.items()}
    figures: dict[str, list[float]] = {name: [] for name in trees}
    with httpx.Client(timeout=30) as client:

        def send(name: str, count: int) -> None:
            for _ in range(count):
                url = f"{trees[name].url}/v1/chat/completions"
                client.post(url, json=BODY, headers=headers[name]).raise_for_status()

        for name in trees:
            send(name, WARMUP)
        order = list(trees)
        for _ in range(batches):
            for name in order:
                before = cpu_seconds(trees[name].process.pid)
                send(name, size)
                figures[name].append((cpu_seconds(trees[name].process.pid) - before) * 1000 / size)
            order.reverse()
    return figures


if __name__ == "__main__":
    main()
