"""Starting the Worker in the local runtime (scripts/runtime/server.mjs) for end-to-end tests."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE_BIN = ROOT / "node_modules" / ".bin"
READY = re.compile(r"Ready on (http://127\.0\.0\.1:\d+)")
STARTUP_TIMEOUT_S = 60

__all__ = ["Gateway", "ROOT", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Gateway:
    """A running local runtime. Tokens and the encryption key are fresh per instance."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    persist_to: Path
    api_token: str
    admin_token: str
    encryption_key: str

    @classmethod
    def start(cls, workdir: Path, extra_env: dict[str, str] | None = None, node_args: tuple[str, ...] = ()) -> Gateway:
        persist_to = workdir / "state"
        log_path = workdir / "runtime.log"
        api_token, admin_token = f"api-{secrets.token_hex(12)}", f"admin-{secrets.token_hex(12)}"
        encryption_key = secrets.token_hex(32)
        env = {
            **os.environ,
            "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}",
            "API_TOKEN": api_token,
            "ADMIN_TOKEN": admin_token,
            "ENCRYPTION_KEY": encryption_key,
            "LOCAL_RUNTIME_TRACE_D1": "1",
            "LOCAL_RUNTIME_TEST_CLOCK": "1",
            **(extra_env or {}),
        }
        args = [
            "node", "--disallow-code-generation-from-strings", *node_args, str(ROOT / "scripts" / "runtime" / "server.mjs"), "--",
            "--port", str(free_port()),
            "--persist-to", str(persist_to),
            "--env-file", str(workdir / "absent.dev.vars"),
        ]
        log = log_path.open("wb")
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            found = READY.search(log_path.read_text(errors="replace"))
            if found:
                return cls(found.group(1), process, log_path, persist_to, api_token, admin_token, encryption_key)
            if process.poll() is not None:
                break
            time.sleep(0.05)  # polling a log file for the start-up line, not timing a behaviour
        process.kill()
        raise RuntimeError(f"local runtime did not start:\n{log_path.read_text(errors='replace')}")

    def advance_clock(self, ms: int) -> int:
        """Move the Worker's wall clock ``ms`` ahead (the runtime's test clock); its new time."""
        request = urllib.request.Request(
            f"{self.url}/__local_runtime/clock", data=json.dumps({"advance_ms": ms}).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(json.loads(response.read())["now_ms"])

    def now_ms(self) -> int:
        """The Worker's wall clock (tests may have moved it ahead of the real one)."""
        return self.advance_clock(0)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def d1_statements(self) -> list[str]:
        """Every D1 statement the Worker prepared so far, in order."""
        return [line[5:] for line in self.log().splitlines() if line.startswith("[d1] ")]

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=20)
