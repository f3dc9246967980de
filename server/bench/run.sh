#!/usr/bin/env bash
# flakeid-server against ferroid's gRPC server (ferroid-tonic-server), in one
# run on one machine, with one load client for both:
#
#   bash server/bench/run.sh            # DURATION=10 seconds per point
#   DURATION=3 bash server/bench/run.sh # a quick look
#
# SERVER=<binary> measures that binary instead of building this checkout's,
# LABEL=<name> names it in the results (default flakeid-server), PEERS=0
# leaves ferroid out, OUT=<dir> writes elsewhere: compare.sh runs it so.
#
# Measures:
#   1. StreamIds IDs/s by chunk size (1, 64, 4096): flakeid-server with
#      Twitter's layout (12-bit sequence: at most 4,096 IDs per ms), with a
#      16-bit-sequence layout, and ferroid (its default worker count, 1, and
#      2 workers), each chunk size ferroid's IDS_PER_CHUNK and flakeid's
#      chunk_size; the server's CPU per million IDs (from /proc).
#   2. Single-ID calls: requests/s and p50/p99/p99.9 over HTTP (oha against
#      GET /v1/id) and gRPC (examples/load.rs: flakeid's NextId; ferroid has
#      no unary call, so StreamIds with count 1), and CPU per million IDs.
# Writes target/server-bench/results.jsonl and tables.md (printed too).
# Every server listens on 127.0.0.1 only; every run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10}
CONCURRENCY=${CONCURRENCY:-64}
OUT=${OUT:-target/server-bench}
LABEL=${LABEL:-flakeid-server}
PEERS=${PEERS:-1}
mkdir -p "$OUT"
: > "$OUT/results.jsonl"

[ "$PEERS" = 0 ] || command -v ferroid-tonic-server > /dev/null \
    || cargo install ferroid-tonic-server --version 2.0.0 --locked
command -v oha > /dev/null || cargo install oha --version 1.16.0 --locked
if [ -z "${SERVER:-}" ]; then
    cargo build --release -p flakeid-server --bin flakeid-server --example load
    SERVER=target/release/flakeid-server
else
    cargo build --release -p flakeid-server --example load
fi
LOAD=target/release/examples/load
WIDE='epoch=1700000000000 unit=1 fields=timestamp:41,node:6,sequence:16'
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2> /dev/null || true; done' EXIT

# Starts flakeid-server with a layout (and a worker count, or `default`);
# sets FS_PID, FS_HTTP, FS_GRPC.
start_flakeid() {
    local layout=$1 workers=${2:-default} log="$OUT/flakeid-server.log" extra=()
    [ "$workers" = default ] || extra=(--workers "$workers")
    rm -f "$OUT/ready"
    "$SERVER" --layout "$layout" --node-id 1 --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 \
        --max-count 100000 --log-level warn "${extra[@]}" > "$OUT/ready" 2> "$log" &
    FS_PID=$!
    PIDS+=("$FS_PID")
    for _ in $(seq 300); do
        grep -q '^flakeid-server ready' "$OUT/ready" 2> /dev/null && break
        sleep 0.05
    done
    FS_HTTP=$(grep -o 'http=[^ ]*' "$OUT/ready" | cut -d= -f2)
    FS_GRPC=$(grep -o 'grpc=[^ ]*' "$OUT/ready" | cut -d= -f2)
}

# Starts ferroid-tonic-server; sets FE_PID, FE_GRPC.
start_ferroid() {
    local chunk=$1 workers=$2 port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    SERVER_ADDR=127.0.0.1:$port IDS_PER_CHUNK=$chunk NUM_WORKERS=$workers \
        ferroid-tonic-server > "$OUT/ferroid.log" 2>&1 &
    FE_PID=$!
    PIDS+=("$FE_PID")
    FE_GRPC=127.0.0.1:$port
    for _ in $(seq 300); do
        (echo > "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
        sleep 0.05
    done
}

stop() {
    kill -TERM "$1" 2> /dev/null || true
    wait "$1" 2> /dev/null || true
}

# CPU seconds (user + system) of a process so far.
cpu_s() {
    awk '{ print ($14 + $15) / 100 }' "/proc/$1/stat"
}

record() { echo "$1" | tee -a "$OUT/results.jsonl"; }

stream_point() { # target label addr pid chunk
    local line
    line=$("$LOAD" --addr "$3" --target "$1" --call stream --count 65536 --chunk "$5" \
        --concurrency 4 --duration "$DURATION" --server-pid "$4")
    record "{\"bench\":\"stream\",\"server\":\"$2\",${line#\{}"
}

echo "== StreamIds, IDs/s by chunk size (${DURATION}s a point, 4 concurrent streams)"
for chunk in 1 64 4096; do
    start_flakeid twitter
    stream_point flakeid "$LABEL, twitter layout" "$FS_GRPC" "$FS_PID" "$chunk"
    stop "$FS_PID"
    start_flakeid "$WIDE"
    stream_point flakeid "$LABEL, 16-bit sequence" "$FS_GRPC" "$FS_PID" "$chunk"
    stop "$FS_PID"
    [ "$PEERS" = 0 ] && continue
    for workers in 1 2; do
        start_ferroid "$chunk" "$workers"
        stream_point ferroid "ferroid-tonic-server, $workers worker(s)" "$FE_GRPC" "$FE_PID" "$chunk"
        stop "$FE_PID"
    done
done

echo "== Single-ID calls (${DURATION}s, $CONCURRENCY concurrent)"
# flakeid-server with its default runtime (a worker thread per core) and
# with one worker: on 2 cores shared with the load generator, fewer threads
# can mean fewer context switches.
for workers in default 1; do
    start_flakeid twitter "$workers"
    before=$(cpu_s "$FS_PID")
    oha -z "${DURATION}s" -c "$CONCURRENCY" --no-tui --output-format json "http://$FS_HTTP/v1/id" > "$OUT/oha.json"
    after=$(cpu_s "$FS_PID")
    record "$(python3 server/bench/oha_summary.py "$OUT/oha.json" "$before" "$after" "$LABEL, workers $workers")"
    line=$("$LOAD" --addr "$FS_GRPC" --target flakeid --call one --concurrency "$CONCURRENCY" --connections 2 \
        --duration "$DURATION" --server-pid "$FS_PID")
    record "{\"bench\":\"one\",\"server\":\"$LABEL, workers $workers\",\"api\":\"gRPC NextId\",${line#\{}"
    stop "$FS_PID"
done
if [ "$PEERS" != 0 ]; then
    start_ferroid 4096 1
    line=$("$LOAD" --addr "$FE_GRPC" --target ferroid --call one --concurrency "$CONCURRENCY" --connections 2 \
        --duration "$DURATION" --server-pid "$FE_PID")
    record "{\"bench\":\"one\",\"server\":\"ferroid-tonic-server, 1 worker\",\"api\":\"gRPC StreamIds(count 1)\",${line#\{}"
    stop "$FE_PID"
fi

python3 server/bench/tables.py "$OUT/results.jsonl" | tee "$OUT/tables.md"
