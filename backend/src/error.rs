//! One error type for every backend. Each variant names a cause a caller can
//! act on, whichever backend raised it; [`Error::code`] gives it a stable
//! name, the one the C status, the Python exception and the Node `code` are
//! derived from.

use core::fmt;

use volt_sem::{AcquireError, AcquireTimeoutError, ReleaseError, TryAcquireError};
use volt_sem_shm::Error as ShmError;

/// Why an operation on a [`Semaphore`](crate::Semaphore) failed.
///
/// The first group can come from any backend; the next only from a named
/// (shared) one, and mean the same as the [`volt_sem_shm::Error`] variant of
/// the same name; the last only from the Redis backend (the `redis` feature),
/// meaning the same as the `volt_sem_redis::Error` variant of the same name.
/// No variant ever carries a password.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Error {
    /// The semaphore was closed (by any process, for a shared one).
    Closed,
    /// `try_acquire`: not enough permits now, or earlier requests are queued.
    NoPermits,
    /// A request above the largest possible grant: above
    /// [`volt_sem::Semaphore::MAX_PERMITS`] for a local semaphore, above its
    /// total for a shared one (it could never be granted).
    TooManyPermits,
    /// The timeout elapsed first; any partial grant was handed on.
    TimedOut,
    /// A local `release` would raise the available permits above
    /// `MAX_PERMITS`; `unreleased` of them were not released (all of them but
    /// in one rare race, see [`ReleaseError::unreleased`]).
    Overflow {
        /// Permits the caller still holds.
        unreleased: usize,
    },
    /// The name is empty, contains `/` or NUL, or is too long.
    InvalidName,
    /// `open` with 0 permits, or more than [`volt_sem_shm::MAX_PERMITS`].
    InvalidPermits,
    /// Attach-only `open`: no semaphore has this name (also `unlink` of a name
    /// that does not exist).
    NotFound,
    /// Create-only `open`: a semaphore with this name exists.
    AlreadyExists,
    /// The OS refused access to the segment (its mode or owner).
    PermissionDenied,
    /// The name exists with another total; nothing was changed.
    TotalMismatch {
        /// The total the existing semaphore was created with.
        existing: u64,
    },
    /// The segment was made by another layout version.
    VersionMismatch {
        /// The version found in the segment.
        found: u32,
    },
    /// The file under the name is not a volt-sem segment.
    NotASegment,
    /// Every process record of the segment is taken.
    ProcessTableFull,
    /// Every waiter slot of the segment is taken; the request was not queued.
    QueueFull,
    /// A shared `release(n)` above what this process holds; nothing was released.
    NotHeld {
        /// What this process holds.
        held: u64,
    },
    /// The shared segment is corrupt: a value the library never writes
    /// (another process with write access scribbled on it), or its lock is
    /// not recoverable.
    Corrupt,
    /// A blocking acquire on the thread that runs a shared semaphore's wake
    /// callbacks, where it would wait for itself.
    InCallback,
    /// A shared handle opened before `fork()`, used in the child: open the name
    /// again there.
    Forked,
    /// Named shared semaphores are not available on this platform.
    Unsupported,
    /// Another OS error (an `errno` value).
    Os(i32),
    /// Redis: the URL is malformed or of an unsupported scheme; the text
    /// says why (never the URL itself) and shows the expected form.
    InvalidUrl(&'static str),
    /// Redis: the key prefix is empty, too long, or contains `{` or `}`.
    InvalidPrefix,
    /// Redis: an option is out of range (the text says which).
    InvalidOption(&'static str),
    /// Redis refused the credentials (wrong user or password).
    Auth,
    /// Redis (its ACL) refuses a command the backend needs; the text names
    /// it.
    NoPermission(String),
    /// Redis: `delete` of a semaphore with live sessions (clients that hold,
    /// wait or are connected); nothing was deleted.
    InUse {
        /// How many sessions are live.
        sessions: u64,
    },
    /// Redis is a read-only replica (`READONLY`): the URL names a replica,
    /// or a failover demoted the server (through Sentinels the master is
    /// found again instead).
    ReadOnly(String),
    /// Redis could not be reached or the connection failed (how, without the
    /// password).
    Connection(String),
    /// Redis answered with an error (its text, without the password).
    Redis(String),
    /// A reply the scripts never produce (a bug, or a foreign key in the
    /// semaphore's key space).
    Protocol(String),
    /// This client's session lease expired (a pause, a partition, Redis out of
    /// reach for longer than the lease): its permits went back to the pool and
    /// its queued requests were removed; a release of such permits reports
    /// this and releases nothing.
    LeaseExpired,
    /// Redis lost the semaphore's state (restarted empty, flushed, or the keys
    /// deleted): the handle refuses to go on rather than over-grant. Connect
    /// again to start afresh.
    StateLost,
    /// Redis: the TLS handshake failed (an untrusted certificate, a TLS URL
    /// to a plain port, unreadable certificate files; the text says which).
    Tls(String),
    /// Redis: fewer replicas than `min_replicas_acked` acknowledged a write;
    /// the session was given up, so what it held went back.
    NotReplicated {
        /// Replicas that acknowledged.
        acked: u64,
        /// Replicas asked for.
        wanted: u64,
    },
}

impl Error {
    /// A stable, upper-case name for the error (`"CLOSED"`,
    /// `"TOTAL_MISMATCH"`, ...), for bindings that expose a code rather than a
    /// type (Node's `err.code`, logs).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Closed => "CLOSED",
            Error::NoPermits => "NO_PERMITS",
            Error::TooManyPermits => "TOO_MANY_PERMITS",
            Error::TimedOut => "TIMED_OUT",
            Error::Overflow { .. } => "OVERFLOW",
            Error::InvalidName => "INVALID_NAME",
            Error::InvalidPermits => "INVALID_PERMITS",
            Error::NotFound => "NOT_FOUND",
            Error::AlreadyExists => "ALREADY_EXISTS",
            Error::PermissionDenied => "PERMISSION_DENIED",
            Error::TotalMismatch { .. } => "TOTAL_MISMATCH",
            Error::VersionMismatch { .. } => "VERSION_MISMATCH",
            Error::NotASegment => "NOT_A_SEGMENT",
            Error::ProcessTableFull => "PROCESS_TABLE_FULL",
            Error::QueueFull => "QUEUE_FULL",
            Error::NotHeld { .. } => "NOT_HELD",
            Error::Corrupt => "CORRUPT",
            Error::InCallback => "IN_CALLBACK",
            Error::Forked => "FORKED",
            Error::Unsupported => "UNSUPPORTED",
            Error::Os(_) => "OS_ERROR",
            Error::InvalidUrl(_) => "INVALID_URL",
            Error::InvalidPrefix => "INVALID_PREFIX",
            Error::InvalidOption(_) => "INVALID_OPTION",
            Error::Auth => "AUTH_FAILED",
            Error::NoPermission(_) => "NO_PERMISSION",
            Error::ReadOnly(_) => "READ_ONLY",
            Error::InUse { .. } => "IN_USE",
            Error::Connection(_) => "CONNECTION_FAILED",
            Error::Redis(_) => "REDIS_ERROR",
            Error::Protocol(_) => "PROTOCOL_ERROR",
            Error::LeaseExpired => "LEASE_EXPIRED",
            Error::StateLost => "STATE_LOST",
            Error::Tls(_) => "TLS_FAILED",
            Error::NotReplicated { .. } => "NOT_REPLICATED",
        }
    }
}

