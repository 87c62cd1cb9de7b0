#!/usr/bin/env bash
# Installs the C library for this machine under PREFIX (`make install
# PREFIX=...`, default /usr/local):
#
#   PREFIX/include/volt_sem.h
#   PREFIX/lib/libvolt_sem.a
#   PREFIX/lib/libvolt_sem.so.X.Y.Z, with the links libvolt_sem.so.SOVERSION (the
#       SONAME programs record) and libvolt_sem.so (for -lvolt_sem at link time)
#   PREFIX/lib/pkgconfig/volt_sem.pc         shared:  pkg-config --cflags --libs volt_sem
#   PREFIX/lib/pkgconfig/volt_sem-static.pc  static:  pkg-config --cflags --libs volt_sem-static
#   PREFIX/lib/cmake/volt_sem/               find_package(volt_sem CONFIG): volt_sem::volt_sem
#   PREFIX/share/licenses/volt_sem/          LICENSE-MIT, LICENSE-APACHE
#
# SOVERSION is MAJOR.MINOR while the major version is 0 (SemVer lets 0.x minor
# releases break the ABI, so 0.2 must not satisfy a program built against 0.1),
# MAJOR from 1.0 on; see docs/versioning.md. The library is built in its own
# target dir with that SONAME, so the in-tree build keeps its unversioned one.
# DESTDIR is honoured for staged installs (packaging).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-/usr/local}
case $prefix in /*) ;; *) echo "PREFIX must be an absolute path: $prefix" >&2; exit 2 ;; esac
dest=${DESTDIR:-}

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
IFS=. read -r major minor _patch <<<"$version"
if [[ $major == 0 ]]; then soversion=$major.$minor; else soversion=$major; fi

if [[ $(uname -s) != Linux ]]; then
  echo "install.sh installs ELF shared libraries; on $(uname -s) use the release archives" >&2
  exit 2
fi

target=${CARGO_TARGET_DIR:-$root/target}/install
VOLT_SEM_SONAME=libvolt_sem.so.$soversion CARGO_TARGET_DIR=$target \
  cargo build -q --release --manifest-path "$root/Cargo.toml" -p volt-sem-ffi
rel=$target/release
native_libs=$(bash "$root/ffi-c/link-flags.sh" libs)

inc=$dest$prefix/include
lib=$dest$prefix/lib
lic=$dest$prefix/share/licenses/volt_sem
cmake_dir=$lib/cmake/volt_sem
install -d "$inc" "$lib/pkgconfig" "$cmake_dir" "$lic"
install -m 644 "$root/include/volt_sem.h" "$inc/"
install -m 644 "$rel/libvolt_sem.a" "$lib/"
install -m 755 "$rel/libvolt_sem.so" "$lib/libvolt_sem.so.$version"
ln -sfn "libvolt_sem.so.$version" "$lib/libvolt_sem.so.$soversion"
ln -sfn "libvolt_sem.so.$soversion" "$lib/libvolt_sem.so"
install -m 644 "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$lic/"

pc_head="prefix=$prefix
exec_prefix=\${prefix}
libdir=\${prefix}/lib
includedir=\${prefix}/include
"
cat >"$lib/pkgconfig/volt_sem.pc" <<PC
${pc_head}
Name: volt_sem
Description: Fair, weighted counting semaphore with direct hand-off (C ABI, shared library)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lvolt_sem
Libs.private: $native_libs
PC
# A separate module for static linking: with both libraries installed, -lvolt_sem
# picks the shared one, whatever `pkg-config --static` adds.
cat >"$lib/pkgconfig/volt_sem-static.pc" <<PC
${pc_head}
Name: volt_sem-static
Description: Fair, weighted counting semaphore with direct hand-off (C ABI, static library)
Version: $version
Cflags: -I\${includedir}
Libs: \${libdir}/libvolt_sem.a $native_libs
PC

subst() {
  sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@MINOR@|$minor|g" \
      -e "s|@SOVERSION@|$soversion|g" -e "s|@NATIVE_LIBS@|${native_libs// /;}|g" "$1" >"$2"
}
subst "$root/ffi-c/cmake/volt_semConfig.cmake.in" "$cmake_dir/volt_semConfig.cmake"
subst "$root/ffi-c/cmake/volt_semConfigVersion.cmake.in" "$cmake_dir/volt_semConfigVersion.cmake"

echo "installed volt-sem $version (SONAME libvolt_sem.so.$soversion) under $dest$prefix"
