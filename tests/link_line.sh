#!/usr/bin/env bash
# `make link-line`: the README's C section, taken literally. Extracts app.c and
# every `cc app.c ...` line from it, runs each line as written (with VOLT set to
# this checkout), and runs the program from another directory: it must start
# and print its line. Also checks that the documented static line lists exactly
# the libraries rustc reports (--print native-static-libs), that the shared
# library has a SONAME, and that the volt_sem.pc from ffi-c/link-flags.sh links
# statically (Libs.private) and dynamically.
# Expects the release library (make lib-release) and pkg-config.
set -u
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
REL=$TARGET/release
OUT=$PWD/build/readme
rm -rf "$OUT" && mkdir -p "$OUT"
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
expected="holding 2 of 3 permits, 1 left"

# The C section: from its heading to the next one.
section=$(sed -n '/^###* C and Zig/,/^###* [^C]/p' "$ROOT/README.md")
awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' <<<"$section" >"$OUT/app.c"
mapfile -t lines < <(grep '^cc app\.c ' <<<"$section")
if [[ -s $OUT/app.c && ${#lines[@]} -ge 2 ]]; then
    ok "README: app.c and ${#lines[@]} link lines found"
else
    bad "README: no complete app.c or fewer than 2 'cc app.c' link lines in the C section"
fi

# Runs one link line in its own directory, then the program from /.
try_line() { # name line
    local name=$1 line=$2 dir=$OUT/$1
    mkdir -p "$dir" && cp "$OUT/app.c" "$dir/"
    # The README assumes cargo's default target dir; follow CARGO_TARGET_DIR.
    line=${line//\$VOLT\/target/$TARGET}
    if ! (cd "$dir" && VOLT=$ROOT eval "$line") >"$dir/build.log" 2>&1; then
        cat "$dir/build.log"
        bad "$name: README line does not build: $2"
        return 1
    fi
    local got
    if got=$(cd / && "$dir/app" 2>&1) && [[ $got == "$expected" ]]; then
        ok "$name: README line builds a program that runs from another directory"
    else
        echo "$got"
        bad "$name: the program built by the README line does not run: $2"
        return 1
    fi
}

libs=$(bash "$ROOT/ffi-c/link-flags.sh" libs)
for line in "${lines[@]}"; do
    if [[ $line == *libvolt_sem.a* ]]; then
        # What follows the archive, up to -o, must be rustc's list.
        documented=$(sed -E 's/.*libvolt_sem\.a"? (.*) -o app$/\1/' <<<"$line")
        if [[ $documented == "$libs" ]]; then
            ok "static: the README lists rustc's native-static-libs ($libs)"
        else
            bad "static: the README lists '$documented', rustc says '$libs' (update README.md)"
        fi
        if try_line static "$line"; then
            if ldd "$OUT/static/app" | grep -q libvolt_sem; then
                bad "static: the program depends on libvolt_sem.so"
            else
                ok "static: the program does not depend on libvolt_sem.so"
            fi
        fi
    else
        if try_line shared "$line"; then
            if readelf -d "$OUT/shared/app" | grep -q 'NEEDED.*\[libvolt_sem\.so\]'; then
                ok "shared: the program needs libvolt_sem.so by its SONAME"
            else
                readelf -d "$OUT/shared/app" | grep NEEDED
                bad "shared: the program does not record libvolt_sem.so as NEEDED"
            fi
        fi
    fi
done
if readelf -d "$REL/libvolt_sem.so" | grep -q 'SONAME.*\[libvolt_sem\.so\]'; then
    ok "libvolt_sem.so has the SONAME libvolt_sem.so"
else
    bad "libvolt_sem.so has no SONAME"
fi

# pkg-config: a static-only and a shared-only install, each with its .pc.
for kind in static shared; do
    stage=$OUT/pc-$kind/lib
    mkdir -p "$stage"
    if [[ $kind == static ]]; then cp "$REL/libvolt_sem.a" "$stage/"; flags=--static
    else cp "$REL/libvolt_sem.so" "$stage/"; flags=; fi
    if ! bash "$ROOT/ffi-c/link-flags.sh" pc "$stage" >/dev/null; then
        bad "pkg-config ($kind): link-flags.sh pc failed"
        continue
    fi
    if [[ $kind == static ]] && ! grep -qx "Libs.private: $libs" "$stage/volt_sem.pc"; then
        bad "pkg-config: Libs.private is not rustc's list"
    fi
    cflags=$(PKG_CONFIG_PATH=$stage pkg-config --cflags volt_sem)
    ldflags=$(PKG_CONFIG_PATH=$stage pkg-config $flags --libs volt_sem)
    # shellcheck disable=SC2086
    if cc "$OUT/app.c" $cflags $ldflags -Wl,-rpath,"$stage" -o "$stage/app" 2>"$stage/build.log" &&
        [[ $(cd / && "$stage/app") == "$expected" ]]; then
        ok "pkg-config $flags --libs volt_sem ($kind install: $ldflags)"
    else
        cat "$stage/build.log"
        bad "pkg-config ($kind install) does not build a working program"
    fi
done

echo "link-line: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
