//! `volt_status`: what every call returns, the mapping of the backends'
//! errors to it (one place: `status_of`), and the statuses' names.

use std::ffi::c_char;

use volt_sem_backend::Error;

use crate::boundary::ffi_call;
use crate::last_error::remember;
use volt_status::*;

/// Result codes. A fixed-width integer (`int32_t`) so that every language
/// binding sees the same type; values are stable.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum volt_status {
    /// Success; for an acquire: the permits were taken (READY); for
    /// `volt_sem_cancel`/`volt_waiter_status`: the full grant arrived and the
    /// caller owns the requested permits.
    VOLT_OK = 0,
    /// The waiter was queued; its wake callback will be called once.
    VOLT_PENDING = 1,
    /// Not enough permits right now (or earlier requests are queued).
    VOLT_WOULD_BLOCK = 2,
    /// The semaphore is closed (or was closed while the waiter was queued; the
    /// waiter holds no permits).
    VOLT_CLOSED = 3,
    /// `volt_sem_acquire_blocking` gave up; any partial grant was handed on.
    VOLT_TIMED_OUT = 4,
    /// `volt_sem_cancel` removed a queued waiter before its grant was complete;
    /// the partial grant (possibly 0) was handed on to the next waiters.
    VOLT_CANCELLED = 5,
    /// The waiter is not queued and holds no outcome: never used, its acquire
    /// returned at once, or its outcome was already collected.
    VOLT_IDLE = 6,
    /// A NULL pointer, `n == 0`, `n > volt_max_permits()`, an uninitialised or
    /// misaligned waiter, a waiter that is still busy, or a waiter cancelled on a
    /// semaphore it is not queued on. Nothing was changed.
    VOLT_INVALID_ARGUMENT = 7,
    /// A release would raise the available permits above `volt_max_permits()`.
    /// Nothing was released.
    VOLT_OVERFLOW = 8,
    /// An internal error (a Rust panic) was caught at the boundary.
    VOLT_PANIC = 9,
    /// `volt_sem_open`/`volt_sem_unlink`: the name is empty, contains '/', is
    /// longer than `volt_sem_max_name_len()` bytes, or is not UTF-8.
    VOLT_INVALID_NAME = 10,
    /// No shared semaphore has this name (`VOLT_OPEN_ATTACH_ONLY`, unlink), or
    /// no Redis semaphore (`volt_sem_delete`).
    VOLT_NOT_FOUND = 11,
    /// `VOLT_OPEN_CREATE_ONLY`: a shared semaphore with this name exists.
    VOLT_EXISTS = 12,
    /// The OS refused access to the shared segment (its mode), or another
    /// user owns it and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` was not given.
    VOLT_PERMISSION = 13,
    /// The name exists with another total of permits; nothing was changed.
    VOLT_MISMATCH = 14,
    /// The segment was made by another layout version of the library.
    VOLT_VERSION_MISMATCH = 15,
    /// The file under the name is not a volt-sem segment (foreign or
    /// truncated, or a directory).
    VOLT_NOT_A_SEGMENT = 16,
    /// Every waiter slot of the shared segment is taken (`volt_sem_max_waiters()`
    /// requests queued across all processes); the request was not queued.
    VOLT_QUEUE_FULL = 17,
    /// Every process record of the shared segment is taken.
    VOLT_PROCESS_TABLE_FULL = 18,
    /// A shared semaphore's release of more permits than this process holds;
    /// nothing was released.
    VOLT_NOT_HELD = 19,
    /// A blocking acquire of a shared semaphore inside one of its wake
    /// callbacks (which run on the process's doorbell thread of that name,
    /// where it would wait for itself).
    VOLT_IN_CALLBACK = 20,
    /// A shared handle opened (or a Redis handle connected) before `fork()`,
    /// used in the child: open the name (connect) again in the child.
    VOLT_FORKED = 21,
    /// Named shared semaphores are not supported on this platform (Linux
    /// only); or a Redis-only call (`volt_sem_census`, `volt_sem_watch_lease`)
    /// on a local or shared semaphore.
    VOLT_UNSUPPORTED = 22,
    /// The shared segment is corrupt: it holds a value the library never
    /// writes (another process with write access scribbled on it; the call
    /// stopped short of it), or its lock is not recoverable.
    VOLT_CORRUPT = 23,
    /// Another OS error from the shared segment (`errno` is not preserved).
    VOLT_OS_ERROR = 24,
    /// `volt_sem_connect`: the URL is malformed, of an unsupported scheme, or
    /// not UTF-8. Nothing was contacted.
    VOLT_INVALID_URL = 25,
    /// `volt_sem_connect`: the key prefix is empty, longer than 256 bytes,
    /// contains '{' or '}', or is not UTF-8.
    VOLT_INVALID_PREFIX = 26,
    /// `volt_sem_connect`: an option is out of range (a lease below 300 ms),
    /// an unknown flag bit, or a non-zero option this library does not know
    /// (a `volt_connect_options` from a newer header; see there).
    VOLT_INVALID_OPTION = 27,
    /// Redis refused the credentials of the URL (wrong user or password).
    VOLT_AUTH_FAILED = 28,
    /// Redis could not be reached within the connect timeout, or the
    /// connection failed (or a command took longer than the command timeout).
    VOLT_CONNECTION_FAILED = 29,
    /// Redis answered a command with an error (e.g. out of memory, a script
    /// error; a replica is `VOLT_READ_ONLY`, an ACL refusal
    /// `VOLT_NO_PERMISSION`).
    VOLT_REDIS_ERROR = 30,
    /// Redis answered with a reply the library never expects (a foreign key
    /// in the semaphore's key space, or a bug).
    VOLT_PROTOCOL_ERROR = 31,
    /// This handle's session lease expired (the process was paused, Redis was
    /// out of reach, a partition) for longer than the lease: the permits it
    /// held went back to the pool and its queued requests were removed.
    /// Waiters fail with it; `volt_sem_release` of such permits returns it
    /// and releases nothing (they were already reclaimed). The handle goes on
    /// with a new session at its next acquire.
    VOLT_LEASE_EXPIRED = 32,
    /// Redis lost the semaphore's state (restarted without persistence,
    /// flushed, or its keys deleted): the handle fails its holders and
    /// waiters and refuses every later call rather than over-grant. Free it
    /// and connect again to start afresh.
    VOLT_STATE_LOST = 33,
    /// Redis over TLS: the handshake failed (the server's certificate is not
    /// trusted or not for this host, a `rediss://` URL to a plain port, an
    /// unreadable certificate file); `volt_last_error_message` says which.
    VOLT_TLS_FAILED = 34,
    /// Redis with a minimum of replicas to acknowledge each write: fewer
    /// acknowledged in time, so the session was given up (what it held went
    /// back; its waiters fail with `VOLT_LEASE_EXPIRED`).
    VOLT_NOT_REPLICATED = 35,
    /// Redis (its ACL) refuses this user a command the library needs:
    /// `volt_sem_connect` checks the ones it sends itself (`EVALSHA`,
    /// `EVAL`, `BLPOP`, `RPUSH`; `PUBLISH` and `WAIT` with
    /// `min_replicas_acked`), and a command refused inside a script is
    /// reported the same way; `volt_last_error_message` names the command.
    VOLT_NO_PERMISSION = 36,
    /// Redis is a read-only replica (`READONLY`): the URL names a replica, or
    /// a failover demoted the server. Through Sentinels the master is found
    /// again instead (the connection is replaced).
    VOLT_READ_ONLY = 37,
    /// `volt_sem_delete`: the Redis semaphore has live sessions (clients that
    /// hold permits, wait, or are connected); nothing was deleted.
    VOLT_IN_USE = 38,
}

