//! `src/status_codes.rs` (the `volt_status` enum and its names) is generated
//! from the error table of `volt-sem-backend` (`backend/src/error.rs`) and
//! checked in, because cbindgen reads the header from this crate's source and
//! cannot see inside the table's macro. This test regenerates it in memory and
//! fails when the checked-in copy differs; and it fails when a status that C
//! programs were built against changed its number or name (ABI).
//!
//! Regenerate with: `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test status`
//! (then the header: `--test header`).

mod common;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use volt_sem_backend::{Status, STATUSES};

const REGENERATE: &str = "VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test status";

/// Every status of volt_sem.h 0.1, as C programs were compiled against it.
/// Append new ones; never change a line.
const RELEASED: &[(i32, &str)] = &[
    (0, "VOLT_OK"),
    (1, "VOLT_PENDING"),
    (2, "VOLT_WOULD_BLOCK"),
    (3, "VOLT_CLOSED"),
    (4, "VOLT_TIMED_OUT"),
    (5, "VOLT_CANCELLED"),
    (6, "VOLT_IDLE"),
    (7, "VOLT_INVALID_ARGUMENT"),
    (8, "VOLT_OVERFLOW"),
    (9, "VOLT_PANIC"),
    (10, "VOLT_INVALID_NAME"),
    (11, "VOLT_NOT_FOUND"),
    (12, "VOLT_EXISTS"),
    (13, "VOLT_PERMISSION"),
    (14, "VOLT_MISMATCH"),
    (15, "VOLT_VERSION_MISMATCH"),
    (16, "VOLT_NOT_A_SEGMENT"),
    (17, "VOLT_QUEUE_FULL"),
    (18, "VOLT_PROCESS_TABLE_FULL"),
    (19, "VOLT_NOT_HELD"),
    (20, "VOLT_IN_CALLBACK"),
    (21, "VOLT_FORKED"),
    (22, "VOLT_UNSUPPORTED"),
    (23, "VOLT_CORRUPT"),
    (24, "VOLT_OS_ERROR"),
    (25, "VOLT_INVALID_URL"),
    (26, "VOLT_INVALID_PREFIX"),
    (27, "VOLT_INVALID_OPTION"),
    (28, "VOLT_AUTH_FAILED"),
    (29, "VOLT_CONNECTION_FAILED"),
    (30, "VOLT_REDIS_ERROR"),
    (31, "VOLT_PROTOCOL_ERROR"),
    (32, "VOLT_LEASE_EXPIRED"),
    (33, "VOLT_STATE_LOST"),
    (34, "VOLT_TLS_FAILED"),
    (35, "VOLT_NOT_REPLICATED"),
    (36, "VOLT_NO_PERMISSION"),
    (37, "VOLT_READ_ONLY"),
    (38, "VOLT_IN_USE"),
    (39, "VOLT_TRUNCATED"),
    (40, "VOLT_WRONG_TYPE"),
    (41, "VOLT_LIBC_MISMATCH"),
    (42, "VOLT_REDIS_OUT_OF_MEMORY"),
];

/// The table's statuses by number, each once with its documentation; panics
/// when one number has two names or one name two numbers.
fn by_number() -> BTreeMap<i32, Status> {
    let mut out: BTreeMap<i32, Status> = BTreeMap::new();
    for s in STATUSES {
        if let Some(other) = STATUSES
            .iter()
            .find(|o| o.name == s.name && o.number != s.number)
        {
            panic!(
                "{} has two numbers: {} and {}",
                s.name, s.number, other.number
            );
        }
        match out.get_mut(&s.number) {
            Some(seen) => {
                assert_eq!(seen.name, s.name, "status {} has two names", s.number);
                assert!(
                    seen.doc.is_empty() || s.doc.is_empty(),
                    "{} is documented twice in the error table",
                    s.name
                );
                if seen.doc.is_empty() {
                    seen.doc = s.doc;
                }
            }
            None => {
                out.insert(s.number, *s);
            }
        }
    }
    for s in out.values() {
        assert!(
            !s.doc.is_empty(),
            "{} has no C documentation in the error table",
            s.name
        );
    }
    out
}

fn generate() -> String {
    let statuses = by_number();
    let mut o = String::new();
    o.push_str(
        "//! GENERATED from the error table of `volt-sem-backend` (`backend/src/error.rs`)\n\
         //! by `tests/status.rs`; do not edit: change the table, then run\n\
         //! `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test status`, then `--test header`.\n\n\
         use std::ffi::CStr;\n\n\
         /// Result codes. A fixed-width integer (`int32_t`) so that every language\n\
         /// binding sees the same type; values are stable.\n\
         #[repr(i32)]\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n\
         pub enum volt_status {\n",
    );
    for s in statuses.values() {
        for line in s.doc {
            writeln!(o, "    ///{line}").unwrap();
        }
        writeln!(o, "    {} = {},", s.name, s.number).unwrap();
    }
    o.push_str(
        "}\n\nimpl volt_status {\n    \
         /// The status numbered `n`, if there is one.\n    \
         pub(crate) fn from_number(n: i32) -> Option<Self> {\n        \
         Some(match n {\n",
    );
    for s in statuses.values() {
        writeln!(o, "            {} => Self::{},", s.number, s.name).unwrap();
    }
    o.push_str(
        "            _ => return None,\n        })\n    }\n\n    \
         /// The status's name, as C spells it.\n    \
         pub(crate) fn name(self) -> &'static CStr {\n        \
         match self {\n",
    );
    for s in statuses.values() {
        writeln!(o, "            Self::{0} => c\"{0}\",", s.name).unwrap();
    }
    o.push_str("        }\n    }\n}\n");
    o
}

#[test]
fn released_statuses_keep_their_numbers_and_names() {
    let statuses = by_number();
    for &(number, name) in RELEASED {
        let s = statuses
            .get(&number)
            .unwrap_or_else(|| panic!("status {number} ({name}) is gone from the error table"));
        assert_eq!(s.name, name, "status {number} was renamed");
    }
}

#[test]
fn status_codes_are_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/status_codes.rs");
    common::check_or_bless(&path, generate().as_bytes(), REGENERATE);
}