/// The URL forms an [`Error::InvalidUrl`] message shows (only the Redis
/// backend makes that error).
#[cfg(feature = "redis")]
use volt_sem_redis::URL_FORM;
#[cfg(not(feature = "redis"))]
const URL_FORM: &str = "redis://[user:password@]host[:port][/db]";

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Closed => f.write_str("semaphore closed"),
            Error::NoPermits => f.write_str("no permits available"),
            Error::TooManyPermits => f.write_str("requested more permits than can ever be granted"),
            Error::TimedOut => f.write_str("timed out waiting for permits"),
            Error::Overflow { unreleased } => write!(
                f,
                "release would raise the available permits above the maximum ({unreleased} not released)"
            ),
            Error::InvalidUrl(why) => write!(f, "invalid Redis URL ({why}); expected {URL_FORM}"),
            Error::InvalidPrefix => {
                f.write_str("invalid key prefix (1 to 256 bytes, without '{' or '}')")
            }
            Error::InvalidOption(what) => write!(f, "invalid option: {what}"),
            Error::Auth => f.write_str("Redis refused the credentials (wrong user or password)"),
            Error::NoPermission(d) => write!(f, "Redis refused a command (ACL): {d}"),
            Error::ReadOnly(d) => write!(f, "Redis is a read-only replica: {d}"),
            Error::InUse { sessions } => write!(
                f,
                "the semaphore is in use ({sessions} live sessions hold, wait or are connected); nothing was deleted"
            ),
            Error::Connection(d) => write!(f, "Redis connection failed: {d}"),
            Error::Redis(d) => write!(f, "Redis error: {d}"),
            Error::Protocol(d) => write!(f, "unexpected reply from Redis: {d}"),
            Error::LeaseExpired => f.write_str(
                "this client's session lease expired: its permits and queued requests were reclaimed",
            ),
            Error::StateLost => f.write_str(
                "Redis lost the semaphore's state (restarted empty or flushed); connect again",
            ),
            Error::Tls(d) => write!(f, "TLS failed: {d}"),
            Error::NotReplicated { acked, wanted } => write!(
                f,
                "only {acked} of {wanted} replicas acknowledged the write in time; the session was given up"
            ),
            // Both shared backends make these two; their units differ.
            Error::NotHeld { held } => write!(
                f,
                "released more permits than held ({held}; a named semaphore counts this \
                 process's, a Redis one this handle's); nothing was released"
            ),
            Error::Forked => f.write_str(
                "a handle opened before fork() was used in the child: open the named \
                 semaphore, or connect to Redis, again in the child",
            ),
            // Every other shared-only variant reads as the shm crate's own message.
            e => match ShmError::try_from(e.clone()) {
                Ok(shm) => fmt::Display::fmt(&shm, f),
                Err(()) => f.write_str(e.code()),
            },
        }
    }
}

