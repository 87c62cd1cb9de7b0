//! Every error's message, word for word: the words users read (in Rust,
//! and through the bindings, which show the lower crates' texts), which a
//! change to how the error table is written must not change.

use volt_sem_redis::Error;

#[test]
fn every_message_word_for_word() {
    let cases = [
        (Error::InvalidUrl("bad port"), "invalid Redis URL (bad port); expected redis://[user:password@]host[:port][/db], or rediss://… for TLS (redis+sentinel://… for Sentinels, comma-separated seed URLs for a Cluster)"),
        (Error::InvalidName, "invalid semaphore name (1 to 1024 bytes, without '{', '}' or NUL)"),
        (Error::InvalidPrefix, "invalid key prefix (1 to 256 bytes, without '{', '}', ':' or NUL)"),
        (Error::InvalidPermits, "permits must be between 1 and 1099511627776 (MAX_PERMITS)"),
        (Error::InvalidLabel, "invalid label (1 to 128 bytes of printable ASCII, without spaces)"),
        (Error::InvalidOption("lease"), "invalid option: lease"),
        (Error::Auth, "Redis refused the credentials (wrong user or password)"),
        (Error::NoPermission("EVAL".into()), "Redis refused a command (ACL): EVAL"),
        (Error::ReadOnly("replica".into()), "Redis is a read-only replica: replica"),
        (Error::Connection("refused".into()), "Redis connection failed: refused"),
        (Error::Tls("cert".into()), "TLS failed: cert"),
        (Error::NotReplicated { acked: 1, wanted: 2 }, "only 1 of 2 replicas acknowledged the write in time (the session was given up)"),
        (Error::OutOfMemory("OOM".into()), "Redis is out of memory (maxmemory reached); nothing was changed: retry once memory is freed: OOM"),
        (Error::Redis("ERR".into()), "Redis error: ERR"),
        (Error::Protocol("x".into()), "unexpected reply from Redis: x"),
        (Error::WrongType("k".into()), "a key of the semaphore in Redis holds a value of another type, or a value volt-sem never writes there (something else wrote it); nothing was changed: k"),
        (Error::VersionMismatch { found: 0, expected: 1 }, "the semaphore was made by another release of volt-sem (its keys' schema version 0; this release's: 1); nothing was changed: stop the clients of the other release and delete the semaphore, or use another name or prefix"),
        (Error::TotalMismatch { existing: 4 }, "the semaphore exists with a different total (4 permits)"),
        (Error::Closed, "semaphore closed"),
        (Error::NotFound, "no semaphore has this name"),
        (Error::InUse { sessions: 1 }, "the semaphore is in use (1 live session holds, waits or is connected); nothing was deleted"),
        (Error::InUse { sessions: 2 }, "the semaphore is in use (2 live sessions hold, wait or are connected); nothing was deleted"),
        (Error::NoPermits, "no permits available"),
        (Error::TooManyPermits, "requested more permits than the total"),
        (Error::NotHeld { held: 2 }, "released more permits than this handle holds (2); nothing was released"),
        (Error::TimedOut, "timed out waiting for permits"),
        (Error::LeaseExpired, "this client's session lease expired: its permits and queued requests were reclaimed"),
        (Error::StateLost, "Redis lost the semaphore's state (restarted empty or flushed); connect again"),
        (Error::InCallback, "blocking acquire inside a wake callback"),
        (Error::Forked, "this Redis handle was connected before fork(): connect again in the child"),
    ];
    for (e, text) in cases {
        assert_eq!(e.to_string(), text, "{e:?}");
    }
}
