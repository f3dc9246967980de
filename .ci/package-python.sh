#!/usr/bin/env bash
# The Python package flakeid-rs as a release publishes it to PyPI: built,
# then installed and tested as a user without Rust gets it.
#
#   .ci/package-python.sh build OUTDIR
#       OUTDIR gets the abi3 wheel (CPython >= 3.9, x86-64 Linux,
#       manylinux2014 = manylinux_2_17, release profile, built with zig
#       against glibc 2.17) and the sdist; anything of flakeid_rs's already
#       there is replaced. maturin and zig (PyPI's ziglang) come from a
#       tools venv, target/package-tools, made once and reused.
#   .ci/package-python.sh test OUTDIR
#       the wheel into a fresh venv whose PATH has no cargo, rustc, rustup
#       or protoc; pytest on it (the full suite, then the fork tests with
#       fork detection off, each of which must fail); then the sdist into a
#       second fresh venv, built from an unpacked copy outside the checkout
#       (with Rust and protoc, cargo reusing target/), and a smoke test.
#       Prints the wheel's size and how long pip took to install it.
#
# The tests start redis-server, etcd, PostgreSQL and MariaDB themselves
# (the Debian packages .ci/test installs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

# Pinned: a new maturin or zig changes the wheel, so it comes in a commit.
MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.15.2
TOOLS="$ROOT/target/package-tools"
MANIFEST=bindings/python/Cargo.toml
# What the wheel claims: the stable ABI from CPython 3.9 on, glibc 2.17 and
# later (manylinux2014, which pip also knows as manylinux_2_17), x86-64.
WHEEL_TAGS=(cp39-abi3-manylinux_2_17_x86_64 cp39-abi3-manylinux2014_x86_64)
MAX_GLIBC=2.17

. .ci/steps.sh

usage() {
  echo "usage: $0 build OUTDIR | test OUTDIR" >&2
  exit 2
}

# now: seconds since the epoch, with nanoseconds (for durations).
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# tools_venv: target/package-tools with the pinned maturin and ziglang;
# pip runs only when one is missing or of another version.
tools_venv() {
  if [ ! -x "$TOOLS/bin/python" ]; then
    python3 -m venv "$TOOLS"
  fi
  local want=() have
  for pkg in "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION"; do
    have="$("$TOOLS/bin/python" -c 'import sys, importlib.metadata as m
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    pass' "${pkg%%==*}")"
    [ "$have" = "${pkg##*==}" ] || want+=("$pkg")
  done
  if [ "${#want[@]}" -gt 0 ]; then
    echo "tools venv $TOOLS: installing ${want[*]}"
    "$TOOLS/bin/pip" install --quiet --disable-pip-version-check "${want[@]}"
  else
    echo "tools venv $TOOLS: maturin $MATURIN_VERSION and ziglang $ZIGLANG_VERSION already there"
  fi
}

build() {
  local out="$1"
  step "flakeid-rs packages: tools venv (maturin $MATURIN_VERSION, ziglang $ZIGLANG_VERSION)"
  tools_venv
  mkdir -p "$out"
  rm -f "$out"/flakeid_rs-*.whl "$out"/flakeid_rs-*.tar.gz
  # maturin finds zig as `python3 -m ziglang` with the tools venv first on
  # PATH. It builds for the target x86_64-unknown-linux-gnu (zig links
  # against glibc 2.17's symbols), so into target/x86_64-unknown-linux-gnu/
  # beside the host builds in target/release.
  step "flakeid-rs wheel: maturin build --release --locked --zig --compatibility manylinux2014"
  local began
  began="$(now)"
  # --locked: the dependencies Cargo.lock names, or a failure. (The sdist's
  # build cannot take it: its workspace has fewer members, and cargo prunes
  # their packages from the lock file it carries.)
  PATH="$TOOLS/bin:$PATH" maturin build --release --locked --zig --compatibility manylinux2014 \
    --manifest-path "$MANIFEST" --out "$out"
  echo "wheel built in $(since "$began") s"
  local wheel sdist
  wheel="$(one_file "$out" 'flakeid_rs-*.whl' wheels)"
  check_wheel "$wheel"

  step "flakeid-rs sdist: maturin sdist (flakeid and flakeid-bindings carried in)"
  PATH="$TOOLS/bin:$PATH" maturin sdist --manifest-path "$MANIFEST" --out "$out"
  sdist="$(one_file "$out" 'flakeid_rs-*.tar.gz' sdists)"
  check_sdist "$sdist"
  end_step
}

