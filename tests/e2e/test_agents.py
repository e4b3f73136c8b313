"""The real agents (pinned in package.json, installed by scripts/setup) each complete a tool round
trip through the gateway (SPEC §12): Claude Code over Anthropic Messages, Codex CLI over the
Responses API, Gemini CLI over ``:streamGenerateContent?alt=sse``.

The task: read ``note.txt`` in a fresh directory and say what it holds. Behind the gateway the fake
upstream runs a ``ToolBrain``: it calls the agent's own file tool (Claude Code ``Read``, Codex
``exec_command``, Gemini CLI ``read_file``), and once the result comes back it quotes it. A word that
exists only in the file must then appear in the agent's final output, and in a tool result the
upstream received. Each agent runs with a temporary HOME, stdin from /dev/null, a timeout and an
environment of its own (no variable of this machine's, so no real credential), as PLATFORM-NOTES
§4.5 describes.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from support.answers import answer
from support.brain import ToolBrain, read_file_calls, tool_results
from support.browser import connect_snippets, login
from support.runtime import NODE_BIN

MODEL = "fake-model"
AGENT_TIMEOUT_S = 120
TASK = "Read the file note.txt in the current directory and tell me exactly what it says."


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


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def brain(add_provider, upstream, workspace) -> ToolBrain:
    add_provider(name="fake", models=[MODEL])
    scripted = ToolBrain(read_file_calls(str(workspace.note)))
    upstream.answer_always(scripted)
    return scripted


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
        args, cwd=workspace.dir, env={**base, **env}, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=AGENT_TIMEOUT_S, check=False,
    )


def explain(done: subprocess.CompletedProcess[str], brain: ToolBrain) -> str:
    return (f"exit {done.returncode}; tools offered per request: {brain.asked}\n"
            f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}")


def assert_round_trip(done, output: str, brain: ToolBrain, upstream, workspace: Workspace) -> None:
    assert workspace.secret in output, explain(done, brain)
    assert any(workspace.secret in result for result in tool_results(upstream.requests)), explain(done, brain)


def test_claude_code_reads_a_file_through_the_gateway(gateway, upstream, brain, workspace):
    env = {
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_AUTH_TOKEN": gateway.api_token,
        "ANTHROPIC_MODEL": MODEL,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODEL,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": MODEL,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": MODEL,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        # A failing gateway should fail the test fast, not after Claude Code's ten retries.
        "CLAUDE_CODE_MAX_RETRIES": "1",
    }

    done = run_agent(["claude", "-p", TASK, "--allowedTools", "Read", "--max-turns", "4", "--output-format", "json"],
                     workspace, env)

    assert done.returncode == 0, explain(done, brain)
    result = json.loads(done.stdout)
    assert result["is_error"] is False, explain(done, brain)
    assert_round_trip(done, result["result"], brain, upstream, workspace)
    assert "Read" in brain.asked[0]
    assert all(r.path.endswith("/chat/completions") for r in upstream.requests)


CODEX_CONFIG = """\
model = "{model}"
model_provider = "fllmapi"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.fllmapi]
name = "fllmapi gateway"
base_url = "{base_url}"
env_key = "FLLMAPI_TOKEN"
wire_api = "responses"
# A failing gateway should fail the test fast, not after Codex's retries with backoff.
request_max_retries = 0
stream_max_retries = 0
"""


def test_codex_runs_a_shell_command_through_the_gateway(gateway, upstream, brain, workspace):
    codex_home = workspace.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(model=MODEL, base_url=f"{gateway.url}/v1"))
    env = {"CODEX_HOME": str(codex_home), "FLLMAPI_TOKEN": gateway.api_token}

    done = run_agent(["codex", "exec", "--skip-git-repo-check", "--ephemeral", "-C", str(workspace.dir), TASK],
                     workspace, env)

    assert done.returncode == 0, explain(done, brain)
    assert_round_trip(done, done.stdout, brain, upstream, workspace)
    assert "exec_command" in brain.asked[0] or "shell" in brain.asked[0]


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    # maxAttempts: a failing gateway should fail the test at once, not after ten tries with backoff.
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def test_gemini_cli_reads_a_file_through_the_gateway(gateway, upstream, brain, workspace):
    settings = workspace.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(GEMINI_SETTINGS))
    env = {"GOOGLE_GEMINI_BASE_URL": gateway.url, "GEMINI_API_KEY": gateway.api_token}

    done = run_agent(["gemini", "-p", TASK, "-m", MODEL], workspace, env)

    assert done.returncode == 0, explain(done, brain)
    assert_round_trip(done, done.stdout, brain, upstream, workspace)
    assert "read_file" in brain.asked[0]


# --- connecting with the config page's own instructions (issue 19) ------------------------------
#
# A newcomer copies the Connect panel's snippets and runs the agent headless, as the panel says. The
# test reads the snippets from the page in Chromium, writes the settings files they name into the
# agent's HOME, exports their variables (the token placeholder replaced by the token), and runs the
# headless command with the task in place of its placeholder. The only additions are this machine's:
# no telemetry or update checks (PLATFORM-NOTES §4.5). The agent must answer, and say nothing about
# the model: no unknown-model warning, no guessed window.

# Where each settings snippet goes, by its label key.
SNIPPET_FILES = {
    "connect.claudeFile": ".claude/settings.json",
    "connect.geminiFile": ".gemini/settings.json",
    "connect.codexFile": ".codex/config.toml",
}
# What this machine adds to an agent's settings, apart from the panel's: nothing dials out.
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
OFFLINE_GEMINI = {
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
# What a warning about the model would contain, in any of the three agents' words.
# (Terminal notices, such as Gemini CLI's about TERM=dumb, are this machine's, not the model's.)
MODEL_WARNINGS = re.compile(
    r"recogni[sz]e|unrecognized_model|metadata|context window|unknown model|model\b.{0,60}\bnot found", re.I
)


@pytest.fixture
def panel(browser, gateway, admin) -> Iterator[Page]:
    context = browser.new_context(base_url=gateway.url)
    page = context.new_page()
    login(page, gateway.admin_token)
    yield page
    context.close()


@pytest.fixture
def talker(add_provider, upstream, workspace) -> str:
    """The fake model answers every request with a word only the test knows."""
    add_provider(name="fake", models=[MODEL])
    word = workspace.secret
    upstream.answer_always(lambda r: answer(MODEL, stream=bool(r.json.get("stream")), text=f"The word is {word}."))
    return word


def follow(snippets: dict[str, str], workspace: Workspace, token: str) -> tuple[list[str], dict[str, str]]:
    """Apply the panel's snippets: the settings files written, the exports gathered; returns the
    headless command (its last line) and the environment."""
    for label, path in SNIPPET_FILES.items():
        if label in snippets:
            target = workspace.home / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(snippets[label])
    env: dict[str, str] = {}
    lines = [*snippets.get("connect.shell", "").splitlines(), *snippets["connect.headless"].splitlines()]
    for line in lines:
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            value = value.strip('"')
            env[name] = token if value.startswith("<") else value
    command = shlex.split(snippets["connect.headless"].splitlines()[-1])
    return [TASK_TEXT if arg.startswith("<") and arg.endswith(">") else arg for arg in command], env


TASK_TEXT = "What is the word?"


def test_claude_code_connects_with_the_panels_instructions(talker, panel, gateway, upstream, workspace):
    snippets = connect_snippets(panel, "claude", "auto")
    command, env = follow(snippets, workspace, gateway.api_token)

    done = run_agent(command, workspace, {**OFFLINE_ENV, **env})

    assert done.returncode == 0, done.stderr
    assert talker in done.stdout
    assert not MODEL_WARNINGS.search(done.stdout + done.stderr), done.stderr
    assert env["ANTHROPIC_MODEL"] == "auto" and env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "131072"
    assert {r.json["model"] for r in upstream.requests} == {MODEL}


def test_gemini_cli_connects_with_the_panels_instructions(talker, panel, gateway, upstream, workspace):
    snippets = connect_snippets(panel, "gemini", MODEL)
    command, env = follow(snippets, workspace, gateway.api_token)
    settings = workspace.home / SNIPPET_FILES["connect.geminiFile"]
    settings.write_text(json.dumps({**json.loads(settings.read_text()), **OFFLINE_GEMINI}))

    done = run_agent(command, workspace, env)

    assert done.returncode == 0, done.stderr
    assert talker in done.stdout
    assert not MODEL_WARNINGS.search(done.stdout + done.stderr), done.stderr
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"


# Codex's one note about a model it has no metadata for. Silencing it takes a model catalog file
# (model_catalog_json) whose entry must carry its own system prompt, replacing Codex's; the panel
# keeps Codex's prompt and its generic profile, and says so.
CODEX_METADATA_NOTE = re.compile(r"^warning: Model metadata for `[^`]+` not found\..*$", re.M)


def test_codex_connects_with_the_panels_instructions(talker, panel, gateway, upstream, workspace):
    snippets = connect_snippets(panel, "codex", "auto")
    command, env = follow(snippets, workspace, gateway.api_token)

    done = run_agent(command, workspace, env)

    assert done.returncode == 0, done.stderr
    assert talker in done.stdout
    assert "--skip-git-repo-check" in command  # the workspace is no git repository
    config = (workspace.home / SNIPPET_FILES["connect.codexFile"]).read_text()
    assert "model_context_window = 131072" in config
    assert not MODEL_WARNINGS.search(done.stdout + CODEX_METADATA_NOTE.sub("", done.stderr)), done.stderr
