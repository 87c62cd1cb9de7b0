#!/usr/bin/env bash
# `make dist-test-python`: tests the wheels and the sdist of `make dist-python`
# (dist/python/) as far as this Linux x86-64 machine can:
#
#   platform          how
#   every wheel       file name = the expected tag; pip, asked for that platform
#                     (--platform/--python-version 3.9 and 3.13), picks exactly that
#                     wheel from dist/python; abi3audit --strict (no symbol outside
#                     the 3.9 stable ABI); PyInit__volt_sem exported
#   linux-x64-gnu     run: `pip install --no-index --find-links dist/python volt_sem`
#                     in fresh venvs of CPython 3.9, 3.11 and 3.13 (pyenv) picks it,
#                     smoke test + __version__; the whole pytest suite on 3.11 (and
#                     its asyncio tests again over the thread wake path);
#                     auditwheel show: manylinux_2_17, no external libraries
#   linux-arm64-gnu   run: Debian's arm64 CPython 3.11 (packages unpacked into a
#                     private sysroot, no dpkg change) under qemu-aarch64: pip
#                     --platform installs the wheel, then smoke test and the pytest
#                     suite; auditwheel show: manylinux_2_17_aarch64
#   linux-*-musl      structure: NEEDED only musl's libc.so, no GLIBC symbol
#                     versions (no musl CPython can be had here, and auditwheel
#                     cannot analyse a musl wheel on a glibc host)
#   win32-x64-gnu     structure: PE imports python3.dll (stable ABI, not python3X.dll)
#                     and Windows system DLLs only (no Windows CPython here)
#   darwin-*          structure (pyext_macho.py): Mach-O arch, minimum macOS, only
#                     system libraries loaded
#   sdist             run: fresh venv, `pip install volt_sem-VERSION.tar.gz` builds
#                     from source (maturin from PyPI, cargo), smoke test + __version__
#
# Closes with "N passed, M failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PIP_DISABLE_PIP_VERSION_CHECK=1
tdir=${CARGO_TARGET_DIR:-$root/target}
out=$tdir/dist-test-python
rm -rf "$out" && mkdir -p "$out"
dist=$root/dist/python
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
TEST_PINS=$(sed -n 's/^TEST_PINS := //p' bindings-python/Makefile)
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# The wheel of each platform: its file name's tags, and what pip is told the
# platform is when it must choose (a newer OS version than the wheel's minimum).
declare -A TAG_OF=(
  [linux-x64-gnu]=manylinux2014_x86_64.manylinux_2_17_x86_64
  [linux-arm64-gnu]=manylinux2014_aarch64.manylinux_2_17_aarch64
  [linux-x64-musl]=musllinux_1_2_x86_64
  [linux-arm64-musl]=musllinux_1_2_aarch64
  [darwin-x64]=macosx_10_12_x86_64
  [darwin-arm64]=macosx_11_0_arm64
  [win32-x64-gnu]=win_amd64
)
declare -A PIP_PLATFORM=(
  [linux-x64-gnu]=manylinux_2_31_x86_64
  [linux-arm64-gnu]=manylinux_2_36_aarch64
  [linux-x64-musl]=musllinux_1_2_x86_64
  [linux-arm64-musl]=musllinux_1_2_aarch64
  [darwin-x64]=macosx_13_0_x86_64
  [darwin-arm64]=macosx_14_0_arm64
  [win32-x64-gnu]=win_amd64
)
declare -A MACOS_MIN=([darwin-x64]=10.12 [darwin-arm64]=11.0)
wheel_of() { echo "$dist/volt_sem-$version-cp39-abi3-${TAG_OF[$1]}.whl"; }
# pip's --platform is taken literally for Linux: list every tag such a machine
# accepts, as pip there would (manylinux_2_N down to 2_5 and the legacy aliases).
platform_args() {
  local plat=${PIP_PLATFORM[$1]} args=() n arch
  if [[ $plat =~ ^manylinux_2_([0-9]+)_(.*)$ ]]; then
    arch=${BASH_REMATCH[2]}
    for ((n = BASH_REMATCH[1]; n >= 5; n--)); do args+=(--platform "manylinux_2_${n}_$arch"); done
    args+=(--platform "manylinux2014_$arch")
  else
    args=(--platform "$plat")
  fi
  echo "${args[@]}"
}

