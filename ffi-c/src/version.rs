//! The version: the header's version macros (checked against Cargo.toml at
//! compile time) and the library's (`volt_sem_version`).

use std::ffi::c_char;
use std::ptr;

use crate::boundary::ffi_call;

/// Major version of the headers this program was compiled with; compare with
/// `volt_sem_version()` for the library it runs with.
pub const VOLT_SEM_VERSION_MAJOR: u32 = 0;
/// Minor version of the headers this program was compiled with.
pub const VOLT_SEM_VERSION_MINOR: u32 = 1;
/// Patch version of the headers this program was compiled with.
pub const VOLT_SEM_VERSION_PATCH: u32 = 0;

/// Parses a decimal `CARGO_PKG_VERSION_*` component at compile time.
const fn parse_version(text: &str) -> u32 {
    let bytes = text.as_bytes();
    assert!(!bytes.is_empty(), "empty version component");
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "non-numeric version component");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

// The header's version macros are literals (cbindgen cannot evaluate `env!`), so
// the build fails if they drift from Cargo.toml's version.
const _: () = {
    assert!(
        VOLT_SEM_VERSION_MAJOR == parse_version(env!("CARGO_PKG_VERSION_MAJOR")),
        "VOLT_SEM_VERSION_MAJOR differs from Cargo.toml's version"
    );
    assert!(
        VOLT_SEM_VERSION_MINOR == parse_version(env!("CARGO_PKG_VERSION_MINOR")),
        "VOLT_SEM_VERSION_MINOR differs from Cargo.toml's version"
    );
    assert!(
        VOLT_SEM_VERSION_PATCH == parse_version(env!("CARGO_PKG_VERSION_PATCH")),
        "VOLT_SEM_VERSION_PATCH differs from Cargo.toml's version"
    );
};

/// The library version ("MAJOR.MINOR.PATCH"), a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn volt_sem_version() -> *const c_char {
    ffi_call(ptr::null(), || {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    })
}
