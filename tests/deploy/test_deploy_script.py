"""scripts/deploy against recording stand-ins for wrangler and pywrangler (issue 5, SPEC §9).

The stand-in (`fake_cli.py`, written into tmp_path) logs each call's argv and stdin as a JSON line
and prints what the real tool prints for that command; FAKE_* variables make it fail or answer
differently. Each test runs the real script as a user would, on a copy of the project files, and
asserts what the user (or their Cloudflare account) would notice.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "scripts" / "deploy"
PLACEHOLDER = "00000000-0000-0000-0000-000000000000"
NEW_ID = "3f2c9a4e-1b7d-4c2a-9e3f-5a6b7c8d9e0f"
WORKER_URL = "https://freellmapi-worker.example.workers.dev"
ADMIN_TOKEN = "adm-5b1e0c7d9f2a4e6b8c3d"
API_TOKEN = "api-9e8d7c6b5a4f3e2d1c0b"
KEY_RE = re.compile(r"^ENCRYPTION_KEY=([0-9a-f]{64})$", re.M)
EXISTING_KEY = "5e" * 32  # the key a Worker deployed from elsewhere already has


def listing(*names: str) -> str:
    """What `wrangler secret list` (wrangler 4, --format json) prints: names and types only."""
    return json.dumps([{"name": name, "type": "secret_text"} for name in names], indent=2)


# The API's answer for a missing Worker in older wrangler versions (wrangler 4's is in FAKE_CLI).
WORKER_CODE_10007 = (
    "X [ERROR] A request to the Cloudflare API "
    "(/accounts/abc/workers/scripts/freellmapi-worker/secrets) failed.\n\n"
    "  This Worker does not exist on your account. [code: 10007]"
)

# The real wrangler.jsonc with comments everywhere, including ones that mention database_id, a
# URL (`//` inside a comment) and a string holding `//`, so a naive text edit would go wrong.
WRANGLER_JSONC = """\
// fllmapi-worker: https://example.com/docs // not a key
{
  "$schema": "node_modules/wrangler/config-schema.json",
  "name": "freellmapi-worker", // the worker's name
  "main": "src/entry.py",
  "compatibility_date": "2026-09-08",
  "compatibility_flags": ["python_workers"],
  /* scripts/deploy writes the id below; e.g.
     "database_id": "00000000-0000-0000-0000-000000000000" */
  "d1_databases": [
    {
      "binding": "DB",
      "database_name": "freellmapi-worker-db",
      // "database_id": "11111111-1111-1111-1111-111111111111",
      "database_id": "00000000-0000-0000-0000-000000000000", // placeholder
      "migrations_dir": "migrations"
    }
  ],
  "vars": { "NOTE": "a // in a string is not a comment" },
  "observability": { "enabled": true }
}
"""

FAKE_CLI = r"""
import json, os, sys

tool, args = sys.argv[1], sys.argv[2:]
command = " ".join([tool, *args])
with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({"argv": [tool, *args], "stdin": sys.stdin.read(),
                          "metrics": os.environ.get("WRANGLER_SEND_METRICS")}) + "\n")

for stream in (sys.stdout, sys.stderr):
    stream.reconfigure(encoding="utf-8")

if os.environ.get("FAKE_FAIL") and command.startswith(os.environ["FAKE_FAIL"]):
    print("Some progress before the failure")
    print(os.environ.get("FAKE_FAIL_MESSAGE", "X [ERROR] simulated failure: " + command),
          file=sys.stderr)
    sys.exit(3)

D1_CREATED = {
    # wrangler prints the snippet in the config's format: JSON for wrangler.jsonc ...
    "json": '{\n  "d1_databases": [\n    {\n      "binding": "freellmapi_worker_db",\n'
            '      "database_name": "freellmapi-worker-db",\n'
            '      "database_id": "%s"\n    }\n  ]\n}' % os.environ["FAKE_NEW_ID"],
    # ... and TOML for wrangler.toml.
    "toml": '[[d1_databases]]\nbinding = "DB"\ndatabase_name = "freellmapi-worker-db"\n'
            'database_id = "%s"' % os.environ["FAKE_NEW_ID"],
}

if args == ["whoami"]:
    if os.environ.get("FAKE_LOGGED_OUT"):
        print("Getting User settings...\nYou are not authenticated. Please run `wrangler login`.")
    else:
        print("You are logged in with an OAuth Token, associated with the email a@example.com.")
