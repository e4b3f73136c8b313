"""The handlers, one module per surface or admin resource. A handler is ``async (call: Call) ->
JsResponse``: it reads and validates its input, calls the core (through ``gateway.serving``), and
builds the answer; errors are raised as ``gateway.errors`` exceptions and rendered by ``entry``.
Handlers never import each other: what two of them share lives in ``gateway.serving``."""
