#!/usr/bin/env bash
# The Node packages flakeid-rs and flakeid-rs-linux-x64-gnu as a release
# publishes them to npm: built, then installed and tested as a user without
# Rust gets them.
#
#   .ci/package-node.sh build OUTDIR
#       the addon (cargo build --release of flakeid-node, in target/) copied
#       into bindings/node/npm/linux-x64-gnu/, then `npm pack` of that
#       platform package and of the main package (whose prepack stages the
#       Rust sources of its source-build fallback in rust/) into OUTDIR.
#       Prints the newest glibc symbol version the addon needs.
#   .ci/package-node.sh test OUTDIR
#       both tarballs `npm install`ed into a fresh folder whose PATH has no
#       cargo, rustc, rustup or protoc; checks that no install script ran
#       and that the addon loaded is the platform package's; the package's
#       tests (bindings/node/tests) run against that install, counted; then
#       the fallback: `npx flakeid-rs-build` there (with Rust, cargo reusing
#       target/) and the loader taking the local build.
#
# The tests start redis-server, PostgreSQL and MariaDB themselves (the
# Debian packages .ci/test installs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PLATFORM=linux-x64-gnu
PKG_DIR="$ROOT/bindings/node"
INSTALL="$ROOT/target/flakeid-rs-node-install"

. .ci/steps.sh

usage() {
  echo "usage: $0 build OUTDIR | test OUTDIR" >&2
  exit 2
}

version() { node -p "require('$PKG_DIR/package.json').version"; }

build() {
  local out="$1" library glibc
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  rm -f "$out"/flakeid-rs-*.tgz

  step "flakeid-rs-$PLATFORM: the addon (cargo build --release -p flakeid-node)"
  library="$(cargo build --release --locked -p flakeid-node --message-format json-render-diagnostics \
    | node -e 'let lib; for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
        if (!line.startsWith("{")) continue
        const m = JSON.parse(line)
        if (m.reason === "compiler-artifact" && m.target.name === "flakeid_node")
          lib = m.filenames.find((f) => f.endsWith(".so"))
      }
      if (!lib) { console.error("cargo built no flakeid_node library"); process.exit(1) }
      console.log(lib)')"
  # Stripped, as maturin strips the Python wheel's module: the release
  # profile's line tables are most of the file.
  cp "$library" "$PKG_DIR/npm/$PLATFORM/flakeid-rs.$PLATFORM.node"
  # npm packs no symbolic link: the license goes in as a copy.
  cp "$ROOT/LICENSE" "$PKG_DIR/npm/$PLATFORM/LICENSE"
  strip --strip-unneeded "$PKG_DIR/npm/$PLATFORM/flakeid-rs.$PLATFORM.node"
  glibc="$(objdump -T "$library" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)"
  echo "the addon needs glibc ${glibc#GLIBC_} or later (its newest versioned symbol)"

  step "npm pack: flakeid-rs-$PLATFORM and flakeid-rs (prepack stages rust/)"
  (cd "$PKG_DIR/npm/$PLATFORM" && npm pack --pack-destination "$out" --silent >/dev/null)
  (cd "$PKG_DIR" && npm pack --pack-destination "$out" --silent >/dev/null)
  local v
  v="$(version)"
  one_file "$out" "flakeid-rs-$PLATFORM-$v.tgz" "platform tarballs" >/dev/null
  one_file "$out" "flakeid-rs-$v.tgz" "main tarballs" >/dev/null
  # What each tarball holds: the addon and license; the loader, types,
  # license and the sources. (Listings in variables: `tar | grep -q` fails
  # under pipefail when grep stops reading early.)
  local listing file
  listing="$(tar -tzf "$out/flakeid-rs-$PLATFORM-$v.tgz")"
  for file in "flakeid-rs.$PLATFORM.node" LICENSE; do
    grep -qx "package/$file" <<<"$listing" \
      || { echo "error: flakeid-rs-$PLATFORM-$v.tgz lacks $file" >&2; exit 1; }
  done
  listing="$(tar -tzf "$out/flakeid-rs-$v.tgz")"
  for file in index.js index.d.ts LICENSE scripts/build.js rust/Cargo.toml rust/Cargo.lock \
    rust/node/Cargo.toml rust/core/Cargo.toml rust/flakeid/Cargo.toml rust/flakeid/src/lib.rs; do
    grep -qx "package/$file" <<<"$listing" \
      || { echo "error: flakeid-rs-$v.tgz lacks $file" >&2; exit 1; }
  done
  if grep -E '\.node$|/target/|^package/tests/' <<<"$listing"; then
    echo "error: flakeid-rs-$v.tgz holds an addon, a build or the tests" >&2
    exit 1
  fi
  end_step
  ls -l "$out"/flakeid-rs-*.tgz
}

