"""The README's quick start ("## Use it"), run as written so it cannot rot (issue 8).

Its shell blocks run in order as one bash script, then its Python blocks with the host's Python
in the environment that script built, in a copy of the project in a temporary directory (so
``.dev.vars`` and ``.wrangler/state`` are the copy's, never the developer's). Only two things are
changed, by the textual substitutions of ``substitutions()``, each of which must apply: the port
(a free one instead of 8787) and Groq's base URL (the fake upstream of tests/support/upstream.py).
The script starts without the three secrets in its environment, as a fresh shell would, and under
``set -euo pipefail``: an unset ``$ADMIN_TOKEN`` is an error, not ``Bearer ``.

Every README shell block that runs wrangler is run too, offline (``support/offline.py``: a
network namespace with only loopback, a recording proxy, ``strace`` on ``connect()``), in a copy
of the project: a block of ``--local`` commands must succeed; a block that needs a Cloudflare
account (``d1 create``, ``secret put``, ``--remote``, ``pywrangler dev``/``deploy``) runs with a
fake ``CLOUDFLARE_API_TOKEN`` and fails where it reaches for Cloudflare's API. Either way wrangler
must not ask for its telemetry host, and nothing may go around the proxy. Control runs of
``wrangler whoami`` without ``WRANGLER_SEND_METRICS``: outside the project the proxy sees
telemetry (so the check can), inside it wrangler.jsonc's ``send_metrics: false`` keeps it quiet.
Inline commands (``login``, ``whoami``, …) are checked only as text (tests/unit/test_docs.py).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.offline import namespace_command, run_offline
from support.readme import logical_lines, wrangler_blocks
from support.runtime import NODE_BIN, ROOT, free_port
from support.upstream import FakeUpstream

SECRETS = ("ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY")
# Installed by scripts/setup: shared with the copy, not copied.
INSTALLED = ("node_modules", ".venv", ".cache")
GROQ_BASE_URL = "https://api.groq.com/openai/v1"
# The quick start as pasted, including the first start of scripts/dev (its setup is done).
QUICKSTART_TIMEOUT_S = 300


def quickstart_blocks(readme: str) -> tuple[list[str], list[str]]:
    """The shell and Python code blocks of the README's "## Use it" section, in order."""
    section = readme.split("\n## Use it\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", section, re.M | re.S)
    shell = [code for lang, code in blocks if lang in ("sh", "bash")]
    return shell, [code for lang, code in blocks if lang == "python"]


def substitutions(port: int, upstream: FakeUpstream) -> list[tuple[str, str]]:
    return [
        (r"\bscripts/dev &", f"scripts/dev --port {port} &"),
        (r"\b(localhost|127\.0\.0\.1):8787\b", rf"\1:{port}"),
        (re.escape(GROQ_BASE_URL), upstream.base_url),
    ]


def apply(blocks: list[str], rules: list[tuple[str, str]]) -> list[str]:
    """``blocks`` with every rule applied; a rule that matches nothing means the README changed."""
    for pattern, replacement in rules:
        assert any(re.search(pattern, code) for code in blocks), f"{pattern!r} is gone: see substitutions()"
        blocks = [re.sub(pattern, replacement, code) for code in blocks]
    return blocks


