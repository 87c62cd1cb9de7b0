//! The error table's invariants: what the bindings and the C layer rely on
//! when they derive an error's exception, `code` and status from it.

use std::collections::HashMap;

use volt_sem_backend::{Error, ErrorClass, STATUSES};

/// One value of every variant; `every_row_is_listed_here` fails when the
/// table grows and this list does not.
fn every_error() -> Vec<Error> {
    vec![
        Error::Closed,
        Error::NoPermits,
        Error::TooManyPermits,
        Error::TimedOut,
        Error::Overflow { unreleased: 3 },
        Error::InvalidName,
        Error::InvalidLabel,
        Error::InvalidPermits,
        Error::NotFound,
        Error::AlreadyExists,
        Error::PermissionDenied,
        Error::TotalMismatch { existing: 4 },
        Error::VersionMismatch {
            found: 9,
            expected: 3,
        },
        Error::LibcMismatch {
            found: 2,
            expected: 1,
        },
        Error::NotASegment,
        Error::ProcessTableFull,
        Error::QueueFull,
        Error::NotHeld { held: 2 },
        Error::Corrupt,
        Error::InCallback,
        Error::Forked,
        Error::Unsupported,
        Error::Os(28),
        Error::InvalidUrl("bad port"),
        Error::InvalidPrefix,
        Error::InvalidOption("lease"),
        Error::Auth,
        Error::NoPermission("EVAL".into()),
        Error::InUse { sessions: 2 },
        Error::ReadOnly("replica".into()),
        Error::Connection("refused".into()),
        Error::Redis("ERR".into()),
        Error::OutOfMemory("OOM command not allowed".into()),
        Error::Protocol("x".into()),
        Error::WrongType("{volt-sem:x}:queue".into()),
        Error::LeaseExpired,
        Error::StateLost,
        Error::Tls("cert".into()),
        Error::Disconnected,
        Error::NotReplicated {
            acked: 1,
            wanted: 2,
        },
    ]
}

#[test]
fn every_row_is_listed_here() {
    let rows = STATUSES.iter().filter(|s| s.error.is_some()).count();
    assert_eq!(
        every_error().len(),
        rows,
        "add the new error to every_error()"
    );
}

#[test]
fn codes_are_unique_and_upper_case() {
    let mut seen = HashMap::new();
    for e in every_error() {
        let code = e.code();
        assert!(
            code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
            "{code}"
        );
        assert_eq!(seen.insert(code, e.clone()), None, "{code} used twice");
    }
}

#[test]
fn status_and_name_are_the_rows() {
    for e in every_error() {
        let variant = format!("{e:?}");
        let row = STATUSES
            .iter()
            .find(|s| s.error.is_some_and(|v| variant.starts_with(v)))
            .unwrap_or_else(|| panic!("no row for {variant}"));
        assert_eq!((e.status(), e.status_name()), (row.number, row.name));
        assert!(e.status_name().starts_with("VOLT_"));
    }
}

#[test]
fn messages_name_their_values() {
    // A row's format string may name its fields; these show they are filled in.
    let cases = [
        (
            Error::VersionMismatch {
                found: 0,
                expected: 1,
            },
            "the semaphore was made by another release of volt-sem (its format version 0; this \
             release's: 1); nothing was changed: stop the processes of the other release, then \
             unlink (named) or delete (Redis) it, or use another name",
        ),
        (
            Error::Overflow { unreleased: 3 },
            "release would raise the available permits above the maximum (3 not released)",
        ),
        (
            Error::NotReplicated {
                acked: 1,
                wanted: 2,
            },
            "only 1 of 2 replicas acknowledged the write in time; the session was given up",
        ),
        (
            Error::Connection("refused".into()),
            "Redis connection failed: refused",
        ),
        (
            Error::InvalidPrefix,
            "invalid key prefix (1 to 256 bytes, without '{', '}', ':' or NUL)",
        ),
        (
            Error::InUse { sessions: 1 },
            "the semaphore is in use (1 live session holds, waits or is connected); nothing was deleted",
        ),
        (
            Error::InUse { sessions: 2 },
            "the semaphore is in use (2 live sessions hold, wait or are connected); nothing was deleted",
        ),
    ];
    for (e, text) in cases {
        assert_eq!(e.to_string(), text);
    }
    // Raised by both backends (attach-only open and connect, unlink and
    // delete): names neither (the shm crate's own text says "shared").
    assert_eq!(Error::NotFound.to_string(), "no semaphore has this name");
    // `shm` rows read as the shared-memory crate's error of the same name.
    assert_eq!(
        Error::QueueFull.to_string(),
        volt_sem_backend::shm::Error::QueueFull.to_string()
    );
}

