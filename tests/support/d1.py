"""Reading and writing the local D1 from outside the Worker, with wrangler itself (SPEC §11)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from support.runtime import NODE_BIN, ROOT

DATABASE = "freellmapi-worker-db"

__all__ = ["d1_apply_migrations", "d1_execute"]


def _wrangler_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}", "WRANGLER_SEND_METRICS": "false"}


def d1_execute(persist_to: Path, sql: str) -> list[dict[str, Any]]:
    """Run ``sql`` with ``wrangler d1 execute --local``; the rows of its last statement."""
    done = subprocess.run(
        ["wrangler", "d1", "execute", DATABASE, "--local", "--persist-to", str(persist_to), "--json", "--command", sql],
        cwd=ROOT,
        env=_wrangler_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)[-1]["results"]


def d1_apply_migrations(persist_to: Path, migrations_dir: Path) -> None:
    """Apply the migrations in ``migrations_dir`` (instead of the project's ``migrations/``) to the
    local D1 at ``persist_to``, with ``wrangler d1 migrations apply`` as the local runtime does:
    e.g. only the first ones, to build a database as an earlier release left it. Wrangler records
    them by file name, so a runtime started later on ``persist_to`` applies only the rest.

    The wrangler configuration naming ``migrations_dir`` is written beside it; it holds the
    project's database name and id, so both configurations open the same local database."""
    project = (ROOT / "wrangler.jsonc").read_text()
    database_id = re.search(r'"database_id"\s*:\s*"([^"]+)"', project).group(1)
    config = migrations_dir.parent / f"wrangler.{migrations_dir.name}.json"
    config.write_text(
        json.dumps(
            {
                "name": "freellmapi-worker",
                "compatibility_date": "2026-09-08",
                "d1_databases": [
                    {
                        "binding": "DB",
                        "database_name": DATABASE,
                        "database_id": database_id,
                        "migrations_dir": str(migrations_dir.resolve()),
                    },
                ],
            }
        )
    )
    subprocess.run(
        [
            "wrangler",
            "d1",
            "migrations",
            "apply",
            DATABASE,
            "--local",
            "--persist-to",
            str(persist_to),
            "--config",
            str(config),
        ],
        cwd=ROOT,
        env=_wrangler_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