/// The status of a backend error. Requests too large for the semaphore are
/// invalid arguments, as for the local semaphore's `n > volt_max_permits()`.
pub(crate) fn status_of(e: Error) -> volt_status {
    remember(&e);
    match e {
        Error::Closed => VOLT_CLOSED,
        Error::NoPermits => VOLT_WOULD_BLOCK,
        Error::TimedOut => VOLT_TIMED_OUT,
        Error::Overflow { .. } => VOLT_OVERFLOW,
        Error::TooManyPermits | Error::InvalidPermits => VOLT_INVALID_ARGUMENT,
        Error::InvalidName => VOLT_INVALID_NAME,
        Error::NotFound => VOLT_NOT_FOUND,
        Error::AlreadyExists => VOLT_EXISTS,
        Error::PermissionDenied => VOLT_PERMISSION,
        Error::TotalMismatch { .. } => VOLT_MISMATCH,
        Error::VersionMismatch { .. } => VOLT_VERSION_MISMATCH,
        Error::NotASegment => VOLT_NOT_A_SEGMENT,
        Error::QueueFull => VOLT_QUEUE_FULL,
        Error::ProcessTableFull => VOLT_PROCESS_TABLE_FULL,
        Error::NotHeld { .. } => VOLT_NOT_HELD,
        Error::InCallback => VOLT_IN_CALLBACK,
        Error::Forked => VOLT_FORKED,
        Error::Unsupported => VOLT_UNSUPPORTED,
        Error::Corrupt => VOLT_CORRUPT,
        Error::InvalidUrl(_) => VOLT_INVALID_URL,
        Error::InvalidPrefix => VOLT_INVALID_PREFIX,
        Error::InvalidOption(_) => VOLT_INVALID_OPTION,
        Error::Auth => VOLT_AUTH_FAILED,
        Error::Connection(_) => VOLT_CONNECTION_FAILED,
        Error::Redis(_) => VOLT_REDIS_ERROR,
        Error::Protocol(_) => VOLT_PROTOCOL_ERROR,
        Error::LeaseExpired => VOLT_LEASE_EXPIRED,
        Error::StateLost => VOLT_STATE_LOST,
        Error::Tls(_) => VOLT_TLS_FAILED,
        Error::NotReplicated { .. } => VOLT_NOT_REPLICATED,
        Error::NoPermission(_) => VOLT_NO_PERMISSION,
        Error::ReadOnly(_) => VOLT_READ_ONLY,
        Error::InUse { .. } => VOLT_IN_USE,
        // Os, and any later variant of the non_exhaustive error.
        _ => VOLT_OS_ERROR,
    }
}

