#!/usr/bin/env bash
# flakeid-server before and after a change, on one machine in one run:
#
#   bash server/bench/compare.sh          # main's server against this checkout's
#   bash server/bench/compare.sh REV      # REV's server against this checkout's
#   ROUNDS=5 DURATION=10 bash server/bench/compare.sh
#
# Builds REV's server (from a git worktree under target/, removed at the
# end, built into this checkout's target dir, so the dependencies build
# once) and this checkout's, then runs
# run.sh for each without ferroid, alternately (before, after; then after,
# before; ...), ROUNDS times (default 3), and prints each point's median
# per side and their ratio; then, with valgrind, each binary's instructions
# per single-ID call (instructions.sh), which noise does not move. Writes
# target/server-bench/compare/.
# For published numbers run it on a quiet machine: the two cores are shared
# with the load generator already.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:-main}
ROUNDS=${ROUNDS:-3}
OUT=target/server-bench/compare
rm -rf "$OUT"
mkdir -p "$OUT"

# One path for the base's source, so that a second run finds its build.
tree=$PWD/target/server-bench/base-src
git worktree remove --force "$tree" 2> /dev/null || rm -rf "$tree"
trap 'git worktree remove --force "$tree" 2> /dev/null || rm -rf "$tree"' EXIT
git worktree add --quiet --detach "$tree" "$BASE"
git -C "$tree" log -1 --format='before: %h %s' | tee "$OUT/revisions.txt"
git log -1 --format='after: %h %s (and the uncommitted changes, if any)' | tee -a "$OUT/revisions.txt"
# This checkout's first: the two builds share the target dir, and a build
# script's output directory with it (the package name and version are the
# same), so the base's build script, run second, cannot leave this
# checkout's build without its outputs (flakeid-server's descriptor set).
cargo build --release -p flakeid-server --bin flakeid-server --example load
cp target/release/flakeid-server "$OUT/flakeid-server-after"
cargo build --release --manifest-path "$tree/Cargo.toml" --target-dir target \
    -p flakeid-server --bin flakeid-server
cp target/release/flakeid-server "$OUT/flakeid-server-before"

for round in $(seq "$ROUNDS"); do
    sides=(before after)
    [ $((round % 2)) = 0 ] && sides=(after before)
    for side in "${sides[@]}"; do
        echo "== round $round of $ROUNDS: $side"
        binary="$OUT/flakeid-server-$side"
        OUT="$OUT/$side-$round" SERVER="$binary" LABEL="$side" PEERS=0 \
            bash server/bench/run.sh > "$OUT/$side-$round.log"
    done
done
# The same two binaries' instructions per single-ID call, which the
# machine's noise does not move (instructions.sh), when valgrind is here.
if command -v valgrind > /dev/null; then
    for side in before after; do
        echo "== instructions: $side"
        SERVER="$OUT/flakeid-server-$side" LABEL="$side" bash server/bench/instructions.sh \
            | tee -a "$OUT/instructions.jsonl"
    done
else
    echo "valgrind is not installed: no instruction counts (apt-get install valgrind)"
fi
python3 server/bench/compare.py "$OUT" | tee "$OUT/compare.md"
