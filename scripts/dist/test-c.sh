#!/usr/bin/env bash
# `make dist-test-c`: tests the C archives of `make dist-c` as far as this
# Linux x86-64 machine can, each through its relocatable pkg-config files:
#
#   platform          C test suite (static lib)             README program (shared lib)
#   linux-x64-gnu     native                                native; GLIBC symbols <= 2.17
#   linux-arm64-gnu   qemu-aarch64 (Debian's arm64 glibc)   qemu-aarch64
#   linux-x64-musl    native, static musl (zig cc)          structure only (*)
#   linux-arm64-musl  qemu-aarch64, static musl             structure only (*)
#   win32-x64-gnu     Wine (MinGW-w64 gcc)                  Wine, DLL next to the program
#   darwin-*          structure only: Mach-O arch, install name, minimum macOS, exports
#
# (*) The musl shared library needs musl 1.2.5 or later at run time (the musl
# Rust's std is built against: it calls statx; Alpine 3.20+); Debian's musl
# here is 1.2.3, and there is no arm64 musl loader at all.
# Every shared library is also checked to export each function the header
# declares, and every archive's static link line (pkg-config, CMake) to name
# the system libraries rustc reports for its target. Closes with "N passed, M failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/dist/toolchain.sh
ZIGCC="$ZIG_VENV/bin/python -m ziglang cc"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
IFS=. read -r major minor _ <<<"$version"
soversion=$major.$minor; [[ $major != 0 ]] && soversion=$major
out=$root/target/dist-test
rm -rf "$out" && mkdir -p "$out"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
expected="holding 2 of 3 permits, 1 left"
sed -n '/^###* C and Zig/,/^###* [^C]/p' README.md | awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' >"$out/app.c"
funcs=$(grep -oE '\bvolt_[a-z_]+ *\(' include/volt_sem.h | tr -d ' (' | sort -u)

