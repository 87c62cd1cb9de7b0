//! The JS error of a backend error: its `code` and whether it is a
//! `RangeError`, from the error's [`class`](Error::class) and C status name
//! (the backend's error table), so a new error needs nothing here.

use volt_sem_backend::{Error, ErrorClass};

/// The `code` of the JS error for `e` (`ERR_` and the C status name:
/// `ERR_VOLT_CLOSED`, `ERR_VOLT_MISMATCH`, ...; Node's own
/// `ERR_OUT_OF_RANGE` for a count out of range), and whether it is a
/// `RangeError` (counts and options out of range).
pub(crate) fn code_of(e: &Error) -> (String, bool) {
    match e.class() {
        ErrorClass::Count => ("ERR_OUT_OF_RANGE".to_owned(), true),
        class => (
            format!("ERR_{}", e.status_name()),
            class == ErrorClass::Option,
        ),
    }
}
