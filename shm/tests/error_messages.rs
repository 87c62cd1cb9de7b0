//! Every error's message, word for word: the words users read (in Rust,
//! and through the bindings, which show the lower crates' texts), which a
//! change to how the error table is written must not change.

use volt_sem_shm::Error;

#[test]
fn every_message_word_for_word() {
    let cases = [
        (Error::InvalidName, "invalid semaphore name (1 to 246 bytes, without '/' or NUL)"),
        (Error::InvalidPermits, "permits must be between 1 and 9007199254740991 (MAX_PERMITS)"),
        (Error::InvalidLabel, "invalid label (1 to 128 bytes of printable ASCII, without spaces)"),
        (Error::NotFound, "no shared semaphore has this name"),
        (Error::AlreadyExists, "a shared semaphore with this name exists"),
        (Error::PermissionDenied, "permission denied"),
        (Error::TotalMismatch { existing: 4 }, "the shared semaphore exists with a different total (4 permits)"),
        (Error::VersionMismatch { found: 9, expected: 3 }, "the shared segment was made by another release of volt-sem (layout version 9; this release reads layout 3); nothing was changed: stop the processes of the other release and unlink the name, or use another name"),
        (Error::LibcMismatch { found: 2, expected: 1 }, "the shared segment's lock is musl's pthread mutex, and this process uses glibc's: processes of builds for two C libraries cannot share a named semaphore (nothing was changed); use builds for one C library for every process of the name, or another name"),
        (Error::LibcMismatch { found: 3, expected: 65535 }, "the shared segment's lock is uClibc's pthread mutex, and this process uses another C library (number 65535)'s: processes of builds for two C libraries cannot share a named semaphore (nothing was changed); use builds for one C library for every process of the name, or another name"),
        (Error::NotASegment, "the file is not a volt-sem segment"),
        (Error::ProcessTableFull, "too many processes attached"),
        (Error::QueueFull, "the waiter queue is full"),
        (Error::Closed, "semaphore closed"),
        (Error::NoPermits, "no permits available"),
        (Error::TooManyPermits, "requested more permits than the total"),
        (Error::NotHeld { held: 2 }, "released more permits than this process holds (2)"),
        (Error::TimedOut, "timed out waiting for permits"),
        (Error::Corrupt, "the shared segment is corrupt (a value this library never writes, or an unrecoverable lock)"),
        (Error::InCallback, "blocking acquire inside a wake callback"),
        (Error::Forked, "handle opened before fork(): open the name again"),
        (Error::Unsupported, "shared semaphores are not supported on this platform"),
        (Error::Os(28), "No space left on device (os error 28)"),
    ];
    for (e, text) in cases {
        assert_eq!(e.to_string(), text, "{e:?}");
    }
}
