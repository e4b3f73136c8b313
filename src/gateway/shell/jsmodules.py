"""The Worker's own JavaScript modules (SPEC §18): the relays' loops, which run per batch of a
long answer where a wake into Python would cost several times more (``shell/paced.mjs``,
``shell/piped.mjs``). They are files of the bundle, uploaded as ES modules beside the Python ones
(wrangler's ``**/*.mjs`` rule), and imported through the SDK's ``doAnImport``, once per isolate,
at its first stream: never at import time, as the deploy snapshot keeps no JS object made by a
call (PLATFORM-NOTES §3.3). workerd forbids ``eval``, so this is the only way in for them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load"]

# By name in the bundle (src/ is its root): the isolate's one copy of each.
_loaded: dict[str, Any] = {}


async def load(name: str) -> Any:
    """The module ``name`` (e.g. ``gateway/shell/paced.mjs``), imported at its first use."""
    module = _loaded.get(name)
    if module is None:
        import _pyodide_entrypoint_helper  # workerd's, present only there

        module = _loaded[name] = await _pyodide_entrypoint_helper.doAnImport(name)
    return module
