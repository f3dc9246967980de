#!/usr/bin/env bash
# Instructions per single-ID call of one flakeid-server binary, counted by
# valgrind's callgrind: the measure of a change's cost that the machine's
# noise does not move (throughput on 2 shared cores moves by ±10% between
# runs; these counts by well under 1%).
#
#   SERVER=target/release/flakeid-server LABEL=after bash server/bench/instructions.sh
#
# Starts the server under callgrind, warms it up, zeroes the counters, then
# counts two loads on their own, each dumped when it ends:
#   - HTTP `GET /v1/id`: `oha -n $CALLS -c 8`;
#   - gRPC `NextId`: the load client for $GRPC_SECONDS s, 8 concurrent.
# Prints one JSON line a load: the server's instructions (all threads, user
# space; not the kernel's) per call. Needs valgrind, oha and the load
# client (`cargo build --release -p flakeid-server --example load`).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${SERVER:?SERVER=<flakeid-server binary>}"
LABEL=${LABEL:-$SERVER}
CALLS=${CALLS:-20000}
GRPC_SECONDS=${GRPC_SECONDS:-10}
LOAD=target/release/examples/load
dir=$(mktemp -d)
trap 'kill -TERM "$pid" 2> /dev/null || true; rm -rf "$dir"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$dir/cg" "$SERVER" --layout twitter --node-id 1 \
    --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 --max-count 100000 --log-level warn \
    > "$dir/ready" 2> "$dir/log" &
pid=$!
for _ in $(seq 600); do
    grep -q '^flakeid-server ready' "$dir/ready" 2> /dev/null && break
    sleep 0.1
done
http=$(grep -o 'http=[^ ]*' "$dir/ready" | cut -d= -f2)
grpc=$(grep -o 'grpc=[^ ]*' "$dir/ready" | cut -d= -f2)
[ -n "$http" ] || { cat "$dir/log" >&2; echo "the server did not start" >&2; exit 1; }

# The instructions of the callgrind dump numbered $1.
total() {
    for _ in $(seq 100); do [ -s "$dir/cg.$1" ] && break; sleep 0.1; done
    awk '/^(summary|totals):/ { print $2; exit }' "$dir/cg.$1"
}
line() { # api calls dump
    python3 -c "import json,sys; print(json.dumps({'bench': 'instructions', 'server': sys.argv[1], \
'api': sys.argv[2], 'calls': int(sys.argv[3]), 'per_call': round(int(sys.argv[4]) / int(sys.argv[3]))}))" \
        "$LABEL" "$1" "$2" "$(total "$3")"
}

# Warm-up: connections, lazily made statics, the allocator's pools.
oha -n 2000 -c 8 --no-tui "http://$http/v1/id" > /dev/null
"$LOAD" --addr "$grpc" --target flakeid --call one --concurrency 8 --connections 2 --duration 1 > /dev/null

callgrind_control -z "$pid" > /dev/null 2>&1
oha -n "$CALLS" -c 8 --no-tui --output-format json "http://$http/v1/id" > "$dir/oha.json"
callgrind_control -d "$pid" > /dev/null 2>&1
ok=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['statusCodeDistribution'].get('200', 0))" "$dir/oha.json")
[ "$ok" = "$CALLS" ] || { echo "HTTP: $ok of $CALLS calls answered 200" >&2; exit 1; }
line "HTTP GET /v1/id (oha)" "$CALLS" 1

callgrind_control -z "$pid" > /dev/null 2>&1
out=$("$LOAD" --addr "$grpc" --target flakeid --call one --concurrency 8 --connections 2 \
    --duration "$GRPC_SECONDS")
callgrind_control -d "$pid" > /dev/null 2>&1
calls=$(python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['errors'] == 0, r; \
print(round(r['calls_per_s'] * r['seconds']))" "$out")
line "gRPC NextId" "$calls" 2
