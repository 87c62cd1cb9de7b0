//! `include/volt_sem.h` is generated from `src/lib.rs` by cbindgen and checked in.
//! This test regenerates it in memory and fails when the checked-in copy differs.
//!
//! Regenerate with: `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test header`

mod common;

use std::path::Path;

const REGENERATE: &str = "VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test header";

#[test]
fn header_is_fresh() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen failed on src/lib.rs");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    common::check_or_bless(
        &crate_dir.join("../include/volt_sem.h"),
        &generated,
        REGENERATE,
    );
}
