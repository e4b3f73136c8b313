"""The local development contract (SPEC §11), through the README's own command `scripts/dev`, on
workerd: flags, secrets from the env file with the process
environment winning, the Ready line, a clean stop on SIGINT and SIGTERM, one log line per request
(colour on a terminal only), a clear error for a busy port, and an env file with fresh secrets
when there is none."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.runtime import ROOT, free_port
from support.upstream import UPSTREAM_KEY, FakeUpstream, Json, Sse, chunk

READY = re.compile(r"Ready on (http://127\.0\.0\.1:(\d+))")
SECRETS = ("API_TOKEN", "ADMIN_TOKEN", "ENCRYPTION_KEY")
FILE_ADMIN_TOKEN = "file-admin-token-0123456789"
FILE_API_TOKEN = "file-api-token-0123456789"
# The first run of scripts/dev may install what it needs (scripts/setup) before it starts.
START_TIMEOUT_S = 120


def dev_command(tmp_path: Path, port: int, env_file: Path) -> list[str]:
    return [
        str(ROOT / "scripts" / "dev"),
        "--port",
        str(port),
        "--persist-to",
        str(tmp_path / "state"),
        "--env-file",
        str(env_file),
    ]


def dev_env(env: dict[str, str]) -> dict[str, str]:
    """The test's environment without the three secrets, plus ``env``."""
    return {**{k: v for k, v in os.environ.items() if k not in SECRETS}, **env}


def write_env_file(tmp_path: Path) -> Path:
    env_file = tmp_path / "custom.vars"
    env_file.write_text(
        f'# comment\nADMIN_TOKEN={FILE_ADMIN_TOKEN}\nAPI_TOKEN="{FILE_API_TOKEN}"\nENCRYPTION_KEY={"ab" * 32}\n'
    )
    return env_file


def wait_for(read, pattern: re.Pattern[str], process: subprocess.Popen[bytes], what: str) -> re.Match[str]:
    """Poll the output ``read()`` returns until ``pattern`` is in it; fail if the process ends."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = pattern.search(read())
        if found:
            return found
        if process.poll() is not None:
            break
        time.sleep(0.05)  # polling a log for a line, not timing a behaviour
    process.kill()
    raise AssertionError(f"no {what} from scripts/dev:\n{read()}")


def start_dev(
    tmp_path: Path,
    env: dict[str, str],
    env_file: Path | None = None,
) -> tuple[subprocess.Popen[bytes], str, Path]:
    """scripts/dev on a free port, its output (stdout and stderr) to a file; waits for Ready."""
    env_file = env_file or write_env_file(tmp_path)
    log_path = tmp_path / "dev.log"
    process = subprocess.Popen(
        dev_command(tmp_path, free_port(), env_file),
        cwd=ROOT,
        env=dev_env(env),
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
    )
    found = wait_for(lambda: log_path.read_text(errors="replace"), READY, process, "Ready line")
    return process, found.group(1), log_path


def stop_dev(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_dev_serves_with_the_env_file_and_stops_cleanly(tmp_path, stop):
    env = {"ADMIN_TOKEN": "process-admin-token-0123456789"}
    process, url, log_path = start_dev(tmp_path, env)
    try:
        admin = httpx.get(f"{url}/api/admin/settings", headers={"authorization": f"Bearer {env['ADMIN_TOKEN']}"})
        file_admin = httpx.get(f"{url}/api/admin/settings", headers={"authorization": f"Bearer {FILE_ADMIN_TOKEN}"})
        api = httpx.post(
            f"{url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}]},
            headers={"authorization": f"Bearer {FILE_API_TOKEN}"},
        )
    finally:
        process.send_signal(stop)
        code = process.wait(timeout=30)

    assert admin.status_code == 200  # the process environment wins over the file
    assert file_admin.status_code == 401
    assert api.status_code == 503  # the file's API token is used; no provider yet
    assert code == 0
    assert (tmp_path / "state" / "v3" / "d1").is_dir()  # wrangler's layout under --persist-to
    assert "0123456789" not in log_path.read_text()


# One log line per request (scripts/runtime/logline.mjs): wrangler's `METHOD /path STATUS TEXT
# (Nms)`, then what served and what failed, taken from the Worker's own headers, and why a stream
# ended in-band with an error, taken from the Worker's own log.
REQUEST_LINE = re.compile(
    r"^\[request\] (?P<method>\S+) (?P<path>\S+) (?P<status>\d{3}) (?P<text>[^(]*) "
    r"\((?P<ms>\d+)ms(?P<gone>, client went away)?\)(?: via (?P<via>\S+))?"
    r"(?: after (?P<attempts>\d+) failed \[(?P<trail>.*)\])?(?: stream failed: (?P<failure>.+?))?\r?$",
    re.M,
)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One scripts/dev for the request-log tests, its output in a file (not a terminal)."""
    process, url, log_path = start_dev(tmp_path_factory.mktemp("dev"), {})
    yield url, log_path
    stop_dev(process)


