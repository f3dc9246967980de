#!/usr/bin/env bash
# The crates.io side of a release, checked without publishing anything:
#
# 1. rust-version: the root Cargo.toml's [workspace.package] rust-version
#    (every crate of the workspace that declares one inherits it). Its
#    toolchain is installed once (rustup, minimal profile), then
#    `cargo check` of flakeid with all its features and of flakeid-server,
#    with the committed Cargo.lock (--locked), in target/msrv.
# 2. The file list of each published crate (`cargo package --list`): what
#    it must hold (sources, README, the server's build.rs and .proto),
#    nothing it must not (CI, fuzzing, the other crates, tests, tooling).
# 3. `cargo publish --dry-run` of the published crates together, in
#    dependency order: flakeid, then flakeid-server against the flakeid
#    just packaged (cargo's local overlay, not crates.io). Each is built
#    from its package (the debug profile, in target/), and crates.io's
#    index is asked whether the version is already taken.
# 4. Each .crate's size, which must stay under MAX_CRATE_BYTES.
#
#   .ci/crates.sh
#
# Needs rustup, cargo, protoc (flakeid's etcd feature and the server's
# build.rs; Debian: protobuf-compiler), python3 and network (crates.io's
# index, the toolchain once). Never uploads: `cargo publish` runs with
# --dry-run only. --allow-dirty: a dry run on a work tree being edited is
# still worth it; the release workflow publishes from a clean tag.
set -euo pipefail
cd "$(dirname "$0")/.."

# The crates published on crates.io, in dependency order. The others are
# `publish = false` (their Cargo.toml says why); a crate becoming
# publishable without being listed here fails step 1.
published=(flakeid flakeid-server)
# crates.io takes up to 10 MB; ours are about 0.3 MB and 0.1 MB.
max_crate_bytes=$((1024 * 1024))

fail() { echo "error: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }
seconds() { date +%s; }
start=$(seconds)

for tool in rustup cargo protoc python3; do
  command -v "$tool" >/dev/null || fail "$tool is not on PATH"
done

# The declared rust-version: [workspace.package] of the root Cargo.toml,
# which every crate must inherit (or, for tests and examples, not declare).
msrv="$(python3 - "${published[@]}" <<'PY'
import json, subprocess, sys, tomllib
with open("Cargo.toml", "rb") as f:
    msrv = tomllib.load(f).get("workspace", {}).get("package", {}).get("rust-version")
if not msrv:
    sys.exit("error: Cargo.toml has no [workspace.package] rust-version")
meta = json.loads(subprocess.check_output(
    ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"]))
problems = []
for p in meta["packages"]:
    if p["rust_version"] not in (None, msrv):
        problems.append(f"{p['name']} declares rust-version {p['rust_version']}, "
                        f"not the workspace's {msrv} (use rust-version.workspace = true)")
publishable = sorted(p["name"] for p in meta["packages"] if p["publish"] != [])
expected = sorted(sys.argv[1:])
if publishable != expected:
    problems.append(f"publishable crates are {publishable}, .ci/crates.sh publishes "
                    f"{expected}: set publish = false or list the crate in `published`")
for p in meta["packages"]:
    if p["name"] in expected:
        for key in ("description", "repository", "documentation", "readme", "license"):
            if not p.get(key):
                problems.append(f"{p['name']} has no {key}")
        if not p["keywords"] or not p["categories"]:
            problems.append(f"{p['name']} has no keywords or no categories")
        if p["rust_version"] != msrv:
            problems.append(f"{p['name']} declares no rust-version")
if problems:
    sys.exit("\n".join("error: " + m for m in problems))
print(msrv)
PY
)" || exit 1
[ -n "$msrv" ] || fail "could not read the rust-version"

step "rust-version $msrv: toolchain"
if rustup toolchain list | grep -q "^$msrv-"; then
  echo "toolchain $msrv already installed"
else
  rustup toolchain install "$msrv" --profile minimal
fi

step "rust-version $msrv: cargo check (flakeid --all-features, flakeid-server; Cargo.lock as committed)"
t=$(seconds)
if ! rustup run "$msrv" cargo check --locked --target-dir target/msrv \
    -p flakeid -p flakeid-server --all-features; then
  fail "the published crates do not build with Rust $msrv, the rust-version of Cargo.toml's [workspace.package]:
  lower the locked version of the dependency that needs a newer Rust
  (cargo update <name> --precise <version>), or raise rust-version"
fi
echo "checked in $(($(seconds) - t))s"

step "package file lists"
for crate in "${published[@]}"; do
  list="$(cargo package --list --locked --allow-dirty -p "$crate" 2>/dev/null)" \
    || fail "cargo package --list -p $crate failed (run it to see why)"
  case "$crate" in
    flakeid) required=(Cargo.toml README.md LICENSE CHANGELOG.md src/lib.rs src/bin/flakeid/main.rs) ;;
    flakeid-server) required=(Cargo.toml README.md LICENSE build.rs proto/flakeid/v1/flakeid.proto src/lib.rs src/main.rs) ;;
    *) required=(Cargo.toml src/lib.rs) ;;
  esac
  for f in "${required[@]}"; do
    grep -qxF "$f" <<<"$list" || fail "the $crate package lacks $f (see include in its Cargo.toml)"
  done
  # Top-level folders a package must not hold, and files of no use to users.
  unwanted="$(grep -E '^(\.ci|\.github|fuzz|loom-tests|pg|bindings|server|tests/(servers|sql|cluster|fork|pg)|benches/peers|examples/(web_handler|bulk_insert)|scripts|target|bench)/|(^|/)(corpus|artifacts)/|\.(profraw|profdata|state|crate|whl|node|so)$' <<<"$list" || true)"
  [ -z "$unwanted" ] || fail "the $crate package holds files it must not (see include in its Cargo.toml):
$unwanted"
  echo "$crate: $(wc -l <<<"$list") files, as expected"
done

step "cargo publish --dry-run (${published[*]}, in this order)"
t=$(seconds)
stamp="$(mktemp)"
out="$(mktemp)"
trap 'rm -f "$stamp" "$out"' EXIT
args=()
for crate in "${published[@]}"; do args+=(-p "$crate"); done
if ! cargo publish --dry-run --locked --allow-dirty "${args[@]}" 2>&1 | tee "$out"; then
  fail "cargo publish --dry-run failed (above)"
fi
if grep -E '^warning: manifest has no' "$out"; then
  fail "crates.io metadata missing (above)"
fi
echo "packaged and built in $(($(seconds) - t))s"

step ".crate sizes"
version="$(cargo metadata --no-deps --format-version 1 --offline \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "flakeid"))')"
for crate in "${published[@]}"; do
  # Where cargo writes it: target/package/ (one crate) or a folder in it
  # (several at once); the one this run wrote.
  file="$(find target/package -maxdepth 2 -name "$crate-$version.crate" -newer "$stamp" -print -quit)"
  [ -n "$file" ] || fail "cargo publish --dry-run wrote no $crate-$version.crate under target/package"
  bytes=$(wc -c <"$file")
  printf '%-28s %8d bytes  %s\n' "$crate-$version.crate" "$bytes" "$file"
  [ "$bytes" -le "$max_crate_bytes" ] \
    || fail "$crate-$version.crate is $bytes bytes, over $max_crate_bytes: what grew? (cargo package --list -p $crate)"
done

echo
echo "crates OK (rust-version $msrv; ${published[*]}) in $(($(seconds) - start))s"
