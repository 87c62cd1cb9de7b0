//! Errors. Every failure a caller, or a file planted in `/dev/shm`, can
//! cause is a value, never a panic. A process that can *write* the segment
//! (see *Trust boundary* in the crate docs) can do more: a value it wrote
//! that this library never writes (an index out of range, a count that does
//! not add up) is detected where it is read and reported as
//! [`Error::Corrupt`], never followed and never a panic; but truncating the
//! file (every attached process then dies of `SIGBUS` at its next access) or
//! holding the segment's lock or a record's liveness lock (permits then never
//! come back) is inherent to a writable mapping and cannot be caught.

use volt_sem::{AcquireError, AcquireTimeoutError, TryAcquireError};

volt_sem::error_enum! {
    /// Why an operation on a [`SharedSemaphore`](crate::SharedSemaphore) failed.
    #[non_exhaustive]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Error {
        /// The name is empty, contains `/` or NUL, or is longer than
        /// [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes.
        InvalidName => (
            "invalid semaphore name (1 to {} bytes, without '/' or NUL)",
            crate::MAX_NAME_LEN
        ),
        /// `permits` is 0 or above [`MAX_PERMITS`](crate::MAX_PERMITS).
        InvalidPermits => ("permits must be between 1 and {} (MAX_PERMITS)", crate::MAX_PERMITS),
        /// The label is empty, longer than
        /// [`MAX_LABEL_LEN`](volt_sem::inspect::MAX_LABEL_LEN) bytes, or has a
        /// byte that is not printable ASCII or is a space
        /// ([`is_valid_label`](volt_sem::inspect::is_valid_label)).
        InvalidLabel => ("{}", volt_sem::inspect::LABEL_RULE),
        /// Attach-only: no semaphore has this name.
        NotFound => "no shared semaphore has this name",
        /// Create-only: a semaphore with this name exists.
        AlreadyExists => "a shared semaphore with this name exists",
        /// The OS refused access to the segment (its mode), or another user owns
        /// it and [`OpenOptions::accept_foreign_owner`](crate::OpenOptions::accept_foreign_owner)
        /// was not set.
        PermissionDenied => "permission denied",
        /// The name exists with another total of permits; nothing was changed.
        TotalMismatch {
            /// The total the existing semaphore was created with.
            existing: u64,
        } => "the shared semaphore exists with a different total ({existing} permits)",
        /// The segment was made by a release of this crate with another layout
        /// version (processes of two releases cannot share a name: see *Upgrading*
        /// in the crate docs). Nothing was changed.
        VersionMismatch {
            /// The layout version found in the segment.
            found: u32,
            /// The layout version of this release.
            expected: u32,
        } => "the shared segment was made by another release of volt-sem (layout version \
              {found}; this release reads layout {expected}); nothing was changed: stop the \
              processes of the other release and unlink the name, or use another name",
        /// The segment's lock is another C library's `pthread_mutex_t` (glibc's
        /// and musl's differ): the segment was made by a process of a build of
        /// volt-sem for another C library (a static musl C program beside a glibc
        /// Python wheel, say). They cannot share a named semaphore: each would
        /// take its own words of the lock as the lock. Nothing was changed. Use
        /// builds of one C library for every process of a name.
        LibcMismatch {
            /// The segment's C library: 1 glibc, 2 musl, 3 uClibc, 65535 another.
            found: u32,
            /// This build's.
            expected: u32,
        } => (
            "the shared segment's lock is {}'s pthread mutex, and this process uses {}'s: \
             processes of builds for two C libraries cannot share a named semaphore (nothing was \
             changed); use builds for one C library for every process of the name, or another name",
            libc_name(*found),
            libc_name(*expected)
        ),
        /// The file under the name is not a volt-sem segment (wrong magic, wrong
        /// or truncated size), or a directory is at the name.
        NotASegment => "the file is not a volt-sem segment",
        /// Every process record is taken ([`MAX_PROCESSES`](crate::MAX_PROCESSES)).
        ProcessTableFull => "too many processes attached",
        /// Every waiter slot is taken ([`MAX_WAITERS`](crate::MAX_WAITERS)
        /// requests queued across all processes); the request was not queued.
        QueueFull => "the waiter queue is full",
        // The words of the in-process semaphore's errors of the same meaning.
        /// The semaphore was closed (by any process).
        Closed => ("{}", AcquireError::Closed),
        /// `try_acquire`: not enough permits now, or earlier requests are queued,
        /// or the segment lock stayed held for 10 ms (a process stopped inside it).
        NoPermits => ("{}", TryAcquireError::NoPermits),
        /// A request for more permits than the semaphore's total (it could never
        /// be granted and would block the FIFO forever).
        TooManyPermits => "requested more permits than the total",
        /// `release(n)` with `n` above what this process holds; nothing was released.
        NotHeld {
            /// What this process holds.
            held: u64,
        } => "released more permits than this process holds ({held})",
        /// The timeout elapsed first; any partial grant was handed on. Also
        /// `open`, when the segment's init lock or lock stayed held for 5 s (a
        /// process stopped inside `open`, or one holding the lock on purpose).
        TimedOut => ("{}", AcquireTimeoutError::TimedOut),
        /// The segment is corrupt: it holds a value this library never writes
        /// (another process with write access scribbled on it; the operation
        /// stopped short of the bad value), or its lock is unusable
        /// (`ENOTRECOVERABLE`: a repair was abandoned).
        Corrupt => "the shared segment is corrupt (a value this library never writes, or an \
            unrecoverable lock)",
        /// A blocking acquire was called on the doorbell thread (inside a wake
        /// callback), where it would wait for itself.
        InCallback => "blocking acquire inside a wake callback",
        /// This handle was opened by the parent before `fork()`: it would act on
        /// the parent's process record. Open the name again in the child.
        Forked => "handle opened before fork(): open the name again",
        /// Named shared semaphores are not implemented on this platform (Linux only).
        Unsupported => "shared semaphores are not supported on this platform",
        /// Another OS error (an `errno` value): for example `ENOSPC` from `open`
        /// when `/dev/shm` has no room for a new segment (its pages are allocated
        /// before it is used, and the name is left free).
        // The OS's own words with the number ("Function not implemented (os
        // error 38)"): the number alone sent users to errno tables.
        Os(errno: i32) => ("{}", std::io::Error::from_raw_os_error(*errno)),
    }
}

/// The C library of a segment's `lock_abi`.
fn libc_name(abi: u32) -> String {
    match abi {
        1 => "glibc".into(),
        2 => "musl".into(),
        3 => "uClibc".into(),
        n => format!("another C library (number {n})"),
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn an_os_error_gives_the_os_words_and_its_number() {
        // What qemu-user answers musl's robust-mutex setup: the message must
        // say what failed, not only the number.
        let text = Error::Os(38).to_string();
        assert!(text.contains("os error 38"), "{text}");
        assert!(text.contains("not implemented"), "{text}");
    }
}
