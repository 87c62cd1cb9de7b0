//! Semaphores stored in Redis and shared by every host (`volt_sem_connect`):
//! the extensible options struct, connect and delete, the census, the signal
//! handler that ends the sessions, and their limits.

use std::ffi::c_char;
use std::ptr;
use std::time::Duration;

use volt_sem_backend::{ConnectOptions, Semaphore};

use crate::boundary::{
    ffi_call, ffi_status, init_versioned, label_arg, name_arg, non_null, read_versioned, Checked,
};
use crate::last_error::{noted, set_last_error};
use crate::semaphore::{hand_out, handle, not_redis, volt_sem};
use crate::status::status_of;
use crate::status::volt_status::{self, *};

/// The options of `volt_sem_connect`: an extensible struct. Fill it with
/// `volt_connect_options_init(&opts, sizeof opts)`, then change the fields
/// you need:
///
/// ```c
/// volt_connect_options opts;
/// volt_connect_options_init(&opts, sizeof opts);
/// opts.lease_ms = 3000;
/// opts.key_prefix = "tenant-a";
/// volt_status s = volt_sem_connect("redis://127.0.0.1:6379", "db-pool", 50, &opts, &sem);
/// ```
///
/// Every field's 0 (or NULL) means its default, so `volt_connect_options opts =
/// { sizeof opts };` is valid too. Strings are read (copied) during the call
/// only: the caller keeps them.
///
/// ABI: fields are only ever appended, each with 0 meaning "default", and
/// `struct_size` says how many bytes the caller's struct has. A program built
/// against an older header passes a smaller `struct_size`: the newer fields
/// get their defaults. A program built against a newer header and run with
/// an older library passes a larger one: accepted if every byte the library
/// does not know is 0 (options left at their defaults), else
/// `VOLT_INVALID_OPTION` (the program asked for an option this library
/// cannot honour). Sentinel needs no option: its URL names the master
/// (`redis+sentinel://host:port[,host:port]/master`).
// Adding an option:
// append a field whose 0 / NULL means the default, never reorder or remove
// one; read it in `connect_options` (it is 0 there when an older program's
// `struct_size` does not reach it); document it here and in the tests; keep
// no trailing padding (a test checks it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct volt_connect_options {
    /// `sizeof(volt_connect_options)` as the caller compiled it (set by
    /// `volt_connect_options_init`).
    pub struct_size: usize,
    /// The session lease in milliseconds: a client not heard of for that long
    /// (crashed, paused, partitioned) loses its permits and queue places.
    /// At least 300; default (0) 10000. The heartbeat renews it every third.
    pub lease_ms: u64,
    /// How long `volt_sem_connect` (and a reconnect) may take, in
    /// milliseconds; default (0) 5000.
    pub connect_timeout_ms: u64,
    /// How long one command (one script, one round trip) may take before the
    /// connection counts as failed, in milliseconds; default (0) 5000. Bounds
    /// how long every call that talks to Redis blocks when Redis is out of
    /// reach.
    pub command_timeout_ms: u64,
    /// The key prefix (several tenants on one Redis): 1 to 256 bytes of
    /// UTF-8 without '{', '}' or ':' (it ends the prefix in the keys, so
    /// two prefixes never share one). NULL: "volt-sem". Keys are
    /// `{<prefix>:<name>}:...`.
    pub key_prefix: *const c_char,
    /// `VOLT_CONNECT_*` bits; default 0.
    pub flags: u64,
    /// For `rediss://` (TLS): a PEM file of the CA certificate(s) to trust
    /// instead of the public roots. NULL: the public roots. Copied during the
    /// call. (Appended in version 2 of the struct, like every field below.)
    pub tls_ca_file: *const c_char,
    /// For `rediss://`: a client certificate and its private key (PEM files),
    /// for servers that require one; both or neither. Copied during the call.
    pub tls_client_cert_file: *const c_char,
    /// The key of `tls_client_cert_file`.
    pub tls_client_key_file: *const c_char,
    /// Every write waits (Redis `WAIT`) until this many replicas acknowledged
    /// it, for up to `min_replicas_timeout_ms`; if fewer did, the call fails
    /// with `VOLT_NOT_REPLICATED` and the session is given up (what it held
    /// goes back). Narrows the window of a failover that loses the last
    /// writes; it is not consensus. Default (0): no waiting.
    pub min_replicas_acked: u64,
    /// The `WAIT` timeout in milliseconds: positive and below a third of the
    /// lease; default (0) 100.
    pub min_replicas_timeout_ms: u64,
    /// The label `volt_sem_inspect` shows for this handle's holds and queued
    /// requests (on every host): 1 to 128 bytes of printable ASCII without
    /// spaces, such as `"billing-worker-3"`. NULL: `"<hostname>:<pid>"`. An
    /// invalid one is `VOLT_INVALID_ARGUMENT` (with `volt_last_error_message`
    /// saying why), before any connection is made. Copied during the call.
    /// (Appended in version 3 of the struct.)
    pub label: *const c_char,
}

