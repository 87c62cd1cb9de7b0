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
# when they differ. Builds in its own target dir (under CARGO_TARGET_DIR or
# target/), so it never invalidates the normal build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

native_libs() { # [rust target triple; default: this machine]
    local dir=${CARGO_TARGET_DIR:-$root/target}/link-flags target=()
    [[ -n ${1:-} ]] && target=(--target "$1")
    # cargo replays the note from its cache when the crate is already built.
    CARGO_TARGET_DIR=$dir cargo rustc -q --manifest-path "$root/Cargo.toml" -p volt-sem-ffi \
        "${target[@]}" --lib --crate-type staticlib -- --print native-static-libs 2>&1 |
        sed -n 's/^note: native-static-libs: //p' | tail -n 1
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
