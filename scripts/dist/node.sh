#!/usr/bin/env bash
# `make dist-node`: the Node addon for every supported platform, cross-compiled
# on this Linux machine with napi's CLI (`napi build --platform`), put in its
# platform package (bindings-node/npm/PLATFORM/volt-sem.PLATFORM.node), then
# every package packed by bindings-node/npm/pack.js into dist/npm/:
#   volt-sem-VERSION.tgz            JS, types, loader; optionalDependencies: the 7 below
#   volt-sem-PLATFORM-VERSION.tgz   one binary, with os/cpu (and libc on Linux)
#
#   platform          Rust target                           linker
#   linux-x64-gnu     x86_64-unknown-linux-gnu (glibc 2.17)  zig (napi build -x: cargo-zigbuild)
#   linux-arm64-gnu   aarch64-unknown-linux-gnu (glibc 2.17) zig
#   linux-x64-musl    x86_64-unknown-linux-musl              zig (dynamic musl)
#   linux-arm64-musl  aarch64-unknown-linux-musl             zig
#   darwin-x64        x86_64-apple-darwin (macOS 10.12+)     zig, no SDK needed
#   darwin-arm64      aarch64-apple-darwin (macOS 11+)       zig
#   win32-x64-gnu     x86_64-pc-windows-gnu                  MinGW-w64 gcc (Debian)
#
# The toolchain is the C archives' (scripts/dist/toolchain.sh). Windows is the
# GNU ABI, as for the C library: the MSVC target needs Microsoft's SDK, which
# cannot be installed here (napi's -x would fetch it through cargo-xwin, and it
# rejects -gnu targets, so that one build is plain cargo with Rust's default
# linker for the target, Debian's MinGW-w64 gcc). The addon calls only Node-API,
# a C ABI, so a MinGW-built addon loads in the official (MSVC-built) node.exe.
# It links no Node library: on Windows napi resolves the Node-API functions in
# the host process at load time (the `dyn-symbols` feature, bindings-node's
# Cargo.toml). napi-build still insists on a libnode.dll for -gnu and passes
# -lnode, so the build gets an empty import library in its place
# (scripts/dist/libnode-stub.sh).
# Usage: scripts/dist/node.sh [PLATFORM...]   (default: all; packs only those)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/dist/toolchain.sh
. scripts/dist/libnode-stub.sh

platforms=("$@")
[[ ${#platforms[@]} -gt 0 ]] || platforms=("${!TARGET_OF[@]}")
make -s -C bindings-node deps
napi=$root/bindings-node/node_modules/.bin/napi

if [[ " ${platforms[*]} " == *" win32-x64-gnu "* ]] && ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  echo "installing gcc-mingw-w64-x86-64"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null
fi

for platform in "${platforms[@]}"; do
  triple=${TARGET_OF[$platform]:?unknown platform $platform}
  rust_target=${triple%.2.17}
  echo "== $platform ($triple)"
  # Symbols stripped by rustc (napi's --strip passes -s to the linker, which
  # zig's Mach-O linker and this MinGW link ignore). napi adds
  # -C target-feature=-crt-static for musl itself (a cdylib needs the dynamic C
  # runtime) and appends its flags to RUSTFLAGS.
  env=(CARGO_PROFILE_RELEASE_STRIP=symbols RUSTFLAGS=) cross=(-x)
  case $platform in
    darwin-*)
      env+=("MACOSX_DEPLOYMENT_TARGET=${MACOS_MIN[$platform]}" "${MACOS_LTO[@]}"
            "RUSTFLAGS=-C link-arg=-Wl,-install_name,@rpath/volt-sem.$platform.node") ;;
    win32-*)
      cross=()
      stub=$DIST_TARGET_DIR/libnode-stub
      libnode_stub "$stub"
      env+=("LIBNODE_PATH=$stub")
      ;;
  esac
  out=$DIST_TARGET_DIR/napi/$platform
  rm -rf "$out" && mkdir -p "$out"
  # The type definitions napi can generate are not used (index.d.ts is written
  # by hand): --dts sends them to the scratch dir.
  (cd bindings-node && env "${env[@]}" CARGO_TARGET_DIR="$DIST_TARGET_DIR" \
    "$napi" build --platform --profile node --no-js --dts napi-types.d.ts \
    --target "$triple" "${cross[@]}" --output-dir "$out" 2>&1 | grep -v '^ *Compiling ' || true)
  [[ -f $out/volt-sem.$platform.node ]] || { echo "no $out/volt-sem.$platform.node" >&2; exit 1; }
  if [[ $platform == darwin-* ]]; then # Node-API comes from node: flat lookup
    python3 scripts/dist/macho_imports.py "$out/volt-sem.$platform.node" napi_ node_api_
  fi
  cp -f "$out/volt-sem.$platform.node" "bindings-node/npm/$platform/"
  ls -l "bindings-node/npm/$platform/volt-sem.$platform.node"
done

mkdir -p dist/npm
rm -f dist/npm/*.tgz
node bindings-node/npm/pack.js --dest dist/npm "${platforms[@]}"