# check_wheel WHEEL: fails unless the wheel is what we claim: the name's
# tags and the WHEEL file's are the abi3 manylinux2014 x86-64 ones, the
# extension module is in it and needs no glibc symbol newer than 2.17, and
# the version is the crate's.
check_wheel() {
  local wheel="$1" name tag version crate_version
  name="$(basename "$wheel" .whl)"
  version="$(cut -d- -f2 <<<"$name")"
  # The name's tags, expanded (python-abi-platform, each part a
  # dot-separated set, in maturin's order), against WHEEL_TAGS.
  tag="$(cut -d- -f3- <<<"$name")"
  local py abi platform expanded=() p a l
  IFS=- read -r py abi platform <<<"$tag"
  for p in ${py//./ }; do
    for a in ${abi//./ }; do
      for l in ${platform//./ }; do expanded+=("$p-$a-$l"); done
    done
  done
  if [ "$(printf '%s\n' "${expanded[@]}" | sort)" != "$(printf '%s\n' "${WHEEL_TAGS[@]}" | sort)" ]; then
    echo "error: the wheel $name is tagged $tag, that is ${expanded[*]}; ${WHEEL_TAGS[*]} expected" >&2
    exit 1
  fi
  crate_version="$(cargo metadata --no-deps --format-version 1 --manifest-path "$MANIFEST" \
    | python3 -c 'import json, sys
print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "flakeid-python"))')"
  if [ "$version" != "$crate_version" ]; then
    echo "error: the wheel's version is $version, the crate flakeid-python's $crate_version" >&2
    exit 1
  fi
  local scratch
  scratch="$(mktemp -d)"
  python3 -m zipfile -e "$wheel" "$scratch"
  local wheel_file="$scratch/flakeid_rs-$version.dist-info/WHEEL"
  local got want
  got="$(sed -n 's/^Tag: //p' "$wheel_file" | sort | tr '\n' ' ')"
  want="$(printf '%s\n' "${WHEEL_TAGS[@]}" | sort | tr '\n' ' ')"
  if [ "$got" != "$want" ]; then
    echo "error: $wheel_file has the tags $got; $want expected" >&2
    exit 1
  fi
  local so="$scratch/flakeid_rs/_native.abi3.so"
  if [ ! -f "$so" ]; then
    echo "error: the wheel has no flakeid_rs/_native.abi3.so (it has: $(cd "$scratch" && find . -name '*.so'))" >&2
    exit 1
  fi
  # The newest glibc symbol version the module needs (objdump -T lists
  # each dynamic symbol's version).
  local newest
  newest="$(objdump -T "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)"
  if [ -z "$newest" ] || [ "$(printf '%s\n%s\n' "$newest" "$MAX_GLIBC" | sort -V | tail -n 1)" != "$MAX_GLIBC" ]; then
    echo "error: _native.abi3.so needs glibc ${newest:-(no versioned symbol found)}; manylinux2014 allows $MAX_GLIBC at most" >&2
    exit 1
  fi
  # The license text too (maturin takes bindings/python/LICENSE, a link to
  # the repository's, into .dist-info/licenses/).
  for file in flakeid_rs/__init__.py flakeid_rs/_errors.py flakeid_rs/_native.pyi flakeid_rs/py.typed \
    "flakeid_rs-$version.dist-info/licenses/LICENSE"; do
    if [ ! -f "$scratch/$file" ]; then
      echo "error: the wheel has no $file" >&2
      exit 1
    fi
  done
  rm -rf "$scratch"
  echo "wheel $(basename "$wheel"): $(stat -c %s "$wheel") bytes; tags ${WHEEL_TAGS[*]}; newest glibc symbol $newest"
}

# check_sdist SDIST: fails unless it holds the package's Python sources (at
# its top, where maturin puts python-source), the extension's crate, the two
# path dependencies it builds from (flakeid-bindings and the flakeid
# library) and the lock file, and no built module or target/ file.
check_sdist() {
  local sdist="$1" listing top
  listing="$(tar -tzf "$sdist")"
  top="$(basename "$sdist" .tar.gz)"
  local missing=()
  for file in pyproject.toml Cargo.lock bindings/python/Cargo.toml bindings/python/src/lib.rs \
    python/flakeid_rs/__init__.py bindings/python/LICENSE bindings/core/Cargo.toml bindings/core/src/lib.rs \
    Cargo.toml src/lib.rs; do
    grep -qx "$top/$file" <<<"$listing" || missing+=("$file")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "error: the sdist $sdist lacks ${missing[*]}; it has:" >&2
    echo "$listing" >&2
    exit 1
  fi
  if grep -E '\.so$|/target/' <<<"$listing"; then
    echo "error: the sdist $sdist carries the built files above" >&2
    exit 1
  fi
  echo "sdist $(basename "$sdist"): $(stat -c %s "$sdist") bytes, $(wc -l <<<"$listing") entries"
}

