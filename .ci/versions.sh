#!/usr/bin/env bash
# Prints THE version of flakeid and fails unless every crate and package
# released with it says the same version.
#
#   .ci/versions.sh                  the check (CI runs it)
#   .ci/versions.sh --tag v1.2.3     also: the tag is v<version> and the
#                                    CHANGELOG section of it has a date (the
#                                    release workflow's first job)
#
# THE version: the root Cargo.toml's [workspace.package] version (the
# [package] version of flakeid while there is none). Must equal it:
# - every workspace crate that is published (not `publish = false`), and
#   flakeid-server, flakeid-bindings, flakeid-python, flakeid-node
#   (cargo metadata), their entries in Cargo.lock, and the version of a
#   path dependency of one on another (e.g. flakeid-server's on flakeid);
# - pg/Cargo.toml's version (its own workspace) and pg/Cargo.lock's entry;
# - bindings/python/pyproject.toml: `dynamic = ["version"]` (maturin takes
#   the crate's), or a literal version equal to it;
# - bindings/node/package.json's version and each of its
#   optionalDependencies flakeid-rs-*; package-lock.json's own entries;
# - each bindings/node/npm/*/package.json's version (and its name is
#   flakeid-rs-<folder>);
# - the top version section of CHANGELOG.md (`## [X.Y.Z] - YYYY-MM-DD`, or
#   `- Unreleased` until it is released).
# Needs cargo and python3 (3.11 or later: tomllib); reads, never writes.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 [--tag vX.Y.Z]" >&2; exit 2; }
tag=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tag)
      if [ $# -lt 2 ] || [ -z "$2" ]; then usage; fi
      tag="$2"
      shift 2
      ;;
    --tag=?*) tag="${1#--tag=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1" >&2; usage ;;
  esac
done

command -v cargo >/dev/null || { echo "error: cargo is not on PATH" >&2; exit 1; }
command -v python3 >/dev/null || { echo "error: python3 is not on PATH" >&2; exit 1; }

metadata="$(mktemp)"
trap 'rm -f "$metadata"' EXIT
# --no-deps: the workspace's own packages, nothing resolved or fetched.
cargo metadata --no-deps --format-version 1 --offline >"$metadata"

python3 - "$metadata" "$tag" <<'PY'
import glob, json, os, re, sys

if sys.version_info < (3, 11):
    sys.exit(f"error: .ci/versions.sh needs Python 3.11 or later (tomllib); "
             f"python3 is {sys.version.split()[0]}")
import tomllib

metadata_path, tag = sys.argv[1], sys.argv[2]
root = os.getcwd()
problems = []

def rel(path):
    return os.path.relpath(path, root)

def toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)

def js(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)

# THE version.
cargo_toml = toml("Cargo.toml")
the = cargo_toml.get("workspace", {}).get("package", {}).get("version")
source = "Cargo.toml [workspace.package] version"
if the is None:
    the = cargo_toml.get("package", {}).get("version")
    source = "Cargo.toml [package] version (no [workspace.package] version yet)"
if not isinstance(the, str):
    sys.exit("error: Cargo.toml has no [workspace.package] version (nor a [package] "
             "version): THE version is missing")
if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", the):
    problems.append(f"{source} is {the!r}, not a SemVer version X.Y.Z[-pre]")

found = []  # (what, version) for the listing

def check(what, version):
    found.append((what, version))
    if version != the:
        problems.append(f"{what} is {version!r}, not {the!r}")

# The workspace's crates: the published ones and those released as packages.
RELEASED = {"flakeid-server", "flakeid-bindings", "flakeid-python", "flakeid-node"}
meta = js(metadata_path)
members = set(meta.get("workspace_members", []))
released = []
for pkg in meta["packages"]:
    if pkg["id"] not in members:
        continue
    published = pkg.get("publish") != []  # publish = false: []
    if published or pkg["name"] in RELEASED:
        released.append(pkg["name"])
        check(f"{rel(pkg['manifest_path'])} (crate {pkg['name']})", pkg["version"])
# A path dependency on one of them with a version (needed to publish):
# `version = "X"` or "=X", "^X", "~X" of THE version.
def check_req(what, req):
    if req in (None, "*"):
        return
    check(what, req.lstrip("=^~ "))
for pkg in meta["packages"]:
    if pkg["name"] not in released:
        continue
    for dep in pkg["dependencies"]:
        if dep["name"] in released and dep.get("path"):
            check_req(f"{rel(pkg['manifest_path'])} (dependency {dep['name']} of "
                      f"{pkg['name']})", dep.get("req"))
for name in sorted(RELEASED - set(released)):
    problems.append(f"crate {name} is not a member of the workspace (cargo metadata)")

