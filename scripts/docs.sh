#!/usr/bin/env bash
# `make docs`: every API reference into docs/api/ (gitignored), index at
# docs/api/index.html, then scripts/api_docs.py checks that each link resolves.
#
#   rust/      rustdoc of the `volt-sem` crate
#   rust-ffi/  rustdoc of `volt-sem-ffi` (the C ABI's Rust side); its own target
#              dir, because both crates' libraries are called `volt_sem`
#   node/      TypeDoc of bindings-node/index.d.ts (typedoc + typescript pinned in
#              scripts/docs/package-lock.json, installed there by npm ci)
#   python/    pdoc of the built `volt_sem` wheel (its docstrings and .pyi stubs;
#              pdoc and its dependencies pinned in scripts/docs/requirements.txt,
#              in their own venv); builds the wheel if bindings-python/dist has none
#   c/         include/volt_sem.h, as a page and as the file
#
# Warnings are errors: a broken intra-doc link or a TypeDoc warning fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$ROOT/docs/api
NPM_FLAGS=(--no-audit --no-fund --loglevel=error)

step() { printf '== %s\n' "$*"; }

rm -rf "$OUT"
mkdir -p "$OUT"

step "rustdoc: volt-sem"
RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps -p volt-sem --target-dir "$TARGET/docs-core"
cp -r "$TARGET/docs-core/doc" "$OUT/rust"

step "rustdoc: volt-sem-ffi"
RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps -p volt-sem-ffi --target-dir "$TARGET/docs-ffi"
cp -r "$TARGET/docs-ffi/doc" "$OUT/rust-ffi"

step "TypeDoc: bindings-node/index.d.ts"
tools=$ROOT/scripts/docs
if ! cmp -s "$tools/package-lock.json" "$tools/node_modules/.installed-lock.json" 2>/dev/null; then
    (cd "$tools" && npm ci "${NPM_FLAGS[@]}" && cp package-lock.json node_modules/.installed-lock.json)
fi
# --disableSources: source links need a hosted git remote, which a clone may not have.
(cd "$tools" && node_modules/.bin/typedoc --logLevel Warn --treatWarningsAsErrors --disableSources \
    --tsconfig tsconfig.json --entryPoints ../../bindings-node/index.d.ts \
    --name "volt-sem for Node.js" --readme none --out "$OUT/node")

step "pdoc: volt_sem (Python)"
venv=$TARGET/docs-venv
if [[ "$(cat "$venv/.pins" 2>/dev/null)" != "$(cat "$tools/requirements.txt")" ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$tools/requirements.txt"
    cp "$tools/requirements.txt" "$venv/.pins"
fi
shopt -s nullglob
wheels=("$ROOT"/bindings-python/dist/volt_sem-*.whl)
if [[ ${#wheels[@]} -eq 0 ]]; then
    make -C bindings-python wheel
    wheels=("$ROOT"/bindings-python/dist/volt_sem-*.whl)
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "${wheels[@]}"
"$venv/bin/pdoc" --no-show-source -o "$OUT/python" volt_sem

step "C header, index page, link check"
python3 scripts/api_docs.py index "$OUT"
python3 scripts/api_docs.py check "$OUT"
