#!/usr/bin/env bash
# Sets the version of every crate and package flakeid releases, then checks
# them with .ci/versions.sh.
#
#   scripts/set-version.sh 0.2.0              the next version, its CHANGELOG
#                                             section still Unreleased
#   scripts/set-version.sh 0.2.0 2027-01-15   and dates its section (needed
#                                             before tagging v0.2.0)
#
# Rewrites: the root Cargo.toml's [workspace.package] version (flakeid's
# [package] version while there is none) and any literal [package] version
# of the released crates (flakeid, flakeid-server, flakeid-bindings,
# flakeid-python, flakeid-node, pg_flakeid), the version of their path
# dependencies on each other (e.g. `flakeid = { path = "..", version =
# "=X" }`), a literal version in bindings/python/pyproject.toml, the
# version of bindings/node/package.json and its optionalDependencies
# flakeid-rs-*, package-lock.json's own entries, each
# bindings/node/npm/*/package.json, Cargo.lock and pg/Cargo.lock (`cargo
# update --workspace`), and CHANGELOG.md: the [Unreleased] entries move
# into a section `## [VERSION] - DATE|Unreleased` (a section not yet
# released is renamed rather than a second one added) and the links at
# the bottom follow. Running it again with the same arguments changes
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 VERSION [YYYY-MM-DD]   (VERSION: X.Y.Z or X.Y.Z-pre)" >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
version="$1"
date="${2:-}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "error: $version is not a SemVer version (X.Y.Z or X.Y.Z-pre, no leading v)" >&2
  exit 2
