"""Starting the Worker on the local runtime for end-to-end tests and benchmarks: workerd itself,
through the README's own ``scripts/dev`` (SPEC §11), with the tests' hooks set in its environment:
the D1 trace (``d1_statements``), the clock (``advance_clock``) and D1 failing on demand
(``d1_fault``; a runtime that starts failing: ``extra_env={"LOCAL_RUNTIME_D1_FAULT": mode}``)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
NODE_BIN = ROOT / "node_modules" / ".bin"
READY = re.compile(r"Ready on (http://127\.0\.0\.1:\d+)")
STARTUP_TIMEOUT_S = 90
DEV = ROOT / "scripts" / "dev"
# The tests' clock (scripts/runtime/testclock.c): preloaded into the runtime's processes, it adds
# the milliseconds written in a file to their wall clock.
TESTCLOCK = ROOT / ".cache" / "testclock.so"

__all__ = ["ROOT", "Gateway", "free_port", "logged"]


# Starts of a runtime whose port was taken meanwhile, before giving up.
PORT_TRIES = 3


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
    clock_path: Path
    # Whether a test made D1 fail since the last reset (the admin fixture then moves the clock on).
    d1_faulted: bool = False

    @classmethod
    def start(cls, workdir: Path, extra_env: dict[str, str] | None = None) -> Gateway:
        """Start ``scripts/dev`` on a free port with fresh secrets, D1 statements traced and the
        tests' clock preloaded; returns once it printed Ready (the Worker answers)."""
        persist_to = workdir / "state"
        log_path = workdir / "runtime.log"
        clock_path = workdir / "clock"
        clock_path.write_bytes(struct.pack("<q", 0))
        api_token, admin_token = f"api-{secrets.token_hex(12)}", f"admin-{secrets.token_hex(12)}"
        encryption_key = secrets.token_hex(32)
        env = {
            **os.environ,
            "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}",
            "API_TOKEN": api_token,
            "ADMIN_TOKEN": admin_token,
            "ENCRYPTION_KEY": encryption_key,
            "LOCAL_RUNTIME_TRACE_D1": "1",
            "LD_PRELOAD": str(TESTCLOCK),
            "TESTCLOCK_FILE": str(clock_path),
            **(extra_env or {}),
        }
        # A port found free may be taken before the runtime binds it (an outgoing connection's
        # source port comes from the same range): the runtime then says so and exits, and another
        # port is tried.
        for _ in range(PORT_TRIES):
            args = [
                str(DEV),
                "--port",
                str(free_port()),
                "--persist-to",
                str(persist_to),
                "--env-file",
                str(workdir / "absent.dev.vars"),
            ]
            log = log_path.open("wb")
            process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while time.monotonic() < deadline:
                found = READY.search(log_path.read_text(errors="replace"))
                if found:
                    return cls(
                        found.group(1),
                        process,
                        log_path,
                        persist_to,
                        api_token,
                        admin_token,
                        encryption_key,
                        clock_path,
                    )
                if process.poll() is not None:
                    break
                time.sleep(0.05)  # polling a log file for the start-up line, not timing a behaviour
            process.kill()
            process.wait()
            if "already in use" not in log_path.read_text(errors="replace"):
                break
        raise RuntimeError(f"the runtime did not start:\n{log_path.read_text(errors='replace')}")

    def advance_clock(self, ms: int) -> int:
        """Move the Worker's wall clock ``ms`` ahead (the tests' clock); its new time."""
        offset = struct.unpack("<q", self.clock_path.read_bytes())[0] + ms
        # One write of the whole number: the runtime reads the file's 8 bytes on every clock read.
        with self.clock_path.open("r+b") as clock:
            clock.write(struct.pack("<q", offset))
        return int(time.time() * 1000) + offset

    def now_ms(self) -> int:
        """The Worker's wall clock (tests may have moved it ahead of the real one)."""
        return self.advance_clock(0)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def d1_statements(self) -> list[str]:
        """Every D1 statement the Worker prepared so far, in order."""
        return [line[5:] for line in self.log().splitlines() if line.startswith("[d1] ")]

    def d1_fault(self, mode: str) -> dict[str, object]:
        """Make the Worker's D1 fail from now on (scripts/runtime/d1fault.py): ``off``, ``all``
        (every query), ``writes`` (INSERT/UPDATE/DELETE/REPLACE, and a batch holding one) or
        ``quota:N`` (every query once N more rows were written); the mode as the runtime holds it."""
        response = httpx.post(
            f"{self.url}/api/dev/d1-fault",
            json={"mode": mode},
            headers={"authorization": f"Bearer {self.admin_token}"},
            timeout=30,
        )
        response.raise_for_status()
        self.d1_faulted = self.d1_faulted or mode != "off"
        return response.json()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=20)


def logged(gateway, text: str) -> bool:
    """Whether ``text`` reaches the runtime's log within a few seconds: workerd's log crosses a
    pipe to its host process, so it may land after the caller has read the stream's end."""
    deadline = time.monotonic() + 10
    while text not in gateway.log():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling the log for the line
    return True
