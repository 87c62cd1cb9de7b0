#!/usr/bin/env bash
# Runs each argument as a bash command, all at the same time; prints each
# one's output once it ended (in the order given, never interleaved), with its
# exit status and time, and exits non-zero if any of them failed.
#
# For test suites that wait far more than they compute (Redis leases and
# timeouts, sleeps in the Python suites): on the 2-core CI machine two of them
# share the wall time instead of adding it up. Not for suites that assert
# nothing about time but need the CPU (a sanitizer build): they would only
# slow each other down.
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmds=("$@")
pids=()
start=$SECONDS
for i in "${!cmds[@]}"; do
  # Not SIGINT- and SIGQUIT-ignoring, as a background job of a script would
  # be: the Ctrl-C tests send real SIGINTs to processes they start.
  env --default-signal=INT,QUIT bash -c "${cmds[$i]}" >"$dir/$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!cmds[@]}"; do
  wait "${pids[$i]}"
  r=$?
  cat "$dir/$i.log"
  echo "--- parallel [$((i + 1))/${#cmds[@]}] exit $r: ${cmds[$i]}"
  [[ $r -ne 0 ]] && rc=$r
done
echo "--- parallel: ${#cmds[@]} commands in $((SECONDS - start)) s"
exit $rc
