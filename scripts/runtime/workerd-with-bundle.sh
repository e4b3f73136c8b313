#!/bin/sh
# workerd, given the dev Pyodide bundle's folder: Miniflare runs this as MINIFLARE_WORKERD_PATH
# (it has no option for it). workerd.mjs sets WORKERD_BINARY and PYODIDE_BUNDLE_DIR, and
# PYTHON_SNAPSHOT_DIR when a test asks for the deploy's snapshot (LOCAL_RUNTIME_SNAPSHOT_DIR).
if [ -n "${PYTHON_SNAPSHOT_DIR:-}" ]; then
  set -- "$@" --python-snapshot-dir="$PYTHON_SNAPSHOT_DIR" --python-save-snapshot
fi
exec "$WORKERD_BINARY" "$@" --pyodide-bundle-disk-cache-dir="$PYODIDE_BUNDLE_DIR"