# The import checks, run by a venv's python from a directory outside the
# checkout: flakeid_rs and its native module come from that venv's
# site-packages; 10,000 IDs are unique and increasing, and decode to the
# node id they were made with; the metadata's description is this
# package's README (bindings/python/README.md), not the library's.
SMOKE_TEST='
import pathlib, sys, sysconfig
import flakeid_rs, flakeid_rs._native as native
site = pathlib.Path(sysconfig.get_paths()["platlib"]).resolve()
for module in (flakeid_rs, native):
    path = pathlib.Path(module.__file__).resolve()
    if site not in path.parents:
        sys.exit(f"error: {module.__name__} is {path}, not under {site}")
    print(f"{module.__name__}: {path}")
gen = flakeid_rs.Generator("twitter", node_id=7)
ids = [gen.next_id() for _ in range(5000)] + gen.next_ids(5000)
if len(ids) != 10000 or len(set(ids)) != 10000:
    sys.exit(f"error: {len(set(ids))} distinct IDs of {len(ids)}")
if any(a >= b for a, b in zip(ids, ids[1:])):
    sys.exit("error: the IDs are not strictly increasing")
nodes = {gen.decode(i).node_id for i in ids}
if nodes != {7}:
    sys.exit(f"error: the IDs decode to node ids {sorted(nodes)}, 7 expected")
import importlib.metadata
description = importlib.metadata.metadata("flakeid-rs").get_payload().lstrip()
if not description.startswith("# flakeid-rs (Python)"):
    sys.exit(f"error: the installed metadata describes another README: {description[:60]!r}")
text = flakeid_rs.encode(ids[-1], "base62")
if flakeid_rs.parse_id(text) != ids[-1]:
    sys.exit(f"error: {text} parses to {flakeid_rs.parse_id(text)}, not {ids[-1]}")
print(f"10,000 IDs unique, increasing, node 7; last {ids[-1]} = {text}")
'

