"""fllmapi-worker: an OpenAI-compatible LLM gateway on Cloudflare Python Workers.

Layout (imports point one way: entry → routes → core / upstream → shell):

- ``core``: pure Python decisions (config snapshot, routing rules); no ``js``, clock injected.
- ``wire``: what crosses the HTTP edge: pydantic request models, header names.
- ``routes``: one module per surface; read, validate, call the core, build the response.
- ``upstream``: the OpenAI-compatible provider adapter.
- ``shell``: the only modules touching JS: D1, WebCrypto, fetch.
"""
