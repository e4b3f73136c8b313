""".github/workflows/deploy.yml: its shape, and its shell steps run against a stand-in `npx`.

The shape tests read the YAML (issue 5: manual trigger only, tests before any deploy step, every
required secret named). The step tests run a step's own `run:` script the way GitHub does for
`shell: bash` (`bash --noprofile --norc -eo pipefail`), with a recording `npx` first on PATH, so
the secret handling is checked as it behaves, not as it reads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "deploy.yml"
REQUIRED_SECRETS = [
    "CLOUDFLARE_API_TOKEN",
    "CLOUDFLARE_ACCOUNT_ID",
    "D1_DATABASE_ID",
    "ADMIN_TOKEN",
    "API_TOKEN",
]
CLOUDFLARE_CALLS = ("migrations apply", "secret put", "pywrangler deploy")
DB_ID = "3f2c9a4e-1b7d-4c2a-9e3f-5a6b7c8d9e0f"
ADMIN_TOKEN = "adm-5b1e0c7d9f2a4e6b8c3d"
API_TOKEN = "api-9e8d7c6b5a4f3e2d1c0b"

FAKE_NPX = r"""
import json, os, sys

args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({"argv": args, "stdin": sys.stdin.read()}) + "\n")
if args == ["wrangler", "secret", "list"]:
    if os.environ.get("FAKE_LIST_FAILS"):
        print("X [ERROR] Authentication error [code: 10000]", file=sys.stderr)
        sys.exit(1)
    names = [n for n in os.environ.get("FAKE_SECRET_NAMES", "").split(",") if n]
    print(json.dumps([{"name": n, "type": "secret_text"} for n in names], indent=2))
elif args[:3] == ["wrangler", "secret", "put"]:
    print("Success! Uploaded secret " + args[3])
"""


def load_workflow() -> dict[Any, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def steps() -> list[dict[str, Any]]:
    return load_workflow()["jobs"]["deploy"]["steps"]


def step_named(prefix: str) -> dict[str, Any]:
    (step,) = [s for s in steps() if s.get("name", "").startswith(prefix)]
    return step


def first_index(predicate_text: str) -> int:
    return next(i for i, s in enumerate(steps()) if predicate_text in s.get("run", ""))


# --- shape ----------------------------------------------------------------------------------------


def test_is_valid_yaml_with_one_deploy_job() -> None:
    workflow = load_workflow()

    assert list(workflow["jobs"]) == ["deploy"]
    assert workflow["permissions"] == {"contents": "read"}


def test_runs_only_when_started_by_hand() -> None:
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    triggers = load_workflow().get("on", load_workflow().get(True))

    assert triggers in ("workflow_dispatch", ["workflow_dispatch"], {"workflow_dispatch": None})


def test_tests_run_after_install_and_before_anything_touches_cloudflare() -> None:
    tests = first_index("scripts/test")

    assert first_index("npm ci") < tests
    assert first_index("uv sync") < tests
    for call in CLOUDFLARE_CALLS:
        assert tests < first_index(call), call
    assert first_index("Missing secret") < min(first_index(call) for call in CLOUDFLARE_CALLS)


def test_every_required_secret_is_named_and_checked() -> None:
    check = step_named("Check required secrets")

    for name in REQUIRED_SECRETS:
        assert check["env"][name] == f"${{{{ secrets.{name} }}}}"
        assert name in check["run"]


def test_actions_are_pinned_to_a_major_version() -> None:
    uses = [s["uses"] for s in steps() if "uses" in s]

    assert {u.split("@")[0] for u in uses} >= {
        "actions/checkout",
        "actions/setup-node",
        "astral-sh/setup-uv",
    }
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+(\.\d+)*", u) for u in uses), uses
    assert steps()[0]["uses"].startswith("actions/checkout@")
    (node,) = [s for s in steps() if s.get("uses", "").startswith("actions/setup-node@")]
    assert str(node["with"]["node-version"]).startswith("22")


def test_secret_values_reach_scripts_only_through_env() -> None:
    # `${{ secrets.X }}` inside a script would be pasted into the script text (and logs);
    # through `env:` it stays a variable that is masked and never part of a command line.
    for step in steps():
        assert "secrets." not in step.get("run", ""), step.get("name")
    assert "secrets" not in json.dumps(load_workflow()["jobs"]["deploy"].get("env", {}))


def test_install_and_tests_get_no_cloudflare_credentials() -> None:
    for step in steps()[: first_index("scripts/test") + 1]:
        assert "CLOUDFLARE_API_TOKEN" not in json.dumps(step.get("env", {})), step


def test_deploys_with_pywrangler_after_migrations_and_secrets() -> None:
    order = [first_index(call) for call in CLOUDFLARE_CALLS]

    assert order == sorted(order)
    migrate = steps()[order[0]]["run"]
    assert "npx wrangler d1 migrations apply freellmapi-worker-db --remote" in migrate


# --- steps, run for real against a stand-in npx ---------------------------------------------------


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    if shutil.which("bash") is None or shutil.which("openssl") is None:
        pytest.skip("the workflow's steps need bash and openssl")
    return Bench(tmp_path)


class Bench:
    """A workspace in which one workflow step's script runs, with a recording `npx`."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path / "workspace"
        self.dir.mkdir()
        shutil.copy(ROOT / "wrangler.jsonc", self.dir / "wrangler.jsonc")
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        npx = bin_dir / "npx"
        npx.write_text(f"#!{sys.executable}\n{FAKE_NPX}")
        npx.chmod(0o755)
        self.log = tmp_path / "npx.jsonl"
        self.summary = tmp_path / "summary.md"
        self.env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "FAKE_LOG": str(self.log),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(tmp_path),
        }

    def run(self, step_prefix: str, **env: str) -> subprocess.CompletedProcess[str]:
        self.log.write_text("")
        script = step_named(step_prefix)["run"]
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=self.dir,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def puts(self) -> dict[str, str]:
        puts = [c for c in self.calls() if c["argv"][1:3] == ["secret", "put"]]
        return {c["argv"][3]: c["stdin"] for c in puts}


