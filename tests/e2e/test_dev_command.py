"""The local development contract (SPEC §11), through the README's own command `scripts/dev`:
flags, secrets from the env file with the process environment winning, the Ready line, and a
clean stop on SIGINT and SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from support.runtime import ROOT, free_port

READY = re.compile(r"Ready on (http://127\.0\.0\.1:(\d+))")


def start_dev(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = free_port()
    env_file = tmp_path / "custom.vars"
    env_file.write_text(
        "# comment\n"
        "ADMIN_TOKEN=file-admin-token-0123456789\n"
        'API_TOKEN="file-api-token-0123456789"\n'
        f"ENCRYPTION_KEY={'ab' * 32}\n"
    )
    log_path = tmp_path / "dev.log"
    args = [str(ROOT / "scripts" / "dev"), "--port", str(port), "--persist-to", str(tmp_path / "state"),
            "--env-file", str(env_file)]
    inherited = {k: v for k, v in os.environ.items() if k not in ("API_TOKEN", "ADMIN_TOKEN", "ENCRYPTION_KEY")}
    process = subprocess.Popen(args, cwd=ROOT, env={**inherited, **env}, stdout=log_path.open("wb"),
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        found = READY.search(log_path.read_text(errors="replace"))
        if found:
            return process, found.group(1), log_path
        time.sleep(0.05)  # polling the log for the start-up line
    process.kill()
    raise AssertionError(f"scripts/dev did not start:\n{log_path.read_text(errors='replace')}")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_dev_serves_with_the_env_file_and_stops_cleanly(tmp_path, stop):
    env = {"ADMIN_TOKEN": "process-admin-token-0123456789"}
    process, url, log_path = start_dev(tmp_path, env)
    try:
        admin = httpx.get(f"{url}/api/admin/settings", headers={"authorization": f"Bearer {env['ADMIN_TOKEN']}"})
        file_admin = httpx.get(f"{url}/api/admin/settings",
                               headers={"authorization": "Bearer file-admin-token-0123456789"})
        api = httpx.post(f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]},
                         headers={"authorization": "Bearer file-api-token-0123456789"})
    finally:
        process.send_signal(stop)
        code = process.wait(timeout=30)

    assert admin.status_code == 200  # the process environment wins over the file
    assert file_admin.status_code == 401
    assert api.status_code == 503  # the file's API token is used; no provider yet
    assert code == 0
    assert (tmp_path / "state" / "v3" / "d1").is_dir()  # wrangler's layout under --persist-to
    assert "0123456789" not in log_path.read_text()
