# Sourced by the dist scripts: the cross toolchain, installed on first use.
# zig (PyPI `ziglang`) is the cross linker for every target, through
# cargo-zigbuild (PyPI); both pinned, in a venv under the target dir (shared
# with bindings-node's glibc-2.17 build). Rust's std for each target comes from
# rustup.
# shellcheck shell=bash
DIST_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}/dist
ZIG_VENV=${CARGO_TARGET_DIR:-$root/target}/zig-venv
declare -A TARGET_OF=(
  [linux-x64-gnu]=x86_64-unknown-linux-gnu.2.17
  [linux-arm64-gnu]=aarch64-unknown-linux-gnu.2.17
  [linux-x64-musl]=x86_64-unknown-linux-musl
  [linux-arm64-musl]=aarch64-unknown-linux-musl
  [darwin-x64]=x86_64-apple-darwin
  [darwin-arm64]=aarch64-apple-darwin
  [win32-x64-gnu]=x86_64-pc-windows-gnu
)
# The oldest macOS each build supports (Rust's own minimum for the target).
declare -A MACOS_MIN=([darwin-x64]=10.12 [darwin-arm64]=11.0)
# Every macOS build is linked after (thin) LTO. The Redis backend's TLS
# (redis-rs's rustls backend) always compiles in rustls-native-certs and
# with it security-framework and core-foundation, though it never calls them
# (the trust store is webpki-roots or the user's CA file). Without LTO their
# objects reach the linker, and zig's Mach-O linker resolves every symbol of
# every object it loads, dead code included: without a macOS SDK the link
# fails with hundreds of undefined Security/CoreFoundation symbols
# (`_kSecValueData`, ...), and the Node addon and the Python extension,
# linked with `-undefined dynamic_lookup`, would import them all from the
# user's macOS. LTO drops that dead code first, so the libraries import
# nothing from either framework (scripts/dist/macho_imports.py checks it;
# redis/build.rs gives the linker the frameworks' names). `make
# test-cross-link` does the same with the dev profile.
MACOS_LTO=(CARGO_PROFILE_RELEASE_LTO=thin)
if ! "$ZIG_VENV/bin/cargo-zigbuild" --version >/dev/null 2>&1; then
  echo "installing ziglang and cargo-zigbuild into $ZIG_VENV"
  python3 -m venv "$ZIG_VENV"
  "$ZIG_VENV/bin/pip" install --quiet --disable-pip-version-check ziglang==0.17.1 cargo-zigbuild==0.24.0
fi
export PATH=$ZIG_VENV/bin:$PATH
# Rust's std for every platform, or only for those in TOOLCHAIN_PLATFORMS
# (space-separated platform names: `make test-cross-link` needs two).
need=()
installed=$(rustup target list --installed)
for tp in ${TOOLCHAIN_PLATFORMS:-"${!TARGET_OF[@]}"}; do
  t=${TARGET_OF[$tp]:?unknown platform $tp}
  t=${t%.2.17}
  grep -qx "$t" <<<"$installed" || need+=("$t")
done
[[ ${#need[@]} -eq 0 ]] || rustup target add "${need[@]}"
