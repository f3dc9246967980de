#!/usr/bin/env bash
# pg_flakeid benchmark: flakeid_next_id() against bigserial/nextval,
# gen_random_uuid() and the Instagram-style PL/pgSQL insta_next_id(),
# on a scratch PostgreSQL 15 server, candidates interleaved in rounds.
# Usage: ROUNDS=3 DURATION=5 pg/bench/run.sh   (defaults: 3 rounds, 5 s per case;
# 4 tables x 2 client counts + 2 bare x 2 = 12 cases x 3 rounds x 5 s ~ 3.5 min + setup)
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
SYNC=${SYNC:-off}            # synchronous_commit for the insert cases
CLIENTS=${CLIENTS:-"1 8"}
BIN=/usr/lib/postgresql/15/bin
HERE=$(cd "$(dirname "$0")" && pwd)
# PostgreSQL refuses root: the scratch dir belongs to postgres.
TMP=$(mktemp -d /tmp/flakeid-bench.XXXXXX)
chown postgres: "$TMP"
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
as_pg() { runuser -u postgres -- "$@"; }
cleanup() {
  as_pg "$BIN/pg_ctl" -D "$TMP/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
cp "$HERE"/*.sql "$TMP"/ && chown postgres: "$TMP"/*.sql

as_pg "$BIN/initdb" -D "$TMP/data" -A trust -U postgres >/dev/null
cat >> "$TMP/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$TMP'
shared_preload_libraries = 'pg_flakeid'
flakeid.node_id = 1
max_connections = 50
synchronous_commit = $SYNC
CONF
as_pg "$BIN/pg_ctl" -D "$TMP/data" -l "$TMP/log" -w start >/dev/null
PSQL=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres)
as_pg "${PSQL[@]}" -f "$TMP/setup.sql"

# One case: prints its throughput (tps); bare cases count 1e6 IDs per tx.
run_case() { # script clients
  as_pg "$BIN/pgbench" -n -h 127.0.0.1 -p "$PORT" -U postgres -c "$2" -j 2 -T "$DURATION" \
    -f "$TMP/$1.sql" postgres 2>/dev/null | awk '/^tps/ {print $3}'
}
RES="$TMP/results"; : > "$RES"
INSERTS="ins_flakeid ins_bigserial ins_uuid ins_insta"
BARE="bare_flakeid bare_nextval"
for r in $(seq "$ROUNDS"); do
  for c in $CLIENTS; do
    # Interleaved: every candidate once per round, from the same empty state.
    for s in $INSERTS $BARE; do
      as_pg "${PSQL[@]}" -c "TRUNCATE t_flakeid, t_bigserial, t_uuid, t_insta" -c "VACUUM ANALYZE" -c "CHECKPOINT"
      echo "$s $c $(run_case "$s" "$c")" | tee -a "$RES" >&2
    done
  done
done
as_pg "${PSQL[@]}" -At -c "SELECT version()" >&2
# Median and range per case; bare cases are scaled to IDs/s (1e6 per tx).
python3 - "$RES" "$ROUNDS" "$DURATION" "$SYNC" <<'PY'
import sys, statistics as st, collections
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    s, c, v = line.split(); rows.setdefault((s, int(c)), []).append(float(v))
print(f"\nrounds={sys.argv[2]} duration={sys.argv[3]}s synchronous_commit={sys.argv[4]}\n")
print("| case | clients | unit | median | min | max | vs nextval/bigserial (median) | target |")
print("|---|---|---|---|---|---|---|---|")
for (s, c), v in sorted(rows.items(), key=lambda kv: (kv[0][0].split('_')[0], kv[0][1])):
    k = 1e6 if s.startswith("bare") else 1
    unit = "IDs/s" if k > 1 else "inserts/s"
    ref = ("bare_nextval" if k > 1 else "ins_bigserial", c)
    m = st.median(v) * k; rm = st.median(rows[ref]) * k
    ratio = m / rm
    tgt = ""
    if s in ("ins_flakeid", "bare_flakeid"):
        tgt = "**met**" if ratio >= 1 else f"**missed** ({(1-ratio)*100:.1f}% slower)"
    print(f"| {s} | {c} | {unit} | {m:,.0f} | {min(v)*k:,.0f} | {max(v)*k:,.0f} | {ratio:.2f} | {tgt} |")
PY
