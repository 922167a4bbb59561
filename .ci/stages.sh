# Sourced by .ci/run: names the stages of the run and times them. `stage NAME` ends the stage
# before it and starts NAME; the commands of a stage are the plain lines that follow it (so
# the README's test command stays a line of .ci/run, word for word). `stages_report` prints
# each stage's wall time and the total, also when the run fails (then the failing stage is
# marked), so a slow or broken stage is named in the log.

ci_stage_names=()
ci_stage_seconds=()
ci_stage_current=
ci_stage_started=0
ci_run_started=$SECONDS

stage() {
  if [[ -n $ci_stage_current ]]; then
    ci_stage_names+=("$ci_stage_current")
    ci_stage_seconds+=($((SECONDS - ci_stage_started)))
  fi
  ci_stage_current=$1
  ci_stage_started=$SECONDS
  printf '\n== stage %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"
}

stages_report() {
  local status=$1 i
  if [[ -n $ci_stage_current ]]; then
    ci_stage_names+=("$ci_stage_current")
    ci_stage_seconds+=($((SECONDS - ci_stage_started)))
    ci_stage_current=
  fi
  printf '\n== stage times (s)\n'
  for i in "${!ci_stage_names[@]}"; do
    local mark=
    if [[ $status -ne 0 && $i -eq $((${#ci_stage_names[@]} - 1)) ]]; then mark='  <- failed here'; fi
    printf '%6d  %s%s\n' "${ci_stage_seconds[$i]}" "${ci_stage_names[$i]}" "$mark"
  done
  printf '%6d  total (exit %d)\n' $((SECONDS - ci_run_started)) "$status"
}
