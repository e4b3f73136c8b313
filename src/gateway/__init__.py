"""fllmapi-worker: an OpenAI-compatible LLM gateway on Cloudflare Python Workers.

Layout: a functional core, a thin shell. Imports point one way, down this list (``LAYERS``, which
``tests/unit/test_layering.py`` checks against every import in ``src/``, those under
``TYPE_CHECKING`` and inside functions included, and which also refuses any import cycle):

- ``entry`` (``src/entry.py``): the Worker, the route table, the one error-to-response function.
- ``routes``: the handlers, one module per surface or admin resource; they never import each
  other.
- ``serving``: what handlers share: auth and limits, the body, routing through the fallback loop,
  the catalog, the answers to forwarded and translated requests, starting a relay, the rescuer.
- ``meter`` | ``upstream``: usage counting of a request; the OpenAI-compatible provider adapters.
- ``call`` | ``isolate`` | ``answers``: one request as a handler sees it; the isolate's memory
  (config snapshot, cooldowns, pins, usage book); building answers.
- ``shell``: the only modules touching JS (D1, WebCrypto, fetch, the stream relays).
- ``surfaces``: the protocol translators, pure (no I/O, no clock).
- ``wire``: what crosses the HTTP edge: pydantic request models, header names.
- ``core`` | ``errors`` | ``presets`` | ``requestid``: pure Python decisions (no ``js``, clock
  injected); the exception tree; the platform presets; request ids.

Names joined by ``|`` share a layer and are independent: neither imports the other. Within one
package or module, imports are free, cycles excepted.
"""

# Top first; each layer a tuple of independent modules or packages (see the module doc).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("entry",),
    ("gateway.routes",),
    ("gateway.serving",),
    ("gateway.meter", "gateway.upstream"),
    ("gateway.call", "gateway.isolate", "gateway.answers"),
    ("gateway.shell",),
    ("gateway.surfaces",),
    ("gateway.wire",),
    ("gateway.core", "gateway.errors", "gateway.presets", "gateway.requestid"),
)