def add_provider(url: str, upstream: FakeUpstream, name: str, model: str, priority: int) -> None:
    response = httpx.post(
        f"{url}/api/admin/providers",
        headers={"authorization": f"Bearer {FILE_ADMIN_TOKEN}"},
        json={
            "name": name,
            "base_url": upstream.base_url,
            "api_key": UPSTREAM_KEY,
            "models": [model],
            "priority": priority,
        },
    )
    assert response.status_code == 201, response.text


def request_lines(log_path: Path) -> list[re.Match[str]]:
    return list(REQUEST_LINE.finditer(log_path.read_text(errors="replace")))


def wait_for_request_line(log_path: Path, via: str) -> re.Match[str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [line for line in request_lines(log_path) if line["via"] == via]
        if found:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.05)  # polling the log for the line
    raise AssertionError(f"no request line via {via}:\n{log_path.read_text(errors='replace')}")


def test_each_request_prints_what_served_it_and_no_secret(dev, upstream):
    url, log_path = dev
    add_provider(url, upstream, "down", "m-down", priority=1)
    add_provider(url, upstream, "up", "m-up", priority=2)
    upstream.queue(Json({"error": {"message": "boom"}}, 500), model="m-down")

    # A Gemini client would send its key in the query string: it must not reach the log.
    response = httpx.post(
        f"{url}/v1/chat/completions?key=query-secret-0123456789&alt=sse",
        json={"model": "auto", "messages": [{"role": "user", "content": "x"}]},
        headers={"authorization": f"Bearer {FILE_API_TOKEN}"},
    )
    line = wait_for_request_line(log_path, "up/m-up")

    assert response.status_code == 200
    assert line.group(0).rstrip() == (
        f"[request] POST /v1/chat/completions 200 OK ({line['ms']}ms) via up/m-up "
        f"after {response.headers['x-fallback-attempts']} failed [{response.headers['x-fallback-trail']}]"
    )
    assert line["attempts"] == "1" and line["trail"].startswith("down/m-down: ")
    admin_lines = [m.group(0) for m in request_lines(log_path) if m["path"] == "/api/admin/providers"]
    assert len(admin_lines) == 2 and all(" 201 Created (" in m for m in admin_lines)
    log = log_path.read_text(errors="replace")
    for secret in ("query-secret", "?key=", FILE_API_TOKEN, FILE_ADMIN_TOKEN, UPSTREAM_KEY, "ab" * 32):
        assert secret not in log
    assert "\x1b[" not in log  # no colour: the output is a file, not a terminal


def test_a_stream_is_logged_when_it_ends(dev, upstream):
    url, log_path = dev
    add_provider(url, upstream, "streamer", "m-stream", priority=3)
    release = threading.Event()
    upstream.queue(
        Sse([chunk("m-stream", "first"), chunk("m-stream", "second", "stop")], gates={1: release}), model="m-stream"
    )
    body = {"model": "m-stream", "messages": [{"role": "user", "content": "x"}], "stream": True}

    with httpx.stream(
        "POST",
        f"{url}/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {FILE_API_TOKEN}"},
        timeout=30,
    ) as response:
        chunks = response.iter_raw()
        received = b""
        for data in chunks:
            received += data
            if b"first" in received:
                break
        # The headers and the first event are here, and the runtime writes its log synchronously:
        # a line printed on headers would be in the file now.
        logged_while_open = [m for m in request_lines(log_path) if m["via"] == "streamer/m-stream"]
        release.set()
        received += b"".join(chunks)
    line = wait_for_request_line(log_path, "streamer/m-stream")

    assert b"[DONE]" in received
    assert logged_while_open == []
    assert (line["method"], line["path"], line["status"], line["gone"]) == ("POST", "/v1/chat/completions", "200", None)


