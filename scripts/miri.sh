#!/usr/bin/env bash
# Runs the core's unit tests and the single-threaded API tests under Miri, which
# checks every pointer access of the intrusive list and of the waiter lifecycle
# (use after free, aliasing, data races). Installs the nightly Miri component
# if it can; prints a SKIPPED line (and succeeds) only when it cannot.
set -u
cd "$(dirname "$0")/.."
if ! rustup toolchain list | grep -q nightly; then
  rustup toolchain install nightly --profile minimal >/dev/null 2>&1 || true
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  rustup component add --toolchain nightly miri rust-src >/dev/null 2>&1 || true
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "SKIPPED: Miri (could not install the nightly miri component)"
  exit 0
fi
set -e
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
# Many-seeds would be slow on 2 cores; the default seed plus the thread tests in
# `waker_contract` cover the waiter lifecycle under Miri's scheduler.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}"
cargo +nightly miri setup >/dev/null 2>&1
cargo +nightly miri test -p volt-sem --lib --test api --test raw_protocol --test waker_contract --test panics --test tokio_api --test review --test review_model
