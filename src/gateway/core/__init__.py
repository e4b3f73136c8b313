"""The functional core: plain Python decisions with an injected clock. Imports only the stdlib and
``gateway.wire``; never ``js``, ``pyodide`` or ``workers`` (a test enforces it)."""