/// `Ok` as `VOLT_OK`, an error as its status.
pub(crate) fn status<T>(r: Result<T, Error>) -> volt_status {
    r.map_or_else(status_of, |_| VOLT_OK)
}

/// A static, NUL-terminated name for a status ("VOLT_OK", ...), or "unknown".
#[no_mangle]
pub extern "C" fn volt_status_str(status: i32) -> *const c_char {
    ffi_call(c"unknown".as_ptr(), || status_name(status).as_ptr().cast())
}

fn status_name(status: i32) -> &'static str {
    let name: &'static str = match status {
        0 => "VOLT_OK\0",
        1 => "VOLT_PENDING\0",
        2 => "VOLT_WOULD_BLOCK\0",
        3 => "VOLT_CLOSED\0",
        4 => "VOLT_TIMED_OUT\0",
        5 => "VOLT_CANCELLED\0",
        6 => "VOLT_IDLE\0",
        7 => "VOLT_INVALID_ARGUMENT\0",
        8 => "VOLT_OVERFLOW\0",
        9 => "VOLT_PANIC\0",
        10 => "VOLT_INVALID_NAME\0",
        11 => "VOLT_NOT_FOUND\0",
        12 => "VOLT_EXISTS\0",
        13 => "VOLT_PERMISSION\0",
        14 => "VOLT_MISMATCH\0",
        15 => "VOLT_VERSION_MISMATCH\0",
        16 => "VOLT_NOT_A_SEGMENT\0",
        17 => "VOLT_QUEUE_FULL\0",
        18 => "VOLT_PROCESS_TABLE_FULL\0",
        19 => "VOLT_NOT_HELD\0",
        20 => "VOLT_IN_CALLBACK\0",
        21 => "VOLT_FORKED\0",
        22 => "VOLT_UNSUPPORTED\0",
        23 => "VOLT_CORRUPT\0",
        24 => "VOLT_OS_ERROR\0",
        25 => "VOLT_INVALID_URL\0",
        26 => "VOLT_INVALID_PREFIX\0",
        27 => "VOLT_INVALID_OPTION\0",
        28 => "VOLT_AUTH_FAILED\0",
        29 => "VOLT_CONNECTION_FAILED\0",
        30 => "VOLT_REDIS_ERROR\0",
        31 => "VOLT_PROTOCOL_ERROR\0",
        32 => "VOLT_LEASE_EXPIRED\0",
        33 => "VOLT_STATE_LOST\0",
        34 => "VOLT_TLS_FAILED\0",
        35 => "VOLT_NOT_REPLICATED\0",
        36 => "VOLT_NO_PERMISSION\0",
        37 => "VOLT_READ_ONLY\0",
        38 => "VOLT_IN_USE\0",
        _ => "unknown\0",
    };
    name
}
