//! One error type for every backend. Each variant names a cause a caller can
//! act on, whichever backend raised it; [`Error::code`] gives it a stable
//! name, [`Error::status`] and [`Error::status_name`] its C status, and
//! [`Error::class`] the kind of failure the Python exception and the Node
//! error are chosen by. All of it comes from the table below, whose
//! documentation (that of [`Error`]) says how to add an error.

use core::fmt;

use volt_sem::{AcquireError, AcquireTimeoutError, ReleaseError, TryAcquireError};
use volt_sem_shm::Error as ShmError;

#[macro_use]
mod table;

/// What kind of failure an [`Error`] is: the bindings raise one exception
/// class (Python) or error type and `code` (Node) per class, refined by the
/// error's [`code`](Error::code) where a binding has a class of its own for
/// it (Python's `QueueFullError`, ...).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The semaphore (or the handle) is closed. Python `ClosedError`.
    Closed,
    /// `try_acquire` found too few permits. Python `RuntimeError`.
    WouldBlock,
    /// A timeout elapsed. Python `TimeoutError`.
    Timeout,
    /// A count out of range (a request, a total, a release). Python
    /// `ValueError`/`OverflowError`, Node `RangeError` `ERR_OUT_OF_RANGE`.
    Count,
    /// A bad argument (a name, a URL, a prefix). Python `ValueError` (or its
    /// subclass named by the code), Node `ERR_VOLT_*`.
    Value,
    /// An option out of range. Python `ValueError`, Node `RangeError`
    /// `ERR_VOLT_INVALID_OPTION`.
    Option,
    /// Nothing under that name. Python `FileNotFoundError`.
    NotFound,
    /// Something under that name already. Python `FileExistsError`.
    Exists,
    /// The OS refused access. Python `PermissionError`.
    Permission,
    /// A failure of a semaphore shared by processes. Python `SharedError`
    /// (the subclass named by the code).
    Shared,
    /// A call made where it cannot work (inside a wake callback). Python
    /// `RuntimeError`.
    Usage,
    /// Not available on this platform or backend. Python
    /// `NotImplementedError`.
    Unsupported,
    /// Another OS error. Python `OSError`.
    Os,
    /// Redis could not be reached or refused the connection. Python
    /// `RedisConnectionError` (or its subclass of that code).
    Connection,
    /// The session lost its permits or its state. Python `RedisError`'s
    /// subclass of that code.
    Lease,
    /// Redis refused or failed a command. Python `RedisCommandError` (or the
    /// `RedisError` subclass of that code).
    Redis,
}

/// One C status: its number, name and documentation, and the error variant it
/// is the status of (`None` for the statuses that are not errors).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Status {
    /// The `volt_status` value.
    pub number: i32,
    /// `VOLT_...`.
    pub name: &'static str,
    /// Its C documentation, one line per element.
    pub doc: &'static [&'static str],
    /// The [`Error`] variant of this row.
    pub error: Option<&'static str>,
}

/// The URL forms an [`Error::InvalidUrl`] message shows (only the Redis
/// backend makes that error).
#[cfg(feature = "redis")]
use volt_sem_redis::URL_FORM;
#[cfg(not(feature = "redis"))]
const URL_FORM: &str = "redis://[user:password@]host[:port][/db]";