def test_a_caller_leaving_mid_stream_is_marked(dev, upstream):
    url, log_path = dev
    add_provider(url, upstream, "leaver", "m-leave", priority=4)
    release = threading.Event()
    upstream.queue(
        Sse([chunk("m-leave", "first"), chunk("m-leave", "second", "stop")], gates={1: release}), model="m-leave"
    )
    body = {"model": "m-leave", "messages": [{"role": "user", "content": "x"}], "stream": True}

    try:
        with httpx.stream(
            "POST",
            f"{url}/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {FILE_API_TOKEN}"},
            timeout=30,
        ) as response:
            for data in response.iter_raw():
                if b"first" in data:
                    break
    finally:
        # The rest of the answer comes after the caller left: workerd notices a caller that went
        # away when it next writes to it.
        release.set()
    line = wait_for_request_line(log_path, "leaver/m-leave")

    assert line["status"] == "200" and line["gone"] == ", client went away"
    assert line["failure"] is None  # a caller who left is not a failed stream


def read_until(chunks: Iterator[bytes], text: bytes) -> bytes:
    received = b""
    for data in chunks:
        received += data
        if text in received:
            return received
    raise AssertionError(f"the stream ended without {text!r}: {received!r}")


def test_a_stream_cut_mid_answer_is_marked_on_its_own_line(dev, upstream):
    url, log_path = dev
    add_provider(url, upstream, "cutter", "m-cut", priority=5)
    add_provider(url, upstream, "steady", "m-steady", priority=6)
    cut, finish = threading.Event(), threading.Event()
    upstream.queue(Sse([chunk("m-cut", "partial")], done=False, reset=True, gates={1: cut}), model="m-cut")
    upstream.queue(
        Sse([chunk("m-steady", "whole"), chunk("m-steady", None, "stop")], gates={1: finish}), model="m-steady"
    )
    headers = {"authorization": f"Bearer {FILE_API_TOKEN}"}

    def ask(model: str):
        body = {"model": model, "messages": [{"role": "user", "content": "x"}], "stream": True}
        return httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers, timeout=30)

    # Both streams are open at once; the cut one ends first, the healthy one after it.
    with ask("m-cut") as broken, ask("m-steady") as steady:
        broken_chunks, steady_chunks = broken.iter_raw(), steady.iter_raw()
        read_until(broken_chunks, b"partial")
        read_until(steady_chunks, b"whole")
        cut.set()
        broken_rest = b"".join(broken_chunks)
        cut_line = wait_for_request_line(log_path, "cutter/m-cut")
        finish.set()
        steady_rest = b"".join(steady_chunks)
    steady_line = wait_for_request_line(log_path, "steady/m-steady")

    assert b'"code":"stream_interrupted"' in broken_rest and b"[DONE]" in steady_rest
    assert (cut_line["status"], cut_line["gone"], cut_line["failure"]) == ("200", None, "cut")
    assert (steady_line["status"], steady_line["gone"], steady_line["failure"]) == ("200", None, None)
    assert cut_line.group(0).rstrip().endswith(" via cutter/m-cut stream failed: cut")
    # The Worker's own warning, as `wrangler tail` shows it in production, names the request.
    request_id = broken.headers["x-request-id"]
    assert request_id != steady.headers["x-request-id"]
    assert f"stream failed: cut (via cutter/m-cut, request {request_id})" in log_path.read_text(errors="replace")


def test_a_translated_stream_ended_too_soon_is_marked(dev, upstream):
    url, log_path = dev
    add_provider(url, upstream, "short", "m-short", priority=7)
    upstream.queue(Sse([chunk("m-short", "Hel")], done=False), model="m-short")
    headers = {"authorization": f"Bearer {FILE_API_TOKEN}", "anthropic-version": "2023-06-01"}
    body = {"model": "m-short", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "x"}]}

    text = httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=30).text
    line = wait_for_request_line(log_path, "short/m-short")

    assert "event: error" in text and "message_stop" not in text
    assert (line["path"], line["status"], line["failure"]) == ("/v1/messages", "200", "truncated")