#[test]
fn classes_the_bindings_rely_on() {
    assert_eq!(Error::Closed.class(), ErrorClass::Closed);
    assert_eq!(Error::InvalidPermits.class(), ErrorClass::Count);
    assert_eq!(Error::InvalidOption("x").class(), ErrorClass::Option);
    assert_eq!(Error::Tls(String::new()).class(), ErrorClass::Connection);
    assert_eq!(
        Error::NotReplicated {
            acked: 0,
            wanted: 1
        }
        .class(),
        ErrorClass::Redis
    );
}

#[test]
fn shm_errors_convert_both_ways() {
    use volt_sem_backend::shm::Error as ShmError;
    let mut shared = 0;
    for e in every_error() {
        if let Ok(shm) = ShmError::try_from(e.clone()) {
            shared += 1;
            assert_eq!(format!("{shm:?}"), format!("{e:?}"));
            assert_eq!(Error::from(shm), e);
        }
    }
    // The rows marked `shm`: all but Overflow and the Redis-only ones.
    assert_eq!(shared, 22);
}

#[cfg(feature = "redis")]
#[test]
fn redis_errors_convert_to_the_same_name() {
    use volt_sem_backend::redis::Error as RedisError;
    let cases = [
        (
            RedisError::NotReplicated {
                acked: 1,
                wanted: 2,
            },
            Error::NotReplicated {
                acked: 1,
                wanted: 2,
            },
        ),
        (RedisError::Tls("cert".into()), Error::Tls("cert".into())),
        (RedisError::InvalidUrl("port"), Error::InvalidUrl("port")),
        (RedisError::NotHeld { held: 3 }, Error::NotHeld { held: 3 }),
        (RedisError::LeaseExpired, Error::LeaseExpired),
        (RedisError::Forked, Error::Forked),
        (
            RedisError::VersionMismatch {
                found: 0,
                expected: 1,
            },
            Error::VersionMismatch {
                found: 0,
                expected: 1,
            },
        ),
    ];
    for (r, e) in cases {
        assert_eq!(Error::from(r), e);
    }
}

/// `InvalidName` and `InvalidPermits` come from both backends and do not say
/// which: their messages state both rules, each with its own numbers (they
/// once read as the shm crate's, so a Redis total of 2^41 was refused with
/// "between 1 and 9007199254740991", and a bad name with no rule at all).
#[cfg(feature = "redis")]
#[test]
fn name_and_total_messages_state_each_backends_rule() {
    use volt_sem_backend::{redis, shm};
    let name = Error::InvalidName.to_string();
    assert!(
        name.contains(&format!("1 to {} bytes", shm::MAX_NAME_LEN)),
        "{name}"
    );
    assert!(name.contains("'/' or NUL"), "{name}");
    assert!(
        name.contains(&format!("1 to {} bytes", redis::MAX_NAME_LEN)),
        "{name}"
    );
    assert!(name.contains("'{', '}' or NUL"), "{name}");
    let permits = Error::InvalidPermits.to_string();
    assert!(permits.contains(&shm::MAX_PERMITS.to_string()), "{permits}");
    assert!(
        permits.contains(&redis::MAX_PERMITS.to_string()),
        "{permits}"
    );
}
