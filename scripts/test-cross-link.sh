#!/usr/bin/env bash
# `make test-cross-link`: the links of the release artifacts that this Linux
# machine cannot run, so that a dependency change cannot break `make dist`
# silently (issue 27: the macOS C library stopped linking when redis-rs's
# rustls backend pulled in security-framework). Four links, debug profile:
#
#   C library (cdylib) for aarch64-apple-darwin   cargo zigbuild, as make dist-c
#   C library (cdylib) for x86_64-pc-windows-gnu  cargo zigbuild, as make dist-c
#   Node addon for aarch64-apple-darwin           cargo zigbuild, as make dist-node
#   Node addon for x86_64-pc-windows-gnu          cargo + MinGW-w64 gcc, as make dist-node
#
# The macOS links are made as make dist makes them: after thin LTO, which
# drops the dead Security/CoreFoundation code of the Redis TLS dependencies
# before zig's linker sees it (scripts/dist/toolchain.sh, MACOS_LTO), and for
# the oldest macOS supported. The Node addon on macOS is linked with
# `-undefined dynamic_lookup` (napi-build), where no missing symbol fails the
# link, so both macOS dylibs are also checked for what they import
# (scripts/dist/macho_imports.py: nothing from those two frameworks, nothing
# by dynamic lookup but Node-API) and for their exports (scripts/dist/macho.py). Each Windows DLL must export what it should (its
# PE export table, as make dist-test-c reads it).
#
# By default the macOS pair (the links that broke: zig's linker and Apple's
# frameworks; the two share one build of the dependencies);
# CROSS_LINK_WINDOWS=1 adds the Windows pair (two more whole dependency
# builds). Not in `make test` (over its time budget): the workflows'
# cross-link job runs all four, and make dist-test-c / dist-test-node link and
# run the Windows ones under wine. x86_64 macOS and the Linux targets
# link the same crates with the same linkers: make dist builds them. Installs what
# it needs on first use, as make dist does: ziglang and cargo-zigbuild
# (scripts/dist/toolchain.sh), the two Rust targets (rustup), MinGW-w64 gcc
# (apt).
# Builds in $CARGO_TARGET_DIR/cross-link, one directory for the zig links
# (the C library and the addon share every dependency), cross-link/mingw for
# the MinGW one. Measured on the shared 2-core machine (load 6): 45 s warm;
# cold (empty directories, tools installed) 17-21 min, a one-time cost that
# a CI cache of the target dir keeps. Closes with
# "test-cross-link: N passed, M failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
windows=${CROSS_LINK_WINDOWS:-0}
TOOLCHAIN_PLATFORMS="darwin-arm64"
[[ $windows == 1 ]] && TOOLCHAIN_PLATFORMS+=" win32-x64-gnu"
. scripts/dist/toolchain.sh || exit 1
. scripts/dist/libnode-stub.sh
if [[ $windows == 1 ]] && ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  echo "installing gcc-mingw-w64-x86-64"
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null || exit 1
fi
out=$CARGO_TARGET_DIR/cross-link
logs=$out/logs
# Only whether they link matters here: no debug info to compile and link, no
# incremental caches to write (both cost time on every cold run, as in CI).
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_INCREMENTAL=0
mkdir -p "$logs"
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# link NAME LOG COMMAND...: runs a build (in $out unless COMMAND says
# otherwise); on failure shows its errors.
link() {
  local name=$1 log=$2; shift 2
  if (export CARGO_TARGET_DIR=$out; "$@") >"$log" 2>&1; then
    return 0
  fi
  # The linker's own lines, not the whole command line rustc prints first.
  grep -E '^ *(error|note: error|warning: unable|undefined|.*undefined (symbol|reference))' "$log" | head -30
  echo "  ($(grep -c 'undefined symbol' "$log") undefined symbols; the whole log: $log)"
  bad "$name: the link fails"
  return 1
}

node_exports=napi_register_module_v1
# pe_missing DLL NAME...: the NAMEs the DLL's export table lacks.
pe_missing() {
  local dll=$1; shift
  comm -23 <(printf '%s\n' "$@" | sort -u) <(x86_64-w64-mingw32-objdump -p "$dll" |
    sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk '{print $NF}' | sort -u)
}

mac=aarch64-apple-darwin
# make dist's MACOS_LTO, for the dev profile.
mac_env=(env MACOSX_DEPLOYMENT_TARGET="${MACOS_MIN[darwin-arm64]}" "${MACOS_LTO[@]/RELEASE/DEV}")
if link "C library, $mac" "$logs/c-$mac.log" "${mac_env[@]}" cargo zigbuild -p volt-sem-ffi --target $mac; then
  dylib=$out/$mac/debug/libvolt_sem.dylib
  if python3 scripts/dist/macho.py "$dylib" arm64 - include/volt_sem.h "${MACOS_MIN[darwin-arm64]}" &&
     python3 scripts/dist/macho_imports.py "$dylib"; then
    ok "C library, $mac: links, exports the header's functions, imports only what macOS has"
  else
    bad "C library, $mac: $dylib"
  fi
fi
if link "Node addon, $mac" "$logs/node-$mac.log" "${mac_env[@]}" cargo zigbuild -p volt-sem-node --target $mac; then
  addon=$out/$mac/debug/libvolt_sem_node.dylib
  if python3 scripts/dist/macho.py "$addon" arm64 - "$node_exports" "${MACOS_MIN[darwin-arm64]}" &&
     python3 scripts/dist/macho_imports.py "$addon" napi_ node_api_; then
    ok "Node addon, $mac: links, imports nothing by dynamic lookup but Node-API"
  else
    bad "Node addon, $mac: $addon"
  fi
fi

win=x86_64-pc-windows-gnu
if [[ $windows != 1 ]]; then
  echo "test-cross-link: $pass passed, $fail failed (Windows links not asked for: CROSS_LINK_WINDOWS=1)"
  [[ $fail -eq 0 ]]
  exit
fi
if link "C library, $win" "$logs/c-$win.log" cargo zigbuild -p volt-sem-ffi --target $win; then
  dll=$out/$win/debug/volt_sem.dll
  missing=$(pe_missing "$dll" $(grep -oE '\bvolt_[a-z_]+ *\(' include/volt_sem.h | tr -d ' (' | sort -u))
  if [[ -z $missing ]]; then
    ok "C library, $win: links, exports the header's functions"
  else
    bad "C library, $win: $dll does not export: $missing"
  fi
fi
# As scripts/dist/node.sh: Rust's default linker for the target (MinGW-w64
# gcc) and an empty libnode import library. In a directory of its own:
# cargo-zigbuild's compiler and linker settings differ from plain cargo's,
# and in one directory each build would rebuild every dependency of the other.
libnode_stub "$out/libnode-stub"
if link "Node addon, $win" "$logs/node-$win.log" env LIBNODE_PATH="$out/libnode-stub" \
     CARGO_TARGET_DIR="$out/mingw" cargo build -p volt-sem-node --target $win; then
  dll=$out/mingw/$win/debug/volt_sem_node.dll
  missing=$(pe_missing "$dll" $node_exports)
  if [[ -z $missing ]]; then
    ok "Node addon, $win: links, exports $node_exports"
  else
    bad "Node addon, $win: $dll does not export: $missing"
  fi
fi
echo "test-cross-link: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
