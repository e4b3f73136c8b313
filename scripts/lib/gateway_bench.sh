# Sourced by the peer benchmarks (scripts/bench_peers, scripts/bench_peers_messages): starts the
# gateway with scripts/dev in front of an OpenAI upstream (../shared/bench/fast_upstream.py: key
# k-ok, model m1), with every feature on as a user would turn it on. The caller is a named client
# with an rpm, ip_rpm is on, the failed-auth lock is at its default, the provider has two keys
# (one of them spent, so rotation and key cooldowns are live), model aliases are set and
# OpenRouter pinning is on. No test hook is on (no D1 trace, no test clock).
#
#   trap gateway_stop EXIT          # first, so a failed start still stops what started
#   gateway_start PORT UPSTREAM_BASE_URL
#
# Sets gateway_pid (scripts/dev's process, Node once it execs; workerd is its child, so its process
# tree is the gateway's), gateway_token (the client's token) and gateway_work (a temp dir:
# .dev.vars, state, gateway.log). Runs from the repo root.

gateway_pid= gateway_token= gateway_work=

gateway_start() {
  local port=$1 upstream=$2
  scripts/setup  # before the wait for Ready below: a first run installs
  gateway_work=$(mktemp -d "${TMPDIR:-/tmp}/bench-peers.XXXXXX")
  local api_token admin_token
  api_token=api-$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  admin_token=admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  cat >"$gateway_work/.dev.vars" <<VARS
API_TOKEN=$api_token
ADMIN_TOKEN=$admin_token
ENCRYPTION_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
VARS
  scripts/dev --port "$port" --persist-to "$gateway_work/state" --env-file "$gateway_work/.dev.vars" >"$gateway_work/gateway.log" 2>&1 &
  gateway_pid=$!
  for _ in $(seq 1 240); do
    grep -q "^Ready on" "$gateway_work/gateway.log" && break
    kill -0 "$gateway_pid" 2>/dev/null || { cat "$gateway_work/gateway.log" >&2; exit 1; }
    sleep 0.25
  done
  grep -q "^Ready on" "$gateway_work/gateway.log" || { cat "$gateway_work/gateway.log" >&2; echo "gateway_start: not ready after 60 s" >&2; exit 1; }

  local base=http://127.0.0.1:$port/api/admin
  local admin=(curl -fsS -H "authorization: Bearer $admin_token" -H "content-type: application/json")
  "${admin[@]}" -X POST "$base/providers" -d '{"name": "bench", "base_url": "'"$upstream"'",
    "api_keys": ["k-ok", "k-spent-0000000000"], "models": ["m1"]}' >/dev/null
  "${admin[@]}" -X PUT "$base/settings" -d '{"ip_rpm": 1000000, "model_aliases": {"gpt-*": "m1"}}' >/dev/null
  gateway_token=$("${admin[@]}" -X POST "$base/clients" -d '{"name": "bench", "rpm": 1000000, "models": ["m1"]}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
}

gateway_stop() {
  [[ -n $gateway_pid ]] || return 0
  kill "$gateway_pid" 2>/dev/null || true
  wait "$gateway_pid" 2>/dev/null || true
  gateway_pid=
}