// The table. The statuses that are not errors (success, the waiter's states,
// bad arguments and panics the C layer finds itself) are listed first so that
// the C enum is generated whole from here; an error may share one of them.
volt_sem::error_enum! {
    /// Why an operation on a [`Semaphore`](crate::Semaphore) failed.
    ///
    /// The first group can come from any backend; the next only from a named
    /// (shared) one, and mean the same as the [`volt_sem_shm::Error`] variant of
    /// the same name; the last only from the Redis backend (the `redis` feature),
    /// meaning the same as the `volt_sem_redis::Error` variant of the same name.
    /// No variant ever carries a password.
    ///
    /// # Adding an error
    ///
    /// Everything about an error is one row of this table (the invocation of
    /// `volt_sem::error_enum!` in `backend/src/error.rs`, which hands the
    /// columns in braces to `error_table!`), and nothing else needs to change
    /// for it to reach every language:
    ///
    /// 1. Add the row: its Rust documentation, the variant (a tuple variant names
    ///    its one field, `Tls(detail: String)`; a struct variant documents its
    ///    fields), `=> message` (a format string that may name the fields,
    ///    `(format, arguments...)`, or a function of `backend/src/error.rs` that
    ///    writes it, `shm_display` to read as the `volt_sem_shm::Error` of the
    ///    same name), then in braces: the lower crates whose error of the same
    ///    name (and fields) converts into it (`[shm redis]`, `[]` for none), the
    ///    stable code and its [`ErrorClass`] (the bindings raise the class's
    ///    exception: pick the closest, or add a class and map it in both
    ///    bindings), and its C status: its C documentation and `VOLT_NAME =
    ///    number;`, a new number after the last one (the numbers are ABI: never
    ///    renumber one; errors may share a status, repeating it without
    ///    documentation).
    /// 2. Regenerate the C side: `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi
    ///    --test status` rewrites `ffi-c/src/status_codes.rs`, then the same with
    ///    `--test header` rewrites `include/volt_sem.h` (both tests fail while
    ///    their file is stale).
    /// 3. Add it to `every_error()` in `backend/tests/error_table.rs`, and
    ///    document the new code where users read it (the bindings' READMEs and
    ///    `.pyi`/`.d.ts` when it gets its own exception or `code`).
    #[non_exhaustive]
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum Error {
        /// The semaphore was closed (by any process, for a shared one).
        Closed => "semaphore closed" {
            [shm redis] "CLOSED", Closed,
            /// The semaphore is closed (or was closed while the waiter was queued; the
            /// waiter holds no permits).
            VOLT_CLOSED = 3;
        },
        /// `try_acquire`: not enough permits now, or earlier requests are queued.
        NoPermits => "no permits available" {
            [shm redis] "NO_PERMITS", WouldBlock,
            /// Not enough permits right now (or earlier requests are queued).
            VOLT_WOULD_BLOCK = 2;
        },
        /// A request above the largest possible grant: above
        /// [`volt_sem::Semaphore::MAX_PERMITS`] for a local semaphore, above its
        /// total for a shared one (it could never be granted).
        TooManyPermits => "requested more permits than can ever be granted: more than \
             the semaphore's total (an in-process one's: MAX_PERMITS); ask for at most that many" {
            [shm redis] "TOO_MANY_PERMITS", Count,
            VOLT_INVALID_ARGUMENT = 7;
        },
        /// The timeout elapsed first; any partial grant was handed on.
        TimedOut => "timed out waiting for permits" {
            [shm redis] "TIMED_OUT", Timeout,
            /// `volt_sem_acquire_blocking` gave up; any partial grant was handed on.
            VOLT_TIMED_OUT = 4;
        },
        /// A local `release` would raise the available permits above
        /// `MAX_PERMITS`; `unreleased` of them were not released (all of them but
        /// in one rare race, see [`ReleaseError::unreleased`]).
        Overflow {
            /// Permits the caller still holds.
            unreleased: usize,
        } => "release would raise the available permits above the maximum ({unreleased} not released)" {
            [] "OVERFLOW", Count,
            /// A release would raise the available permits above `volt_max_permits()`.
            /// Nothing was released.
            VOLT_OVERFLOW = 8;
        },
        /// The name is empty, contains `/` or NUL, or is too long (a named
        /// semaphore's); is empty, contains `{` or `}`, or is too long (a Redis
        /// one's, or contains NUL). The message states both rules: the variant does not say
        /// which backend refused the name.
        InvalidName => invalid_name_display {
            [shm redis] "INVALID_NAME", Value,
            /// `volt_sem_open`/`volt_sem_unlink`: the name is empty, contains '/', is
            /// longer than `volt_sem_max_name_len()` bytes, or is not UTF-8.
            VOLT_INVALID_NAME = 10;
        },
        /// `open` with 0 permits, or more than [`volt_sem_shm::MAX_PERMITS`]; a
        /// Redis `connect` or `set_total` with 0 or more than
        /// `volt_sem_redis::MAX_PERMITS`. The message states both maxima.
        InvalidPermits => invalid_permits_display {
            [shm redis] "INVALID_PERMITS", Count,
            VOLT_INVALID_ARGUMENT = 7;
        },
        /// A handle's label is empty, longer than
        /// [`volt_sem::inspect::MAX_LABEL_LEN`] bytes, or has a byte that is not
        /// printable ASCII or is a space.
        InvalidLabel => shm_display {
            [shm redis] "INVALID_LABEL", Value,
            VOLT_INVALID_ARGUMENT = 7;
        },
        /// Attach-only `open` or `connect`: no semaphore has this name (also
        /// `unlink` or `delete` of a name that does not exist).
        NotFound => "no semaphore has this name" {
            [shm redis] "NOT_FOUND", NotFound,
            /// No shared semaphore has this name (`VOLT_OPEN_ATTACH_ONLY`, unlink), or
            /// no Redis semaphore (`VOLT_CONNECT_ATTACH_ONLY`, `volt_sem_delete`).
            VOLT_NOT_FOUND = 11;
        },
        /// Create-only `open`: a semaphore with this name exists.
        AlreadyExists => shm_display {
            [shm] "ALREADY_EXISTS", Exists,
            /// `VOLT_OPEN_CREATE_ONLY`: a shared semaphore with this name exists.
            VOLT_EXISTS = 12;
        },
        /// The OS refused access to the segment (its mode or owner).
        PermissionDenied => shm_display {
            [shm] "PERMISSION_DENIED", Permission,
            /// The OS refused access to the shared segment (its mode), or another
            /// user owns it and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` was not given.
            VOLT_PERMISSION = 13;
        },
        /// The name exists with another total; nothing was changed.
        TotalMismatch {
            /// The total the existing semaphore was created with.
            existing: u64,
        } => shm_display {
            [shm redis] "TOTAL_MISMATCH", Shared,
            /// The name exists with another total of permits; nothing was changed
            /// (`VOLT_OPEN_RESIZE` / `VOLT_CONNECT_RESIZE` change the total instead).
            VOLT_MISMATCH = 14;
        },
        /// The semaphore was made by another release of volt-sem, whose format
        /// this one could misread: a named one's segment has another layout
        /// version, a Redis one's keys another schema version. Nothing was
        /// changed. See *Upgrading* in `docs/versioning.md`.
        VersionMismatch {
            /// The segment's layout version, or the Redis keys' schema version
            /// (0: a Redis semaphore of a release from before it was recorded).
            found: u32,
            /// This release's.
            expected: u32,
        } => "the semaphore was made by another release of volt-sem (its \
             format version {found}; this release's: {expected}); nothing was changed: stop the processes of the \
             other release, then unlink (named) or delete (Redis) it, or use another name" {
            [shm redis] "VERSION_MISMATCH", Shared,
            /// The semaphore was made by another release of the library: a shared
            /// segment of another layout version, or a Redis semaphore whose keys
            /// have another schema version (`volt_sem_open`; `volt_sem_connect`,
            /// `volt_sem_delete`); nothing was changed.
            VOLT_VERSION_MISMATCH = 15;
        },
        /// The shared segment's lock is another C library's `pthread_mutex_t`
        /// (a glibc build and a musl build of volt-sem cannot share a name).
        LibcMismatch {
            /// The segment's C library: 1 glibc, 2 musl, 3 uClibc, 65535 another.
            found: u32,
            /// This build's.
            expected: u32,
        } => shm_display {
            [shm] "LIBC_MISMATCH", Shared,
            /// The shared segment was made by a process whose build of the library
            /// uses another C library (glibc and musl lock the segment differently
            /// and cannot share it); nothing was changed. Use builds for one C
            /// library (all glibc, or all musl) for every process of a name.
            VOLT_LIBC_MISMATCH = 41;
        },
        /// The file under the name is not a volt-sem segment.
        NotASegment => shm_display {
            [shm] "NOT_A_SEGMENT", Shared,
            /// The file under the name is not a volt-sem segment (foreign or
            /// truncated, or a directory).
            VOLT_NOT_A_SEGMENT = 16;
        },
        /// Every process record of the segment is taken.
        ProcessTableFull => shm_display {
            [shm] "PROCESS_TABLE_FULL", Shared,
            /// Every process record of the shared segment is taken.
            VOLT_PROCESS_TABLE_FULL = 18;
        },
        /// Every waiter slot of the segment is taken; the request was not queued.
        QueueFull => shm_display {
            [shm] "QUEUE_FULL", Shared,
            /// Every waiter slot of the shared segment is taken (`volt_sem_max_waiters()`
            /// requests queued across all processes); the request was not queued.
            VOLT_QUEUE_FULL = 17;
        },
        /// A shared `release(n)` above what this process holds; nothing was released.
        NotHeld {
            /// What this process holds.
            held: u64,
        } => "released more permits than held ({held}; a named semaphore counts this \
             process's, a Redis one this handle's); nothing was released" {
            [shm redis] "NOT_HELD", Shared,
            /// A shared semaphore's release of more permits than this process holds;
            /// nothing was released.
            VOLT_NOT_HELD = 19;
        },
        /// The shared segment is corrupt: a value the library never writes
        /// (another process with write access scribbled on it), or its lock is
        /// not recoverable.
        Corrupt => shm_display {
            [shm] "CORRUPT", Shared,
            /// The shared segment is corrupt: it holds a value the library never
            /// writes (another process with write access scribbled on it; the call
            /// stopped short of it), or its lock is not recoverable.
            VOLT_CORRUPT = 23;
        },
        /// A blocking acquire on the thread that runs a shared semaphore's wake
        /// callbacks, where it would wait for itself.
        InCallback => shm_display {
            [shm redis] "IN_CALLBACK", Usage,
            /// A blocking acquire of a shared semaphore inside one of its wake
            /// callbacks (which run on the process's doorbell thread of that name,
            /// where it would wait for itself).
            VOLT_IN_CALLBACK = 20;
        },
        /// A shared handle opened before `fork()`, used in the child: open the name
        /// again there.
        Forked => "a handle opened before fork() was used in the child: open the named \
             semaphore, or connect to Redis, again in the child" {
            [shm redis] "FORKED", Shared,
            /// A shared handle opened (or a Redis handle connected) before `fork()`,
            /// used in the child: open the name (connect) again in the child.
            VOLT_FORKED = 21;
        },
        /// Named shared semaphores are not available on this platform.
        Unsupported => shm_display {
            [shm] "UNSUPPORTED", Unsupported,
            /// Named shared semaphores are not supported on this platform (Linux
            /// only); or a Redis-only call (`volt_sem_census`, `volt_sem_watch_lease`)
            /// on a local or shared semaphore; or a call for named and Redis
            /// semaphores (`volt_sem_set_total`, `volt_sem_reopen`) on a local one.
            VOLT_UNSUPPORTED = 22;
        },
        /// Another OS error (an `errno` value).
        Os(errno: i32) => shm_display {
            [shm] "OS_ERROR", Os,
            /// Another OS error from the shared segment (`errno` is not preserved).
            VOLT_OS_ERROR = 24;
        },
        /// Redis: the URL is malformed or of an unsupported scheme; the text
        /// says why (never the URL itself) and shows the expected form.
        InvalidUrl(why: &'static str) => "invalid Redis URL ({why}); expected {URL_FORM}" {
            [redis] "INVALID_URL", Value,
            /// `volt_sem_connect`: the URL is malformed, of an unsupported scheme, or
            /// not UTF-8. Nothing was contacted.
            VOLT_INVALID_URL = 25;
        },
        /// Redis: the key prefix is empty, too long, or contains `{`, `}`, `:` or NUL.
        InvalidPrefix => "invalid key prefix (1 to 256 bytes, without '{{', '}}', ':' or NUL)" {
            [redis] "INVALID_PREFIX", Value,
            /// `volt_sem_connect`: the key prefix is empty, longer than 256 bytes,
            /// contains '{', '}' or ':', or is not UTF-8.
            VOLT_INVALID_PREFIX = 26;
        },
        /// Redis: an option is out of range (the text says which).
        InvalidOption(what: &'static str) => "invalid option: {what}" {
            [redis] "INVALID_OPTION", Option,
            /// `volt_sem_connect`: an option is out of range (a lease below 300 ms),
            /// an unknown flag bit, or a non-zero option this library does not know
            /// (a `volt_connect_options` from a newer header; see there).
            VOLT_INVALID_OPTION = 27;
        },
        /// Redis refused the credentials (wrong user or password).
        Auth => "Redis refused the credentials (wrong user or password)" {
            [redis] "AUTH_FAILED", Connection,
            /// Redis refused the credentials of the URL (wrong user or password).
            VOLT_AUTH_FAILED = 28;
        },
        /// Redis (its ACL) refuses a command the backend needs; the text names
        /// it.
        NoPermission(command: String) => "Redis refused a command (ACL): {command}" {
            [redis] "NO_PERMISSION", Redis,
            /// Redis (its ACL) refuses this user a command the library needs:
            /// `volt_sem_connect` checks the ones it sends itself (`EVALSHA`,
            /// `EVAL`, `BLPOP`, `RPUSH`; `PUBLISH` and `WAIT` with
            /// `min_replicas_acked`), and a command refused inside a script is
            /// reported the same way; `volt_last_error_message` names the command.
            VOLT_NO_PERMISSION = 36;
        },
        /// Redis: `delete` of a semaphore with live sessions (clients that hold,
        /// wait or are connected); nothing was deleted.
        InUse {
            /// How many sessions are live.
            sessions: u64,
        } => in_use_display {
            [redis] "IN_USE", Redis,
            /// `volt_sem_delete`: the Redis semaphore has live sessions (clients that
            /// hold permits, wait, or are connected); nothing was deleted.
            VOLT_IN_USE = 38;
        },
        /// Redis is a read-only replica (`READONLY`): the URL names a replica,
        /// or a failover demoted the server (through Sentinels the master is
        /// found again instead).
        ReadOnly(detail: String) => "Redis is a read-only replica: {detail}" {
            [redis] "READ_ONLY", Redis,
            /// Redis is a read-only replica (`READONLY`): the URL names a replica, or
            /// a failover demoted the server. Through Sentinels the master is found
            /// again instead (the connection is replaced).
            VOLT_READ_ONLY = 37;
        },
        /// Redis could not be reached or the connection failed (how, without the
        /// password).
        Connection(detail: String) => "Redis connection failed: {detail}" {
            [redis] "CONNECTION_FAILED", Connection,
            /// Redis could not be reached within the connect timeout, or the
            /// connection failed (or a command took longer than the command timeout).
            VOLT_CONNECTION_FAILED = 29;
        },
        /// Redis answered with an error (its text, without the password).
        Redis(detail: String) => "Redis error: {detail}" {
            [redis] "REDIS_ERROR", Redis,
            /// Redis answered a command with an error (e.g. a script error; a
            /// replica is `VOLT_READ_ONLY`, an ACL refusal `VOLT_NO_PERMISSION`, a
            /// full Redis `VOLT_REDIS_OUT_OF_MEMORY`).
            VOLT_REDIS_ERROR = 30;
        },
        /// A reply the scripts never produce (a bug, or a foreign key in the
        /// semaphore's key space).
        Protocol(detail: String) => "unexpected reply from Redis: {detail}" {
            [redis] "PROTOCOL_ERROR", Redis,
            /// Redis answered with a reply the library never expects (a foreign key
            /// in the semaphore's key space, or a bug).
            VOLT_PROTOCOL_ERROR = 31;
        },
        /// Redis: a key in the semaphore's key space holds a value of another type
        /// than volt-sem's, or a field of one holds a value volt-sem never writes
        /// there (a word or a negative count, `avail` above the total; another
        /// program wrote it); the call changed nothing. The text names the key
        /// (and the field) when the script could tell which.
        WrongType(detail: String) => "a key of the semaphore in Redis holds a value of another type, or a value volt-sem never writes there (something else wrote it); nothing was changed: {detail}" {
            [redis] "WRONG_TYPE", Redis,
            /// A key in the Redis semaphore's key space holds a value of another type
            /// than volt-sem keeps there, or a field of one holds a value volt-sem
            /// never writes there (a word or a negative number where a count is kept,
            /// `avail` above the total; another program wrote it): the call changed
            /// nothing in Redis; `volt_last_error_message` names the key (and the
            /// field) when known. Delete that key, or the semaphore, or use another
            /// name or prefix.
            VOLT_WRONG_TYPE = 40;
        },
        /// This client's session lease expired (a pause, a partition, Redis out of
        /// reach for longer than the lease): its permits went back to the pool and
        /// its queued requests were removed; a release of such permits reports
        /// this and releases nothing.
        LeaseExpired => "this client's session lease expired: its permits and queued requests were reclaimed" {
            [redis] "LEASE_EXPIRED", Lease,
            /// This handle's session lease expired (the process was paused, Redis was
            /// out of reach, a partition) for longer than the lease: the permits it
            /// held went back to the pool and its queued requests were removed.
            /// Waiters fail with it; `volt_sem_release` of such permits returns it
            /// and releases nothing (they were already reclaimed). The handle goes on
            /// with a new session at its next acquire.
            VOLT_LEASE_EXPIRED = 32;
        },
        /// Redis lost the semaphore's state (restarted empty, flushed, or the keys
        /// deleted): the handle refuses to go on rather than over-grant. Connect
        /// again to start afresh.
        StateLost => "Redis lost the semaphore's state (restarted empty or flushed); connect again" {
            [redis] "STATE_LOST", Lease,
            /// Redis lost the semaphore's state (restarted without persistence,
            /// flushed, or its keys deleted): the handle fails its holders and
            /// waiters and refuses every later call rather than over-grant. Free it
            /// and connect again to start afresh.
            VOLT_STATE_LOST = 33;
        },
        /// Redis: the TLS handshake failed (an untrusted certificate, a TLS URL
        /// to a plain port, unreadable certificate files; the text says which).
        Tls(detail: String) => "TLS failed: {detail}" {
            [redis] "TLS_FAILED", Connection,
            /// Redis over TLS: the handshake failed (the server's certificate is not
            /// trusted or not for this host, a `rediss://` URL to a plain port, an
            /// unreadable certificate file); `volt_last_error_message` says which.
            VOLT_TLS_FAILED = 34;
        },
        /// Redis: fewer replicas than `min_replicas_acked` acknowledged a write;
        /// the session was given up, so what it held went back.
        NotReplicated {
            /// Replicas that acknowledged.
            acked: u64,
            /// Replicas asked for.
            wanted: u64,
        } => "only {acked} of {wanted} replicas acknowledged the write in time; the session was given up" {
            [redis] "NOT_REPLICATED", Redis,
            /// Redis with a minimum of replicas to acknowledge each write: fewer
            /// acknowledged in time, so the session was given up (what it held went
            /// back; its waiters fail with `VOLT_LEASE_EXPIRED`).
            VOLT_NOT_REPLICATED = 35;
        },
        /// Redis reached its `maxmemory` and refused the call's writes (`OOM`:
        /// `noeviction`, or a `volatile-*` policy with nothing to evict). The
        /// call changed nothing (Redis refuses a script at its first write):
        /// transient, retry once memory is freed. A release so refused gave its
        /// session up, as any refused release: its permits come back. The text
        /// is the server's.
        OutOfMemory(detail: String) => "Redis is out of memory (maxmemory reached); nothing was changed: retry once memory is freed: {detail}" {
            [redis] "REDIS_OUT_OF_MEMORY", Redis,
            /// Redis reached its `maxmemory` and refused the call's writes (`OOM`;
            /// `noeviction` or a `volatile-*` policy): nothing was changed.
            /// Transient: retry once memory is freed (a release so refused gave the
            /// session up, as any refused release: its permits come back).
            /// `volt_last_error_message` has the server's text.
            VOLT_REDIS_OUT_OF_MEMORY = 42;
        },
        /// This handle's session was ended by
        /// [`Semaphore::disconnect`](crate::Semaphore::disconnect) (a named or
        /// Redis handle): its queued requests failed with it, and so does every
        /// later call on the handle. The semaphore stays open for everyone else.
        Disconnected => "this handle was disconnected: its session ended (the semaphore stays open for everyone else: open or connect it again for a new handle)" {
            [] "DISCONNECTED", Closed,
            /// The handle was disconnected (`volt_sem_disconnect`): its session
            /// ended, its queued acquires failed with this status, and every later
            /// call on it (on any of its references) fails with it. The semaphore
            /// stays open for everyone else: open (connect) it again for a new
            /// handle.
            VOLT_DISCONNECTED = 43;
        },
    }
    then error_table! {
        statuses {
            /// Success; for an acquire: the permits were taken (READY); for
            /// `volt_sem_cancel`/`volt_waiter_status`: the full grant arrived and the
            /// caller owns the requested permits.
            VOLT_OK = 0;
            /// The waiter was queued; its wake callback will be called once.
            VOLT_PENDING = 1;
            /// `volt_sem_cancel` removed a queued waiter before its grant was complete;
            /// the partial grant (possibly 0) was handed on to the next waiters.
            VOLT_CANCELLED = 5;
            /// The waiter is not queued and holds no outcome: never used, its acquire
            /// returned at once, or its outcome was already collected.
            VOLT_IDLE = 6;
            /// A NULL pointer, `n == 0`, `n > volt_max_permits()`, an uninitialised or
            /// misaligned waiter, a waiter that is still busy, or a waiter cancelled on a
            /// semaphore it is not queued on. Nothing was changed.
            /// `volt_last_error_message` names the call and the argument at fault.
            VOLT_INVALID_ARGUMENT = 7;
            /// An internal error (a Rust panic) was caught at the boundary.
            VOLT_PANIC = 9;
            /// `volt_sem_inspect`: the report was written, but the arrays were too
            /// small for every holder or waiter: the counts in the report say how
            /// many there were; the arrays hold the first ones.
            VOLT_TRUNCATED = 39;
        }
    }
}

