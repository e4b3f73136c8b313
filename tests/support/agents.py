"""Running the real agents (pinned in package.json) against the gateway, offline (SPEC §12,
PLATFORM-NOTES §4.5): a fresh workspace holding ``note.txt`` with a secret word, and each agent run
with a temporary HOME, stdin from /dev/null, a timeout and an environment of its own (no variable of
this machine's, so no real credential). ``tests/e2e/test_agents.py`` runs all three; other tests
run Claude Code's tool turn (``claude_env``, ``CLAUDE_ARGS``) where the routing is the subject."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from support.brain import ToolBrain
from support.runtime import NODE_BIN

__all__ = [
    "AGENT_TIMEOUT_S",
    "CLAUDE_ARGS",
    "OFFLINE_ENV",
    "TASK",
    "Workspace",
    "claude_env",
    "explain",
    "run_agent",
]

AGENT_TIMEOUT_S = 120
TASK = "Read the file note.txt in the current directory and tell me exactly what it says."
# Claude Code, headless, on TASK: it may use its Read tool, within 4 turns, and answers in JSON.
CLAUDE_ARGS = ["claude", "-p", TASK, "--allowedTools", "Read", "--max-turns", "4", "--output-format", "json"]
# What this machine adds to an agent's settings: nothing dials out.
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


class Workspace:
    """A directory holding note.txt (with a fresh secret word) and a separate empty HOME."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "work"
        self.home = root / "home"
        self.dir.mkdir()
        self.home.mkdir()
        self.secret = f"OTTER-{secrets.token_hex(4).upper()}"
        self.note = self.dir / "note.txt"
        self.note.write_text(f"The password is {self.secret}\n")


def claude_env(gateway_url: str, token: str, model: str) -> dict[str, str]:
    """Claude Code at the gateway with ``token``, every model slot ``model``, offline, and allowed one
    retry (a failing gateway fails the test fast, not after Claude Code's ten retries)."""
    return {
        "ANTHROPIC_BASE_URL": gateway_url,
        "ANTHROPIC_AUTH_TOKEN": token,
        "ANTHROPIC_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        **OFFLINE_ENV,
        "CLAUDE_CODE_MAX_RETRIES": "1",
    }


def run_agent(args: list[str], workspace: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run an agent in ``workspace.dir`` with only ``env`` (plus PATH, HOME and a locale)."""
    base = {
        # node_modules/.bin first: the agents' launchers need the project's Node 22.
        "PATH": f"{NODE_BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workspace.home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        args,
        cwd=workspace.dir,
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=AGENT_TIMEOUT_S,
        check=False,
    )


def explain(done: subprocess.CompletedProcess[str], brain: ToolBrain) -> str:
    return (
        f"exit {done.returncode}; tools offered per request: {brain.asked}\n"
        f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    )
