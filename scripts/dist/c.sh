#!/usr/bin/env bash
# `make dist-c`: the C library for every supported platform, cross-compiled on
# this Linux machine, laid out by ffi-c/stage.sh and packed as
#   dist/c/volt-sem-VERSION-PLATFORM.tar.gz
# (header, static + shared library, pkg-config, CMake package, licences, and
# the `volt-sem` command line in bin/: ls, inspect, watch, resize, reopen,
# unlink).
#
#   platform          Rust target                          linker
#   linux-x64-gnu     x86_64-unknown-linux-gnu (glibc 2.17) zig (cargo-zigbuild)
#   linux-arm64-gnu   aarch64-unknown-linux-gnu (glibc 2.17) zig
#   linux-x64-musl    x86_64-unknown-linux-musl             zig
#   linux-arm64-musl  aarch64-unknown-linux-musl            zig
#   darwin-x64        x86_64-apple-darwin (macOS 10.12+)    zig, no SDK needed (rustc
#   darwin-arm64      aarch64-apple-darwin (macOS 11+)      zig  warns that it found none),
#                                                           after LTO (toolchain.sh: MACOS_LTO)
#   win32-x64-gnu     x86_64-pc-windows-gnu                 zig (MinGW-w64 ABI)
#
# Windows is the GNU ABI (MinGW-w64): the MSVC target needs Microsoft's SDK,
# which cannot be installed here; the DLL's C ABI is the same for MSVC callers,
# and the archive carries a MinGW import library. glibc 2.17 is the manylinux2014
# baseline: the library loads on every glibc distribution of the last decade.
# Usage: scripts/dist/c.sh [PLATFORM...]   (default: all)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/dist/toolchain.sh

platforms=("$@")
[[ ${#platforms[@]} -gt 0 ]] || platforms=("${!TARGET_OF[@]}")
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
IFS=. read -r major minor _ <<<"$version"
if [[ $major == 0 ]]; then soversion=$major.$minor; else soversion=$major; fi
out=$root/dist/c
mkdir -p "$out"

for platform in "${platforms[@]}"; do
  triple=${TARGET_OF[$platform]:?unknown platform $platform}
  rust_target=${triple%.2.17}
  deployment= lto=()
  case $platform in
    linux-*) os=linux soname=libvolt_sem.so.$soversion ;;
    darwin-*) os=macos soname=@rpath/libvolt_sem.$soversion.dylib deployment=${MACOS_MIN[$platform]} lto=("${MACOS_LTO[@]}") ;;
    win32-*) os=windows soname= ;;
  esac
  echo "== $platform ($triple)"
  # musl: a cdylib needs the dynamic C runtime (Rust's musl default is static).
  flags_var=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$rust_target")_RUSTFLAGS
  extra=
  [[ $platform == *-musl ]] && extra="-C target-feature=-crt-static"
  env "$flags_var=$extra" VOLT_SEM_SONAME=$soname CARGO_TARGET_DIR="$DIST_TARGET_DIR" \
    ${deployment:+MACOSX_DEPLOYMENT_TARGET=$deployment} "${lto[@]}" \
    cargo zigbuild -q --release -p volt-sem-ffi -p volt-sem-cli --target "$triple"
  name=volt-sem-$version-$platform
  rm -rf "${out:?}/$name"
  if [[ $os == macos ]]; then
    python3 scripts/dist/macho_imports.py "$DIST_TARGET_DIR/$rust_target/release/libvolt_sem.dylib"
  fi
  # What a program linking the static library needs, asked of rustc with the
  # build's flags and zig's C compiler; an assignment, so that a failure stops
  # the script here (inside the stage.sh arguments it went unnoticed and the
  # musl and macOS archives shipped an empty list).
  static_libs=$(env "$flags_var=$extra" VOLT_SEM_LINK_FLAGS_CARGO=cargo-zigbuild \
    bash ffi-c/link-flags.sh libs "$rust_target")
  bash ffi-c/stage.sh "$os" "$DIST_TARGET_DIR/$rust_target/release" "$out/$name" \
    "$static_libs" relocatable
  exe=volt-sem
  [[ $os == windows ]] && exe=volt-sem.exe
  install -d "$out/$name/bin"
  install -m 755 "$DIST_TARGET_DIR/$rust_target/release/$exe" "$out/$name/bin/"
  tar -C "$out" -czf "$out/$name.tar.gz" "$name"
  echo "   $out/$name.tar.gz"
done