class PtyOutput:
    """A child's stdout and stderr on a pseudo-terminal, collected by a thread."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._collect, daemon=True)

    def start(self) -> PtyOutput:
        self._thread.start()
        return self

    def _collect(self) -> None:
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            self._chunks.append(data)

    def text(self) -> str:
        return b"".join(self._chunks).decode(errors="replace")

    def close(self) -> None:
        os.close(self.master)


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)], ids=["terminal", "NO_COLOR"])
def test_request_lines_are_coloured_on_a_terminal_only(tmp_path, no_color, coloured):
    secrets = {"ADMIN_TOKEN": f"admin-{'0' * 20}", "API_TOKEN": f"api-{'1' * 20}", "ENCRYPTION_KEY": "cd" * 32}
    env = {k: v for k, v in dev_env(secrets).items() if k != "NO_COLOR"}
    if no_color:
        env["NO_COLOR"] = no_color
    absent = tmp_path / "absent.vars"
    output = PtyOutput()
    process = subprocess.Popen(
        dev_command(tmp_path, free_port(), absent), cwd=ROOT, env=env, stdout=output.slave, stderr=output.slave
    )
    os.close(output.slave)
    output.start()
    try:
        url = wait_for(output.text, READY, process, "Ready line").group(1)
        assert httpx.get(f"{url}/").status_code == 200
        wait_for(output.text, re.compile(r"\[request\].*GET.* /"), process, "request line")
    finally:
        code = stop_dev(process)
        output.close()

    line = next(line for line in output.text().splitlines() if line.startswith("[request]"))
    if coloured:
        assert line.startswith("[request] \x1b[1mGET\x1b[0m / \x1b[32m200 OK\x1b[0m \x1b[90m(")
    else:
        assert re.fullmatch(r"\[request\] GET / 200 OK \(\d+ms\)\r?", line)
    assert code == 0
    assert not absent.exists()  # secrets came from the environment: no env file written


def test_a_busy_port_is_named_with_the_way_out(tmp_path):
    env_file = write_env_file(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            dev_command(tmp_path, port, env_file),
            cwd=ROOT,
            env=dev_env({}),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
        )

    errors = [line for line in result.stderr.splitlines() if not line.startswith("setup: ")]
    assert result.returncode == 1
    assert errors == [
        f"error: port {port} on 127.0.0.1 is already in use (another scripts/dev?); "
        "choose another with `scripts/dev --port N`"
    ]
    assert "Ready on" not in result.stdout
    assert not (tmp_path / "state").exists()  # refused before touching the local D1


def test_dev_writes_a_missing_env_file_with_fresh_secrets(tmp_path):
    env_file = tmp_path / "fresh.vars"
    process, url, log_path = start_dev(tmp_path, {}, env_file=env_file)
    try:
        values = dict(re.findall(r"^([A-Z_]+)=(.*)$", env_file.read_text(), re.M))
        admin = httpx.get(f"{url}/api/admin/settings", headers={"authorization": f"Bearer {values['ADMIN_TOKEN']}"})
        api = httpx.post(
            f"{url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}]},
            headers={"authorization": f"Bearer {values['API_TOKEN']}"},
        )
    finally:
        assert stop_dev(process) == 0

    assert admin.status_code == 200
    assert api.status_code == 503  # the fresh API token is accepted; no provider yet
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert len(values["ADMIN_TOKEN"]) >= 32 and len(values["API_TOKEN"]) >= 32
    assert values["ADMIN_TOKEN"] != values["API_TOKEN"]
    assert re.fullmatch(r"[0-9a-f]{64}", values["ENCRYPTION_KEY"])
    assert "STREAM_STALL_MS" in values  # the rest of .dev.vars.example, as it is
    log = log_path.read_text()
    assert f"Created {env_file} with fresh ADMIN_TOKEN, API_TOKEN and ENCRYPTION_KEY" in log
    assert "not set" not in log  # no warning about missing secrets
    for secret in SECRETS:
        assert values[secret] not in log
