#!/usr/bin/env bash
# `make install PREFIX=...` (default /usr/local): builds the C library for this
# machine and installs it with ffi-c/stage.sh, which says what goes where
# (header, static and shared library with a versioned SONAME, pkg-config
# modules volt_sem and volt_sem-static, the CMake package volt_sem, licences).
# The library is built with the installed file's SONAME (VOLT_SEM_SONAME,
# read by ffi-c/build.rs) in the normal target dir, so that only this crate is
# rebuilt (a target dir of its own rebuilt every dependency too), and once
# more without it after staging, so that the in-tree library keeps its
# unversioned SONAME. DESTDIR is honoured for staged installs (packaging).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-/usr/local}
case $prefix in /*) ;; *) echo "PREFIX must be an absolute path: $prefix" >&2; exit 2 ;; esac
if [[ $(uname -s) != Linux ]]; then
  echo "install.sh installs ELF shared libraries; on $(uname -s) use a release archive from make dist" >&2
  exit 2
fi
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
IFS=. read -r major minor _ <<<"$version"
if [[ $major == 0 ]]; then soversion=$major.$minor; else soversion=$major; fi

target=${CARGO_TARGET_DIR:-$root/target}
build() { cargo build -q --release --manifest-path "$root/Cargo.toml" -p volt-sem-ffi; }
VOLT_SEM_SONAME=libvolt_sem.so.$soversion build
bash "$root/ffi-c/stage.sh" linux "$target/release" "${DESTDIR:-}$prefix" "$(bash "$root/ffi-c/link-flags.sh" libs)"
build
# stage.sh wrote pkg-config files naming DESTDIR+PREFIX; they must name PREFIX.
if [[ -n ${DESTDIR:-} ]]; then
  sed -i "s|^prefix=.*|prefix=$prefix|" "$DESTDIR$prefix"/lib/pkgconfig/volt_sem*.pc
fi
echo "installed volt-sem $version (SONAME libvolt_sem.so.$soversion) under ${DESTDIR:-}$prefix"
