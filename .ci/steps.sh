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
