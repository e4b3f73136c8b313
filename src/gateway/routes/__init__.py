"""One module per surface. A handler is ``async (request, env, params) -> JsResponse``: it reads
and validates its input, calls the core, and builds the answer; errors are raised as
``gateway.errors`` exceptions and rendered by ``entry``."""
