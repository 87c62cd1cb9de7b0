#!/usr/bin/env bash
# `make install-test`: `make install` into a scratch prefix, then build the
# README's C program against it the ways the README documents: pkg-config
# (shared and static), CMake (shared and static), and run each from another
# directory. Also checks the versioned SONAME and its links, and that CMake
# refuses an incompatible version.
set -u
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
OUT=$PWD/build/install
rm -rf "$OUT" && mkdir -p "$OUT"
PREFIX=$OUT/prefix
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
expected="holding 2 of 3 permits, 1 left"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$ROOT/Cargo.toml")
IFS=. read -r major minor _ <<<"$version"
soversion=$major.$minor; [[ $major != 0 ]] && soversion=$major

sed -n '/^###* C and Zig/,/^###* [^C]/p' "$ROOT/README.md" |
  awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' >"$OUT/app.c"
[[ -s $OUT/app.c ]] || { bad "README: no app.c in the C section"; echo "install: $pass passed, $fail failed"; exit 1; }

if make -s -C "$ROOT" install PREFIX="$PREFIX" >"$OUT/install.log" 2>&1; then
  ok "make install PREFIX=$PREFIX"
else
  cat "$OUT/install.log"; bad "make install failed"
  echo "install: $pass passed, $fail failed"; exit 1
fi
lib=$PREFIX/lib
if [[ -f $lib/libvolt_sem.so.$version && $(readlink "$lib/libvolt_sem.so.$soversion") == "libvolt_sem.so.$version" &&
      $(readlink "$lib/libvolt_sem.so") == "libvolt_sem.so.$soversion" ]]; then
  ok "libvolt_sem.so -> .so.$soversion -> .so.$version"
else
  ls -l "$lib"; bad "shared library files and links"
fi
if readelf -d "$lib/libvolt_sem.so.$version" | grep -q "SONAME.*\[libvolt_sem\.so\.$soversion\]"; then
  ok "SONAME libvolt_sem.so.$soversion"
else
  readelf -d "$lib/libvolt_sem.so.$version" | grep SONAME; bad "SONAME is not libvolt_sem.so.$soversion"
fi
for f in include/volt_sem.h lib/libvolt_sem.a lib/pkgconfig/volt_sem.pc lib/pkgconfig/volt_sem-static.pc \
         lib/cmake/volt_sem/volt_semConfig.cmake lib/cmake/volt_sem/volt_semConfigVersion.cmake \
         share/licenses/volt_sem/LICENSE-MIT share/licenses/volt_sem/LICENSE-APACHE; do
  [[ -f $PREFIX/$f ]] || missing="${missing:-} $f"
done
[[ -z ${missing:-} ]] && ok "every installed file is there" || bad "missing:$missing"

# Runs the built program from / and checks how it links: shared (NEEDED the
# versioned SONAME) or static (no libvolt_sem at run time).
check_app() { # name binary kind
  local got
  if got=$(cd / && "$2" 2>&1) && [[ $got == "$expected" ]]; then
    ok "$1: runs"
  else
    echo "$got"; bad "$1: does not run"; return
  fi
  if [[ $3 == shared ]]; then
    readelf -d "$2" | grep -q "NEEDED.*\[libvolt_sem\.so\.$soversion\]" && ok "$1: needs libvolt_sem.so.$soversion" ||
      bad "$1: does not record libvolt_sem.so.$soversion"
  else
    ! readelf -d "$2" | grep -q 'NEEDED.*libvolt_sem' && ok "$1: no libvolt_sem at run time" ||
      bad "$1: depends on the shared library"
  fi
}

export PKG_CONFIG_PATH=$lib/pkgconfig
# shellcheck disable=SC2046
if cc "$OUT/app.c" $(pkg-config --cflags --libs volt_sem) -Wl,-rpath,"$lib" -o "$OUT/app-pc-shared" 2>"$OUT/pc-shared.log"; then
  check_app "pkg-config volt_sem" "$OUT/app-pc-shared" shared
else
  cat "$OUT/pc-shared.log"; bad "pkg-config volt_sem: does not build"
fi
# shellcheck disable=SC2046
if cc "$OUT/app.c" $(pkg-config --cflags --libs volt_sem-static) -o "$OUT/app-pc-static" 2>"$OUT/pc-static.log"; then
  check_app "pkg-config volt_sem-static" "$OUT/app-pc-static" static
else
  cat "$OUT/pc-static.log"; bad "pkg-config volt_sem-static: does not build"
fi

for kind in shared static; do
  b=$OUT/cmake-$kind
  static=OFF; [[ $kind == static ]] && static=ON
  if cmake -S cmake -B "$b" -DCMAKE_PREFIX_PATH="$PREFIX" -DAPP_SOURCE="$OUT/app.c" \
       -DWANT_VERSION="$major.$minor" -DVOLT_SEM_USE_STATIC=$static -DCMAKE_BUILD_RPATH="$lib" \
       >"$b.log" 2>&1 && cmake --build "$b" >>"$b.log" 2>&1; then
    check_app "cmake volt_sem::volt_sem ($kind)" "$b/app" $kind
  else
    cat "$b.log"; bad "cmake ($kind): does not configure or build"
  fi
done
# The version file: the next minor (0.x) or major release is not compatible.
if [[ $major == 0 ]]; then next="0.$((minor + 1))"; else next="$((major + 1)).0"; fi
if cmake -S cmake -B "$OUT/cmake-next" -DCMAKE_PREFIX_PATH="$PREFIX" -DAPP_SOURCE="$OUT/app.c" \
     -DWANT_VERSION="$next" >"$OUT/cmake-next.log" 2>&1; then
  bad "cmake: find_package(volt_sem $next) accepted version $version"
else
  grep -q "volt_sem" "$OUT/cmake-next.log" && ok "cmake: find_package(volt_sem $next) refuses $version" ||
    { cat "$OUT/cmake-next.log"; bad "cmake: unexpected failure for $next"; }
fi

echo "install: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
