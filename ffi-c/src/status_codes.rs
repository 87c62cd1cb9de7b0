//! GENERATED from the error table of `volt-sem-backend` (`backend/src/error.rs`)
//! by `tests/status.rs`; do not edit: change the table, then run
//! `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test status`, then `--test header`.

use std::ffi::CStr;

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
    /// `volt_last_error_message` names the call and the argument at fault.
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
    /// no Redis semaphore (`VOLT_CONNECT_ATTACH_ONLY`, `volt_sem_delete`).
    VOLT_NOT_FOUND = 11,
    /// `VOLT_OPEN_CREATE_ONLY`: a shared semaphore with this name exists.
    VOLT_EXISTS = 12,
    /// The OS refused access to the shared segment (its mode), or another
    /// user owns it and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` was not given.
    VOLT_PERMISSION = 13,
    /// The name exists with another total of permits; nothing was changed
    /// (`VOLT_OPEN_RESIZE` / `VOLT_CONNECT_RESIZE` change the total instead).
    VOLT_MISMATCH = 14,
    /// The semaphore was made by another release of the library: a shared
    /// segment of another layout version, or a Redis semaphore whose keys
    /// have another schema version (`volt_sem_open`; `volt_sem_connect`,
    /// `volt_sem_delete`); nothing was changed.
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
    /// on a local or shared semaphore; or a call for named and Redis
    /// semaphores (`volt_sem_set_total`, `volt_sem_reopen`) on a local one.
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
    /// contains '{', '}' or ':', or is not UTF-8.
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
    /// Redis answered a command with an error (e.g. a script error; a
    /// replica is `VOLT_READ_ONLY`, an ACL refusal `VOLT_NO_PERMISSION`, a
    /// full Redis `VOLT_REDIS_OUT_OF_MEMORY`).
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
    /// `volt_sem_inspect`: the report was written, but the arrays were too
    /// small for every holder or waiter: the counts in the report say how
    /// many there were; the arrays hold the first ones.
    VOLT_TRUNCATED = 39,
    /// A key in the Redis semaphore's key space holds a value of another type
    /// than volt-sem keeps there, or a field of one holds a value volt-sem
    /// never writes there (a word or a negative number where a count is kept,
    /// `avail` above the total; another program wrote it): the call changed
    /// nothing in Redis; `volt_last_error_message` names the key (and the
    /// field) when known. Delete that key, or the semaphore, or use another
    /// name or prefix.
    VOLT_WRONG_TYPE = 40,
    /// The shared segment was made by a process whose build of the library
    /// uses another C library (glibc and musl lock the segment differently
    /// and cannot share it); nothing was changed. Use builds for one C
    /// library (all glibc, or all musl) for every process of a name.
    VOLT_LIBC_MISMATCH = 41,
    /// Redis reached its `maxmemory` and refused the call's writes (`OOM`;
    /// `noeviction` or a `volatile-*` policy): nothing was changed.
    /// Transient: retry once memory is freed (a release so refused gave the
    /// session up, as any refused release: its permits come back).
    /// `volt_last_error_message` has the server's text.
    VOLT_REDIS_OUT_OF_MEMORY = 42,
    /// The handle was disconnected (`volt_sem_disconnect`): its session
    /// ended, its queued acquires failed with this status, and every later
    /// call on it (on any of its references) fails with it. The semaphore
    /// stays open for everyone else: open (connect) it again for a new
    /// handle.
    VOLT_DISCONNECTED = 43,
}

impl volt_status {
    /// The status numbered `n`, if there is one.
    pub(crate) fn from_number(n: i32) -> Option<Self> {
        Some(match n {
            0 => Self::VOLT_OK,
            1 => Self::VOLT_PENDING,
            2 => Self::VOLT_WOULD_BLOCK,
            3 => Self::VOLT_CLOSED,
            4 => Self::VOLT_TIMED_OUT,
            5 => Self::VOLT_CANCELLED,
            6 => Self::VOLT_IDLE,
            7 => Self::VOLT_INVALID_ARGUMENT,
            8 => Self::VOLT_OVERFLOW,
            9 => Self::VOLT_PANIC,
            10 => Self::VOLT_INVALID_NAME,
            11 => Self::VOLT_NOT_FOUND,
            12 => Self::VOLT_EXISTS,
            13 => Self::VOLT_PERMISSION,
            14 => Self::VOLT_MISMATCH,
            15 => Self::VOLT_VERSION_MISMATCH,
            16 => Self::VOLT_NOT_A_SEGMENT,
            17 => Self::VOLT_QUEUE_FULL,
            18 => Self::VOLT_PROCESS_TABLE_FULL,
            19 => Self::VOLT_NOT_HELD,
            20 => Self::VOLT_IN_CALLBACK,
            21 => Self::VOLT_FORKED,
            22 => Self::VOLT_UNSUPPORTED,
            23 => Self::VOLT_CORRUPT,
            24 => Self::VOLT_OS_ERROR,
            25 => Self::VOLT_INVALID_URL,
            26 => Self::VOLT_INVALID_PREFIX,
            27 => Self::VOLT_INVALID_OPTION,
            28 => Self::VOLT_AUTH_FAILED,
            29 => Self::VOLT_CONNECTION_FAILED,
            30 => Self::VOLT_REDIS_ERROR,
            31 => Self::VOLT_PROTOCOL_ERROR,
            32 => Self::VOLT_LEASE_EXPIRED,
            33 => Self::VOLT_STATE_LOST,
            34 => Self::VOLT_TLS_FAILED,
            35 => Self::VOLT_NOT_REPLICATED,
            36 => Self::VOLT_NO_PERMISSION,
            37 => Self::VOLT_READ_ONLY,
            38 => Self::VOLT_IN_USE,
            39 => Self::VOLT_TRUNCATED,
            40 => Self::VOLT_WRONG_TYPE,
            41 => Self::VOLT_LIBC_MISMATCH,
            42 => Self::VOLT_REDIS_OUT_OF_MEMORY,
            43 => Self::VOLT_DISCONNECTED,
            _ => return None,
        })
    }

