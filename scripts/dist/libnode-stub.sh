#!/usr/bin/env bash
# Sourced: libnode_stub DIR. The Windows (MinGW) Node addon links no Node
# library (napi's `dyn-symbols` resolves Node-API in the host process at load
# time), but napi-build still insists on a libnode.dll for -gnu targets and
# passes -lnode: this makes an empty import library in DIR under both names it
# looks for. Export LIBNODE_PATH=DIR for the build. Needs MinGW-w64's dlltool.
# shellcheck shell=bash
libnode_stub() {
  mkdir -p "$1"
  printf 'LIBRARY libnode.dll\nEXPORTS\n' >"$1/libnode.def"
  x86_64-w64-mingw32-dlltool -d "$1/libnode.def" -l "$1/libnode.dll.a"
  cp "$1/libnode.dll.a" "$1/libnode.dll" # napi-build looks for this name
}
