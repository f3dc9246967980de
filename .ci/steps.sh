# Sourced by .ci/run and .ci/test: a line before every step with the seconds
# since CI began, the time each step took when it ends, and on failure the
# step that failed. .ci/run exports CI_STARTED, so the times of the .ci/test
# it hands over to continue from its own.

: "${CI_STARTED:=$(date +%s)}"
export CI_STARTED
step_name=""
step_began=0

ci_seconds() { echo $(($(date +%s) - CI_STARTED)); }

end_step() {
  if [ -n "$step_name" ]; then
    printf '==> [%ss] done in %ss: %s\n' "$(ci_seconds)" "$(($(ci_seconds) - step_began))" "$step_name"
  fi
  step_name=""
}

step() {
  end_step
  step_began="$(ci_seconds)"
  step_name="$*"
  printf '\n==> [%ss] %s\n' "$step_began" "$*"
}

# The parts a run may leave out, and only when FLAKEID_CI_ALLOW_SKIP names
# them (comma-separated): a part that cannot run fails CI otherwise.
SKIPPABLE=(miri)
skipped=()

# Fails unless every name in FLAKEID_CI_ALLOW_SKIP is one of SKIPPABLE, so a
# misspelt name cannot pass for an allowed skip.
check_allowed_skips() {
  local name known
  local IFS=,
  for name in ${FLAKEID_CI_ALLOW_SKIP:-}; do
    [ -z "$name" ] && continue
    for known in "${SKIPPABLE[@]}"; do
      [ "$name" = "$known" ] && continue 2
    done
    printf 'error: FLAKEID_CI_ALLOW_SKIP names %s; the parts that may be skipped: %s\n' \
      "$name" "${SKIPPABLE[*]}" >&2
    exit 1
  done
}

# skip PART REASON: PART cannot run here. Leaves it out if
# FLAKEID_CI_ALLOW_SKIP names it (the last line will say so), else fails
# the current step.
skip() {
  local part="$1"
  shift
  case ",${FLAKEID_CI_ALLOW_SKIP:-}," in
    *",$part,"*)
      step_name=""
      skipped+=("$part")
      printf '\n==> [%ss] SKIPPED %s (FLAKEID_CI_ALLOW_SKIP): %s\n' "$(ci_seconds)" "$part" "$*"
      ;;
    *)
      printf 'error: %s cannot run: %s\n(FLAKEID_CI_ALLOW_SKIP=%s leaves it out; the last line then says so)\n' \
        "$part" "$*" "$part" >&2
      exit 1
      ;;
  esac
}

# Test counts: a step that ran fewer tests than it should fails, where the
# runner alone would pass (a cfg that did not take, a filter that matched
# nothing, a test file no longer found).

# passed_in FILE: how many tests passed, by the `test result:` lines of
# cargo test's output in FILE.
passed_in() {
  awk '/^test result:/ { for (i = 2; i <= NF; i++) if ($i == "passed;") n += $(i - 1) }
    END { print n + 0 }' "$1"
}

# cargo_test_counted WHAT EXPECTED CMD...: runs CMD (a cargo test), showing
# its output, then fails unless exactly EXPECTED tests passed (EXPECTED 0
# always fails: a count of nothing is a count gone wrong).
cargo_test_counted() {
  local what="$1" expected="$2" out ran
  shift 2
  out="$(mktemp)"
  "$@" 2>&1 | tee "$out"
  ran="$(passed_in "$out")"
  rm -f "$out"
  if [ "$expected" -eq 0 ] || [ "$ran" -ne "$expected" ]; then
    echo "error: $ran $what passed; $expected expected" >&2
    exit 1
  fi
  echo "$ran of the $expected $what passed"
}

