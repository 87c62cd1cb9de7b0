#!/usr/bin/env bash
# The training half of a profile-guided (PGO) build of the Python extension,
# shared by `make wheel-pgo` (bindings-python/Makefile) and the release build
# of the linux-x64-gnu wheel (scripts/dist/python.sh):
#
#   pgo_train.sh PYTHON WHEEL RAW_DIR OUT.profdata
#
# WHEEL was built with RUSTFLAGS=-Cprofile-generate=RAW_DIR. It is installed
# into a scratch directory (nothing else changes), PYTHON runs the contended
# scenario of bench/probe.py (asyncio, and uvloop when PYTHON has it) and one
# quick pass of bench/bench.py (every scenario, so that no hot path is left
# untrained), and the raw profiles are merged into OUT.profdata for
# RUSTFLAGS=-Cprofile-use. The training reads no clock and checks nothing: it
# only records how often each branch runs, which the machine's load does not
# change. llvm-profdata is rustup's (component llvm-tools, added if missing).
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 PYTHON WHEEL RAW_DIR OUT.profdata" >&2; exit 2; }
python=$(realpath "$1") wheel=$2 raw=$3 out=$4
bench=$(cd "$(dirname "$0")" && pwd)

# The first llvm-profdata of the toolchain, or nothing (not a failure: with
# pipefail, ls finding none would end the script here under set -e, before
# the component is added).
profdata() {
  local f
  for f in "$(rustc --print sysroot)"/lib/rustlib/*/bin/llvm-profdata; do
    [[ -x $f ]] && { echo "$f"; return; }
  done
  return 0
}
tool=$(profdata)
if [[ -z $tool ]]; then
  rustup component add llvm-tools >/dev/null
  tool=$(profdata)
fi
[[ -n $tool ]] || { echo "llvm-profdata missing: rustup component add llvm-tools" >&2; exit 1; }

site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
"$python" -m pip install -q --disable-pip-version-check --no-deps --target "$site" "$wheel"
cd "$bench"
PYTHONPATH=$site "$python" probe.py --run volt_sem --iters 20000
if "$python" -c 'import uvloop' 2>/dev/null; then
  PYTHONPATH=$site "$python" probe.py --run volt_sem --iters 20000 --uvloop
fi
PYTHONPATH=$site "$python" bench.py --quick --runs 1 >/dev/null 2>&1
"$tool" merge -o "$out" "$raw"
