#!/usr/bin/env bash
# Runs every C-ABI suite (see Makefile) and closes with one line
# "N passed, M failed" summing them; exits non-zero if anything failed.
# A suite that exits non-zero without reporting a failure counts as one failure.
# Suites joined by "+" run at the same time (each into its own log, printed
# whole once all of them ended): the Redis suites wait on leases and timeouts
# far more than they compute.
set -u
cd "$(dirname "$0")"
mkdir -p build
suites=(rust header-compat c-asan c-tsan c-shared c-valgrind c-open-asan c-open-tsan c-open-shared
        c-open-valgrind fuzz-plain fuzz-asan fuzz-tsan c-redis-asan+c-redis-shared+example-redis
        c-redis-tsan+c-redis-valgrind cxx-unwind examples link-line install-test libuv zig)
# VOLT_SUITES="a b+c": only these (to repeat some).
[[ -n ${VOLT_SUITES:-} ]] && read -r -a suites <<<"$VOLT_SUITES"
total_pass=0
total_fail=0
# Runs one suite into build/<suite>.log (and the terminal unless $2 is "quiet").
run_suite() {
  local suite=$1 log="build/$1.log"
  # A suite that hangs fails after VOLT_SUITE_TIMEOUT seconds instead of
  # holding the run: timeout(1) gives it its own process group and kills all
  # of it (forked children too, which would otherwise keep tee's pipe open).
  if [[ ${2:-} == quiet ]]; then
    # Run in the background (see below), where a script's jobs ignore SIGINT
    # and SIGQUIT: the signal tests need them at their defaults.
    env --default-signal=INT,QUIT timeout -k 30 "${VOLT_SUITE_TIMEOUT:-1500}" \
      make --no-print-directory "$suite" >"$log" 2>&1
  else
    timeout -k 30 "${VOLT_SUITE_TIMEOUT:-1500}" make --no-print-directory "$suite" 2>&1 | tee "$log"
    return "${PIPESTATUS[0]}"
  fi
}

# Adds a finished suite's counts (from its log) to the totals.
tally() {
  local suite=$1 rc=$2 secs=$3 log="build/$1.log"
  [[ $rc -eq 124 || $rc -eq 137 ]] && echo "--- $suite: killed after ${VOLT_SUITE_TIMEOUT:-1500} s (a hang)" | tee -a "$log"
  local pass=0 fail=0 p f line z
  # cargo test: "test result: ok. 4 passed; 0 failed; ..."
  while read -r p f; do pass=$((pass + p)); fail=$((fail + f)); done < <(
    sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$log")
  # our C harness and header-compat: "[suite:] N passed, M failed"
  line=$(grep -E '^([a-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [[ -n $line ]]; then
    read -r p f < <(sed -E 's/^([a-z-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2 \3/' <<<"$line")
    pass=$((pass + p)); fail=$((fail + f))
  fi
  # zig test: "All 3 tests passed." or "2 passed; 0 skipped; 1 failed."
  if z=$(sed -n 's/^All \([0-9]*\) tests passed\./\1/p' "$log" | tail -n 1) && [[ -n $z ]]; then
    pass=$((pass + z))
  elif z=$(sed -n 's/^\([0-9]*\) passed; [0-9]* skipped; \([0-9]*\) failed\./\1 \2/p' "$log" | tail -n 1) && [[ -n $z ]]; then
    read -r p f <<<"$z"; pass=$((pass + p)); fail=$((fail + f))
  fi
  if [[ $rc -ne 0 && $fail -eq 0 ]]; then fail=1; fi
  echo "--- $suite: $pass passed, $fail failed (exit $rc, $secs s)"
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
}

for entry in "${suites[@]}"; do
  IFS=+ read -r -a group <<<"$entry"
  start=$SECONDS
  if [[ ${#group[@]} -eq 1 ]]; then
    echo "=== $entry"
    run_suite "$entry"
    tally "$entry" $? $((SECONDS - start))
    continue
  fi
  echo "=== ${group[*]} (at the same time)"
  pids=()
  for suite in "${group[@]}"; do
    run_suite "$suite" quiet &
    pids+=($!)
  done
  for i in "${!group[@]}"; do
    wait "${pids[$i]}"
    rc=$?
    echo "=== ${group[$i]}"
    cat "build/${group[$i]}.log"
    tally "${group[$i]}" $rc $((SECONDS - start))
  done
done
echo "$total_pass passed, $total_fail failed"
[[ $total_fail -eq 0 ]]
