"""Options and markers for the whole suite.

``--runtime node|workerd|both`` (default both) picks the local runtimes the end-to-end tests run
on (tests/e2e/conftest.py): each e2e test that needs a runtime runs once per runtime, as
``test_x[node]`` and ``test_x[workerd]``. A test that cannot run on workerd says why with
``@pytest.mark.node_only("reason")``: on workerd it is skipped with that reason, and the summary
counts such tests, so none is left out silently.
"""

from __future__ import annotations

import pytest

from support.runtime import RUNTIMES

_NODE_ONLY = "node_only"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runtime", choices=(*RUNTIMES, "both"), default="both",
                     help="the local runtime(s) the end-to-end tests run on (default: both)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{_NODE_ONLY}(reason): the test needs the Node runtime; the reason says why")


def selected_runtimes(config: pytest.Config) -> tuple[str, ...]:
    chosen = config.getoption("--runtime")
    return RUNTIMES if chosen == "both" else (chosen,)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "runtime" in metafunc.fixturenames:
        metafunc.parametrize("runtime", selected_runtimes(metafunc.config), scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker(_NODE_ONLY)
        runtime = getattr(item, "callspec", None) and item.callspec.params.get("runtime")
        if marker is None:
            continue
        if not marker.args:
            raise pytest.UsageError(f"{item.nodeid}: node_only needs its reason")
        if runtime == "workerd":
            item.add_marker(pytest.mark.skip(reason=f"Node-only: {marker.args[0]}"))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    node_only = [report for report in terminalreporter.stats.get("skipped", [])
                 if isinstance(report.longrepr, tuple) and "Node-only: " in report.longrepr[2]]
    if node_only:
        terminalreporter.write_line(f"{len(node_only)} test(s) Node-only, skipped on workerd (their reasons: the SKIPPED lines)")
