#!/usr/bin/env bash
# `make dist-zig`: the Zig package, assembled from the C archives of
# `make dist-c` and packed as dist/zig/volt-sem-zig-VERSION.tar.gz:
#
#   volt-sem-zig-VERSION/
#     build.zig, build.zig.zon       zig/ in this repository
#     include/volt_sem.h             the header (the module is its translation)
#     lib/<zig target>/libvolt_sem.a the static library, from each C archive:
#       x86_64-linux-gnu    linux-x64-gnu     aarch64-linux-gnu   linux-arm64-gnu
#       x86_64-linux-musl   linux-x64-musl    aarch64-linux-musl  linux-arm64-musl
#       x86_64-macos        darwin-x64        aarch64-macos       darwin-arm64
#       x86_64-windows-gnu  win32-x64-gnu
#     LICENSE-MIT, LICENSE-APACHE
#
# A Zig project adds it with `zig fetch --save URL-OR-PATH-OF-THE-TARBALL`
# (zig/build.zig says what the package provides and how a target picks its
# library). The tarball is deterministic: the same inputs give the same bytes,
# so its Zig package hash only changes when its content does.
#
#   scripts/dist/zig.sh                 the full package, from dist/c/
#   scripts/dist/zig.sh --host LIB OUT  a package for this machine only, with
#                                       LIB (a libvolt_sem.a built here) as the
#                                       x86_64-linux-gnu library, packed as
#                                       OUT/volt-sem-zig-VERSION.tar.gz (what
#                                       `make -C tests zig` tests in `make test`)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
zon_version=$(sed -n 's/^ *\.version *= *"\(.*\)",.*/\1/p' zig/build.zig.zon)
if [[ $zon_version != "$version" ]]; then
  echo "zig/build.zig.zon says version $zon_version, Cargo.toml $version: update the .zon" >&2
  exit 1
fi
name=volt-sem-zig-$version

declare -A ZIG_DIR_OF=(
  [linux-x64-gnu]=x86_64-linux-gnu [linux-arm64-gnu]=aarch64-linux-gnu
  [linux-x64-musl]=x86_64-linux-musl [linux-arm64-musl]=aarch64-linux-musl
  [darwin-x64]=x86_64-macos [darwin-arm64]=aarch64-macos
  [win32-x64-gnu]=x86_64-windows-gnu
)

if [[ ${1:-} == --host ]]; then
  [[ $# -eq 3 ]] || { echo "usage: $0 --host LIBVOLT_SEM_A OUTDIR" >&2; exit 2; }
  [[ $(uname -m)-$(uname -s) == x86_64-Linux ]] || { echo "--host: this machine is not x86_64 Linux" >&2; exit 1; }
  declare -A lib_of=([x86_64-linux-gnu]=$2)
  out=$3
else
  declare -A lib_of=()
  for platform in "${!ZIG_DIR_OF[@]}"; do
    lib=dist/c/volt-sem-$version-$platform/lib/libvolt_sem.a
    [[ -f $lib ]] || { echo "no $lib: run make dist-c first" >&2; exit 1; }
    lib_of[${ZIG_DIR_OF[$platform]}]=$lib
  done
  out=dist/zig
fi

mkdir -p "$out"
pkg=$out/$name
rm -rf "$pkg"
mkdir -p "$pkg/include"
cp zig/build.zig zig/build.zig.zon LICENSE-MIT LICENSE-APACHE "$pkg/"
cp include/volt_sem.h "$pkg/include/"
for dir in "${!lib_of[@]}"; do
  mkdir -p "$pkg/lib/$dir"
  cp "${lib_of[$dir]}" "$pkg/lib/$dir/libvolt_sem.a"
done
# Sorted names, fixed owner and times, no gzip timestamp: reproducible bytes.
tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$name" |
  gzip -n -6 >"$out/$name.tar.gz"
echo "$out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1); targets: $(cd "$pkg/lib" && echo *))"
