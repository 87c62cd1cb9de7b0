#!/usr/bin/env bash
# Runs the API fuzzer (c/fuzz_sem.c) once per mode given, each as
# "MODE ARGS...", and closes with one line "fuzz: N passed, M failed" summing
# the modes' own closing lines (tests/run.sh reads it). FUZZ_SEED, if set, is
# the first seed of every mode (replay); otherwise each mode draws one from the
# clock and prints it.
#   bash fuzz.sh build/fuzz_asan "model --seeds 3000" "threads --seconds 5"
set -u
bin=$1
shift
pass=0
fail=0
rc=0
for mode in "$@"; do
  log=$(mktemp)
  # shellcheck disable=SC2086 # the mode's words are its arguments
  "$bin" $mode 2>&1 | tee "$log"
  r=${PIPESTATUS[0]}
  line=$(grep -E '^fuzz-[a-z]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  rm -f "$log"
  if [[ -n $line ]]; then
    read -r p f < <(sed -E 's/^fuzz-[a-z]+: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<<"$line")
    pass=$((pass + p)); fail=$((fail + f))
  fi
  # A crash or a sanitizer report ends the program without its closing line.
  if [[ $r -ne 0 ]]; then
    rc=1
    [[ -z $line ]] && fail=$((fail + 1)) && echo "--- $bin $mode: exit $r without a summary"
  fi
done
echo "fuzz: $pass passed, $fail failed"
[[ $rc -eq 0 && $fail -eq 0 ]]
