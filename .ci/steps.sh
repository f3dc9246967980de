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

skip() {
  end_step
  printf '\n==> [%ss] SKIPPED: %s\n' "$(ci_seconds)" "$*"
}

report_failure() {
  local status=$?
  if [ "$status" -ne 0 ] && [ -n "$step_name" ]; then
    printf '\n==> [%ss] FAILED (exit %s) after %ss in: %s\n' \
      "$(ci_seconds)" "$status" "$(($(ci_seconds) - step_began))" "$step_name" >&2
  fi
}
trap report_failure EXIT
