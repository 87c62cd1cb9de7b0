#!/usr/bin/env bash
# `make test-arm64`: the core and the C library on linux arm64 (aarch64 glibc),
# cross-compiled here and run under qemu-user with Debian's arm64 glibc:
#
#   1. the core's api, waker_contract and stress tests (the algorithm's public
#      API, the waker contract, and permit conservation under contention), built
#      for aarch64-unknown-linux-gnu, with qemu as cargo's runner;
#   2. the C test suite (tests/c/test_volt_sem.c, the same suite and flags that
#      `make dist-test-c` runs against the release archives) against the arm64
#      static library, built by Debian's aarch64 gcc.
#
# arm64's memory model is weaker than x86-64's: an Acquire/Release ordering
# that is wrong but harmless on x86 can show up here. qemu-user runs the guest's
# threads as host threads, so both suites really run concurrently, but with
# x86's stronger ordering underneath: this catches arm64 build, ABI and layout
# faults, not every weak-memory race (the loom models cover orderings).
#
# Installs what it needs on first use: the Rust target (rustup), and
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user-static (apt).
# Builds in $CARGO_TARGET_DIR/aarch64-unknown-linux-gnu (beside the native
# build, never invalidating it). Closes with "test-arm64: N passed, M failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=aarch64-unknown-linux-gnu
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
out=$CARGO_TARGET_DIR/test-arm64
mkdir -p "$out"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)

pkgs=()
command -v aarch64-linux-gnu-gcc >/dev/null || pkgs+=(gcc-aarch64-linux-gnu)
[[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]] || pkgs+=(libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
if [[ ${#pkgs[@]} -gt 0 ]]; then
  echo "installing ${pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null || exit 1
fi
rustup target list --installed | grep -qx $target || rustup target add $target || exit 1

QEMU="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=$QEMU
pass=0 fail=0

# 1. The core's tests. cargo's own summary lines are summed.
log=$out/core.log
cargo test -p volt-sem --target $target --test api --test waker_contract --test stress 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
while read -r p f; do pass=$((pass + p)); fail=$((fail + f)); done < <(
  sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$log")
if [[ $rc -ne 0 ]] && ! grep -q '^test result: FAILED' "$log"; then
  echo "FAIL the core's arm64 tests did not build or run"; fail=$((fail + 1))
fi

# 2. The C suite against the arm64 static library.
if cargo build -q -p volt-sem-ffi --target $target; then
  lib=$CARGO_TARGET_DIR/$target/debug/libvolt_sem.a
  syslibs=$(bash ffi-c/link-flags.sh libs $target)
  # shellcheck disable=SC2086
  if aarch64-linux-gnu-gcc -std=c11 -O1 -Wall -Wextra -Werror -Iinclude -Itests/c \
       -DEXPECTED_VERSION="\"$version\"" -DCHAIN_LENGTH=20000 -DSTRESS_ROUNDS=300 \
       tests/c/test_volt_sem.c "$lib" $syslibs -o "$out/test_c" >"$out/c-build.log" 2>&1; then
    file "$out/test_c" | grep -q 'ARM aarch64' || echo "warning: $out/test_c is not an aarch64 program"
    # shellcheck disable=SC2086
    timeout 600 $QEMU "$out/test_c" 2>&1 | tee "$out/c.log"
    rc=${PIPESTATUS[0]}
    line=$(grep -E '^([a-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$out/c.log" | tail -1)
    if [[ $rc -eq 0 && -n $line ]]; then
      read -r p f < <(sed -E 's/^([a-z-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2 \3/' <<<"$line")
      pass=$((pass + p)) fail=$((fail + f))
    else
      echo "FAIL the C suite under qemu-aarch64 (exit or summary missing)"; fail=$((fail + 1))
    fi
  else
    cat "$out/c-build.log"; echo "FAIL the C suite does not build for arm64"; fail=$((fail + 1))
  fi
else
  echo "FAIL the C library does not build for arm64"; fail=$((fail + 1))
fi

echo "test-arm64: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
