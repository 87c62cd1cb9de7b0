#!/usr/bin/env bash
# `make dist-python`: the Python package for every supported platform,
# cross-compiled on this Linux machine with maturin, into dist/python/:
#
#   platform          wheel tag (abi3: one wheel for CPython >= 3.9)       built with
#   linux-x64-gnu     cp39-abi3-manylinux2014_x86_64 (glibc 2.17)           maturin --zig, PGO
#   linux-arm64-gnu   cp39-abi3-manylinux2014_aarch64                       maturin --zig
#   linux-x64-musl    cp39-abi3-musllinux_1_2_x86_64                        maturin --zig
#   linux-arm64-musl  cp39-abi3-musllinux_1_2_aarch64                       maturin --zig
#   darwin-x64        cp39-abi3-macosx_10_12_x86_64                         maturin --zig (no SDK)
#   darwin-arm64      cp39-abi3-macosx_11_0_arm64                           maturin --zig
#   win32-x64-gnu     cp39-abi3-win_amd64 (x86_64-pc-windows-gnu)           maturin, MinGW-w64 gcc
#   sdist             volt_sem-VERSION.tar.gz (builds with maturin wherever Rust is installed)
#
# Windows is the GNU ABI, as for the C archives: the MSVC target needs
# Microsoft's SDK, which cannot be installed here. The extension links against
# python3.dll (the stable ABI) through an import library maturin generates
# itself (pyo3's python3-dll-a; no Windows Python needed). It is linked by
# Debian's MinGW-w64 gcc rather than zig: maturin 1.16's zig path for
# windows-gnu writes a module-definition file exporting the dotted module name
# (`PyInit_volt_sem._volt_sem`), which lld rejects.
# Usage: scripts/dist/python.sh [PLATFORM...|sdist]   (default: all)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/dist/toolchain.sh

# maturin pinned as in bindings-python/Makefile, in its own venv.
MATURIN_PIN=$(grep -oE 'maturin==[0-9.]+' bindings-python/Makefile | head -1)
MATURIN_VENV=${CARGO_TARGET_DIR:-$root/target}/maturin-venv
if [[ $("$MATURIN_VENV/bin/maturin" --version 2>/dev/null) != "maturin ${MATURIN_PIN#maturin==}" ]]; then
  echo "installing $MATURIN_PIN into $MATURIN_VENV"
  python3 -m venv "$MATURIN_VENV"
  "$MATURIN_VENV/bin/pip" install --quiet --disable-pip-version-check "$MATURIN_PIN"