/// `InUse`'s message, as the Redis crate words it (one session, or several).
fn in_use_display(e: &Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match e {
        Error::InUse { sessions: 1 } => f.write_str(
            "the semaphore is in use (1 live session holds, waits or is connected); nothing was deleted",
        ),
        Error::InUse { sessions } => write!(
            f,
            "the semaphore is in use ({sessions} live sessions hold, wait or are connected); nothing was deleted"
        ),
        _ => f.write_str(e.code()),
    }
}

/// The rule a Redis semaphore's name breaks (without the `redis` feature no
/// Redis name is ever checked: nothing to add).
#[cfg(feature = "redis")]
fn redis_name_rule() -> String {
    format!(
        "; a Redis semaphore's, 1 to {} bytes without '{{', '}}' or NUL",
        volt_sem_redis::MAX_NAME_LEN
    )
}
#[cfg(not(feature = "redis"))]
fn redis_name_rule() -> String {
    String::new()
}

/// `InvalidName`'s message: the rules of both backends' names, since the
/// variant does not say which one refused it (a Redis name is not held to
/// the named rule, nor the other way round).
fn invalid_name_display(_: &Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "invalid semaphore name (a named semaphore's name is 1 to {} bytes without '/' or NUL{})",
        volt_sem_shm::MAX_NAME_LEN,
        redis_name_rule()
    )
}