# Debian's cross tools and runners, installed on first use.
pkgs=()
command -v aarch64-linux-gnu-gcc >/dev/null || pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs+=(gcc-mingw-w64-x86-64)
command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
[[ -x /usr/lib/wine/wine64 ]] || pkgs+=(wine64)
[[ -e /lib/ld-musl-x86_64.so.1 ]] || pkgs+=(musl)
command -v pkg-config >/dev/null || pkgs+=(pkg-config)
if [[ ${#pkgs[@]} -gt 0 ]]; then
  echo "installing ${pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi
QEMU="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export WINEDEBUG=-all WINEPREFIX=$out/wine
WINE=/usr/lib/wine/wine64
x86_64-w64-mingw32-gcc -shared -O2 -o "$out/bcryptprimitives.dll" tests/wine/bcryptprimitives.c -ladvapi32

pc() { # archive dir, pkg-config args...
  local dir=$1; shift
  PKG_CONFIG_PATH=$dir/lib/pkgconfig PKG_CONFIG_LIBDIR=$dir/lib/pkgconfig pkg-config "$@"
}

suite() { # platform, compiler command, runner (may be empty)
  local p=$1 cc=$2 run=$3 dir=dist/c/volt-sem-$version-$1 exe=$out/$1-suite
  local extra=(-DEXPECTED_VERSION="\"$version\"" -DCHAIN_LENGTH=20000 -DSTRESS_ROUNDS=300 -Itests/c)
  [[ $p == win32-* ]] && exe=$exe.exe && extra+=(-static -lpthread)
  # shellcheck disable=SC2046,SC2086
  if ! $cc -std=c11 -O1 tests/c/test_volt_sem.c $(pc "$dir" --cflags --libs volt_sem-static) "${extra[@]}" \
       -o "$exe" >"$out/$p-suite.log" 2>&1; then
    cat "$out/$p-suite.log"; bad "$p: the C suite does not build against the archive"; return
  fi
  [[ $p == win32-* ]] && cp "$out/bcryptprimitives.dll" "$out/"
  # shellcheck disable=SC2086
  if (cd "$out" && timeout 300 $run "$exe") >"$out/$p-suite.run" 2>&1 && grep -q ' 0 failed' "$out/$p-suite.run"; then
    ok "$p: C suite ($(grep -E 'passed, [0-9]+ failed' "$out/$p-suite.run" | tail -1))"
  else
    tail -20 "$out/$p-suite.run"; bad "$p: the C suite fails"
  fi
}

app() { # platform, compiler command, runner
  local p=$1 cc=$2 run=$3 dir=$root/dist/c/volt-sem-$version-$1 exe=$out/$1-app got
  [[ $p == win32-* ]] && exe=$exe.exe
  # shellcheck disable=SC2046,SC2086
  if ! $cc "$out/app.c" $(pc "$dir" --cflags --libs volt_sem) -Wl,-rpath,"$dir/lib" -o "$exe" >"$out/$p-app.log" 2>&1; then
    cat "$out/$p-app.log"; bad "$p: the README program does not link against the shared library"; return
  fi
  [[ $p == win32-* ]] && cp "$dir/bin/volt_sem.dll" "$out/"
  # shellcheck disable=SC2086
  if got=$(cd "$out" && timeout 60 $run "$exe" 2>&1) && [[ $got == *"$expected"* ]]; then
    ok "$p: the README program runs against the shared library"
  else
    echo "$got"; bad "$p: the README program does not run against the shared library"
  fi
}

elf_exports() { # platform, library file, objdump
  local missing
  missing=$(comm -23 <(echo "$funcs") <($3 -T "$2" | awk '$4 == ".text" {print $NF}' | sort -u))
  [[ -z $missing ]] && ok "$1: exports every header function" || bad "$1: does not export: $missing"
}

for p in "${!TARGET_OF[@]}"; do
  [[ -d dist/c/volt-sem-$version-$p ]] || { bad "$p: no archive (run make dist-c)"; continue; }
done
# Every archive names what a static link needs besides libvolt_sem.a (rustc's
# native-static-libs for its target), in pkg-config and in CMake: the musl and
# macOS archives once named nothing (link-flags.sh had failed unseen for want
# of their C compilers), so every static link of theirs failed.
for p in "${!TARGET_OF[@]}"; do
  d=dist/c/volt-sem-$version-$p
  [[ -d $d ]] || continue
  libs=$(pc "$d" --libs volt_sem-static)
  cmake_libs=$(sed -n 's/.*INTERFACE_LINK_LIBRARIES "\(.*\)")$/\1/p' "$d/lib/cmake/volt_sem/volt_semConfig.cmake")
  want=" -lc"
  [[ $p == darwin-* ]] && want=" -framework Security"
  [[ $p == win32-* ]] && want=" -lws2_32"
  if [[ " $libs " == *"$want "* && ";$cmake_libs;" == *";${want# };"* ]]; then
    ok "$p: the static link line names the system libraries (${libs#*libvolt_sem.a })"
  else
    bad "$p: the static link line lacks${want}: pkg-config '$libs', CMake '$cmake_libs'"
  fi
done

lib=lib/libvolt_sem.so.$version
suite linux-x64-gnu cc ""
app linux-x64-gnu cc ""
elf_exports linux-x64-gnu "dist/c/volt-sem-$version-linux-x64-gnu/$lib" objdump
glibc=$(objdump -T "dist/c/volt-sem-$version-linux-x64-gnu/$lib" | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -1)
[[ $(printf '%s\nGLIBC_2.17\n' "$glibc" | sort -V | tail -1) == GLIBC_2.17 ]] &&
  ok "linux-x64-gnu: needs at most glibc 2.17 ($glibc)" || bad "linux-x64-gnu: needs $glibc"
suite linux-arm64-gnu aarch64-linux-gnu-gcc "$QEMU"
app linux-arm64-gnu aarch64-linux-gnu-gcc "$QEMU"
elf_exports linux-arm64-gnu "dist/c/volt-sem-$version-linux-arm64-gnu/$lib" aarch64-linux-gnu-objdump
suite linux-x64-musl "$ZIGCC -target x86_64-linux-musl -static" ""
elf_exports linux-x64-musl "dist/c/volt-sem-$version-linux-x64-musl/$lib" objdump
suite linux-arm64-musl "$ZIGCC -target aarch64-linux-musl -static" "qemu-aarch64-static"
elf_exports linux-arm64-musl "dist/c/volt-sem-$version-linux-arm64-musl/$lib" aarch64-linux-gnu-objdump
for p in linux-x64-musl linux-arm64-musl; do
  readelf -d "dist/c/volt-sem-$version-$p/$lib" | grep -q 'NEEDED.*\[libc\.so\]' &&
    ! readelf -V "dist/c/volt-sem-$version-$p/$lib" | grep -q GLIBC &&
    ok "$p: links musl's libc.so, no glibc symbol versions" || bad "$p: not a musl library"
done
suite win32-x64-gnu x86_64-w64-mingw32-gcc "$WINE"
app win32-x64-gnu x86_64-w64-mingw32-gcc "$WINE"
missing=$(comm -23 <(echo "$funcs") <(x86_64-w64-mingw32-objdump -p "dist/c/volt-sem-$version-win32-x64-gnu/bin/volt_sem.dll" |
  sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk '{print $NF}' | sort -u))
[[ -z $missing ]] && ok "win32-x64-gnu: volt_sem.dll exports every header function" || bad "win32-x64-gnu: not exported: $missing"
cli() { # platform, executable in the archive, runner (may be empty)
  local p=$1 exe=$root/dist/c/volt-sem-$version-$1/$2 run=$3 got
  if got=$(cd "$out" && timeout 60 $run "$exe" --help 2>&1) && [[ $got == *"Usage: volt-sem <command>"* ]]; then
    ok "$p: the volt-sem command line runs"
  else
    echo "$got"; bad "$p: the volt-sem command line does not run"
  fi
}
cli linux-x64-gnu bin/volt-sem ""
cli linux-arm64-gnu bin/volt-sem "$QEMU"
cli win32-x64-gnu bin/volt-sem.exe "$WINE"
for p in linux-x64-musl linux-arm64-musl; do
  [[ -x dist/c/volt-sem-$version-$p/bin/volt-sem ]] && ok "$p: bin/volt-sem is there" || bad "$p: no bin/volt-sem"
done
for p in darwin-x64:x86_64 darwin-arm64:arm64; do
  plat=${p%%:*} arch=${p#*:}
  if python3 scripts/dist/macho.py "dist/c/volt-sem-$version-$plat/lib/libvolt_sem.$soversion.dylib" "$arch" \
       "@rpath/libvolt_sem.$soversion.dylib" include/volt_sem.h "${MACOS_MIN[$plat]}"; then
    ok "$plat: Mach-O structure (not run: no macOS here)"
  else
    bad "$plat: Mach-O structure"
  fi
done
echo "dist-test-c: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