# node_test_counted DIR [ENV=VALUE...]: `node --test` in DIR (TAP), then
# fails unless as many tests passed as DIR's test files declare (each
# top-level `test(` call in a .js, .mjs or .cjs file outside node_modules)
# and none failed, was skipped, todo or cancelled: a test file node no
# longer finds, a test that skips itself or a run that found no file fails
# here, though `node --test` passes it. (A test with subtests counts each
# subtest too: declare them as top-level tests.)
node_test_counted() {
  local dir="$1" out expected pass fail other
  shift
  out="$(mktemp)"
  (cd "$dir" && env "$@" node --test --test-reporter=tap) | tee "$out"
  expected="$({ grep -rh --include='*.js' --include='*.mjs' --include='*.cjs' \
    --exclude-dir=node_modules '^test(' "$dir" || true; } | wc -l)"
  read -r pass fail other < <(awk '/^# pass / { p = $3 } /^# fail / { f = $3 }
    /^# (skipped|todo|cancelled) / { o += $3 } END { print p + 0, f + 0, o + 0 }' "$out")
  rm -f "$out"
  if [ "$expected" -eq 0 ] || [ "$pass" -ne "$expected" ] || [ "$fail" -ne 0 ] \
    || [ "$other" -ne 0 ]; then
    echo "error: in $dir, $pass tests passed, $fail failed, $other skipped, todo or" \
      "cancelled; its test files declare $expected" >&2
    exit 1
  fi
  echo "$pass of the $expected tests in $dir passed"
}

# The last line: how long, and what was left out.
all_passed() {
  end_step
  if [ "${#skipped[@]}" -eq 0 ]; then
    printf '\n==> all tests passed in %ss\n' "$(ci_seconds)"
  else
    local IFS=,
    printf '\n==> all tests passed in %ss (skipped: %s)\n' "$(ci_seconds)" "${skipped[*]}"
  fi
}

report_failure() {
  local status=$?
  if [ "$status" -ne 0 ] && [ -n "$step_name" ]; then
    printf '\n==> [%ss] FAILED (exit %s) after %ss in: %s\n' \
      "$(ci_seconds)" "$status" "$(($(ci_seconds) - step_began))" "$step_name" >&2
  fi
}
trap report_failure EXIT

# The newest PostgreSQL major installed (Debian's postgresql package pulls
# in one): the one the extension (pg/) is built for and tested against.
pg_major() { ls /usr/lib/postgresql | sort -n | tail -n 1; }

# no_rust_path DIR: prints a PATH of one directory, DIR, holding a link to
# every command on the current PATH but cargo, rustc, rustup, rustdoc,
# cargo-* and protoc, and checks that none of those resolves through it:
# the package steps install and test the built artifacts with it, as a user
# without Rust would.
no_rust_path() {
  local shadow="$1" dir file name
  rm -rf "$shadow"
  mkdir -p "$shadow"
  local IFS=:
  for dir in $PATH; do
    [ -d "$dir" ] || continue
    for file in "$dir"/*; do
      name="${file##*/}"
      case "$name" in
        cargo | cargo-* | rustc | rustup | rustdoc | rust-* | protoc) continue ;;
      esac
      [ -x "$file" ] && [ ! -d "$file" ] && [ ! -e "$shadow/$name" ] \
        && ln -s "$file" "$shadow/$name"
    done
  done
  for name in cargo rustc rustup protoc; do
    if PATH="$shadow" command -v "$name" >/dev/null 2>&1; then
      echo "error: $name is still on the PATH made without Rust ($shadow)" >&2
      return 1
    fi
  done
  echo "$shadow"
}

# one_file OUTDIR GLOB WHAT: the one file OUTDIR has matching GLOB, or fails
# saying what is missing or too many.
one_file() {
  local found=() file
  for file in "$1"/$2; do
    [ -e "$file" ] && found+=("$file")
  done
  if [ "${#found[@]}" -ne 1 ]; then
    echo "error: ${#found[@]} $3 ($2) in $1, one expected; run '$0 build $1' first" >&2
    exit 1
  fi
  echo "${found[0]}"
}