/// `volt_connect_options.flags`: the URL is one or more seed nodes of a Redis
/// Cluster, separated by commas (`"redis://h1:7000,redis://h2:7001"`).
pub const VOLT_CONNECT_CLUSTER: u64 = 1;

/// `volt_connect_options.flags`: when the semaphore exists with another
/// total, change its total to `permits` (as `volt_sem_set_total` does, in the
/// same script as the connect) instead of failing with `VOLT_MISMATCH`. Meant
/// for a rolling deploy that changes the total. Two clients that connect with
/// different totals and this flag: the last one wins.
pub const VOLT_CONNECT_RESIZE: u64 = 2;

/// `volt_connect_options.flags`: connect only to a semaphore that exists:
/// if none has this name (under this key prefix), `volt_sem_connect` fails
/// with `VOLT_NOT_FOUND` and writes nothing, instead of creating it (checked
/// in the same script that would create it). The Redis counterpart of
/// `VOLT_OPEN_ATTACH_ONLY`. Ignored by `volt_sem_delete`.
pub const VOLT_CONNECT_ATTACH_ONLY: u64 = 4;

/// Every flag bit this library knows.
const CONNECT_KNOWN_FLAGS: u64 =
    VOLT_CONNECT_CLUSTER | VOLT_CONNECT_RESIZE | VOLT_CONNECT_ATTACH_ONLY;

/// The size of the first version of the struct (up to `flags`): the smallest
/// `struct_size` accepted. Fields appended later are read only when the
/// caller's `struct_size` covers them (0, their default, otherwise).
const CONNECT_OPTIONS_V1_SIZE: usize =
    std::mem::offset_of!(volt_connect_options, flags) + std::mem::size_of::<u64>();

/// Fills `opts` with the defaults: lease 10000 ms, timeouts 5000 ms, key prefix
/// NULL ("volt-sem"), no flags; `struct_size` is set to `struct_size`, which
/// must be `sizeof *opts` (every byte of it is written: fields this library
/// does not know are zeroed, which is their default).
///
/// Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` for NULL or a `struct_size`
/// below the first version's size (48 bytes on 64-bit targets) or above 4096
/// (nothing written).
///
/// # Safety
/// `opts` is NULL or points to `struct_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn volt_connect_options_init(
    opts: *mut volt_connect_options,
    struct_size: usize,
) -> volt_status {
    ffi_status!("volt_connect_options_init", || {
        let defaults = volt_connect_options {
            struct_size,
            lease_ms: 10_000,
            connect_timeout_ms: 5_000,
            command_timeout_ms: 5_000,
            key_prefix: ptr::null(),
            flags: 0,
            tls_ca_file: ptr::null(),
            tls_client_cert_file: ptr::null(),
            tls_client_key_file: ptr::null(),
            min_replicas_acked: 0,
            min_replicas_timeout_ms: 100,
            label: ptr::null(),
        };
        // SAFETY: `struct_size` writable bytes or NULL (contract); integer and
        // pointer fields only.
        unsafe { init_versioned(opts, struct_size, CONNECT_OPTIONS_V1_SIZE, defaults) }
    })
}

