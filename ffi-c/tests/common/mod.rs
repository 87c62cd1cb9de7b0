//! The check of a generated, checked-in file, shared by the tests that
//! generate one (`header`, `status`).

use std::path::Path;

/// Fails when `path` differs from `generated` (naming `regenerate`, the
/// command that rewrites it); with `VOLT_SEM_BLESS=1`, rewrites it instead.
pub fn check_or_bless(path: &Path, generated: &[u8], regenerate: &str) {
    if std::env::var_os("VOLT_SEM_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, generated).unwrap();
        return;
    }
    let current = std::fs::read(path).unwrap_or_default();
    assert!(
        current == generated,
        "{} is stale; regenerate it with: {regenerate}",
        path.display()
    );
}
