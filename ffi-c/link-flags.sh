#!/usr/bin/env bash
# Link flags for the C library, from rustc itself (so they follow the toolchain):
#
#   ffi-c/link-flags.sh libs [TARGET] the system libraries a program linking
#                                     libvolt_sem.a needs, as rustc's
#                                     `--print native-static-libs` reports them
#                                     (for a Rust target triple, default: here)
#   ffi-c/link-flags.sh pc LIBDIR [INCLUDEDIR]
#                                     writes LIBDIR/volt_sem.pc for pkg-config:
#                                     Libs for the shared library, Libs.private
#                                     (the list above) for `pkg-config --static`;
#                                     INCLUDEDIR defaults to this checkout's include/
#
# The README's static link line is this list; `make -C tests link-line` fails
# when they differ.
#
# The answer depends only on the toolchain, the target and the locked
# dependencies, so it is kept in $CARGO_TARGET_DIR/link-flags/ under a key made
# of those three and asked of rustc once. Asking compiles the library in the
# normal target dir (release if a release build is there, else debug), so the
# dependencies already built there are reused (a target dir of its own cost a
# whole build of them); cargo then rebuilds this one crate at the next normal
# build, since its flags differed.
#
# A cross target needs that target's C compiler for the dependencies' C code
# (ring, of the Redis TLS): the release scripts set
# VOLT_SEM_LINK_FLAGS_CARGO=cargo-zigbuild, whose `rustc` command brings
# zig's, as their builds do. Without it, asking failed for every target with
# no cross gcc here (musl, macOS) and the archives shipped an empty list. The
# target's CARGO_TARGET_<TRIPLE>_RUSTFLAGS (musl's -crt-static) change the
# answer, so they are part of the key.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

native_libs() { # [rust target triple; default: this machine]
    local target_dir=${CARGO_TARGET_DIR:-$root/target} target=() profile=()
    [[ -n ${1:-} ]] && target=(--target "$1")
    local key cache
    key=$( { rustc -vV; echo "${1:-host}"; env | grep -E '^CARGO_TARGET_[A-Z0-9_]+_RUSTFLAGS=' | sort
             cat "$root/Cargo.lock" "$root/ffi-c/Cargo.toml"; } |
        sha256sum | cut -c1-16)
    cache=$target_dir/link-flags/$key
    if [[ -s $cache ]]; then
        cat "$cache"
        return
    fi
    # The profile whose dependencies are built already.
    local out=$target_dir/${1:-}
    [[ -e ${out%/}/release/libvolt_sem.a ]] && profile=(--release)
    local libs
    local cargo=(cargo)
    [[ -n ${1:-} && -n ${VOLT_SEM_LINK_FLAGS_CARGO:-} ]] && cargo=("$VOLT_SEM_LINK_FLAGS_CARGO")
    libs=$("${cargo[@]}" rustc -q --manifest-path "$root/Cargo.toml" -p volt-sem-ffi "${profile[@]}" \
        "${target[@]}" --lib --crate-type staticlib -- --print native-static-libs 2>&1 |
        sed -n 's/^note: native-static-libs: //p' | tail -n 1)
    if [[ -n $libs ]]; then
        mkdir -p "$target_dir/link-flags"
        printf '%s\n' "$libs" >"$cache.tmp.$$" && mv "$cache.tmp.$$" "$cache"
    fi
    echo "$libs"
}

version() {
    sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml"
}

case "${1:-}" in
libs)
    libs=$(native_libs "${2:-}")
    [[ -n $libs ]] || { echo "rustc reported no native-static-libs" >&2; exit 1; }
    echo "$libs"
    ;;
pc)
    [[ $# -ge 2 ]] || { echo "usage: $0 pc LIBDIR [INCLUDEDIR]" >&2; exit 2; }
    libdir=$(cd "$2" && pwd)
    includedir=$(cd "${3:-$root/include}" && pwd)
    libs=$(native_libs)
    [[ -n $libs ]] || { echo "rustc reported no native-static-libs" >&2; exit 1; }
    cat >"$libdir/volt_sem.pc" <<PC
libdir=$libdir
includedir=$includedir

Name: volt_sem
Description: Fair, weighted counting semaphore with direct hand-off (C ABI)
Version: $(version)
Cflags: -I\${includedir}
Libs: -L\${libdir} -lvolt_sem
Libs.private: $libs
PC
    echo "wrote $libdir/volt_sem.pc"
    ;;
*)
    echo "usage: $0 libs | pc LIBDIR [INCLUDEDIR]" >&2
    exit 2
    ;;
esac
