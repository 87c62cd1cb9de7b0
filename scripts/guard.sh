#!/usr/bin/env bash
# Runs one test command of `make test` under a hang limit and reports its time:
#   HANG_LIMIT=1800 bash scripts/guard.sh cargo test -p volt-sem
# A command still running after HANG_LIMIT seconds is a hang: timeout(1) runs
# it in a process group of its own and kills all of it (forked children
# included), so the run fails there, naming it, instead of using up CI's time.
# The closing line (wall-clock time, duration, exit status) makes a CI log say
# where the time went.
set -u
limit=${HANG_LIMIT:-1800}
start=$(date +%s)
timeout -k 30 "$limit" "$@"
rc=$?
took=$(($(date +%s) - start))
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "=== HANG: killed after $limit s: $*"
fi
echo "=== [$(date -u +%H:%M:%S)] ${took} s, exit $rc: $*"
exit $rc