# Tools: auditwheel and abi3audit (PyPI, pinned), Debian's cross binutils and qemu.
tools=$tdir/dist-test-python-venv
TOOL_PINS="auditwheel==6.8.2 abi3audit==0.0.26"
if [[ $(cat "$tools/.pins" 2>/dev/null) != "$TOOL_PINS" ]]; then
  rm -rf "$tools" && python3 -m venv "$tools" && "$tools/bin/pip" install -q $TOOL_PINS && echo "$TOOL_PINS" >"$tools/.pins"
fi
pkgs=()
command -v x86_64-w64-mingw32-objdump >/dev/null || pkgs+=(binutils-mingw-w64-x86-64)
command -v aarch64-linux-gnu-readelf >/dev/null || pkgs+=(binutils-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
if [[ ${#pkgs[@]} -gt 0 ]]; then
  echo "installing ${pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi

smoke() { # python, the installed wheel's file name ("-": any) -> exit status
  "$1" - "$version" "$2" <<'EOF'
import asyncio, importlib.metadata as md, sys, threading, volt_sem
version, wheel = sys.argv[1], sys.argv[2]
assert volt_sem.__version__ == version == md.version("volt-sem"), (volt_sem.__version__, md.version("volt-sem"))
# The wheel pip chose: its WHEEL file lists the tags of that file's name.
tags = {l.split(": ", 1)[1] for l in md.distribution("volt-sem").read_text("WHEEL").splitlines() if l.startswith("Tag: ")}
if wheel != "-":
    py, abi, plats = wheel[: -len(".whl")].split("-")[2:]
    assert tags == {f"{py}-{abi}-{p}" for p in plats.split(".")}, (tags, wheel)
sem = volt_sem.Semaphore(2)
order = []
async def job(i):
    async with sem.acquire(2):
        order.append(i)
        await asyncio.sleep(0)
async def main():
    await asyncio.gather(*(job(i) for i in range(20)))
threads = [threading.Thread(target=asyncio.run, args=(main(),)) for _ in range(2)]
for t in threads: t.start()
with sem.acquire(1):
    pass
for t in threads: t.join()
assert sorted(order) == sorted(list(range(20)) * 2) and sem.available_permits == 2
EOF
}

# --- every wheel: present, picked by pip for its platform, abi3-clean ----------
for p in "${!TAG_OF[@]}"; do
  w=$(wheel_of "$p")
  if [[ ! -f $w ]]; then bad "$p: no wheel ${w##*/} (run make dist-python)"; continue; fi
  for pyv in 3.9 3.13; do
    rm -rf "$out/pick" && mkdir -p "$out/pick"
    # shellcheck disable=SC2046
    if python3 -m pip download -q --no-deps --no-index --find-links "$dist" --only-binary=:all: \
         $(platform_args "$p") --python-version "$pyv" --implementation cp \
         -d "$out/pick" volt_sem >"$out/pick.log" 2>&1 && [[ $(ls "$out/pick") == "${w##*/}" ]]; then
      ok "$p: pip for CPython $pyv on ${PIP_PLATFORM[$p]} picks ${w##*/}"
    else
      cat "$out/pick.log"; ls "$out/pick"; bad "$p: pip for CPython $pyv on ${PIP_PLATFORM[$p]} does not pick ${w##*/}"
    fi
  done
  if COLUMNS=300 "$tools/bin/abi3audit" --strict --summary --assume-minimum-abi3 3.9 "$w" >"$out/abi3audit-$p.log" 2>&1; then
    ok "$p: abi3audit --strict: $(grep -oE '[0-9]+ ABI version mismatches and [0-9]+ ABI violations' "$out/abi3audit-$p.log" | head -1)"
  else
    cat "$out/abi3audit-$p.log"; bad "$p: abi3audit"
  fi
  mkdir -p "$out/unpacked/$p" && (cd "$out/unpacked/$p" && python3 -m zipfile -e "$w" .)
done
rm -rf "$out/pick"
# shellcheck disable=SC2046
if python3 -m pip download -q --no-deps --no-index --find-links "$dist" --only-binary=:all: $(platform_args linux-x64-gnu) \
     --python-version 3.8 --implementation cp -d "$out/pick38" volt_sem >/dev/null 2>&1; then
  bad "pip for CPython 3.8 found a wheel (requires-python is >= 3.9)"
else
  ok "pip for CPython 3.8 finds no wheel (requires-python >= 3.9)"
fi

ext() { ls "$out/unpacked/$1"/volt_sem/_volt_sem*.so "$out/unpacked/$1"/volt_sem/_volt_sem*.pyd 2>/dev/null; }

# --- linux-x64-gnu: run in fresh venvs -------------------------------------------
PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
w=$(wheel_of linux-x64-gnu)
for pyv in 3.9 3.11 3.13; do
  py=$(ls -d "$PYENV_ROOT"/versions/$pyv.*/bin/python$pyv 2>/dev/null | sort -V | tail -n1)
  [[ -n $py ]] || py=$(command -v python$pyv)
  if [[ -z $py ]]; then echo "SKIPPED: CPython $pyv (no interpreter)"; continue; fi
  venv=$out/venv-$pyv
  "$py" -m venv "$venv"
  if "$venv/bin/pip" install -q --no-index --find-links "$dist" volt_sem >"$out/install-$pyv.log" 2>&1 &&
     smoke "$venv/bin/python" "${w##*/}" >"$out/smoke-$pyv.log" 2>&1; then
    ok "linux-x64-gnu: CPython $pyv: pip --no-index --find-links dist/python installs ${w##*/}, smoke test and __version__ pass"
  else
    cat "$out/install-$pyv.log" "$out/smoke-$pyv.log"; bad "linux-x64-gnu: CPython $pyv install/smoke"
  fi
done
venv=$out/venv-3.11
if [[ -x $venv/bin/python ]] && "$venv/bin/pip" install -q $TEST_PINS >"$out/pins.log" 2>&1; then
  if (cd bindings-python && VOLT_SEM_WHEEL=$w "$venv/bin/python" -m pytest -q -p no:cacheprovider tests) >"$out/pytest-x64.log" 2>&1 &&
     (cd bindings-python && VOLT_SEM_WAKE=thread "$venv/bin/python" -m pytest -q -p no:cacheprovider \
        $(sed -n '/^THREAD_WAKE_TESTS := /,/[^\\]$/p' Makefile | sed 's/THREAD_WAKE_TESTS := //; s/\\//')) \
        >>"$out/pytest-x64.log" 2>&1; then
    ok "linux-x64-gnu: pytest on the installed wheel: $(grep -E '^[0-9]+ passed' "$out/pytest-x64.log" | tr '\n' ';')"
  else
    tail -30 "$out/pytest-x64.log"; bad "linux-x64-gnu: pytest on the installed wheel"
  fi
else
  cat "$out/pins.log" 2>/dev/null; bad "linux-x64-gnu: no 3.11 venv with the test pins"
fi
for p in linux-x64-gnu:x86_64 linux-arm64-gnu:aarch64; do
  plat=${p%%:*} arch=${p#*:}
  show=$("$tools/bin/auditwheel" show "$(wheel_of "$plat")" 2>&1 | tr -s ' \n' '  ')
  if grep -q "consistent with the following platform tag: \"manylinux_2_17_$arch\"" <<<"$show" &&
     ! grep -q "external shared libraries are required" <<<"$show"; then
    ok "$plat: auditwheel show: manylinux_2_17_$arch, no external shared libraries"
  else
    echo "$show"; bad "$plat: auditwheel show"
  fi
done

# --- linux-arm64-gnu: Debian's arm64 CPython under qemu -----------------------------
# Debian's python3.11-minimal and libpython3.11-stdlib for arm64 with their
# dependencies, downloaded with a private apt state (this machine's dpkg is not
# touched) and unpacked into a sysroot; qemu-aarch64 -L runs it there.
sysroot=$tdir/arm64-python
if [[ ! -x $sysroot/usr/bin/python3.11 ]]; then
  echo "fetching Debian's arm64 CPython into $sysroot"
  apt_dir=$tdir/arm64-apt
  mkdir -p "$apt_dir"/{lists/partial,archives/partial,cache} && touch "$apt_dir/status"
  A=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Dir::State::Lists="$apt_dir/lists"
     -o Dir::State::status="$apt_dir/status" -o Dir::Cache="$apt_dir/cache"
     -o Dir::Cache::archives="$apt_dir/archives" -o Debug::NoLocking=1)
  if apt-get "${A[@]}" update -qq >"$out/arm64-apt.log" 2>&1 &&
     apt-get "${A[@]}" install --download-only -y -qq python3.11-minimal libpython3.11-stdlib >>"$out/arm64-apt.log" 2>&1; then
    rm -rf "$sysroot.tmp" && mkdir -p "$sysroot.tmp"
    for deb in "$apt_dir"/archives/*.deb; do dpkg-deb -x "$deb" "$sysroot.tmp"; done
    rm -rf "$sysroot" && mv "$sysroot.tmp" "$sysroot"
  else
    cat "$out/arm64-apt.log"
  fi
fi
if [[ -x $sysroot/usr/bin/python3.11 ]]; then
  # sys.executable is this wrapper (qemu's -0), so the tests' subprocesses run
  # under qemu too.
  pyarm=$sysroot/usr/bin/python3-qemu
  printf '#!/bin/sh\nexec qemu-aarch64-static -L %s -0 %s %s "$@"\n' "$sysroot" "$pyarm" "$sysroot/usr/bin/python3.11" >"$pyarm"
  chmod +x "$pyarm"
  site=$out/arm64-site
  w=$(wheel_of linux-arm64-gnu)
  # shellcheck disable=SC2046
  if python3 -m pip install -q --no-index --find-links "$dist" --only-binary=:all: $(platform_args linux-arm64-gnu) \
       --python-version 3.11 --implementation cp --target "$site" volt_sem >"$out/arm64-install.log" 2>&1 &&
     [[ -f $site/volt_sem/_volt_sem.abi3.so ]] && cmp -s "$site/volt_sem/_volt_sem.abi3.so" "$(ext linux-arm64-gnu)" &&
     PYTHONPATH=$site smoke "$pyarm" - >"$out/arm64-smoke.log" 2>&1; then
    ok "linux-arm64-gnu: Debian arm64 CPython $("$pyarm" -c 'import platform; print(platform.python_version(), platform.machine())') under qemu: pip picks ${w##*/}, smoke test and __version__ pass"
  else
    cat "$out/arm64-install.log" "$out/arm64-smoke.log"; bad "linux-arm64-gnu: install/smoke under qemu"
  fi
  deps=$out/arm64-deps
  # shellcheck disable=SC2046
  if python3 -m pip install -q --only-binary=:all: $(platform_args linux-arm64-gnu) --python-version 3.11 --implementation cp \
       --target "$deps" $TEST_PINS >"$out/arm64-deps.log" 2>&1; then
    if (cd bindings-python && PYTHONPATH=$site:$deps timeout 1500 "$pyarm" -m pytest -q -p no:cacheprovider tests) \
         >"$out/pytest-arm64.log" 2>&1; then
      ok "linux-arm64-gnu: pytest under qemu: $(grep -E '^[0-9]+ passed' "$out/pytest-arm64.log")"
    else
      tail -30 "$out/pytest-arm64.log"; bad "linux-arm64-gnu: pytest under qemu"
    fi
  else
    cat "$out/arm64-deps.log"; bad "linux-arm64-gnu: arm64 test dependencies"
  fi
else
  bad "linux-arm64-gnu: no arm64 CPython (Debian packages could not be fetched)"
fi

# --- structure: musl, Windows, macOS ------------------------------------------------
for p in linux-x64-musl:readelf linux-arm64-musl:aarch64-linux-gnu-readelf linux-x64-gnu:readelf linux-arm64-gnu:aarch64-linux-gnu-readelf; do
  plat=${p%%:*} readelf=${p#*:} so=$(ext "${p%%:*}")
  "$readelf" --dyn-syms -W "$so" | awk '$7 != "UND" && $5 == "GLOBAL"' | grep -qw PyInit__volt_sem &&
    ok "$plat: exports PyInit__volt_sem" || bad "$plat: does not export PyInit__volt_sem"
  needed=$("$readelf" -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
  if [[ $plat == *-musl ]]; then
    [[ $needed == "libc.so " ]] && ! "$readelf" -V "$so" | grep -q GLIBC &&
      ok "$plat: needs only musl's libc.so, no glibc symbol versions" || bad "$plat: not musl-only: $needed"
  else
    # librt: shm_open and shm_unlink live there before glibc 2.34 (the
    # wheels target 2.17); it is glibc's own, on the manylinux allow-list.
    [[ -z $(tr ' ' '\n' <<<"$needed" | grep -vE '^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libgcc_s\.so\.1|ld-linux.*)?$') ]] &&
      ok "$plat: needs only glibc's own libraries ($needed)" || bad "$plat: needs $needed"
    # glibc's pthread_exit unwinds with libgcc_s: the extension must use that
    # unwinder, not a static copy (see scripts/dist/python.sh).
    imported_unwind=$("$readelf" --dyn-syms -W "$so" | awk '$7 == "UND"' | grep -c ' _Unwind_' || true)
    [[ $needed == *libgcc_s.so.1* && $imported_unwind -gt 0 ]] &&
      ok "$plat: unwinds with libgcc_s.so.1 ($imported_unwind _Unwind_* functions imported, no private copy)" ||
      bad "$plat: has its own unwinder (imports $imported_unwind _Unwind_* functions; needs $needed)"
  fi
done
pyd=$(ext win32-x64-gnu)
imports=$(x86_64-w64-mingw32-objdump -p "$pyd" | sed -n 's/.*DLL Name: //p' | tr 'A-Z' 'a-z' | sort | tr '\n' ' ')
# Windows' own DLLs only. bcrypt, crypt32 and secur32 came with the Redis
# TLS dependencies (random numbers; the system certificate store through
# schannel): system DLLs of every Windows, so allowed; this list had not
# followed, and the release check failed on them.
other=$(tr ' ' '\n' <<<"$imports" | grep -vE '^(python3\.dll|kernel32\.dll|ntdll\.dll|userenv\.dll|ws2_32\.dll|msvcrt\.dll|bcryptprimitives\.dll|bcrypt\.dll|crypt32\.dll|secur32\.dll|advapi32\.dll|api-ms-win-[a-z0-9-]+\.dll)?$')
[[ $imports == *"python3.dll "* && -z $other ]] &&
  ok "win32-x64-gnu: ${pyd##*/} imports python3.dll and system DLLs only ($imports)" || bad "win32-x64-gnu: imports $imports"
x86_64-w64-mingw32-objdump -p "$pyd" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | grep -qw PyInit__volt_sem &&
  ok "win32-x64-gnu: exports PyInit__volt_sem" || bad "win32-x64-gnu: does not export PyInit__volt_sem"
for p in darwin-x64:x86_64 darwin-arm64:arm64; do
  plat=${p%%:*} arch=${p#*:}
  python3 scripts/dist/pyext_macho.py "$(ext "$plat")" "$arch" "${MACOS_MIN[$plat]}" &&
    ok "$plat: Mach-O structure (not run: no macOS here)" || bad "$plat: Mach-O structure"
done

# --- sdist: builds from source in a fresh venv ---------------------------------------
sdist=$dist/volt_sem-$version.tar.gz
if [[ -f $sdist ]]; then
  listing=$(tar tzf "$sdist")
  missing=
  for f in pyproject.toml Cargo.toml Cargo.lock LICENSE-MIT LICENSE-APACHE src/wake_socket.rs python/volt_sem/_glue.py python/volt_sem/py.typed; do
    grep -qE "^volt_sem-$version/(bindings-python/)?$f$" <<<"$listing" || missing+=" $f"
  done
  grep -qE "^volt_sem-$version/core/src/lib.rs$" <<<"$listing" || missing+=" core/src/lib.rs"
  [[ -z $missing ]] && ok "sdist: carries the binding, the core crate and the licences" || bad "sdist: missing$missing"
  venv=$out/venv-sdist
  python3 -m venv "$venv"
  # Build dependencies (maturin) come from PyPI; the Rust build reuses nothing
  # from this checkout but the cargo registry cache.
  if CARGO_TARGET_DIR=$out/sdist-target "$venv/bin/pip" install -q "$sdist" >"$out/sdist.log" 2>&1 &&
     smoke "$venv/bin/python" - >>"$out/sdist.log" 2>&1; then
    ok "sdist: pip install ${sdist##*/} builds from source, smoke test and __version__ pass"
  else
    tail -30 "$out/sdist.log"; bad "sdist: build from source"
  fi
else
  bad "sdist: no ${sdist##*/} (run make dist-python)"
fi

echo "dist-test-python: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