/// The Rust options from the C struct (NULL: defaults).
///
/// # Safety
/// `opts` is NULL or points to a `volt_connect_options` of `struct_size`
/// readable bytes whose `key_prefix` is NULL or NUL-terminated.
unsafe fn connect_options(opts: *const volt_connect_options) -> Checked<ConnectOptions> {
    let mut options = ConnectOptions::new();
    // SAFETY: forwarded caller contract; integer and pointer fields only.
    let Some(o) = (unsafe { read_versioned(opts, CONNECT_OPTIONS_V1_SIZE) })? else {
        return Ok(options);
    };
    if o.flags & !CONNECT_KNOWN_FLAGS != 0 {
        return Err(noted(
            VOLT_INVALID_OPTION,
            "invalid option: unknown flag bits",
        ));
    }
    if o.lease_ms != 0 {
        options = options.lease(Duration::from_millis(o.lease_ms));
    }
    if o.connect_timeout_ms != 0 {
        options = options.connect_timeout(Duration::from_millis(o.connect_timeout_ms));
    }
    if o.command_timeout_ms != 0 {
        options = options.command_timeout(Duration::from_millis(o.command_timeout_ms));
    }
    if !o.key_prefix.is_null() {
        // SAFETY: NUL-terminated (contract); read during this call only.
        let prefix = unsafe { std::ffi::CStr::from_ptr(o.key_prefix) };
        let prefix = prefix
            .to_str()
            .map_err(|_| noted(VOLT_INVALID_PREFIX, "invalid key prefix (not UTF-8)"))?;
        options = options.prefix(prefix);
    }
    // The paths: NUL-terminated or NULL (contract), read during this call only.
    let path = |p: *const c_char| -> Checked<Option<std::path::PathBuf>> {
        if p.is_null() {
            return Ok(None);
        }
        // SAFETY: as above.
        let s = unsafe { std::ffi::CStr::from_ptr(p) };
        s.to_str().map(|s| Some(s.into())).map_err(|_| {
            noted(
                VOLT_INVALID_OPTION,
                "invalid option: a TLS file path is not UTF-8",
            )
        })
    };
    if let Some(ca) = path(o.tls_ca_file)? {
        options = options.tls_ca_file(ca);
    }
    match (path(o.tls_client_cert_file)?, path(o.tls_client_key_file)?) {
        (Some(cert), Some(key)) => options = options.tls_client_cert(cert, key),
        (None, None) => {}
        _ => {
            return Err(noted(
                VOLT_INVALID_OPTION,
                "invalid option: tls_client_cert_file and tls_client_key_file go together",
            ))
        }
    }
    if o.min_replicas_acked != 0 {
        let timeout = match o.min_replicas_timeout_ms {
            0 => 100,
            t => t,
        };
        options = options.min_replicas_acked(
            usize::try_from(o.min_replicas_acked).unwrap_or(usize::MAX),
            Duration::from_millis(timeout),
        );
    }
    // SAFETY: NULL or NUL-terminated (contract); read during this call only.
    if let Some(label) = unsafe { label_arg(o.label) }? {
        options = options.label(label);
    }
    if o.flags & VOLT_CONNECT_ATTACH_ONLY != 0 {
        options = options.attach_only();
    }
    Ok(options
        .cluster(o.flags & VOLT_CONNECT_CLUSTER != 0)
        .resize(o.flags & VOLT_CONNECT_RESIZE != 0))
}

