#!/usr/bin/env bash
# Runs every C-ABI suite (see Makefile) and closes with one line
# "N passed, M failed" summing them; exits non-zero if anything failed.
# A suite that exits non-zero without reporting a failure counts as one failure.
set -u
cd "$(dirname "$0")"
mkdir -p build
suites=(rust header-compat c-asan c-tsan c-shared c-valgrind c-open-asan c-open-tsan c-open-shared
        c-open-valgrind fuzz-plain fuzz-asan fuzz-tsan c-redis-asan c-redis-tsan c-redis-shared c-redis-valgrind example-redis cxx-unwind examples link-line install-test libuv zig)
total_pass=0
total_fail=0
for suite in "${suites[@]}"; do
  echo "=== $suite"
  log="build/$suite.log"
  start=$SECONDS
  # A suite that hangs fails after VOLT_SUITE_TIMEOUT seconds instead of
  # holding the run: timeout(1) gives it its own process group and kills all
  # of it (forked children too, which would otherwise keep tee's pipe open).
  timeout -k 30 "${VOLT_SUITE_TIMEOUT:-1500}" make --no-print-directory "$suite" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  [[ $rc -eq 124 || $rc -eq 137 ]] && echo "--- $suite: killed after ${VOLT_SUITE_TIMEOUT:-1500} s (a hang)" | tee -a "$log"
  pass=0
  fail=0
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
  echo "--- $suite: $pass passed, $fail failed (exit $rc, $((SECONDS - start)) s)"
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
done
echo "$total_pass passed, $total_fail failed"
[[ $total_fail -eq 0 ]]