test_packages() {
  local out="$1" wheel sdist
  wheel="$(one_file "$out" 'flakeid_rs-*.whl' wheels)"
  sdist="$(one_file "$out" 'flakeid_rs-*.tar.gz' sdists)"
  wheel="$(realpath "$wheel")"
  sdist="$(realpath "$sdist")"
  local outside
  outside="$(mktemp -d)"

  step "Python package flakeid-rs: the wheel into a fresh venv without Rust on PATH, pytest (forks, bad input, leases on real servers, mypy), the fork tests failing without fork detection"
  local rust_path="$PATH"
  # Every command but cargo, rustc, rustup, rustdoc and protoc (.ci/steps.sh):
  # pip cannot build flakeid-rs here, so it installs the wheel or fails.
  PATH="$(no_rust_path "$ROOT/target/no-rust-bin")"
  rm -rf target/flakeid-rs-venv
  python3 -m venv target/flakeid-rs-venv
  # MATURIN_NO_INSTALL_RUST: without it, maturin's build backend, finding
  # no cargo, fetches a Rust toolchain of its own (puccinialin) and builds
  # anyway; with it and this PATH, a pip that had to build flakeid-rs fails
  # at once ("Cargo, the Rust package manager, is not installed").
  export MATURIN_NO_INSTALL_RUST=1
  local began
  began="$(now)"
  target/flakeid-rs-venv/bin/pip install --quiet --disable-pip-version-check "$wheel"
  local install_seconds
  install_seconds="$(since "$began")"
  target/flakeid-rs-venv/bin/pip install --quiet --disable-pip-version-check \
    pytest hypothesis mypy
  # The module the tests load is the wheel's, byte for byte.
  target/flakeid-rs-venv/bin/python - "$wheel" <<'PY'
import hashlib, sys, sysconfig, zipfile
from pathlib import Path
installed = Path(sysconfig.get_paths()["platlib"]) / "flakeid_rs" / "_native.abi3.so"
with zipfile.ZipFile(sys.argv[1]) as wheel:
    shipped = wheel.read("flakeid_rs/_native.abi3.so")
if installed.read_bytes() != shipped:
    sys.exit(f"error: {installed} is not the wheel's flakeid_rs/_native.abi3.so")
print(f"{installed}: the wheel's, sha256 {hashlib.sha256(shipped).hexdigest()[:16]}...")
PY
  (cd "$outside" && "$ROOT/target/flakeid-rs-venv/bin/python" -c "$SMOKE_TEST")

  # scripts/check_junit.py reads pytest's JUnit report: every test function
  # in the tree must have run and passed, none skipped (pytest passes a run
  # that skipped or never collected a test).
  local py_reports
  py_reports="$(mktemp -d)"
  target/flakeid-rs-venv/bin/python -m pytest -q -p no:cacheprovider \
    --junitxml="$py_reports/all.xml" bindings/python/tests
  target/flakeid-rs-venv/bin/python bindings/python/scripts/check_junit.py \
    "$py_reports/all.xml" passed bindings/python/tests/test_*.py
  # The fork tests again with fork detection off (conftest.py reads the
  # variable): a forked child then issues the parent's IDs, and every fork
  # test must fail, showing it catches that. pytest's status 1 is "tests
  # failed"; any other is a run that went wrong.
  echo "the fork tests with fork detection off: every one must fail"
  local no_detection_status=0
  FLAKEID_RS_TEST_NO_FORK_DETECTION=1 target/flakeid-rs-venv/bin/python -m pytest -q \
    -p no:cacheprovider --tb=line --junitxml="$py_reports/no-detection.xml" \
    bindings/python/tests/test_fork.py || no_detection_status=$?
  if [ "$no_detection_status" -ne 1 ]; then
    echo "error: pytest exited $no_detection_status with fork detection off; 1 (tests failed) expected" >&2
    exit 1
  fi
  target/flakeid-rs-venv/bin/python bindings/python/scripts/check_junit.py \
    "$py_reports/no-detection.xml" failed bindings/python/tests/test_fork.py
  rm -rf "$py_reports"
  PATH="$rust_path"
  unset MATURIN_NO_INSTALL_RUST

  step "Python package flakeid-rs: the sdist into a fresh venv, built outside the checkout (cargo reusing target/), smoke test"
  # Unpacked in a temporary directory outside the checkout, every file's
  # time now (tar -m), and built there by pip with maturin (pyproject's
  # build-system): a host build (no zig), as a user's pip makes it.
  # CARGO_TARGET_DIR points cargo at the workspace's target/, whose release
  # build of the dependencies it reuses; flakeid, flakeid-bindings and the
  # extension compile again (their sources are newer than anything built).
  # In a fresh clone it builds them all, and leaves them for the Node step.
  # --no-cache-dir: pip would otherwise take a wheel it built before.
  rm -rf target/flakeid-rs-sdist-venv
  python3 -m venv target/flakeid-rs-sdist-venv
  local sdist_began sdist_seconds stamp="$outside/stamp" src
  touch "$stamp"
  sdist_began="$(now)"
  tar -xzmf "$sdist" -C "$outside"
  src="$outside/$(basename "$sdist" .tar.gz)"
  (cd "$outside" && CARGO_TARGET_DIR="$ROOT/target" \
    "$ROOT/target/flakeid-rs-sdist-venv/bin/pip" install --quiet --disable-pip-version-check \
    --no-cache-dir "$src")
  sdist_seconds="$(since "$sdist_began")"
  # The installed module is the one cargo has just linked.
  local built="$ROOT/target/release/libflakeid_rs.so" installed
  installed="$(target/flakeid-rs-sdist-venv/bin/python -c 'import sysconfig
print(sysconfig.get_paths()["platlib"] + "/flakeid_rs/_native.abi3.so")')"
  if [ ! "$built" -nt "$stamp" ] || ! cmp -s "$built" "$installed"; then
    echo "error: $installed is not $built as cargo linked it just now: pip did not build the sdist" >&2
    exit 1
  fi
  echo "$installed: built from the sdist just now (cargo's $built)"
  (cd "$outside" && "$ROOT/target/flakeid-rs-sdist-venv/bin/python" -c "$SMOKE_TEST")
  rm -rf "$outside"

  end_step
  echo "wheel $(basename "$wheel"): $(stat -c %s "$wheel") bytes ($(du -h "$wheel" | cut -f1)); pip install of it without Rust on PATH: $install_seconds s"
  echo "sdist $(basename "$sdist"): $(stat -c %s "$sdist") bytes; unpacked and built by pip outside the checkout (cargo reusing target/): $sdist_seconds s"
}

[ "$#" -eq 2 ] || usage
case "$1" in
  build) build "$2" ;;
  test) test_packages "$2" ;;
  *) usage ;;
esac