elif args[:2] == ["d1", "create"]:
    print("Successfully created DB 'freellmapi-worker-db' in region WEUR\n"
          "Created your new D1 database.\n\n"
          "To access your new D1 Database in your Worker, add the following snippet:")
    print(D1_CREATED[os.environ.get("FAKE_D1_FORMAT", "toml")])
elif args[:2] == ["secret", "list"]:
    # FAKE_SECRETS is printed as is (the Worker exists); unset, the Worker does not exist yet.
    if "FAKE_SECRETS" in os.environ:
        print(os.environ["FAKE_SECRETS"])
    else:
        print('\n\u2718 [ERROR] Worker "freellmapi-worker" not found.\n\n'
              "  If this is a new Worker, run `wrangler deploy` first to create it.",
              file=sys.stderr)
        sys.exit(1)
elif args[:2] == ["secret", "put"]:
    print('Creating the secret for the Worker "freellmapi-worker"')
    print("Success! Uploaded secret " + args[2])
elif args[:3] == ["d1", "migrations", "apply"]:
    print("Migrations to be applied:\n0001_init.sql\n0001_init.sql applied")
elif tool == "pywrangler" and args == ["deploy"]:
    print("Uploaded freellmapi-worker (3.21 sec)\nDeployed freellmapi-worker triggers (0.52 sec)")
    print("  " + os.environ["FAKE_URL"])
    print("Current Version ID: 6f0e0c7a-0000-4000-8000-000000000001")
else:
    print("fake_cli: unexpected command " + command, file=sys.stderr)
    sys.exit(99)