    /// The status's name, as C spells it.
    pub(crate) fn name(self) -> &'static CStr {
        match self {
            Self::VOLT_OK => c"VOLT_OK",
            Self::VOLT_PENDING => c"VOLT_PENDING",
            Self::VOLT_WOULD_BLOCK => c"VOLT_WOULD_BLOCK",
            Self::VOLT_CLOSED => c"VOLT_CLOSED",
            Self::VOLT_TIMED_OUT => c"VOLT_TIMED_OUT",
            Self::VOLT_CANCELLED => c"VOLT_CANCELLED",
            Self::VOLT_IDLE => c"VOLT_IDLE",
            Self::VOLT_INVALID_ARGUMENT => c"VOLT_INVALID_ARGUMENT",
            Self::VOLT_OVERFLOW => c"VOLT_OVERFLOW",
            Self::VOLT_PANIC => c"VOLT_PANIC",
            Self::VOLT_INVALID_NAME => c"VOLT_INVALID_NAME",
            Self::VOLT_NOT_FOUND => c"VOLT_NOT_FOUND",
            Self::VOLT_EXISTS => c"VOLT_EXISTS",
            Self::VOLT_PERMISSION => c"VOLT_PERMISSION",
            Self::VOLT_MISMATCH => c"VOLT_MISMATCH",
            Self::VOLT_VERSION_MISMATCH => c"VOLT_VERSION_MISMATCH",
            Self::VOLT_NOT_A_SEGMENT => c"VOLT_NOT_A_SEGMENT",
            Self::VOLT_QUEUE_FULL => c"VOLT_QUEUE_FULL",
            Self::VOLT_PROCESS_TABLE_FULL => c"VOLT_PROCESS_TABLE_FULL",
            Self::VOLT_NOT_HELD => c"VOLT_NOT_HELD",
            Self::VOLT_IN_CALLBACK => c"VOLT_IN_CALLBACK",
            Self::VOLT_FORKED => c"VOLT_FORKED",
            Self::VOLT_UNSUPPORTED => c"VOLT_UNSUPPORTED",
            Self::VOLT_CORRUPT => c"VOLT_CORRUPT",
            Self::VOLT_OS_ERROR => c"VOLT_OS_ERROR",
            Self::VOLT_INVALID_URL => c"VOLT_INVALID_URL",
            Self::VOLT_INVALID_PREFIX => c"VOLT_INVALID_PREFIX",
            Self::VOLT_INVALID_OPTION => c"VOLT_INVALID_OPTION",
            Self::VOLT_AUTH_FAILED => c"VOLT_AUTH_FAILED",
            Self::VOLT_CONNECTION_FAILED => c"VOLT_CONNECTION_FAILED",
            Self::VOLT_REDIS_ERROR => c"VOLT_REDIS_ERROR",
            Self::VOLT_PROTOCOL_ERROR => c"VOLT_PROTOCOL_ERROR",
            Self::VOLT_LEASE_EXPIRED => c"VOLT_LEASE_EXPIRED",
            Self::VOLT_STATE_LOST => c"VOLT_STATE_LOST",
            Self::VOLT_TLS_FAILED => c"VOLT_TLS_FAILED",
            Self::VOLT_NOT_REPLICATED => c"VOLT_NOT_REPLICATED",
            Self::VOLT_NO_PERMISSION => c"VOLT_NO_PERMISSION",
            Self::VOLT_READ_ONLY => c"VOLT_READ_ONLY",
            Self::VOLT_IN_USE => c"VOLT_IN_USE",
            Self::VOLT_TRUNCATED => c"VOLT_TRUNCATED",
            Self::VOLT_WRONG_TYPE => c"VOLT_WRONG_TYPE",
            Self::VOLT_LIBC_MISMATCH => c"VOLT_LIBC_MISMATCH",
            Self::VOLT_REDIS_OUT_OF_MEMORY => c"VOLT_REDIS_OUT_OF_MEMORY",
            Self::VOLT_DISCONNECTED => c"VOLT_DISCONNECTED",
        }
    }
}
