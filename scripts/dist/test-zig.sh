#!/usr/bin/env bash
# Tests the Zig package the way a user uses it: a scratch copy of the consumer
# project in tests/zig gets its dependency with
#   zig fetch --save=volt_sem PACKAGE.tar.gz
# (the README's line, with a path where a user gives a URL), then
# `zig build test -Dtarget=...` builds tests/zig/test_volt_sem.zig against the
# package's module (translate-c by the package's build.zig) and runs it:
#
#   target               how it runs here
#   x86_64-linux-gnu     natively
#   x86_64-linux-musl    natively (a static musl program)
#   aarch64-linux-gnu    zig build -fqemu, Debian's arm64 glibc (--libc-runtimes /usr)
#   aarch64-linux-musl   zig build -fqemu (static)
#   x86_64-windows-gnu   zig build -fwine (Wine 8 lacks bcryptprimitives.dll,
#                        which Rust's std imports: tests/wine's shim, on WINEPATH)
#   x86_64-macos,        built and linked only (no macOS here): the test program
#   aarch64-macos        must be a Mach-O executable for the right CPU
#
# and a target the package has no library for (riscv64-linux-gnu) must fail
# the build with the package's error naming the target.
#
#   scripts/dist/test-zig.sh                 `make dist-test-zig`: the package of
#                                            `make dist-zig`, every target above
#   scripts/dist/test-zig.sh --host TARBALL  `make -C tests zig` (in `make test`):
#                                            a package built for this machine only
#                                            (scripts/dist/zig.sh --host): natively,
#                                            plus the unsupported-target error
#   scripts/dist/test-zig.sh --demo TARBALL EXE
#                                            builds tests/zig/demo.zig the same way
#                                            (ReleaseSafe) into EXE (`make demo-zig`)
#
# Zig is PyPI's ziglang 0.17.1, in the venv scripts/dist/toolchain.sh uses, with
# Zig's own global cache (~/.cache/zig), as a user has; the scratch project
# is $CARGO_TARGET_DIR/zig-test/consumer. Closes with
# "zig: N passed, M failed" (tests that ran, plus one per check).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
demo=
if [[ ${1:-} == --demo ]]; then
  [[ $# -eq 3 ]] || { echo "usage: $0 --demo TARBALL EXE" >&2; exit 2; }
  demo=$3
  set -- --host "$2"
fi
if [[ ${1:-} == --host ]]; then
  [[ $# -eq 2 ]] || { echo "usage: $0 [--host TARBALL | --demo TARBALL EXE]" >&2; exit 2; }
  host=1 tarball=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
else
  host=0 tarball=$root/dist/zig/volt-sem-zig-$version.tar.gz
fi
[[ -f $tarball ]] || { echo "no $tarball (make dist-zig)" >&2; exit 1; }

ZIG_VENV=$CARGO_TARGET_DIR/zig-venv
if ! "$ZIG_VENV/bin/python" -m ziglang version 2>/dev/null | grep -qx 0.17.1; then
  echo "installing ziglang 0.17.1 into $ZIG_VENV"
  python3 -m venv "$ZIG_VENV" && "$ZIG_VENV/bin/pip" install -q --disable-pip-version-check ziglang==0.17.1 || exit 1
fi
ZIG="$ZIG_VENV/bin/python -m ziglang"
out=$CARGO_TARGET_DIR/zig-test
project=$out/consumer
rm -rf "$project" && mkdir -p "$project"
cp tests/zig/build.zig.zon tests/zig/*.zig "$project/"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

if (cd "$project" && $ZIG fetch --save=volt_sem "$tarball") >"$out/fetch.log" 2>&1 &&
   grep -q '\.volt_sem = ' "$project/build.zig.zon"; then
  ok "zig fetch --save adds the package ($(sed -n 's/.*\.hash = "\(.*\)".*/\1/p' "$project/build.zig.zon"))"
else
  cat "$out/fetch.log"; bad "zig fetch --save"
  echo "zig: $pass passed, $fail failed"; exit 1
fi

if [[ -n $demo ]]; then # the demo program, optimised, out of the same project
  rm -rf "$out/demo"
  (cd "$project" && $ZIG build install -Doptimize=ReleaseSafe --prefix "$out/demo") && cp "$out/demo/bin/workers-zig" "$demo"
  exit
fi

# zig build test for one target; "N pass" from the build summary, which
# reads "N/M tests passed" and, when tests skipped themselves (the named
# semaphore's on Windows, and under qemu with musl, which has no robust
# futexes there), "(K skipped)": passed and skipped must make up M.
run_tests() { # zig target, what runs it (words), extra zig build arguments...
  local target=$1 how=$2 log=$out/test-$1.log n m k summary; shift 2
  if (cd "$project" && $ZIG build test -Dtarget="$target" --summary all "$@") >"$log" 2>&1 &&
     summary=$(grep -o '[0-9]*/[0-9]* tests passed\( ([0-9]* skipped)\)\?$' "$log" | tail -1) &&
     n=${summary%%/*} m=${summary#*/} m=${m%% *} k=$(grep -o '[0-9]* skipped' <<<"$summary" | cut -d' ' -f1) &&
     [[ -n $n && $n -gt 0 && $((n + ${k:-0})) -eq $m ]]; then
    ok "$target: $n tests pass${k:+, $k skipped} ($how)"; pass=$((pass + n))
  else
    tail -30 "$log"; bad "$target: zig build test ($how)"
  fi
}

run_tests x86_64-linux-gnu natively
supported="x86_64-linux-gnu aarch64-linux-gnu x86_64-linux-musl aarch64-linux-musl x86_64-macos aarch64-macos x86_64-windows-gnu"
[[ $host == 1 ]] && supported=x86_64-linux-gnu

# A target with no library: the package's own error, naming the target.
log=$out/unsupported.log
if (cd "$project" && $ZIG build test -Dtarget=riscv64-linux-gnu) >"$log" 2>&1; then
  bad "riscv64-linux-gnu: the build succeeded without a library"
elif grep -qF "volt-sem has no prebuilt library for riscv64-linux-gnu; this package supports: $supported" "$log"; then
  ok "riscv64-linux-gnu: fails with \"$(grep -o 'volt-sem has no prebuilt.*' "$log" | head -1)\""
else
  cat "$log"; bad "riscv64-linux-gnu: the build fails, but not with the package's error"
fi

if [[ $host == 0 ]]; then
  # Runners under the names zig build looks for (qemu-aarch64, wine), from
  # Debian's packages (installed on first use, as scripts/dist/test-c.sh does).
  pkgs=()
  command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
  [[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]] || pkgs+=(libc6-arm64-cross)
  command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs+=(gcc-mingw-w64-x86-64)
  [[ -x /usr/lib/wine/wine64 ]] || pkgs+=(wine64)
  if [[ ${#pkgs[@]} -gt 0 ]]; then
    echo "installing ${pkgs[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  fi
  mkdir -p "$out/bin" "$out/wine-dlls"
  ln -sf "$(command -v qemu-aarch64-static)" "$out/bin/qemu-aarch64"
  # A script, not a link: wine64 finds its loader from the name it runs as.
  rm -f "$out/bin/wine"
  printf '#!/bin/sh\nexec /usr/lib/wine/wine64 "$@"\n' >"$out/bin/wine" && chmod +x "$out/bin/wine"
  x86_64-w64-mingw32-gcc -shared -O2 -o "$out/wine-dlls/bcryptprimitives.dll" tests/wine/bcryptprimitives.c -ladvapi32
  export PATH=$out/bin:$PATH WINEDEBUG=-all WINEPREFIX=$out/wine WINEPATH=$(winepath=$out/wine-dlls; echo "Z:${winepath//\//\\}")

  run_tests x86_64-linux-musl "natively, static musl"
  run_tests aarch64-linux-gnu "qemu-aarch64, Debian's arm64 glibc" -fqemu --libc-runtimes /usr
  run_tests aarch64-linux-musl "qemu-aarch64, static musl" -fqemu
  run_tests x86_64-windows-gnu "Wine" -fwine
  for pair in x86_64-macos:x86_64 aarch64-macos:arm64; do
    target=${pair%%:*} arch=${pair#*:} prefix=$out/install-$target log=$out/build-$target.log
    rm -rf "$prefix"
    if (cd "$project" && $ZIG build install -Dtarget="$target" --prefix "$prefix") >"$log" 2>&1 &&
       file "$prefix/bin/test" | grep -q "Mach-O 64-bit $arch executable"; then
      ok "$target: the tests link into a Mach-O $arch executable (not run: no macOS here)"
    else
      tail -30 "$log"; file "$prefix/bin/test" 2>/dev/null; bad "$target: zig build install"
    fi
  done
fi
echo "zig: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
