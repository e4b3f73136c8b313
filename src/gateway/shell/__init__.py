"""The FFI shell: the only modules that import ``js`` or ``pyodide``. JS failures are caught at
the call and re-raised as ``gateway.errors`` exceptions ``from`` the ``JsException``."""
