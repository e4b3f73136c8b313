"""What workerd does per fetch event for a Python Worker, for the local runtime.

workerd constructs the ``Default`` class per request as ``Default(ctx, env)`` and calls ``fetch``
through ``introspection.wrapper_func``: arguments through ``python_from_rpc``, the call through
``relaxed_call``, the result through ``python_to_rpc`` (PLATFORM-NOTES §2.1, §4.4).
"""

import importlib
import sys

from pyodide.code import relaxed_call
from workers import WorkerEntrypoint, python_from_rpc, python_to_rpc

_entrypoint: type[WorkerEntrypoint] | None = None


async def load(module_name: str) -> None:
    global _entrypoint
    module = importlib.import_module(module_name)
    _entrypoint = module.Default


async def dispatch(ctx, env, request):
    instance = _entrypoint(ctx, env)
    response = await relaxed_call(instance.fetch, python_from_rpc(request))
    return python_to_rpc(response)


async def scheduled(ctx, env, controller):
    """A Cron Trigger's event: workerd calls ``scheduled`` non-relaxed, each argument through
    ``python_from_rpc`` (PLATFORM-NOTES §2.1)."""
    instance = _entrypoint(ctx, env)
    await instance.scheduled(python_from_rpc(controller), python_from_rpc(env), python_from_rpc(ctx))


# The Worker's secrets, as the local runtime passes them in ``env``.
_CREDENTIALS = ("ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY")


def warn_about_credentials(env) -> None:
    """Print a warning per unusable secret in ``env``, before the first request: the rule is the
    Worker's own (``gateway.core.credentials``), by which it answers 503 or 500."""
    from gateway.core.credentials import problems

    values = {name: str(getattr(env, name)) for name in _CREDENTIALS if getattr(env, name, None)}
    for problem in problems(values):
        print(f"warning: {problem}", file=sys.stderr)
