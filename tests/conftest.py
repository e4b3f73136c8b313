"""The whole suite: unit tests of the pure core under CPython (tests/unit), end-to-end tests of
the Worker on workerd (tests/e2e), checks of the deploy files (tests/deploy).

It runs in parallel workers (pytest-xdist, ``-n`` in pyproject.toml; ``-n 0`` runs in one process):
each worker has its own shared runtime and fake upstream, so tests of one worker never see
another's state. A test that needs a runtime of its own starts one (``Gateway.start``).
"""
