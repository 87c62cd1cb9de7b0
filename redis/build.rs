//! macOS cross builds from Linux (cargo-zigbuild, for the wheels, npm
//! packages and C archives) have no macOS SDK. redis-rs's rustls backend
//! always links `rustls-native-certs`, which names the Security and
//! CoreFoundation frameworks, so the link would fail with "unable to find
//! system framework". When cross-compiling to an Apple target from another
//! host, this script gives the linker stub `.tbd` files for those two
//! frameworks: their install names and no symbols. That is enough because
//! nothing calls into them: the trust store is webpki-roots (the
//! `tls-rustls-webpki-roots` feature) or the user's CA file, so
//! `load_native_certs` is compiled out. But the dead code of
//! security-framework and core-foundation still names hundreds of their
//! symbols, and zig's Mach-O linker resolves the symbols of every object it
//! loads, dead code included: the cross builds link after (thin) LTO, which
//! drops that code first (`MACOS_LTO` in scripts/dist/toolchain.sh; without
//! it the link fails on `_kSecValueData` and the rest). A reference from live
//! code fails the link loudly, never silently (`make test-cross-link`). Both
//! frameworks exist on every macOS, where the loader finds the real ones.
//! A build on macOS itself uses its SDK and gets no stubs.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let vendor = std::env::var("CARGO_CFG_TARGET_VENDOR").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if vendor != "apple" || host.contains("apple") {
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("frameworks");
    for name in ["Security", "CoreFoundation"] {
        let dir = out.join(format!("{name}.framework"));
        std::fs::create_dir_all(&dir).expect("create the framework stub directory");
        let tbd = format!(
            "--- !tapi-tbd\n\
             tbd-version:     4\n\
             targets:         [ x86_64-macos, arm64-macos ]\n\
             install-name:    '/System/Library/Frameworks/{name}.framework/Versions/A/{name}'\n\
             current-version: 0\n\
             ...\n"
        );
        std::fs::write(dir.join(format!("{name}.tbd")), tbd).expect("write the framework stub");
    }
    println!("cargo:rustc-link-search=framework={}", out.display());
}