/// `InvalidPermits`'s message: both backends' maxima (see
/// [`invalid_name_display`]); the Redis one is far below the named one.
fn invalid_permits_display(_: &Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "permits must be between 1 and {} (MAX_PERMITS) for a named semaphore",
        volt_sem_shm::MAX_PERMITS
    )?;
    #[cfg(feature = "redis")]
    write!(f, ", 1 and {} for a Redis one", volt_sem_redis::MAX_PERMITS)?;
    Ok(())
}

/// The message of an error that reads as the shm crate's error of the same name.
fn shm_display(e: &Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match ShmError::try_from(e.clone()) {
        Ok(shm) => fmt::Display::fmt(&shm, f),
        Err(()) => f.write_str(e.code()),
    }
}

/// The in-process semaphore's errors, variant for variant; the rest
/// (`TooManyPermits`, and any later variant of the `non_exhaustive` enums)
/// as `TooManyPermits`.
macro_rules! from_core_errors {
    ($($core:ident { $($same:ident)* })*) => {$(
        impl From<$core> for Error {
            fn from(e: $core) -> Self {
                match e {
                    $($core::$same => Error::$same,)*
                    _ => Error::TooManyPermits,
                }
            }
        }
    )*};
}

from_core_errors! {
    TryAcquireError { Closed NoPermits }
    AcquireError { Closed }
    AcquireTimeoutError { Closed TimedOut }
}

impl From<ReleaseError> for Error {
    fn from(e: ReleaseError) -> Self {
        Error::Overflow {
            unreleased: e.unreleased(),
        }
    }
}