/// The arguments naming a Redis semaphore (`volt_sem_connect`,
/// `volt_sem_delete`): the URL as UTF-8, the name, and the options.
///
/// # Safety
/// `url` is non-NULL and NUL-terminated; `name` is NULL or NUL-terminated;
/// `opts` is NULL or a valid options struct.
unsafe fn redis_target<'a>(
    url: *const c_char,
    name: *const c_char,
    opts: *const volt_connect_options,
) -> Checked<(&'a str, &'a str, ConnectOptions)> {
    // SAFETY: non-NULL and NUL-terminated (contract).
    let Ok(url) = (unsafe { std::ffi::CStr::from_ptr(url) }).to_str() else {
        return Err(noted(VOLT_INVALID_URL, "invalid Redis URL (not UTF-8)"));
    };
    // SAFETY: NULL or NUL-terminated (contract).
    let name = unsafe { name_arg(name) }?;
    // SAFETY: NULL or a valid options struct (contract).
    let options = unsafe { connect_options(opts) }?;
    Ok((url, name, options))
}

/// Connects to the semaphore `name` stored in the Redis at `url`, with
/// `permits` permits in total, creating it if it does not exist (unless
/// `VOLT_CONNECT_ATTACH_ONLY`), and stores
/// one reference to it in `*out`: an ordinary handle, used and freed like one
/// from `volt_sem_new` (every function works on it). Every client, on every
/// host, that connects to the same Redis, key prefix and name shares the same
/// permits. See "REDIS SEMAPHORES" at the top. Talks to Redis at once: blocks
/// up to the connect timeout (default 5 s) when Redis is out of reach.
///
/// `url`: `redis://[user:password@]host[:port][/db]`, `rediss://...` (TLS),
/// `redis+sentinel://host:port[,host:port]/master[/db]` or `unix:///path`
/// (several comma-separated seed URLs with `VOLT_CONNECT_CLUSTER`); copied
/// during the call, never kept in the handle nor shown in any output.
/// `name`: 1 to `volt_sem_max_redis_name_len()` bytes of UTF-8, without '{'
/// or '}'. `permits`: 1 to `volt_sem_max_redis_permits()`; an existing
/// semaphore must have been created with the same total. `opts`: NULL for the
/// defaults, or a `volt_connect_options` (see there).
///
/// Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL,
/// and nothing changed in Redis):
/// * `VOLT_INVALID_ARGUMENT`: NULL `url`, `name` or `out`; `permits` 0 or
///   too large; a bad `opts->struct_size`; an invalid `opts->label` (the
///   message, from `volt_last_error_message`, says why);
/// * `VOLT_INVALID_URL`, `VOLT_INVALID_NAME`, `VOLT_INVALID_PREFIX`,
///   `VOLT_INVALID_OPTION` (checked before any connection is made);
/// * `VOLT_AUTH_FAILED`, `VOLT_CONNECTION_FAILED` (within the connect
///   timeout: one deadline for the whole connect), `VOLT_TLS_FAILED`,
///   `VOLT_REDIS_ERROR`, `VOLT_PROTOCOL_ERROR`;
/// * `VOLT_NO_PERMISSION`: the user may not run a command the library
///   needs (the message names it); `VOLT_READ_ONLY`: the server is a
///   replica;
/// * `VOLT_MISMATCH`: the semaphore exists with another total;
/// * `VOLT_NOT_FOUND`: `VOLT_CONNECT_ATTACH_ONLY` and no semaphore has this
///   name (under this key prefix); nothing was created;
/// * `VOLT_VERSION_MISMATCH`: the semaphore was made by a release of the
///   library whose keys have another schema version; nothing was written
///   (`volt_last_error_message` names both versions).
///
/// # Safety
/// `url` and `name` are NULL or NUL-terminated strings; `opts` is NULL or a
/// `volt_connect_options` as described there; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_connect(
    url: *const c_char,
    name: *const c_char,
    permits: usize,
    opts: *const volt_connect_options,
    out: *mut *const volt_sem,
) -> volt_status {
    ffi_status!("volt_sem_connect", || {
        non_null(out, "out")?;
        // SAFETY: `out` is non-NULL and, by contract, writable.
        unsafe { out.write(ptr::null()) };
        non_null(url, "url")?;
        non_null(name, "name")?;
        // SAFETY: forwarded caller contract (checked non-NULL above).
        let (url, name, options) = unsafe { redis_target(url, name, opts) }?;
        // SAFETY: as above.
        Ok(unsafe { hand_out(Semaphore::connect(url, name, permits, options), out) })
    })
}