impl std::error::Error for Error {}

impl From<ShmError> for Error {
    fn from(e: ShmError) -> Self {
        match e {
            ShmError::InvalidName => Error::InvalidName,
            ShmError::InvalidPermits => Error::InvalidPermits,
            ShmError::NotFound => Error::NotFound,
            ShmError::AlreadyExists => Error::AlreadyExists,
            ShmError::PermissionDenied => Error::PermissionDenied,
            ShmError::TotalMismatch { existing } => Error::TotalMismatch { existing },
            ShmError::VersionMismatch { found } => Error::VersionMismatch { found },
            ShmError::NotASegment => Error::NotASegment,
            ShmError::ProcessTableFull => Error::ProcessTableFull,
            ShmError::QueueFull => Error::QueueFull,
            ShmError::Closed => Error::Closed,
            ShmError::NoPermits => Error::NoPermits,
            ShmError::TooManyPermits => Error::TooManyPermits,
            ShmError::NotHeld { held } => Error::NotHeld { held },
            ShmError::TimedOut => Error::TimedOut,
            ShmError::Corrupt => Error::Corrupt,
            ShmError::InCallback => Error::InCallback,
            ShmError::Forked => Error::Forked,
            ShmError::Unsupported => Error::Unsupported,
            ShmError::Os(errno) => Error::Os(errno),
            // The shm error is non_exhaustive: a later variant is reported as
            // an OS-level failure with no errno rather than lost.
            _ => Error::Os(0),
        }
    }
}

/// The shm crate's error of the same meaning (for its messages); `Err` for
/// [`Error::Overflow`], which only a local semaphore raises, and for the
/// Redis-only variants.
impl TryFrom<Error> for ShmError {
    type Error = ();

