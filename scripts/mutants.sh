#!/usr/bin/env bash
# Mutation testing of the core's algorithm files (`make mutants`; not in CI:
# about 25 min on 2 cores). Two passes:
#   1. every mutant against the core's tests (.cargo/mutants.toml);
#   2. the mutants that survived, against the loom models (a release build
#      with --cfg volt_loom), which explore interleavings the tests cannot.
# A mutant counts as caught if either pass catches it. Results: target/mutants/
# (pass 1) and target/mutants-loom/ (pass 2); the summary goes to stdout and is
# recorded by hand in docs/testing.md with the reasons for each survivor.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo mutants --version >/dev/null 2>&1; then
  echo "installing cargo-mutants"
  cargo install --locked cargo-mutants@27.1.0
fi
out=${CARGO_TARGET_DIR:-target}
mkdir -p "$out"
# No debug info: linking each mutant's test binaries is most of the cost.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_RELEASE_DEBUG=0
cargo mutants --gitignore=true -p volt-sem -o "$out/mutants" | tee "$out/mutants.log" || true  # exit 2 = some survived
missed="$out/mutants/mutants.out/missed.txt"
timeouts="$out/mutants/mutants.out/timeout.txt"
if [ -s "$missed" ]; then
  # One -F regex per survivor (its name as `--list` prints it, escaped).
  args=()
  while IFS= read -r line; do
    name=${line%% in *}       # drop " in 3s build + 0s test" if present
    args+=(-F "^$(printf '%s' "$name" | sed 's/[][\.*^$(){}?+|/]/\\&/g')\$")
  done < "$missed"
  RUSTFLAGS="--cfg volt_loom" LOOM_MAX_PREEMPTIONS=2 \
    cargo mutants --gitignore=true --no-config -p volt-sem -o "$out/mutants-loom" \
      -C --release -C --test=loom -C --test=loom_data \
      --timeout-multiplier 3 "${args[@]}" | tee "$out/mutants-loom.log" || true
fi
count() { [ -f "$1" ] && grep -c . "$1" || true; }
echo "tests:  $(grep -E '^[0-9]+ mutants tested' "$out/mutants.log" | tail -n 1)"
if [ -f "$out/mutants-loom.log" ]; then
  echo "loom:   $(grep -E '^[0-9]+ mutants tested' "$out/mutants-loom.log" | tail -n 1) (of the $(count "$missed") survivors)"
  sed 's/^/MISSED /' "$out/mutants-loom/mutants.out/missed.txt" 2>/dev/null || true
fi