/// Deletes the Redis semaphore `name` (its keys under `opts->prefix`), so
/// that a program deriving names (per tenant, per job) does not leave one in
/// Redis for each. Refused while the semaphore has a live session (a client
/// that holds permits, waits, or is only connected: deleting under it would
/// make that handle fail with `VOLT_STATE_LOST`); sessions whose lease
/// ended (crashed clients) are reclaimed first and do not count. One
/// connection (within the connect timeout) and one script; no session.
/// Without it, once every session ended, only the semaphore's `:meta` hash
/// (a few hundred bytes, no TTL) stays in Redis; everything else is empty or
/// expires within a minute. The next `volt_sem_connect` of the name creates
/// it afresh.
///
/// Returns `VOLT_OK`, or (nothing deleted): `VOLT_INVALID_ARGUMENT` (NULL
/// `url` or `name`, a bad `opts->struct_size`, an invalid `opts->label`),
/// `VOLT_INVALID_URL`,
/// `VOLT_INVALID_NAME`, `VOLT_INVALID_PREFIX`, `VOLT_INVALID_OPTION`,
/// `VOLT_NOT_FOUND` (no such semaphore), `VOLT_IN_USE` (live sessions),
/// `VOLT_VERSION_MISMATCH` (made by a release of another key schema),
/// `VOLT_AUTH_FAILED`, `VOLT_CONNECTION_FAILED`, `VOLT_TLS_FAILED`,
/// `VOLT_NO_PERMISSION`, `VOLT_READ_ONLY`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`.
///
/// # Safety
/// `url` and `name` are NULL or NUL-terminated strings; `opts` is NULL or a
/// valid `volt_connect_options` (as for `volt_sem_connect`).
#[no_mangle]
pub unsafe extern "C" fn volt_sem_delete(
    url: *const c_char,
    name: *const c_char,
    opts: *const volt_connect_options,
) -> volt_status {
    ffi_status!("volt_sem_delete", || {
        non_null(url, "url")?;
        non_null(name, "name")?;
        // SAFETY: forwarded caller contract (checked non-NULL above).
        let (url, name, options) = unsafe { redis_target(url, name, opts) }?;
        Ok(match volt_sem_backend::delete_redis(url, name, options) {
            Ok(()) => VOLT_OK,
            Err(e) => status_of(e),
        })
    })
}

