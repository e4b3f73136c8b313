"""Reading and writing the local D1 from outside the Worker, with wrangler itself (SPEC §11)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support.runtime import NODE_BIN, ROOT

DATABASE = "freellmapi-worker-db"

__all__ = ["d1_execute"]


def d1_execute(persist_to: Path, sql: str) -> list[dict[str, Any]]:
    """Run ``sql`` with ``wrangler d1 execute --local``; the rows of its last statement."""
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}", "WRANGLER_SEND_METRICS": "false"}
    done = subprocess.run(
        ["wrangler", "d1", "execute", DATABASE, "--local", "--persist-to", str(persist_to), "--json", "--command", sql],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(done.stdout)[-1]["results"]