def lock_entries(lock_path, names):
    if not os.path.exists(lock_path):
        problems.append(f"{lock_path} is missing")
        return
    lock = toml(lock_path)
    for name in names:
        entries = [p for p in lock.get("package", [])
                   if p["name"] == name and "source" not in p]
        if not entries:
            problems.append(f"{lock_path} has no entry for {name} (run `cargo update -w`)")
        for p in entries:
            check(f"{lock_path} (package {name})", p["version"])

lock_entries("Cargo.lock", sorted(released))

# The PostgreSQL extension: its own workspace.
pg = toml("pg/Cargo.toml")
pg_name = pg.get("package", {}).get("name", "pg_flakeid")
check(f"pg/Cargo.toml (crate {pg_name})", pg.get("package", {}).get("version"))
for name, dep in sorted(pg.get("dependencies", {}).items()):
    if name in released and isinstance(dep, dict) and "path" in dep:
        check_req(f"pg/Cargo.toml (dependency {name})", dep.get("version"))
lock_entries("pg/Cargo.lock", [pg_name])

# Python: maturin takes the crate's version unless pyproject.toml has one.
project = toml("bindings/python/pyproject.toml").get("project", {})
if "version" in project:
    check("bindings/python/pyproject.toml [project] version", project["version"])
elif "version" in project.get("dynamic", []):
    found.append(("bindings/python/pyproject.toml", "dynamic (the crate's)"))
else:
    problems.append("bindings/python/pyproject.toml has neither a [project] version "
                    "nor dynamic = [\"version\"]")

# Node: the main package, its platform packages and its lock file.
main = js("bindings/node/package.json")
check("bindings/node/package.json version", main.get("version"))
for dep, spec in sorted(main.get("optionalDependencies", {}).items()):
    if dep.startswith("flakeid-rs-"):
        check(f"bindings/node/package.json optionalDependencies {dep}", spec)
lock_path = "bindings/node/package-lock.json"
if os.path.exists(lock_path):
    lock = js(lock_path)
    check(f"{lock_path} version", lock.get("version"))
    own = lock.get("packages", {}).get("", {})
    check(f"{lock_path} packages[\"\"] version", own.get("version"))
    for dep, spec in sorted(own.get("optionalDependencies", {}).items()):
        if dep.startswith("flakeid-rs-"):
            check(f"{lock_path} packages[\"\"] optionalDependencies {dep}", spec)
platforms = sorted(glob.glob("bindings/node/npm/*/package.json"))
listed = {d for d in main.get("optionalDependencies", {}) if d.startswith("flakeid-rs-")}
for path in platforms:
    folder = os.path.basename(os.path.dirname(path))
    pkg = js(path)
    check(f"{path} version", pkg.get("version"))
    if pkg.get("name") != f"flakeid-rs-{folder}":
        problems.append(f"{path} is named {pkg.get('name')!r}, not 'flakeid-rs-{folder}'")
    if listed and pkg.get("name") not in listed:
        problems.append(f"{path} ({pkg.get('name')}) is not in bindings/node/package.json "
                        "optionalDependencies")
for dep in sorted(listed):
    folder = dep[len("flakeid-rs-"):]
    if not os.path.exists(f"bindings/node/npm/{folder}/package.json"):
        problems.append(f"bindings/node/package.json optionalDependencies lists {dep}, "
                        f"but bindings/node/npm/{folder}/package.json is missing")

# CHANGELOG.md: the first version section (after [Unreleased]).
heading = re.compile(r"^## \[([^\]]+)\](?:\s+-\s+(.*?))?\s*$")
section = None
if not os.path.exists("CHANGELOG.md"):
    problems.append("CHANGELOG.md is missing")
else:
    with open("CHANGELOG.md", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = heading.match(line)
            if m and m.group(1).lower() != "unreleased":
                section = (n, m.group(1), (m.group(2) or "").strip())
                break
    if section is None:
        problems.append("CHANGELOG.md has no version section (## [X.Y.Z] - YYYY-MM-DD)")
    else:
        n, version, date = section
        check(f"CHANGELOG.md line {n} (top version section)", version)
        if not (re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) or date.lower() == "unreleased"):
            problems.append(f"CHANGELOG.md line {n}: the section of {version} has date "
                            f"{date!r}, not YYYY-MM-DD or Unreleased")

# A release tag.
if tag:
    if tag != f"v{the}":
        problems.append(f"the tag is {tag!r}, but the version is {the!r} (tag v{the})")
    if section is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", section[2]):
        problems.append(f"CHANGELOG.md line {section[0]}: the section of {section[1]} is "
                        f"dated {section[2] or 'nothing'!r}; a release needs its date "
                        f"(scripts/set-version.sh {the} YYYY-MM-DD)")

if problems:
    print(f"error: the versions disagree with {source} = {the!r}:", file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    sys.exit(1)
if os.environ.get("VERBOSE"):
    for what, version in found:
        print(f"  {what}: {version}", file=sys.stderr)
print(the)
PY
