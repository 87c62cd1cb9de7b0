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

/// Every error's message, word for word (keyed by its `Debug`): the words
/// users read in every language, which a change to how the table is written
/// must not change.
#[test]
fn every_message_word_for_word() {
    let expected = [
        ("Closed", "semaphore closed"),
        ("NoPermits", "no permits available"),
        ("TooManyPermits", "requested more permits than can ever be granted: more than the semaphore's total (an in-process one's: MAX_PERMITS); ask for at most that many"),
        ("TimedOut", "timed out waiting for permits"),
        ("Overflow { unreleased: 3 }", "release would raise the available permits above the maximum (3 not released)"),
        #[cfg(not(feature = "redis"))]
        ("InvalidName", "invalid semaphore name (a named semaphore's name is 1 to 246 bytes without '/' or NUL)"),
        #[cfg(feature = "redis")]
        ("InvalidName", "invalid semaphore name (a named semaphore's name is 1 to 246 bytes without '/' or NUL; a Redis semaphore's, 1 to 1024 bytes without '{', '}' or NUL)"),
        ("InvalidLabel", "invalid label (1 to 128 bytes of printable ASCII, without spaces)"),
        #[cfg(not(feature = "redis"))]
        ("InvalidPermits", "permits must be between 1 and 9007199254740991 (MAX_PERMITS) for a named semaphore"),
        #[cfg(feature = "redis")]
        ("InvalidPermits", "permits must be between 1 and 9007199254740991 (MAX_PERMITS) for a named semaphore, 1 and 1099511627776 for a Redis one"),
        ("NotFound", "no semaphore has this name"),
        ("AlreadyExists", "a shared semaphore with this name exists"),
        ("PermissionDenied", "permission denied"),
        ("TotalMismatch { existing: 4 }", "the shared semaphore exists with a different total (4 permits)"),
        ("VersionMismatch { found: 9, expected: 3 }", "the semaphore was made by another release of volt-sem (its format version 9; this release's: 3); nothing was changed: stop the processes of the other release, then unlink (named) or delete (Redis) it, or use another name"),
        ("LibcMismatch { found: 2, expected: 1 }", "the shared segment's lock is musl's pthread mutex, and this process uses glibc's: processes of builds for two C libraries cannot share a named semaphore (nothing was changed); use builds for one C library for every process of the name, or another name"),
        ("NotASegment", "the file is not a volt-sem segment"),
        ("ProcessTableFull", "too many processes attached"),
        ("QueueFull", "the waiter queue is full"),
        ("NotHeld { held: 2 }", "released more permits than held (2; a named semaphore counts this process's, a Redis one this handle's); nothing was released"),
        ("Corrupt", "the shared segment is corrupt (a value this library never writes, or an unrecoverable lock)"),
        ("InCallback", "blocking acquire inside a wake callback"),
        ("Forked", "a handle opened before fork() was used in the child: open the named semaphore, or connect to Redis, again in the child"),
        ("Unsupported", "shared semaphores are not supported on this platform"),
        ("Os(28)", "No space left on device (os error 28)"),
        #[cfg(not(feature = "redis"))]
        ("InvalidUrl(\"bad port\")", "invalid Redis URL (bad port); expected redis://[user:password@]host[:port][/db]"),
        #[cfg(feature = "redis")]
        ("InvalidUrl(\"bad port\")", "invalid Redis URL (bad port); expected redis://[user:password@]host[:port][/db], or rediss://… for TLS (redis+sentinel://… for Sentinels, comma-separated seed URLs for a Cluster)"),
        ("InvalidPrefix", "invalid key prefix (1 to 256 bytes, without '{', '}', ':' or NUL)"),
        ("InvalidOption(\"lease\")", "invalid option: lease"),
        ("Auth", "Redis refused the credentials (wrong user or password)"),
        ("NoPermission(\"EVAL\")", "Redis refused a command (ACL): EVAL"),
        ("InUse { sessions: 2 }", "the semaphore is in use (2 live sessions hold, wait or are connected); nothing was deleted"),
        ("ReadOnly(\"replica\")", "Redis is a read-only replica: replica"),
        ("Connection(\"refused\")", "Redis connection failed: refused"),
        ("Redis(\"ERR\")", "Redis error: ERR"),
        ("OutOfMemory(\"OOM command not allowed\")", "Redis is out of memory (maxmemory reached); nothing was changed: retry once memory is freed: OOM command not allowed"),
        ("Protocol(\"x\")", "unexpected reply from Redis: x"),
        ("WrongType(\"{volt-sem:x}:queue\")", "a key of the semaphore in Redis holds a value of another type, or a value volt-sem never writes there (something else wrote it); nothing was changed: {volt-sem:x}:queue"),
        ("LeaseExpired", "this client's session lease expired: its permits and queued requests were reclaimed"),
        ("StateLost", "Redis lost the semaphore's state (restarted empty or flushed); connect again"),
        ("Tls(\"cert\")", "TLS failed: cert"),
        ("Disconnected", "this handle was disconnected: its session ended (the semaphore stays open for everyone else: open or connect it again for a new handle)"),
        ("NotReplicated { acked: 1, wanted: 2 }", "only 1 of 2 replicas acknowledged the write in time; the session was given up"),
    ];
    let errors = every_error();
    assert_eq!(errors.len(), expected.len());
    for (e, (debug, text)) in errors.iter().zip(expected) {
        assert_eq!(format!("{e:?}"), debug);
        assert_eq!(e.to_string(), text, "{debug}");
    }
}
