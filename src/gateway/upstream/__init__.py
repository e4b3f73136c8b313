"""Provider adapters: build the upstream request, send it through the shell, report an outcome."""
