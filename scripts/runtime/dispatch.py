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
    """A Cron Trigger's event: workerd calls a class entrypoint's ``scheduled`` non-relaxed with
    the controller alone, through ``python_from_rpc`` (env and ctx are the instance's; workerd's
    worker.c++, ``getHandlerFromEntrypointClass``)."""
    instance = _entrypoint(ctx, env)
    await instance.scheduled(python_from_rpc(controller))


# The Worker's secrets, as the local runtime passes them in ``env``.
_CREDENTIALS = ("ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY")


def warn_about_credentials(env) -> None:
    """Print a warning per unusable secret in ``env``, before the first request: the rule is the
    Worker's own (``gateway.core.credentials``), by which it answers 503 or 500."""
    from gateway.core.credentials import problems

    values = {name: str(getattr(env, name)) for name in _CREDENTIALS if getattr(env, name, None)}
    for problem in problems(values):
        print(f"warning: {problem}", file=sys.stderr)


# LOCAL_RUNTIME_PROFILE=1 (scripts/bench): every Python call of the process runs under cProfile
# from the first request on, and ``profile_report()`` says where the Python time went, by phase
# of a request. cProfile slows Python calls down, so the report gives each phase's share.
_profiler = None

# A phase is the time spent in (and under) these functions; "own" phases subtract nested ones.
_PHASES = {
    "entry: route match, the Call, answer headers": ("entry.py", "fetch"),
    "auth and rate limits": ("gateway/routes/auth.py", "require_api"),
    "body: read": ("gateway/shell/http.py", "read_body"),
    "body: JSON parse and validation": ("gateway/routes/body.py", ("read_json", "validate")),
    "routing: aliases, chain, fallback loop, pinning": ("gateway/routes/routing.py", "route"),
    "upstream: the fetch call and its timer": ("gateway/shell/http.py", "send"),
    "upstream: opening the stream (first event)": ("gateway/shell/stream.py", "open_stream"),
    "answer: Response and relay start": ("gateway/routes/chat.py", "_served"),
    "relay after the answer (pipe, end check)": ("gateway/shell/stream.py", "run"),
    "translated relay (pipe, translator)": ("gateway/shell/translation.py", ("run", "_on_read")),
}
# Nested phases (direct children only), subtracted from their parent's time. A relay's first
# steps run inside the answer (its task starts eagerly): the answer's share includes them.
_NESTED = {
    "entry: route match, the Call, answer headers": (
        "auth and rate limits", "body: JSON parse and validation",
        "routing: aliases, chain, fallback loop, pinning", "answer: Response and relay start",
    ),
    "body: JSON parse and validation": ("body: read",),
    "routing: aliases, chain, fallback loop, pinning": (
        "upstream: the fetch call and its timer", "upstream: opening the stream (first event)",
    ),
}
_LOOP_FILES = ("pyodide/webloop.py", "asyncio/", "_pyodide/_future_helper.py")
# The builtins the loop calls on every turn.
_LOOP_BUILTINS = ("_contextvars.Context", "create_once_callable", "set_result")
_WORKERD_FILES = ("pyodide/code.py", "workers/", "inspect.py", "_local_dispatch.py")
_USAGE_FILES = ("gateway/meter.py", "gateway/core/usage.py", "gateway/core/counting.py")


def start_profiling() -> None:
    global _profiler
    import cProfile

    _profiler = cProfile.Profile()
    _profiler.enable()


def profile_report(requests: int) -> str:
    """JSON: each phase's share of the Python time profiled so far, and calls per request;
    ``requests``: how many requests that time covers (the profile restarts after a report)."""
    import json
    import pstats

    global _profiler
    _profiler.disable()
    stats = pstats.Stats(_profiler).stats
    start_profiling()
    total = sum(tt for _cc, _nc, tt, _ct, _callers in stats.values())
    calls = sum(nc for _cc, nc, _tt, _ct, _callers in stats.values())

    def cumulative(path: str, names) -> float:
        names = (names,) if isinstance(names, str) else names
        return sum(ct for (file, _line, name), (_cc, _nc, _tt, ct, _c) in stats.items()
                   if file.endswith(path) and name in names)

    def own(files, builtins=()) -> float:
        return sum(tt for (file, _line, name), (_cc, _nc, tt, _ct, _c) in stats.items()
                   if any(part in file for part in files) or (file == "~" and any(b in name for b in builtins)))

    phases = {name: cumulative(*where) for name, where in _PHASES.items()}
    for parent, children in _NESTED.items():
        phases[parent] -= sum(phases[child] for child in children)
    phases["event loop: a turn per awaited JS promise"] = own(_LOOP_FILES, _LOOP_BUILTINS)
    phases["workerd's dispatch (SDK: conversions, relaxed_call)"] = own(_WORKERD_FILES)
    phases["other"] = total - sum(phases.values())
    # Inside the phases above: counting the request's usage (SPEC §17), the answer's usage read and
    # the once-a-minute flush included.
    usage = own(_USAGE_FILES) + cumulative("gateway/shell/http.py", ("buffered", "tail_bytes")) + cumulative(
        "gateway/shell/d1.py", "write_usage"
    )
    return json.dumps({
        "python_calls_per_request": round(calls / requests),
        "share": {name: round(value / total, 3) for name, value in phases.items()},
        "usage_counting_share": round(usage / total, 3),
    })
