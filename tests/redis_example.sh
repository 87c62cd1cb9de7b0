#!/usr/bin/env bash
# Runs a Redis example program against a private redis-server on a Unix socket
# in a temp dir (no TCP port, no persistence), stopped by pid at the end.
#   redis_example.sh PROGRAM
set -u
prog=$1
dir=$(mktemp -d /tmp/volt-sem-example-XXXXXX)
redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' --appendonly no --dir "$dir" \
  >"$dir/redis.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  [[ -S $dir/redis.sock ]] && break
  sleep 0.05
done
"$prog" "unix://$dir/redis.sock"
