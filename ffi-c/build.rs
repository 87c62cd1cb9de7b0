//! Gives the shared library an ELF SONAME, so that a program linked against it
//! records `libvolt_sem.so` as its dependency (found through its rpath or the
//! loader's search path), not the path it happened to be linked by, which is
//! what the linker records for a library without a SONAME.
//!
//! The name is unversioned, like the file cargo produces; a distribution that
//! installs versioned files (`libvolt_sem.so.0.1.0` and links) should relink
//! with its own `-soname`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    // ELF platforms whose linkers take -soname (not macOS: install_name instead).
    if family == "unix" && os != "macos" && os != "ios" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvolt_sem.so");
    }
}
