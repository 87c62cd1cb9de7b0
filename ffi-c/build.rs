//! Gives the shared library an ELF SONAME, so that a program linked against it
//! records a name as its dependency (found through its rpath or the loader's
//! search path), not the path it happened to be linked by, which is what the
//! linker records for a library without a SONAME.
//!
//! In-tree builds use the unversioned name, like the file cargo produces, so
//! that a program linked against `target/release/libvolt_sem.so` finds it
//! there. `make install` (`ffi-c/install.sh`) and `make dist` build their own
//! copies with the versioned name of the installed file, through
//! `VOLT_SEM_SONAME` (on macOS, the install name).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    // ELF platforms whose linkers take -soname (not macOS: install_name instead).
    println!("cargo:rerun-if-env-changed=VOLT_SEM_SONAME");
    let soname = std::env::var("VOLT_SEM_SONAME").ok();
    if family == "unix" && os != "macos" && os != "ios" {
        let soname = soname.unwrap_or_else(|| "libvolt_sem.so".into());
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    } else if os == "macos" {
        // The Mach-O counterpart, for release builds: `@rpath/libvolt_sem.X.Y.dylib`
        // (in-tree builds keep rustc's default, `@rpath/libvolt_sem.dylib`).
        if let Some(name) = soname {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,{name}");
        }
    }
}
