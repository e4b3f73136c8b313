"""The deploy snapshot's rules (PLATFORM-NOTES §3.3, §4.4): no randomness and no JS object at import
time. workerd enforces them itself when it takes the snapshot a deploy takes, as here; the rules'
own check, with planted violations, is a unit test (tests/unit/test_snapshot_rules.py)."""

from __future__ import annotations

import httpx

from support.runtime import Gateway


def test_workerd_takes_the_deploy_snapshot_of_the_worker(tmp_path):
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    gateway = Gateway.start(tmp_path, extra_env={"LOCAL_RUNTIME_SNAPSHOT_DIR": str(snapshots)})
    try:
        answer = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {gateway.api_token}"})
    finally:
        gateway.stop()

    assert answer.status_code == 200  # the Worker serves from the snapshot's isolate
    [snapshot] = snapshots.iterdir()
    assert snapshot.stat().st_size > 1_000_000  # the Wasm memory after the Worker's import