ALL_REQUIRED = {
    "CLOUDFLARE_API_TOKEN": "cf-token",
    "CLOUDFLARE_ACCOUNT_ID": "0123abcd",
    "D1_DATABASE_ID": DB_ID,
    "ADMIN_TOKEN": ADMIN_TOKEN,
    "API_TOKEN": API_TOKEN,
}


@pytest.mark.parametrize("missing", REQUIRED_SECRETS)
def test_a_missing_secret_fails_the_check_naming_it(bench: Bench, missing: str) -> None:
    env = {k: v for k, v in ALL_REQUIRED.items() if k != missing}

    result = bench.run("Check required secrets", **env)

    assert result.returncode != 0
    assert f"secret {missing} is not set" in result.stdout


def test_all_secrets_present_pass_the_check(bench: Bench) -> None:
    assert bench.run("Check required secrets", **ALL_REQUIRED).returncode == 0


def test_one_token_for_both_roles_fails_the_check(bench: Bench) -> None:
    result = bench.run("Check required secrets", **{**ALL_REQUIRED, "API_TOKEN": ADMIN_TOKEN})

    assert result.returncode != 0
    assert "must differ" in result.stdout


def test_a_malformed_optional_key_fails_the_check_without_showing_it(bench: Bench) -> None:
    result = bench.run("Check required secrets", **ALL_REQUIRED, ENCRYPTION_KEY="too-short")

    assert result.returncode != 0
    assert "64 hex" in result.stdout
    assert "too-short" not in result.stdout + result.stderr


def test_the_database_id_goes_into_wrangler_jsonc(bench: Bench) -> None:
    before = (bench.dir / "wrangler.jsonc").read_text()

    result = bench.run("Put the D1 database id", D1_DATABASE_ID=DB_ID)

    assert result.returncode == 0, result.stderr
    after = (bench.dir / "wrangler.jsonc").read_text()
    assert after == re.sub(r'("database_id"\s*:\s*")[^"]*"', rf'\g<1>{DB_ID}"', before)
    assert f'"database_id": "{DB_ID}"' in after


def test_secrets_are_uploaded_on_stdin_with_the_given_key(bench: Bench) -> None:
    key = "ab" * 32

    result = bench.run("Upload secrets", ADMIN_TOKEN=ADMIN_TOKEN, API_TOKEN=API_TOKEN, ENCRYPTION_KEY=key)

    assert result.returncode == 0, result.stderr
    assert bench.puts() == {
        "ADMIN_TOKEN": ADMIN_TOKEN,
        "API_TOKEN": API_TOKEN,
        "ENCRYPTION_KEY": key,
    }
    for secret in (ADMIN_TOKEN, API_TOKEN, key):
        assert secret not in result.stdout + result.stderr
        assert not any(secret in arg for c in bench.calls() for arg in c["argv"])


def test_without_a_key_secret_the_workers_existing_key_is_kept(bench: Bench) -> None:
    result = bench.run(
        "Upload secrets",
        ADMIN_TOKEN=ADMIN_TOKEN,
        API_TOKEN=API_TOKEN,
        FAKE_SECRET_NAMES="ADMIN_TOKEN,API_TOKEN,ENCRYPTION_KEY",
    )

    assert result.returncode == 0, result.stderr
    assert "ENCRYPTION_KEY" not in bench.puts()
    assert "kept the key" in bench.summary.read_text()


def test_without_any_key_one_is_generated_once_and_never_shown(bench: Bench) -> None:
    result = bench.run(
        "Upload secrets",
        ADMIN_TOKEN=ADMIN_TOKEN,
        API_TOKEN=API_TOKEN,
        FAKE_SECRET_NAMES="ADMIN_TOKEN,API_TOKEN",
    )

    assert result.returncode == 0, result.stderr
    key = bench.puts()["ENCRYPTION_KEY"]
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    # Masked for GitHub's log, otherwise never printed (the summary tells how to keep a copy).
    printed = result.stdout.replace(f"::add-mask::{key}", "") + result.stderr
    assert key not in printed
    assert key not in bench.summary.read_text()
    assert "ENCRYPTION_KEY was generated" in bench.summary.read_text()


def test_an_unreadable_secret_list_fails_instead_of_replacing_the_key(bench: Bench) -> None:
    result = bench.run(
        "Upload secrets",
        ADMIN_TOKEN=ADMIN_TOKEN,
        API_TOKEN=API_TOKEN,
        FAKE_LIST_FAILS="1",
    )

    assert result.returncode != 0
    assert "ENCRYPTION_KEY" not in bench.puts()