def copy_project(target: Path) -> None:
    """The working tree's files (tracked or new, not ignored) under ``target``. What scripts/setup
    installed is linked, not copied, and the copy's scripts/setup does nothing: scripts/test ran
    it already, and it must never reinstall into the shared folders through the links."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for name in INSTALLED:
        (target / name).symlink_to(ROOT / name)
    (target / "scripts" / "setup").write_text("#!/bin/sh\n# scripts/test has set up the project.\n")


def run_quickstart(project: Path, script: str, log_path: Path) -> tuple[int, str]:
    """Run ``script`` in ``project``; its exit code and its output (and its children's)."""
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    # Its own session, so what it leaves running (scripts/dev, after a failure) is stopped too.
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=project,
        env=env,
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        code = process.wait(timeout=QUICKSTART_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        stop_group(process.pid)
    output = log_path.read_text(errors="replace")
    if code is None:
        pytest.fail(f"the quick start did not finish in {QUICKSTART_TIMEOUT_S} s:\n{output}")
    return code, output


def stop_group(pgid: int) -> None:
    """SIGTERM what is left of the process group ``pgid``, then wait until it is gone."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)  # polling for the processes to exit
    os.killpg(pgid, signal.SIGKILL)


def test_readme_quickstart_runs_as_written(tmp_path, upstream):
    shell, python = quickstart_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert shell and python, "the README's Use it section lost its quick start blocks"
    project = tmp_path / "project"
    copy_project(project)
    edited = apply([*shell, *python], substitutions(free_port(), upstream))
    shell, python = edited[: len(shell)], edited[len(shell) :]
    script = (
        "set -euo pipefail\n"
        + "".join(shell)
        + "".join(f"{sys.executable} - <<'PYTHON'\n{code}PYTHON\n" for code in python)
        # Stop what the quick start left running (scripts/dev, which exits 0 on SIGTERM).
        + 'kill "$!"; wait "$!"\n'
    )

    code, output = run_quickstart(project, script, tmp_path / "quickstart.log")

    assert code == 0, output
    assert "Created ./.dev.vars with fresh ADMIN_TOKEN, API_TOKEN and ENCRYPTION_KEY" in output
    assert '"name":"groq"' in output.replace(" ", "")  # the provider was added
    assert output.count("hello from the fake upstream") == 1 + len(python)  # curl, then Python
    assert [r.json["model"] for r in upstream.requests] == ["llama-3.3-70b-versatile"] * (1 + len(python))
    assert re.search(
        r"^\[request\] POST /v1/chat/completions 200 OK \(\d+ms\) via groq/llama-3.3-70b-versatile$", output, re.M
    )
    secrets = dict(re.findall(r"^([A-Z_]+)=(.+)$", (project / ".dev.vars").read_text(), re.M))
    for name in SECRETS:
        assert secrets[name] not in output


# --- Every wrangler block of the README, offline and without telemetry --------------------------

# Where wrangler 4.164.0 sends its usage metrics: the control run below asks for it.
TELEMETRY_HOST = "sparrow.cloudflare.com"
CLOUDFLARE_API_HOST = "api.cloudflare.com"
# One wrangler command takes a few seconds here; the bound only stops one that would hang
# (`pywrangler dev` serving, were it able to start).
COMMAND_TIMEOUT_S = 90
BLOCK_TIMEOUT_S = 600
# Each command of a block is bounded, without changing its text: the names resolve to these.
BOUNDED = f'npx() {{ timeout {COMMAND_TIMEOUT_S} npx "$@"; }}\nuv() {{ timeout {COMMAND_TIMEOUT_S} uv "$@"; }}\n'


def offline_env(config_home: Path) -> dict[str, str]:
    """A fresh shell's environment: no secrets, no proxy, none of the caller's settings that the
    README's blocks must set themselves, no wrangler login (its config folder is new); a fake
    account, so a remote command goes as far as calling Cloudflare's API. uv neither downloads nor
    syncs (the copy's .venv is the project's own, linked)."""
    dropped = {
        *SECRETS,
        "WRANGLER_SEND_METRICS",
        "CLOUDFLARE_CF_FETCH_ENABLED",
        "CLOUDFLARE_CF_FETCH_PATH",
        "MINIFLARE_CACHE_DIR",
        "CLOUDFLARE_API_TOKEN",
        "CLOUDFLARE_ACCOUNT_ID",
    }
    env = {k: v for k, v in os.environ.items() if k not in dropped and "proxy" not in k.lower()}
    return {
        **env,
        "PATH": os.pathsep.join(
            [str(NODE_BIN), str(ROOT / ".cache" / "uv" / "bin"), env["PATH"], "/usr/sbin", "/sbin"]
        ),
        "XDG_CONFIG_HOME": str(config_home),
        "CLOUDFLARE_API_TOKEN": "not-a-real-token-0000000000000000",
        "CLOUDFLARE_ACCOUNT_ID": "0" * 32,
        "UV_OFFLINE": "1",
        "UV_NO_SYNC": "1",
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
    }


def is_local(block: str) -> bool:
    """Every wrangler command of ``block`` works on the local D1 only."""
    commands = [c for c in logical_lines(block) if "wrangler " in c and not c.startswith("export ")]
    return bool(commands) and all("--local" in c for c in commands)


@pytest.mark.skipif(namespace_command() is None, reason="needs unshare (a network namespace) and strace")
def test_readme_wrangler_blocks_run_offline_without_telemetry(tmp_path):
    blocks = wrangler_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert sum(map(is_local, blocks)) >= 1 and sum(not is_local(b) for b in blocks) >= 2, blocks
    project = tmp_path / "project"
    copy_project(project)
    env = offline_env(tmp_path / "config")

    # Controls: outside the project (no wrangler.jsonc) wrangler asks for its telemetry host, so the
    # check would see it; inside, wrangler.jsonc's send_metrics false keeps it quiet even unset.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    wrangler = str(ROOT / "node_modules" / ".bin" / "wrangler")
    control = run_offline(
        [wrangler, "whoami"], cwd=elsewhere, env=env, record=tmp_path / "control", timeout_s=COMMAND_TIMEOUT_S
    )
    assert TELEMETRY_HOST in control.proxied, control.output
    quiet = run_offline(
        ["npx", "wrangler", "whoami"], cwd=project, env=env, record=tmp_path / "quiet", timeout_s=COMMAND_TIMEOUT_S
    )
    assert TELEMETRY_HOST not in quiet.proxied, quiet.output

    for n, block in enumerate(blocks):
        local = is_local(block)
        script = ("set -euo pipefail\n" if local else "set -u\n") + BOUNDED + block
        ran = run_offline(
            ["bash", "-c", script], cwd=project, env=env, record=tmp_path / f"block{n}", timeout_s=BLOCK_TIMEOUT_S
        )

        assert ran.code is not None, f"block {n} did not end:\n{ran.output}"
        assert TELEMETRY_HOST not in ran.proxied, f"block {n} sent telemetry:\n{block}"
        assert ran.outside == [], f"block {n} went around the proxy: {ran.outside}"
        if local:
            assert ran.code == 0, f"block {n}:\n{block}\n{ran.output}"
            assert ran.proxied == [], ran.proxied  # a local command asks nothing of the network
        else:
            assert set(ran.proxied) == {CLOUDFLARE_API_HOST}, (ran.proxied, ran.output)
            assert "fetch failed" in ran.output, ran.output  # where it reached for the account
    assert (project / ".wrangler" / "state" / "v3" / "d1").is_dir()  # the local block made its D1
