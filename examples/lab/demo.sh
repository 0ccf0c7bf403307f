#!/usr/bin/env bash
# make demo: two agents from examples/lab on 127.0.0.1 (node-a) and
# 127.0.0.2 (node-b), until their session is Established; then both
# statuses and node-a's route table, and both stop. Its one temporary
# directory (the binary and the logs) is removed on exit, whatever the exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
bin=$tmp/peeragent logs=$tmp
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$bin" ./cmd/peeragent
for n in a:127.0.0.1 b:127.0.0.2; do
  node=node-${n%%:*} addr=${n#*:}
  "$bin" run --from examples/lab --node "$node" --bgp-listen-address "$addr" \
    --http-addr "$addr:9179" --metrics-addr "$addr:9189" >"$logs/$node.log" 2>&1 &
  pids+=($!)
done
echo "agents started (logs shown on failure, removed on exit); waiting for node-a <-> node-b to be Established..."
for i in $(seq 1 300); do
  if "$bin" status --addr 127.0.0.1:9179 2>/dev/null | grep -E '^127\.0\.0\.2 ' | grep -q established; then
    up=1; break
  fi
  sleep 0.1
done
for a in 127.0.0.1 127.0.0.2; do echo; echo "== peeragent status --addr $a:9179"; "$bin" status --addr "$a:9179"; done
if [ -z "${up:-}" ]; then echo "session did not reach Established within 30s; logs:"; tail -n 30 "$logs"/*.log; exit 1; fi
echo; echo "== peeragent routes --addr 127.0.0.1:9179"; "$bin" routes --addr 127.0.0.1:9179
echo; echo "node-a and node-b are Established."