test_packages() {
  local out="$1" v platform_tgz main_tgz started seconds nrp loaded
  out="$(cd "$out" && pwd)"
  v="$(version)"
  platform_tgz="$(one_file "$out" "flakeid-rs-$PLATFORM-$v.tgz" "platform tarballs")"
  main_tgz="$(one_file "$out" "flakeid-rs-$v.tgz" "main tarballs")"

  step "Node package flakeid-rs: the tarballs into a fresh folder without Rust on PATH, node --test there (workers, cluster, bad input, leases, types, loader)"
  rm -rf "$INSTALL"
  mkdir -p "$INSTALL"
  echo '{ "name": "flakeid-rs-install-test", "private": true }' >"$INSTALL/package.json"
  nrp="$(no_rust_path "$ROOT/target/no-rust-bin-node")"
  # The two tarballs as a user's registry install gets them (npm takes the
  # platform package for the optional dependency it satisfies; the other
  # platforms' packages are skipped: wrong os/cpu, or not on the registry).
  started="$(date +%s%N)"
  (cd "$INSTALL" && PATH="$nrp" npm install --no-audit --no-fund --foreground-scripts \
    "$platform_tgz" "$main_tgz" 2>&1 | tee "$INSTALL/npm-install.log")
  seconds="$(( ($(date +%s%N) - started) / 1000000 ))"
  if grep -E '^> .*(install|build)' "$INSTALL/npm-install.log"; then
    echo "error: npm ran an install script" >&2
    exit 1
  fi
  # The dev dependencies the tests use, at package.json's versions.
  (cd "$INSTALL" && PATH="$nrp" npm install --no-audit --no-fund --no-save \
    "typescript@$(node -p "require('$PKG_DIR/package.json').devDependencies.typescript")" \
    "@types/node@$(node -p "require('$PKG_DIR/package.json').devDependencies['@types/node']")")
  loaded="$(cd "$INSTALL" && PATH="$nrp" node -e 'require("flakeid-rs")
    console.log(Object.keys(require.cache).filter((f) => f.endsWith(".node")).join(" "))')"
  if [ "$loaded" != "$INSTALL/node_modules/flakeid-rs-$PLATFORM/flakeid-rs.$PLATFORM.node" ]; then
    echo "error: flakeid-rs loaded '$loaded', not the platform package's addon" >&2
    exit 1
  fi
  echo "flakeid-rs loaded $loaded"
  # The tests beside the installed index.js, so their require('..') is it.
  cp -r "$PKG_DIR/tests" "$INSTALL/node_modules/flakeid-rs/tests"
  PATH="$nrp" node_test_counted "$INSTALL/node_modules/flakeid-rs"
  end_step

  step "Node package flakeid-rs: the source-build fallback (npx flakeid-rs-build, cargo reusing target/)"
  local fallback_started fallback_seconds
  fallback_started="$(date +%s)"
  (cd "$INSTALL" && CARGO_TARGET_DIR="$ROOT/target" npx --no-install flakeid-rs-build)
  fallback_seconds="$(( $(date +%s) - fallback_started ))"
  loaded="$(cd "$INSTALL" && node -e 'const { Generator } = require("flakeid-rs")
    const gen = new Generator("twitter", { nodeId: 5 })
    const ids = gen.nextIds(10000)
    for (let i = 1; i < ids.length; i++) if (ids[i] <= ids[i - 1]) throw new Error(`not increasing at ${i}`)
    if (gen.decode(ids[0]).nodeId !== 5n) throw new Error("node id not 5")
    console.log(Object.keys(require.cache).filter((f) => f.endsWith(".node")).join(" "))')"
  if [ "$loaded" != "$INSTALL/node_modules/flakeid-rs/flakeid.node" ]; then
    echo "error: after the source build, flakeid-rs loaded '$loaded', not flakeid.node" >&2
    exit 1
  fi
  echo "after npx flakeid-rs-build: flakeid-rs loaded $loaded (10,000 IDs increasing, node id 5)"
  end_step

  echo "flakeid-rs-$PLATFORM-$v.tgz: $(stat -c %s "$platform_tgz") bytes" \
    "(the addon unpacked: $(stat -c %s "$INSTALL/node_modules/flakeid-rs-$PLATFORM/flakeid-rs.$PLATFORM.node") bytes);" \
    "flakeid-rs-$v.tgz: $(stat -c %s "$main_tgz") bytes"
  echo "npm install of the two tarballs without Rust on PATH: ${seconds} ms;" \
    "the source-build fallback: ${fallback_seconds} s"
}

[ "$#" -eq 2 ] || usage
case "$1" in
  build) build "$2" ;;
  test) test_packages "$2" ;;
  *) usage ;;
esac
