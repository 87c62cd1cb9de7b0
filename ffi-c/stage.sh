#!/usr/bin/env bash
# Lays out a built C library as an installable tree (used by `make install`
# through ffi-c/install.sh, and by `make dist` for every platform):
#
#   ffi-c/stage.sh OS FROM PREFIX NATIVE_LIBS [relocatable]
#
# OS is linux, macos or windows; FROM holds cargo's output for that target
# (libvolt_sem.a and libvolt_sem.so / libvolt_sem.dylib / volt_sem.dll +
# libvolt_sem.dll.a); NATIVE_LIBS the system libraries the static library
# needs (ffi-c/link-flags.sh libs TARGET). With "relocatable", the pkg-config
# files locate the prefix from their own path (${pcfiledir}) instead of naming
# it, as a release archive unpacked anywhere needs; the CMake files always do.
#
# Layout (SOVERSION is MAJOR.MINOR while the major version is 0, see
# docs/versioning.md):
#   include/volt_sem.h
#   lib/libvolt_sem.a                                    static
#   linux:   lib/libvolt_sem.so.X.Y.Z, .so.SOVERSION, .so  (SONAME libvolt_sem.so.SOVERSION)
#   macos:   lib/libvolt_sem.SOVERSION.dylib, libvolt_sem.dylib (install name @rpath/...)
#   windows: bin/volt_sem.dll, lib/libvolt_sem.dll.a (import library)
#   lib/pkgconfig/volt_sem.pc, volt_sem-static.pc
#   lib/cmake/volt_sem/volt_semConfig.cmake, volt_semConfigVersion.cmake
#   share/licenses/volt_sem/LICENSE-MIT, LICENSE-APACHE
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
os=$1 from=$2 prefix=$3 native_libs=$4 relocatable=${5:-}

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
IFS=. read -r major minor _patch <<<"$version"
if [[ $major == 0 ]]; then soversion=$major.$minor; else soversion=$major; fi

inc=$prefix/include lib=$prefix/lib
install -d "$inc" "$lib/pkgconfig" "$lib/cmake/volt_sem" "$prefix/share/licenses/volt_sem"
install -m 644 "$root/include/volt_sem.h" "$inc/"
install -m 644 "$from/libvolt_sem.a" "$lib/"
install -m 644 "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$prefix/share/licenses/volt_sem/"
implib=
case $os in
linux)
  shared=lib/libvolt_sem.so.$version soname=libvolt_sem.so.$soversion
  install -m 755 "$from/libvolt_sem.so" "$prefix/$shared"
  ln -sfn "libvolt_sem.so.$version" "$lib/libvolt_sem.so.$soversion"
  ln -sfn "libvolt_sem.so.$soversion" "$lib/libvolt_sem.so"
  ;;
macos)
  shared=lib/libvolt_sem.$soversion.dylib soname=@rpath/libvolt_sem.$soversion.dylib
  install -m 755 "$from/libvolt_sem.dylib" "$prefix/$shared"
  ln -sfn "libvolt_sem.$soversion.dylib" "$lib/libvolt_sem.dylib"
  ;;
windows)
  shared=bin/volt_sem.dll soname= implib=lib/libvolt_sem.dll.a
  install -d "$prefix/bin"
  install -m 755 "$from/volt_sem.dll" "$prefix/$shared"
  install -m 644 "$from/libvolt_sem.dll.a" "$prefix/$implib"
  ;;
*) echo "unknown OS $os" >&2; exit 2 ;;
esac

if [[ $relocatable == relocatable ]]; then pc_prefix='${pcfiledir}/../..'; else pc_prefix=$prefix; fi
pc_head="prefix=$pc_prefix
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

# The CMake list of those libraries: one item a library, but macOS's
# `-framework Security` stays one item (split, CMake would link `Security` as
# a library named so).
native_cmake=$(sed -e 's/-framework /-framework\x01/g' -e 's/ /;/g' -e 's/\x01/ /g' <<<"$native_libs")
subst() {
  sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@MINOR@|$minor|g" \
      -e "s|@SHARED@|$shared|g" -e "s|@SONAME@|$soname|g" -e "s|@IMPLIB@|$implib|g" \
      -e "s|@NATIVE_LIBS@|$native_cmake|g" "$1" >"$2"
}
subst "$root/ffi-c/cmake/volt_semConfig.cmake.in" "$lib/cmake/volt_sem/volt_semConfig.cmake"
subst "$root/ffi-c/cmake/volt_semConfigVersion.cmake.in" "$lib/cmake/volt_sem/volt_semConfigVersion.cmake"