fi
if [ -n "$date" ] && ! [[ "$date" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
  echo "error: the date $date is not YYYY-MM-DD" >&2
  exit 2
fi
command -v cargo >/dev/null || { echo "error: cargo is not on PATH" >&2; exit 1; }
command -v python3 >/dev/null || { echo "error: python3 is not on PATH" >&2; exit 1; }

metadata="$(mktemp)"
trap 'rm -f "$metadata"' EXIT
cargo metadata --no-deps --format-version 1 --offline >"$metadata"

python3 - "$metadata" "$version" "$date" <<'PY'
import glob, json, os, re, sys

if sys.version_info < (3, 11):
    sys.exit(f"error: scripts/set-version.sh needs Python 3.11 or later (tomllib); "
             f"python3 is {sys.version.split()[0]}")
import tomllib

metadata_path, new, date = sys.argv[1:4]
root = os.getcwd()
RELEASED = {"flakeid-server", "flakeid-bindings", "flakeid-python", "flakeid-node"}

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()

def write(path, text, old):
    if text != old:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"  {path}")

with open(metadata_path, encoding="utf-8") as f:
    meta = json.load(f)
members = set(meta.get("workspace_members", []))
released = {p["name"]: os.path.relpath(p["manifest_path"], root)
            for p in meta["packages"]
            if p["id"] in members and (p.get("publish") != [] or p["name"] in RELEASED)}
names = set(released) | {"pg_flakeid"}
manifests = sorted(set(released.values()) | {"Cargo.toml", "pg/Cargo.toml"})

print(f"setting version {new}:")

# Cargo manifests: the version line of [package] / [workspace.package] (a
# literal one; `version.workspace = true` is left alone), and the version
# of a path dependency on a released crate.
table_re = re.compile(r"^\s*\[([^\]]+)\]\s*(#.*)?$")
version_re = re.compile(r'^(\s*version\s*=\s*")[^"]*(".*)$')
dep_re = re.compile(r'^(\s*([A-Za-z0-9_-]+)\s*=\s*\{[^}]*\bpath\s*=[^}]*\})(.*)$')
dep_version_re = re.compile(r'(\bversion\s*=\s*")([=^~]?)[^"]*(")')
for path in manifests:
    old = read(path)
    lines = old.splitlines(keepends=True)
    table = None
    for i, line in enumerate(lines):
        m = table_re.match(line)
        if m:
            table = m.group(1).strip()
            continue
        if table in ("package", "workspace.package"):
            m = version_re.match(line)
            if m:
                lines[i] = f"{m.group(1)}{new}{m.group(2)}\n" if line.endswith("\n") \
                    else f"{m.group(1)}{new}{m.group(2)}"
                continue
        if table and (table.endswith("dependencies") or table.startswith("target.")):
            m = dep_re.match(line)
            if m and m.group(2) in names:
                lines[i] = dep_version_re.sub(lambda v: f"{v.group(1)}{v.group(2)}{new}{v.group(3)}",
                                              line, count=1)
    write(path, "".join(lines), old)

# Python: a literal version only (dynamic takes the crate's).
path = "bindings/python/pyproject.toml"
old = read(path)
if "version" in tomllib.loads(old).get("project", {}):
    text = re.sub(r'(?m)^(version\s*=\s*")[^"]*(")', rf"\g<1>{new}\g<2>", old, count=1)
    write(path, text, old)

# Node: edited as text (the files keep their layout), then checked as JSON.
def set_json_text(path, edits, expect):
    old = read(path)
    text = old
    for pattern, count in edits:
        text = re.sub(pattern, lambda m: f"{m.group(1)}{new}{m.group(2)}", text, count=count)
    data = json.loads(text)
    problems = expect(data)
    if problems:
        sys.exit(f"error: {path}: could not set the version: {problems}")
    write(path, text, old)

top_version = (r'(?m)^(  "version"\s*:\s*")[^"]*(")', 1)
platform_deps = (r'("flakeid-rs-[A-Za-z0-9_.-]+"\s*:\s*")[^"]*(")', 0)

def expect_package(data):
    bad = []
    if data.get("version") != new:
        bad.append(f"version is {data.get('version')!r}")
    for dep, spec in data.get("optionalDependencies", {}).items():
        if dep.startswith("flakeid-rs-") and spec != new:
            bad.append(f"optionalDependencies {dep} is {spec!r}")
    return "; ".join(bad)

set_json_text("bindings/node/package.json", [top_version, platform_deps], expect_package)
for path in sorted(glob.glob("bindings/node/npm/*/package.json")):
    set_json_text(path, [top_version], expect_package)

# package-lock.json: its own entries (the top and packages[""]), written
# back as npm writes it (two-space JSON and a newline).
path = "bindings/node/package-lock.json"
if os.path.exists(path):
    old = read(path)
    lock = json.loads(old)
    lock["version"] = new
    own = lock.get("packages", {}).get("")
    if own is not None:
        own["version"] = new
        for dep in own.get("optionalDependencies", {}):
            if dep.startswith("flakeid-rs-"):
                own["optionalDependencies"][dep] = new
    write(path, json.dumps(lock, indent=2, ensure_ascii=False) + "\n", old)

# CHANGELOG.md.
path = "CHANGELOG.md"
old = read(path)
lines = old.splitlines(keepends=True)
heading_re = re.compile(r"^## \[([^\]]+)\](?:\s+-\s+(.*?))?\s*$")
heads = [(i, m.group(1), (m.group(2) or "").strip())
         for i, l in enumerate(lines) if (m := heading_re.match(l))]
unrel = next((h for h in heads if h[1].lower() == "unreleased"), None)
top = next((h for h in heads if h[1].lower() != "unreleased"), None)
if unrel is None:
    sys.exit("error: CHANGELOG.md has no '## [Unreleased]' section")
if top is not None and top[0] < unrel[0]:
    sys.exit("error: CHANGELOG.md: '## [Unreleased]' must come before the version sections")
base = "https://github.com/flakeid/flakeid"
# The [Unreleased] section's entries (without leading and trailing blanks).
end = top[0] if top else next((i for i, l in enumerate(lines)
                               if i > unrel[0] and re.match(r"^\[[^\]]+\]:", l)), len(lines))
body = lines[unrel[0] + 1:end]
while body and not body[0].strip():
    body.pop(0)
while body and not body[-1].strip():
    body.pop()
previous = None  # the last released version, for the compare link
if top is not None and top[1] == new:
    # The section exists: its date, and any new entries on top.
    when = date or top[2] or "Unreleased"
    section_body = body
    target = top
    previous = next((h[1] for h in heads if h[0] > top[0]), None)
elif top is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", top[2]):
    # The top section was never released: it becomes this version.
    when = date or "Unreleased"
    section_body = body
    target = top
    previous = next((h[1] for h in heads if h[0] > top[0]), None)
else:
    when = date or "Unreleased"
    section_body = body
    target = None
    previous = top[1] if top else None
heading = f"## [{new}] - {when}\n"
if target is None:
    new_lines = (lines[:unrel[0] + 1] + ["\n", heading, "\n"]
                 + section_body + (["\n"] if section_body else []) + lines[end:])
else:
    rest = lines[target[0] + 1:]
    while rest and not rest[0].strip():
        rest.pop(0)
    new_lines = (lines[:unrel[0] + 1] + ["\n", heading, "\n"]
                 + section_body + (["\n"] if section_body else []) + rest)
text = "".join(new_lines)
# The links: [Unreleased] compares from this version; this version's link.
old_name = target[1] if target is not None else None
link = (f"[{new}]: {base}/compare/v{previous}...v{new}\n" if previous
        else f"[{new}]: {base}/releases/tag/v{new}\n")
text = re.sub(r"(?m)^\[Unreleased\]:.*\n?", f"[Unreleased]: {base}/compare/v{new}...HEAD\n", text)
if old_name is not None and old_name != new:
    text = re.sub(rf"(?m)^\[{re.escape(old_name)}\]:.*\n?", "", text)
text = re.sub(rf"(?m)^\[{re.escape(new)}\]:.*\n?", "", text)
if not re.search(r"(?m)^\[Unreleased\]:", text):
    text = text.rstrip("\n") + f"\n\n[Unreleased]: {base}/compare/v{new}...HEAD\n"
text = re.sub(r"(?m)^(\[Unreleased\]:.*\n)", lambda m: m.group(1) + link, text, count=1)
write(path, text, old)
PY

# The lock files: only the workspace's own entries change.
for dir in . pg; do
  if ! (cd "$dir" && cargo update --workspace --offline --quiet 2>/dev/null); then
    (cd "$dir" && cargo update --workspace --quiet)
  fi
done

.ci/versions.sh ${2:+--tag "v$version"}