    fn try_from(e: Error) -> Result<Self, ()> {
        Ok(match e {
            Error::Closed => ShmError::Closed,
            Error::NoPermits => ShmError::NoPermits,
            Error::TooManyPermits => ShmError::TooManyPermits,
            Error::TimedOut => ShmError::TimedOut,
            Error::Overflow { .. } => return Err(()),
            Error::InvalidName => ShmError::InvalidName,
            Error::InvalidPermits => ShmError::InvalidPermits,
            Error::NotFound => ShmError::NotFound,
            Error::AlreadyExists => ShmError::AlreadyExists,
            Error::PermissionDenied => ShmError::PermissionDenied,
            Error::TotalMismatch { existing } => ShmError::TotalMismatch { existing },
            Error::VersionMismatch { found } => ShmError::VersionMismatch { found },
            Error::NotASegment => ShmError::NotASegment,
            Error::ProcessTableFull => ShmError::ProcessTableFull,
            Error::QueueFull => ShmError::QueueFull,
            Error::NotHeld { held } => ShmError::NotHeld { held },
            Error::Corrupt => ShmError::Corrupt,
            Error::InCallback => ShmError::InCallback,
            Error::Forked => ShmError::Forked,
            Error::Unsupported => ShmError::Unsupported,
            Error::Os(errno) => ShmError::Os(errno),
            Error::InvalidUrl(_)
            | Error::InvalidPrefix
            | Error::InvalidOption(_)
            | Error::Auth
            | Error::NoPermission(_)
            | Error::ReadOnly(_)
            | Error::InUse { .. }
            | Error::Connection(_)
            | Error::Redis(_)
            | Error::Protocol(_)
            | Error::LeaseExpired
            | Error::StateLost
            | Error::Tls(_)
            | Error::NotReplicated { .. } => return Err(()),
        })
    }
}

impl From<TryAcquireError> for Error {
    fn from(e: TryAcquireError) -> Self {
        match e {
            TryAcquireError::Closed => Error::Closed,
            TryAcquireError::NoPermits => Error::NoPermits,
            // TooManyPermits, and any later variant of the non_exhaustive enum.
            _ => Error::TooManyPermits,
        }
    }
}

impl From<AcquireError> for Error {
    fn from(e: AcquireError) -> Self {
        match e {
            AcquireError::Closed => Error::Closed,
            _ => Error::TooManyPermits,
        }
    }
}

impl From<AcquireTimeoutError> for Error {
    fn from(e: AcquireTimeoutError) -> Self {
        match e {
            AcquireTimeoutError::Closed => Error::Closed,
            AcquireTimeoutError::TimedOut => Error::TimedOut,
            _ => Error::TooManyPermits,
        }
    }
}

impl From<ReleaseError> for Error {
    fn from(e: ReleaseError) -> Self {
        Error::Overflow {
            unreleased: e.unreleased(),
        }
    }
}

#[cfg(feature = "redis")]
impl From<volt_sem_redis::Error> for Error {
    fn from(e: volt_sem_redis::Error) -> Self {
        use volt_sem_redis::Error as R;
        match e {
            R::InvalidUrl(why) => Error::InvalidUrl(why),
            R::InvalidName => Error::InvalidName,
            R::InvalidPrefix => Error::InvalidPrefix,
            R::InvalidPermits => Error::InvalidPermits,
            R::InvalidOption(what) => Error::InvalidOption(what),
            R::Auth => Error::Auth,
            R::NoPermission(d) => Error::NoPermission(d),
            R::ReadOnly(d) => Error::ReadOnly(d),
            R::NotFound => Error::NotFound,
            R::InUse { sessions } => Error::InUse { sessions },
            R::Connection(d) => Error::Connection(d),
            R::Redis(d) => Error::Redis(d),
            R::Protocol(d) => Error::Protocol(d),
            R::TotalMismatch { existing } => Error::TotalMismatch { existing },
            R::Closed => Error::Closed,
            R::NoPermits => Error::NoPermits,
            R::TooManyPermits => Error::TooManyPermits,
            R::NotHeld { held } => Error::NotHeld { held },
            R::TimedOut => Error::TimedOut,
            R::LeaseExpired => Error::LeaseExpired,
            R::StateLost => Error::StateLost,
            R::InCallback => Error::InCallback,
            R::Forked => Error::Forked,
            R::Tls(d) => Error::Tls(d),
            R::NotReplicated { acked, wanted } => Error::NotReplicated { acked, wanted },
            // The Redis error is non_exhaustive: a later variant keeps its
            // message as a protocol-level failure rather than being lost.
            other => Error::Protocol(other.to_string()),
        }
    }
}