/// Makes SIGTERM and SIGINT end every live Redis session of this process
/// before the signal takes effect: their permits go to the next waiters at
/// once and their queued requests leave the queue, instead of when the lease
/// expires (a process killed by a signal's default action runs no exit
/// handler). Call it once, early in `main` (it is idempotent):
///
///     volt_end_sessions_on_signals();
///
/// The signal then takes the effect it had before the call: by default the
/// process ends by it (its exit status says so, as without this call); a
/// handler the program installed earlier runs afterwards and decides (one
/// shot: after the first SIGTERM or SIGINT, that earlier disposition stays).
/// If the process goes on, the ended sessions' queued requests have failed
/// (`volt_sem_cancel` returns `VOLT_CLOSED`; their wake callbacks run on the
/// library's signal thread) and their lease watches were called; every
/// later request of those handles returns `VOLT_CLOSED`.
/// A signal ignored when this is called (a background job's SIGINT, say)
/// stays ignored: it ends neither the sessions nor the process.
/// A handler installed after this call replaces it. The work is done on a
/// library thread (the signal handler itself only writes to a pipe), so it
/// is safe whatever the signal interrupts; it waits at most the command
/// timeout for a command in flight.
///
/// Not needed for a process that returns from `main` or calls `exit()`:
/// live sessions are ended by an `atexit` handler, as by `volt_sem_free` of
/// the last handle. `SIGKILL` cannot be caught: the lease bounds what a
/// killed process keeps. Named (shared-memory) semaphores need nothing: the
/// kernel gives a dead process's permits back.
///
/// Returns `VOLT_OK`, `VOLT_UNSUPPORTED` (not a Unix system) or
/// `VOLT_OS_ERROR` (no pipe, thread or handler could be made; the message
/// says which).
#[no_mangle]
pub extern "C" fn volt_end_sessions_on_signals() -> volt_status {
    ffi_status!("volt_end_sessions_on_signals", || {
        Ok(match volt_sem_backend::redis::end_sessions_on_signals() {
            Ok(()) => VOLT_OK,
            Err(e) => {
                set_last_error(|| format!("volt_end_sessions_on_signals: {e}"));
                if e.kind() == std::io::ErrorKind::Unsupported {
                    VOLT_UNSUPPORTED
                } else {
                    VOLT_OS_ERROR
                }
            }
        })
    })
}

/// The longest name `volt_sem_connect` accepts, in bytes (1024).
#[no_mangle]
pub extern "C" fn volt_sem_max_redis_name_len() -> usize {
    ffi_call(0, || volt_sem_backend::redis::MAX_NAME_LEN)
}

/// The largest total of a Redis semaphore (2^40: Lua's numbers are doubles).
#[no_mangle]
pub extern "C" fn volt_sem_max_redis_permits() -> usize {
    ffi_call(0, || volt_sem_backend::redis::MAX_PERMITS)
}

/// The permit accounting of a Redis semaphore, read in one script (for
/// diagnostics and tests): `available + held + partial == total + debt` at
/// all times. `debt` is 0 except after `volt_sem_set_total` cut the total
/// below what was held or partly granted: the permits that come back pay it
/// first, before any becomes available.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct volt_census {
    /// The total number of permits.
    pub total: u64,
    /// Permits free now.
    pub available: u64,
    /// Permits held by live sessions (every client), completed grants included.
    pub held: u64,
    /// Permits collected so far by queued requests (partial grants).
    pub partial: u64,
    /// Requests queued, from every client.
    pub queued: u64,
    /// Live sessions (clients holding or waiting, or connected).
    pub sessions: u64,
    /// The last fencing token issued.
    pub last_token: u64,
    /// Permits a shrink of the total (`volt_sem_set_total`) still waits
    /// for; while it is not 0, `available` is 0.
    pub debt: u64,
    /// Whether the semaphore is closed.
    pub closed: bool,
}

/// Reads the accounting of a Redis semaphore into `*out` (first reaping the
/// sessions whose lease expired). One round trip, up to the command timeout.
///
/// Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (not
/// a Redis semaphore), or a network status (`VOLT_CONNECTION_FAILED`,
/// `VOLT_STATE_LOST`, ...); `*out` is written only on `VOLT_OK`.
///
/// # Safety
/// `sem` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_census(
    sem: *const volt_sem,
    out: *mut volt_census,
) -> volt_status {
    ffi_status!("volt_sem_census", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        non_null(out, "out")?;
        let redis = sem.sem.as_redis().ok_or_else(not_redis)?;
        Ok(match redis.census() {
            Ok(c) => {
                // SAFETY: non-NULL and writable (contract).
                unsafe {
                    out.write(volt_census {
                        total: c.total,
                        available: c.available,
                        held: c.held,
                        partial: c.partial,
                        queued: c.queued,
                        sessions: c.sessions,
                        last_token: c.last_token,
                        debt: c.debt,
                        closed: c.closed,
                    })
                };
                VOLT_OK
            }
            Err(e) => status_of(e.into()),
        })
    })
}