"""

WHOAMI = ["wrangler", "whoami"]
SECRET_LIST = ["wrangler", "secret", "list", "--format", "json"]
D1_CREATE = ["wrangler", "d1", "create", "freellmapi-worker-db"]
EXPECTED_ORDER = [
    WHOAMI,
    SECRET_LIST,  # only because no ENCRYPTION_KEY is given: does the Worker have one?
    D1_CREATE,
    ["wrangler", "secret", "put", "ADMIN_TOKEN"],
    ["wrangler", "secret", "put", "API_TOKEN"],
    ["wrangler", "secret", "put", "ENCRYPTION_KEY"],
    ["wrangler", "d1", "migrations", "apply", "freellmapi-worker-db", "--remote"],
    ["pywrangler", "deploy"],
]
SECRET_PUTS = [argv for argv in EXPECTED_ORDER if argv[1:3] == ["secret", "put"]]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    calls: list[dict[str, object]]

    @property
    def argvs(self) -> list[list[str]]:
        return [call["argv"] for call in self.calls]  # type: ignore[misc]

    def stdin_of(self, *argv: str) -> str:
        (stdin,) = [c["stdin"] for c in self.calls if c["argv"] == list(argv)]
        return stdin  # type: ignore[return-value]


@dataclass
class Project:
    """A copy of the project files plus the stand-ins; `deploy()` runs scripts/deploy on it."""

    dir: Path
    log: Path
    fake: Path

    @property
    def config(self) -> Path:
        return self.dir / "wrangler.jsonc"

    @property
    def dev_vars(self) -> Path:
        return self.dir / ".dev.vars"

    def deploy(self, **overrides: str | None) -> Result:
        self.log.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_", "CLOUDFLARE_"))}
        env.update(
            ADMIN_TOKEN=ADMIN_TOKEN,
            API_TOKEN=API_TOKEN,
            WRANGLER=shlex.join([sys.executable, str(self.fake), "wrangler"]),
            PYWRANGLER=shlex.join([sys.executable, str(self.fake), "pywrangler"]),
            FAKE_LOG=str(self.log),
            FAKE_NEW_ID=NEW_ID,
            FAKE_URL=WORKER_URL,
        )
        env.pop("ENCRYPTION_KEY", None)
        for name, value in overrides.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        proc = subprocess.run(
            [sys.executable, str(DEPLOY), "--project-dir", str(self.dir)],
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return Result(proc.returncode, proc.stdout, proc.stderr, calls)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    (project_dir / "wrangler.jsonc").write_text(WRANGLER_JSONC)
    fake = tmp_path / "fake_cli.py"
    fake.write_text(FAKE_CLI)
    return Project(dir=project_dir, log=tmp_path / "calls.jsonl", fake=fake)


def saved_key(project: Project) -> str:
    (key,) = KEY_RE.findall(project.dev_vars.read_text())
    return key


# --- a first deploy ----------------------------------------------------------------------------


def test_first_deploy_calls_cloudflare_in_order(project: Project) -> None:
    result = project.deploy()

    assert result.code == 0, result.stderr
    assert result.argvs == EXPECTED_ORDER


def test_no_command_sends_telemetry_even_when_the_caller_allows_it(project: Project) -> None:
    result = project.deploy(WRANGLER_SEND_METRICS="true")

    assert result.code == 0, result.stderr
    assert [call["metrics"] for call in result.calls] == ["false"] * len(EXPECTED_ORDER)


@pytest.mark.parametrize("output_format", ["json", "toml"])
def test_created_database_id_replaces_only_the_placeholder(project: Project, output_format: str) -> None:
    result = project.deploy(FAKE_D1_FORMAT=output_format)

    assert result.code == 0, result.stderr
    # Byte for byte the original, with only the real (uncommented) database_id changed.
    real_line = f'"database_id": "{PLACEHOLDER}", // placeholder'
    expected = WRANGLER_JSONC.replace(real_line, real_line.replace(PLACEHOLDER, NEW_ID))
    assert project.config.read_text() == expected
    assert NEW_ID in result.stdout


def test_secrets_go_on_stdin_and_are_never_shown(project: Project) -> None:
    result = project.deploy()

    key = saved_key(project)
    assert result.stdin_of("wrangler", "secret", "put", "ADMIN_TOKEN") == ADMIN_TOKEN
    assert result.stdin_of("wrangler", "secret", "put", "API_TOKEN") == API_TOKEN
    assert result.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == key
    for secret in (ADMIN_TOKEN, API_TOKEN, key):
        assert secret not in result.stdout
        assert secret not in result.stderr
        assert not any(secret in arg for argv in result.argvs for arg in argv)
    # Nothing else receives stdin, so no other command can see a secret there.
    assert [c["argv"] for c in result.calls if c["stdin"]] == SECRET_PUTS


def test_worker_url_is_printed_at_the_end(project: Project) -> None:
    result = project.deploy()

    assert result.code == 0, result.stderr
    assert WORKER_URL in result.stdout.strip().splitlines()[-1]


def test_encryption_key_warning_is_always_printed(project: Project) -> None:
    first = project.deploy()
    second = project.deploy()

    for result in (first, second):
        assert "undecryptable" in result.stderr


# --- running it again ---------------------------------------------------------------------------


def test_second_run_creates_no_database_and_reuses_the_key(project: Project) -> None:
    first = project.deploy()
    key = saved_key(project)
    config_after_first = project.config.read_text()

    second = project.deploy()

    assert second.code == 0, second.stderr
    assert D1_CREATE not in second.argvs
    # The key is in .dev.vars now, so Cloudflare is not asked about it again.
    assert second.argvs == [argv for argv in EXPECTED_ORDER if argv not in (D1_CREATE, SECRET_LIST)]
    assert second.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == key
    assert saved_key(project) == key
    assert project.config.read_text() == config_after_first
    assert first.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == key


def test_generated_key_is_appended_to_an_existing_dev_vars(project: Project) -> None:
    project.dev_vars.write_text("# local settings\nAPI_TOKEN=local-token")  # no final newline

    result = project.deploy()

    assert result.code == 0, result.stderr
    lines = project.dev_vars.read_text().splitlines()
    assert lines[:2] == ["# local settings", "API_TOKEN=local-token"]
    assert KEY_RE.match(lines[2])
    assert project.dev_vars.stat().st_mode & 0o077 == 0  # holds a secret: owner only


def test_key_from_the_environment_wins_and_is_not_written(project: Project) -> None:
    env_key = "ab" * 32
    project.dev_vars.write_text(f"ENCRYPTION_KEY={'cd' * 32}\n")

    result = project.deploy(ENCRYPTION_KEY=env_key)

    assert result.code == 0, result.stderr
    assert result.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == env_key
    assert project.dev_vars.read_text() == f"ENCRYPTION_KEY={'cd' * 32}\n"
    assert env_key not in result.stdout + result.stderr


# --- stopping early -----------------------------------------------------------------------------


@pytest.mark.parametrize("missing", [("ADMIN_TOKEN",), ("API_TOKEN",), ("ADMIN_TOKEN", "API_TOKEN")])
def test_missing_tokens_stop_before_any_call(project: Project, missing: tuple[str, ...]) -> None:
    result = project.deploy(**{name: None for name in missing})

    assert result.code != 0
    assert result.calls == []
    for name in missing:
        assert name in result.stderr
    assert not project.dev_vars.exists()
    assert project.config.read_text() == WRANGLER_JSONC


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("ADMIN_TOKEN", "change-me-admin-token", "is a placeholder"),  # .dev.vars.example's
        ("API_TOKEN", "change-me-api-token", "is a placeholder"),
        ("API_TOKEN", "q" * 15, "is shorter than 16 characters"),
    ],
    ids=["example-admin", "example-api", "15-chars"],
)
def test_an_unusable_token_is_refused_before_any_call(project: Project, name: str, value: str, says: str) -> None:
    result = project.deploy(**{name: value})

    assert result.code != 0
    assert result.calls == []
    assert f"{name} {says}" in result.stderr
    assert value not in result.stdout + result.stderr


def test_one_token_for_both_roles_is_refused_before_any_call(project: Project) -> None:
    result = project.deploy(API_TOKEN=ADMIN_TOKEN)

    assert result.code != 0
    assert result.calls == []
    assert "must differ" in result.stderr
    assert ADMIN_TOKEN not in result.stdout + result.stderr


@pytest.mark.parametrize("bad_key", ["abc123", "g" * 64, "ab" * 33])
def test_malformed_encryption_key_stops_before_any_call(project: Project, bad_key: str) -> None:
    result = project.deploy(ENCRYPTION_KEY=bad_key)

    assert result.code != 0
    assert result.calls == []
    assert "64 hex" in result.stderr
    assert bad_key not in result.stdout + result.stderr


@pytest.mark.parametrize("logged_out", ["exit code", "message"])
def test_not_logged_in_says_to_run_wrangler_login(project: Project, logged_out: str) -> None:
    # Real `wrangler whoami` exits 0 and only prints that nobody is logged in.
    if logged_out == "exit code":
        result = project.deploy(FAKE_FAIL="wrangler whoami")
    else:
        result = project.deploy(FAKE_LOGGED_OUT="1")

    assert result.code != 0
    assert result.argvs == [WHOAMI]  # no `secret list` before the login is known to work
    assert "npx wrangler login" in result.stderr
    assert not project.dev_vars.exists()


# A failing `secret list` has tests of its own (below): it stops before any key is saved.
@pytest.mark.parametrize("failing", [argv for argv in EXPECTED_ORDER[1:] if argv != SECRET_LIST], ids=" ".join)
def test_a_failing_call_stops_the_script_with_its_message(project: Project, failing: list[str]) -> None:
    command = " ".join(failing)

    result = project.deploy(FAKE_FAIL=command)

    assert result.code != 0
    assert result.argvs == EXPECTED_ORDER[: EXPECTED_ORDER.index(failing) + 1]
    assert f"simulated failure: {command}" in result.stderr
    assert WORKER_URL not in result.stdout
    for secret in (ADMIN_TOKEN, API_TOKEN, saved_key(project)):
        assert secret not in result.stdout + result.stderr


def test_existing_database_gets_a_hint_instead_of_a_second_one(project: Project) -> None:
    result = project.deploy(
        FAKE_FAIL="wrangler d1 create",
        FAKE_FAIL_MESSAGE="X [ERROR] A database with that name already exists",
    )

    assert result.code != 0
    assert "already exists" in result.stderr
    assert "wrangler d1 list" in result.stderr
    assert project.config.read_text() == WRANGLER_JSONC


def test_missing_wrangler_command_is_explained(project: Project) -> None:
    result = project.deploy(WRANGLER="no-such-wrangler-command")

    assert result.code != 0
    assert "no-such-wrangler-command" in result.stderr
    assert "Node 22" in result.stderr
    assert "wrangler login" not in result.stderr  # nothing ran, so login is not the problem


# --- no ENCRYPTION_KEY here: the Worker's own key must not be overwritten ------------------------


@pytest.mark.parametrize(
    "no_worker",
    [{}, {"FAKE_FAIL": "wrangler secret list", "FAKE_FAIL_MESSAGE": WORKER_CODE_10007}],
    ids=["not-found", "code-10007"],
)
def test_fresh_deploy_without_a_worker_generates_and_uploads_a_key(project: Project, no_worker: dict[str, str]) -> None:
    result = project.deploy(**no_worker)

    assert result.code == 0, result.stderr
    assert result.argvs == EXPECTED_ORDER
    key = saved_key(project)
    assert result.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == key
    assert key not in result.stdout + result.stderr
    # The expected "not found" is not shown to the user as an error.
    assert "[ERROR]" not in result.stderr


@pytest.mark.parametrize("secrets_listed", [listing(), listing("ADMIN_TOKEN", "API_TOKEN")], ids=["none", "tokens"])
def test_worker_without_an_encryption_key_gets_a_new_one(project: Project, secrets_listed: str) -> None:
    result = project.deploy(FAKE_SECRETS=secrets_listed)

    assert result.code == 0, result.stderr
    assert result.argvs == EXPECTED_ORDER
    assert result.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == saved_key(project)


WORKER_HAS_KEY = [
    listing("ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY"),
    listing("ENCRYPTION_KEY"),
    # Notices around the list (wrangler's proxy warning, a telemetry note) do not hide it.
    "\u25b2 [WARNING] Proxy environment variables detected.\n[note] telemetry is on\n"
    + listing("ENCRYPTION_KEY", "API_TOKEN")
    + "\n[done]",
]


@pytest.mark.parametrize("secrets_listed", WORKER_HAS_KEY, ids=["three", "only-key", "noisy"])
@pytest.mark.parametrize(
    "dev_vars",
    [None, "# local settings\nAPI_TOKEN=local-token\n", "ENCRYPTION_KEY=\n"],
    ids=["no-dev-vars", "dev-vars-without-key", "dev-vars-empty-key"],
)
def test_worker_key_stops_a_deploy_without_the_key_before_any_change(
    project: Project, secrets_listed: str, dev_vars: str | None
) -> None:
    if dev_vars is not None:
        project.dev_vars.write_text(dev_vars)

    result = project.deploy(FAKE_SECRETS=secrets_listed)

    assert result.code != 0
    # Nothing created, uploaded or deployed: only the login check and the lookup ran.
    assert result.argvs == [WHOAMI, SECRET_LIST]
    if dev_vars is None:
        assert not project.dev_vars.exists()
    else:
        assert project.dev_vars.read_text() == dev_vars
    assert project.config.read_text() == WRANGLER_JSONC
    error = result.stderr.split("error: ", 1)[1]
    assert "already has an ENCRYPTION_KEY" in error
    assert "ENCRYPTION_KEY=" in error  # how to pass the old key
    assert "unreadable" in error
    assert "FORCE_NEW_ENCRYPTION_KEY=1" in error  # the way out if the key is lost
    for secret in (ADMIN_TOKEN, API_TOKEN):
        assert secret not in result.stdout + result.stderr


def test_forced_new_key_replaces_the_workers_key_with_a_loud_warning(project: Project) -> None:
    result = project.deploy(FAKE_SECRETS=WORKER_HAS_KEY[0], FORCE_NEW_ENCRYPTION_KEY="1")

    assert result.code == 0, result.stderr
    assert result.argvs == EXPECTED_ORDER
    key = saved_key(project)
    assert result.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == key
    assert "REPLACED" in result.stderr
    assert "re-enter each provider's key" in result.stderr
    assert key not in result.stdout + result.stderr


def test_forcing_without_a_key_on_the_worker_just_generates_one(project: Project) -> None:
    result = project.deploy(FAKE_SECRETS=listing("API_TOKEN"), FORCE_NEW_ENCRYPTION_KEY="1")

    assert result.code == 0, result.stderr
    assert result.argvs == EXPECTED_ORDER
    assert "REPLACED" not in result.stderr
    assert "has no effect" in result.stderr


@pytest.mark.parametrize("where", ["environment", "dev-vars"])
@pytest.mark.parametrize("force", [None, "1"], ids=["plain", "forced"])
def test_a_key_given_here_is_used_without_asking_cloudflare(project: Project, where: str, force: str | None) -> None:
    # The Worker has a key, and the one given here is taken to be it: nothing is looked up,
    # and FORCE_NEW_ENCRYPTION_KEY cannot replace a key that was given.
    given = "ab" * 32
    if where == "environment":
        result = project.deploy(ENCRYPTION_KEY=given, FAKE_SECRETS=WORKER_HAS_KEY[0], FORCE_NEW_ENCRYPTION_KEY=force)
    else:
        project.dev_vars.write_text(f"ENCRYPTION_KEY={given}\n")
        result = project.deploy(FAKE_SECRETS=WORKER_HAS_KEY[0], FORCE_NEW_ENCRYPTION_KEY=force)

    assert result.code == 0, result.stderr
    assert not any(argv[1:3] == ["secret", "list"] for argv in result.argvs)
    assert result.argvs == [argv for argv in EXPECTED_ORDER if argv != SECRET_LIST]
    assert result.stdin_of("wrangler", "secret", "put", "ENCRYPTION_KEY") == given
    if where == "dev-vars":
        assert project.dev_vars.read_text() == f"ENCRYPTION_KEY={given}\n"
    else:
        assert not project.dev_vars.exists()
    if force:
        assert "FORCE_NEW_ENCRYPTION_KEY is ignored" in result.stderr


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        # wrangler fails for another reason: its message is shown, nothing is guessed.
        (
            {
                "FAKE_FAIL": "wrangler secret list",
                "FAKE_FAIL_MESSAGE": "X [ERROR] A request to the Cloudflare API failed.\n\n"
                "  Authentication error [code: 10000]",
            },
            "Authentication error [code: 10000]",
        ),
        # It exits 0 but prints no list (e.g. the pretty format, or nothing at all).
        ({"FAKE_SECRETS": "Secret Name: ENCRYPTION_KEY\n"}, "no list of secrets"),
        ({"FAKE_SECRETS": ""}, "no list of secrets"),
        ({"FAKE_SECRETS": '{"name": "ENCRYPTION_KEY"}'}, "no list of secrets"),
    ],
    ids=["auth-error", "pretty", "empty", "object"],
)
def test_unanswered_key_lookup_stops_before_any_change(project: Project, answer: dict[str, str], shown: str) -> None:
    result = project.deploy(**answer)

    assert result.code != 0
    assert result.argvs == [WHOAMI, SECRET_LIST]
    assert shown in result.stderr
    assert "whether the Worker already has an ENCRYPTION_KEY" in result.stderr
    assert not project.dev_vars.exists()
    assert project.config.read_text() == WRANGLER_JSONC


@pytest.mark.parametrize("value", ["yes", "true", "2"])
def test_unknown_force_value_is_refused_before_any_call(project: Project, value: str) -> None:
    result = project.deploy(FORCE_NEW_ENCRYPTION_KEY=value)

    assert result.code != 0
    assert result.calls == []
    assert "FORCE_NEW_ENCRYPTION_KEY must be 1" in result.stderr
    assert not project.dev_vars.exists()


@pytest.mark.parametrize(
    ("output", "names"),
    [
        ("[]\n", set()),
        (listing("A", "ENCRYPTION_KEY"), {"A", "ENCRYPTION_KEY"}),
        ("[WARNING] x\n" + listing("A") + "\n[1, 2]\n", {"A"}),
        ("[]\n" + listing("ENCRYPTION_KEY"), {"ENCRYPTION_KEY"}),  # a name anywhere counts
        ("Secret Name: A\n", None),
        ("", None),
        ("[1, 2]", None),
        ('[{"type": "secret_text"}]', None),
        ("[WARNING] nothing else", None),
    ],
    ids=["empty", "plain", "noisy", "two-lists", "pretty", "nothing", "numbers", "nameless", "warning-only"],
)
def test_parse_secret_names(output: str, names: set[str] | None) -> None:
    assert load_deploy_module().parse_secret_names(output) == names


# --- the wrangler.jsonc edit, as a table ---------------------------------------------------------


def load_deploy_module() -> ModuleType:
    """scripts/deploy as a module (it has no .py suffix); compiled here so no .pyc is left."""
    module = ModuleType("deploy_script_under_test")
    exec(compile(DEPLOY.read_text(), str(DEPLOY), "exec"), module.__dict__)
    return module


# Each text holds one real id, "OLD"; the "A"s sit in comments and must stay as they are.
@pytest.mark.parametrize(
    "before",
    [
        '{"database_id": "OLD"}',
        '{\r\n  "database_id" : "OLD" // x\r\n}',
        '// "database_id": "A"\n{"database_id": "OLD"}',
        '/* "database_id": "A" */{"database_id": "OLD"}',
        '{"u": "http://x", "database_id": "OLD"}',
        '{"s": "q\\"//", "database_id": "OLD"}',
    ],
    ids=["plain", "crlf-comment", "line-comment", "block-comment", "url-string", "escaped-quote"],
)
def test_replace_database_id_changes_only_the_value(before: str) -> None:
    after = load_deploy_module().replace_database_id(before, "NEW")

    assert after == before.replace("OLD", "NEW")