fi
pkgs=()
command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs+=(gcc-mingw-w64-x86-64)
[[ -e /usr/aarch64-linux-gnu/lib/libgcc_s.so.1 ]] || pkgs+=(libgcc-s1-arm64-cross)
if [[ ${#pkgs[@]} -gt 0 ]]; then
  echo "installing ${pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi
# glibc wheels take the unwinder from libgcc_s.so.1, as every gcc-built
# extension does, instead of zig's static libunwind: CPython ends a daemon
# thread that takes the GIL back during finalization with pthread_exit, whose
# forced unwind (libgcc_s) runs through the extension's frames, and a
# personality routine bound to another unwinder crashes there (SIGSEGV in 1 of
# 4 runs of tests/test_exit.py's blocking scenario before this). libgcc_s.so.1
# is on the manylinux allow-list.
declare -A GCC_S=(
  [linux-x64-gnu]=/lib/x86_64-linux-gnu/libgcc_s.so.1
  [linux-arm64-gnu]=/usr/aarch64-linux-gnu/lib/libgcc_s.so.1
)

declare -A WHEEL_ARGS=(
  [linux-x64-gnu]="--zig --target x86_64-unknown-linux-gnu --compatibility manylinux2014"
  [linux-arm64-gnu]="--zig --target aarch64-unknown-linux-gnu --compatibility manylinux2014"
  [linux-x64-musl]="--zig --target x86_64-unknown-linux-musl --compatibility musllinux_1_2"
  [linux-arm64-musl]="--zig --target aarch64-unknown-linux-musl --compatibility musllinux_1_2"
  [darwin-x64]="--zig --target x86_64-apple-darwin"
  [darwin-arm64]="--zig --target aarch64-apple-darwin"
  [win32-x64-gnu]="--target x86_64-pc-windows-gnu"
)
platforms=("$@")
[[ ${#platforms[@]} -gt 0 ]] || platforms=("${!WHEEL_ARGS[@]}" sdist)
out=$root/dist/python
mkdir -p "$out"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)

# The platform whose wheel is profile-guided: this machine's own (below).
PGO_PLATFORM=
[[ $(uname -sm) == "Linux x86_64" ]] && PGO_PLATFORM=linux-x64-gnu

# build TARGET_DIR RUSTFLAGS OUT: one wheel of $platform (its $args,
# $deployment, $lto) into OUT; its log in $stage.log, shown if it fails.
build() {
  # shellcheck disable=SC2086
  if ! env CARGO_TARGET_DIR="$1" RUSTFLAGS="$2" \
       ${deployment:+MACOSX_DEPLOYMENT_TARGET=$deployment} "${lto[@]}" \
       "$MATURIN_VENV/bin/maturin" build --profile wheel --strip $args --out "$3" >"$stage.log" 2>&1; then
    cat "$stage.log"
    echo "maturin failed for $platform" >&2
    return 1
  fi
}

cd bindings-python
for platform in "${platforms[@]}"; do
  echo "== $platform"
  if [[ $platform == sdist ]]; then
    rm -f "$out"/volt_sem-*.tar.gz
    "$MATURIN_VENV/bin/maturin" sdist --out "$out" 2>&1 | grep -E '^(📦|⚠️|💥|error)' || true
    ls "$out"/volt_sem-"$version".tar.gz >/dev/null
    continue
  fi
  args=${WHEEL_ARGS[$platform]:?unknown platform $platform}
  target=$(sed -E 's/.*--target ([^ ]+).*/\1/' <<<"$args")
  deployment= lto=()
  [[ $platform == darwin-* ]] && deployment=${MACOS_MIN[$platform]} lto=("${MACOS_LTO[@]}")
  stage=$DIST_TARGET_DIR/wheels/$platform
  rm -rf "$stage" && mkdir -p "$stage"
  rustflags=
  [[ -n ${GCC_S[$platform]:-} ]] && rustflags="-C link-arg=${GCC_S[$platform]}"
  target_dir=$DIST_TARGET_DIR
  # The wheel of the platform this machine runs is profile-guided (issue 30:
  # the contended path's instruction-cache misses 806 -> 483 per operation):
  # built instrumented, trained by bench/pgo_train.sh, built again with the
  # profile, in a target directory of its own (other RUSTFLAGS). The others
  # cannot run here. Every wheel is built with the workspace's `wheel`
  # profile: fat LTO in one codegen unit (macOS too: it drops the dead code
  # MACOS_LTO is there for, see toolchain.sh).
  if [[ $platform == "$PGO_PLATFORM" ]]; then
    target_dir=$DIST_TARGET_DIR/pgo
    pgo=$target_dir/profile
    rm -rf "$pgo" && mkdir -p "$pgo/raw" "$pgo/wheel"
    # Instrumented with the system linker: zig's cc wrapper mistakes the
    # profiler runtime's `-u __llvm_profile_runtime` for a file. It only
    # runs here, so needs no manylinux tag; the profile is of the code, not
    # of the link.
    args="--target ${target} --compatibility linux" \
      build "$target_dir" "$rustflags -Cprofile-generate=$pgo/raw" "$pgo/wheel" || exit 1
    if ! bash bench/pgo_train.sh "$MATURIN_VENV/bin/python" "$pgo"/wheel/volt_sem-*.whl \
         "$pgo/raw" "$pgo/merged.profdata" >"$stage.log" 2>&1; then
      cat "$stage.log"
      echo "PGO training failed for $platform" >&2
      exit 1
    fi
    rustflags="$rustflags -Cprofile-use=$pgo/merged.profdata"
  fi
  build "$target_dir" "$rustflags" "$stage" || exit 1
  wheel=$(ls "$stage"/volt_sem-"$version"-*.whl)
  mv -f "$wheel" "$out/"
  echo "   $out/${wheel##*/}"
done
