"""Run a command with no way out to the network, and see what it tried to reach.

``run_offline`` starts ``python -m support.offline`` in a new network namespace (``unshare -n``,
or ``unshare -rn`` where only user namespaces are allowed): the namespace has a loopback device
and nothing else, so no packet can leave the machine. Inside, that module brings loopback up,
listens on it as an HTTP proxy that records the first line of every request (``CONNECT
host:443 …``) and refuses it with 403, points ``HTTPS_PROXY``/``HTTP_PROXY`` at it (wrangler
honours them: "Proxy environment variables detected"), and runs the command under ``strace -f -e
trace=connect``. What comes back:

- ``proxied``: the hosts the command asked the proxy for, in order (what it meant to reach);
- ``outside``: the addresses of every IPv4/IPv6 ``connect()`` not on loopback (an attempt that
  went around the proxy, a DNS query included), which must be empty for a command that honours
  the proxy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Offline", "namespace_command", "run_offline"]

_CONNECT = re.compile(r"connect\(\d+, \{sa_family=AF_INET6?, (.*?)\}")
_ADDRESS = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')


@dataclass
class Offline:
    code: int | None  # None: it did not end within the timeout
    output: str
    proxied: list[str]
    outside: list[str]


def namespace_command() -> list[str] | None:
    """The ``unshare`` invocation that makes a network namespace here, or None if none does."""
    if shutil.which("unshare") is None or shutil.which("strace") is None:
        return None
    for command in (["unshare", "-n"], ["unshare", "-rn"]):
        if subprocess.run([*command, "true"], capture_output=True).returncode == 0:
            return command
    return None


def run_offline(argv: list[str], *, cwd: Path, env: dict[str, str], record: Path, timeout_s: float) -> Offline:
    """Run ``argv`` in ``cwd`` with ``env`` (plus the proxy variables) in a network namespace;
    ``record`` is a fresh folder for the proxy's and strace's logs."""
    unshare = namespace_command()
    assert unshare is not None, "no network namespace can be made here"
    record.mkdir(parents=True, exist_ok=True)
    tests = Path(__file__).resolve().parents[1]
    harness_env = {**env, "PYTHONPATH": str(tests)}
    done = subprocess.run(
        [*unshare, sys.executable, "-m", "support.offline", str(record), str(timeout_s), *argv],
        cwd=cwd,
        env=harness_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout_s + 60,
    )
    result = json.loads((record / "result.json").read_text())
    proxied = (record / "proxy.log").read_text().splitlines() if (record / "proxy.log").exists() else []
    outside = []
    for line in (record / "strace.log").read_text(errors="replace").splitlines():
        found = _CONNECT.search(line)
        if found is None:
            continue
        for v4, v6 in _ADDRESS.findall(found.group(1)):
            address = v4 or v6
            if not (address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")):
                outside.append(address)
    return Offline(result["code"], done.stdout.decode(errors="replace"), proxied, outside)


def _serve_proxy(listener: socket.socket, log_path: Path) -> None:
    lock = threading.Lock()

    def answer(connection: socket.socket) -> None:
        with connection:
            try:
                first = connection.recv(65536).decode("latin-1").split("\r\n", 1)[0]
                if first:
                    target = first.split()[1] if len(first.split()) > 1 else first
                    host = re.sub(r"^[a-z]+://", "", target).split("/", 1)[0].rsplit(":", 1)[0]
                    with lock, log_path.open("a") as log:
                        log.write(host + "\n")
                connection.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass

    while True:
        connection, _ = listener.accept()
        threading.Thread(target=answer, args=(connection,), daemon=True).start()


def _main(record: Path, timeout_s: float, argv: list[str]) -> int:
    """Inside the namespace: loopback up, the recording proxy, then ``argv`` under strace."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    listener = socket.create_server(("127.0.0.1", 0))
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    threading.Thread(target=_serve_proxy, args=(listener, record / "proxy.log"), daemon=True).start()
    env = {**os.environ, "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy}
    env.pop("PYTHONPATH", None)
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    command = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(record / "strace.log"), *argv]
    # Its own process group, so whatever it leaves running (or a hung command) is stopped too.
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        code: int | None = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        code = None
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    (record / "result.json").write_text(json.dumps({"code": code}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]))
