#!/usr/bin/env bash
# `make demo` (every language) and `make demo-rust|c|zig|python|node` (one):
#
#   bash scripts/demo.sh rust c zig python node
#
# For each language: a header saying what gets built and about how long that
# takes, the build with its output in a log file (shown only if it fails), then
# the demo itself. Every demo queues weighted requests while the pool is held,
# prints the arrival order beside the service order with a `FIFO: yes` check,
# and (the in-process ones) one line measuring the peer a user would otherwise
# pick; the two shared-limit scenes (named, redis: demo/scenes/scene.py) show
# who holds and who waits with the `volt-sem` command line and kill -9 a
# holder. A closing line sums up. Exit status: non-zero if a build or a demo
# failed.

set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export PIP_DISABLE_PIP_VERSION_CHECK=1
LOGS=$CARGO_TARGET_DIR/demo-logs
mkdir -p "$LOGS"
MAKE=${MAKE:-make}
MAKEQ=("$MAKE" --no-print-directory)

# ------------------------------------------------------------------- builds
# Each prints nothing on success; its output goes to the step's log.

build_rust() {
    # A crate outside the workspace (demo/rust): the volt-sem crate and std
    # only, none of the core's dev-dependencies (tokio, criterion, ...).
    cargo build --release --manifest-path "$ROOT/demo/rust/Cargo.toml"
}
run_rust() { "$CARGO_TARGET_DIR/release/volt-sem-demo"; }

build_c() {
    "${MAKEQ[@]}" -C "$ROOT/tests" lib-release build && "${MAKEQ[@]}" -C "$ROOT/tests" build/workers
}
run_c() { "$ROOT/tests/build/workers"; }

build_zig() {
    # tests/Makefile builds the demo through the Zig package (Zig from PyPI).
    "${MAKEQ[@]}" -C "$ROOT/tests" lib-release build &&
        "${MAKEQ[@]}" -C "$ROOT/tests" build/workers-zig
}
run_zig() { "$ROOT/tests/build/workers-zig"; }

build_python() { "${MAKEQ[@]}" -C "$ROOT/bindings-python" wheel; }
run_python() { "$ROOT/bindings-python/.venv/bin/python" "$ROOT/bindings-python/demo/demo.py"; }

build_node() { "${MAKEQ[@]}" -C "$ROOT/bindings-node" build; }
run_node() { node "$ROOT/bindings-node/demo/demo.js"; }

# The shared-limit scenes: Python and Node processes, the `volt-sem` CLI.
build_scene() { build_python && build_node && cargo build --release -p volt-sem-cli; }
build_named() { build_scene; }
run_named() { "$ROOT/bindings-python/.venv/bin/python" "$ROOT/demo/scenes/scene.py" named; }
build_redis() { build_scene; }
run_redis() { "$ROOT/bindings-python/.venv/bin/python" "$ROOT/demo/scenes/scene.py" redis; }

# What each step builds, and how long that took on a 2-core machine: cold (a
# new checkout, empty target dir; download caches warm) / warm (nothing changed).
declare -A TITLE=(
    [rust]="Rust: async tasks and plain threads share one volt_sem::Semaphore"
    [c]="C: threads share one volt_sem through the C ABI (include/volt_sem.h)"
    [zig]="Zig: the same C ABI from Zig"
    [python]="Python: asyncio loops on two threads and a plain thread share one volt_sem.Semaphore"
    [node]="Node.js: the main thread and a worker share one Semaphore"
    [named]="Five Python and Node processes share one named semaphore of this machine; volt-sem inspect shows them; kill -9 a holder"
    [redis]="The same five processes on one Redis semaphore (a redis-server of its own); kill -9 a holder, its lease runs out"
)
declare -A BUILDS=(
    [rust]="the volt-sem crate alone (std only) with cargo: seconds cold, <1 s warm"
    [c]="libvolt_sem.a (cargo --release -p volt-sem-ffi) and the C program: ~65 s cold (measured on 2 cores), <1 s warm"
    [zig]="Zig 0.17 from PyPI into target/zig-venv (a ~50 MB download), libvolt_sem.a, the Zig program: ~3.3 min cold (198 s measured on 2 cores), ~1 s warm"
    [python]="a venv with maturin (and the test tools), the abi3 wheel: minutes cold (up to 10 on a loaded 2-core machine), ~4 s warm"
    [node]="the Node-API addon (cargo zigbuild for glibc 2.17; Zig from PyPI): minutes cold (up to 9 on a loaded 2-core machine), ~1 s warm"
    [named]="the Python wheel and the Node addon (as above; warm after them) and the volt-sem CLI (cargo --release): ~1 min cold, ~1 s warm"
    [redis]="the same as the named scene (warm after it)"
)

# Seconds since $1 (an $EPOCHREALTIME), one decimal.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

summary=()
failed=0
start_all=$EPOCHREALTIME

for lang in "$@"; do
    if [[ -z ${TITLE[$lang]:-} ]]; then
        echo "scripts/demo.sh: unknown demo '$lang' (rust, c, zig, python, node, named, redis)" >&2
        exit 2
    fi
    echo
    echo "=== ${TITLE[$lang]}"
    echo "    building ${BUILDS[$lang]} ..."
    log=$LOGS/$lang.log
    t0=$EPOCHREALTIME
    if ! "build_$lang" >"$log" 2>&1; then
        echo "    BUILD FAILED after $(since "$t0") s; the end of $log:"
        tail -n 40 "$log" | sed 's/^/    | /'
        summary+=("$lang: build failed")
        failed=1
        continue
    fi
    echo "    built in $(since "$t0") s (log: ${log#"$ROOT"/})"
    echo
    out=$LOGS/$lang.out
    "run_$lang" 2>&1 | tee "$out"
    status=${PIPESTATUS[0]}
    if [[ $status -eq 0 ]] && grep -q '^FIFO: yes' "$out"; then
        summary+=("$lang: FIFO yes")
    else
        summary+=("$lang: FAILED (exit $status)")
        failed=1
    fi
done

echo
echo "demo summary ($(since "$start_all") s): $(IFS=';'; echo "${summary[*]}" | sed 's/;/, /g')"
exit $failed
