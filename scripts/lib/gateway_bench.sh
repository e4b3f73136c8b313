# Sourced by the peer benchmarks (scripts/bench_peers, scripts/bench_peers_messages): starts the
# gateway on a runtime, with every feature on as a user would turn it on, in front of an OpenAI
# upstream (../shared/bench/fast_upstream.py: key k-ok, model m1). The caller is a named client
# with an rpm, ip_rpm is on, the failed-auth lock is at its default, the provider has two keys
# (one of them spent, so rotation and key cooldowns are live), model aliases are set and
# OpenRouter pinning is on. No test hook is on (no D1 trace, no test clock).
#
#   trap gateway_stop EXIT          # first, so a failed start still stops what started
#   gateway_start PORT UPSTREAM_BASE_URL RUNTIME     # RUNTIME: node or workerd; once per runtime
#
# Sets gateway_pids[RUNTIME] (the launcher's Node process; workerd, and the Node runtime's D1
# host, are its children, so its process tree is the gateway's), gateway_tokens[RUNTIME] (the
# client's token) and gateway_work (a temp dir: per runtime .dev.vars, state, gateway.log). Runs
# from the repo root.

declare -A gateway_pids=() gateway_tokens=()
gateway_work=

gateway_start() {
  local port=$1 upstream=$2 runtime=$3
  scripts/setup
  export PATH="$PWD/node_modules/.bin:$PATH"
  [[ -n $gateway_work ]] || gateway_work=$(mktemp -d "${TMPDIR:-/tmp}/bench-peers.XXXXXX")
  local work=$gateway_work/$runtime launch
  case $runtime in
    node) launch=(node --disallow-code-generation-from-strings scripts/runtime/server.mjs) ;;
    workerd) launch=(node scripts/runtime/workerd.mjs) ;;
    *) echo "gateway_start: no runtime $runtime" >&2; return 1 ;;
  esac
  mkdir -p "$work"
  local api_token admin_token
  api_token=api-$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  admin_token=admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  cat >"$work/.dev.vars" <<VARS
API_TOKEN=$api_token
ADMIN_TOKEN=$admin_token
ENCRYPTION_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
VARS
  "${launch[@]}" -- --port "$port" --persist-to "$work/state" --env-file "$work/.dev.vars" >"$work/gateway.log" 2>&1 &
  gateway_pids[$runtime]=$!
  for _ in $(seq 1 240); do
    grep -q "^Ready on" "$work/gateway.log" && break
    kill -0 "${gateway_pids[$runtime]}" 2>/dev/null || { cat "$work/gateway.log" >&2; exit 1; }
    sleep 0.25
  done

  local base=http://127.0.0.1:$port/api/admin
  local admin=(curl -fsS -H "authorization: Bearer $admin_token" -H "content-type: application/json")
  "${admin[@]}" -X POST "$base/providers" -d '{"name": "bench", "base_url": "'"$upstream"'",
    "api_keys": ["k-ok", "k-spent-0000000000"], "models": ["m1"]}' >/dev/null
  "${admin[@]}" -X PUT "$base/settings" -d '{"ip_rpm": 1000000, "model_aliases": {"gpt-*": "m1"}}' >/dev/null
  gateway_tokens[$runtime]=$("${admin[@]}" -X POST "$base/clients" -d '{"name": "bench", "rpm": 1000000, "models": ["m1"]}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
}

gateway_stop() {
  local runtime
  for runtime in "${!gateway_pids[@]}"; do
    kill "${gateway_pids[$runtime]}" 2>/dev/null || true
    wait "${gateway_pids[$runtime]}" 2>/dev/null || true
  done
  gateway_pids=()
}
