//! Errors. Every failure a caller, the network or the Redis server can cause
//! is a value, never a panic. No variant ever carries a password: texts that
//! come from the client library pass through [`Error::from_redis`], which
//! drops the URL's password wherever it appears.

use volt_sem::{AcquireError, AcquireTimeoutError, TryAcquireError};

use crate::url::URL_FORM;

volt_sem::error_enum! {
    /// Why an operation on a [`RedisSemaphore`](crate::RedisSemaphore) failed.
    #[non_exhaustive]
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum Error {
        /// The URL is malformed or of an unsupported scheme; the text says why
        /// (never the URL itself: it may carry a password). The message shows
        /// the expected form, [`URL_FORM`](crate::URL_FORM).
        InvalidUrl(why: &'static str) => "invalid Redis URL ({why}); expected {URL_FORM}",
        /// The name is empty, longer than [`MAX_NAME_LEN`](crate::MAX_NAME_LEN)
        /// bytes, or contains `{` or `}` (which would break the hash tag) or NUL
        /// (no C caller could name it).
        InvalidName => "invalid semaphore name (1 to 1024 bytes, without '{{', '}}' or NUL)",
        /// The key prefix is empty, too long, or contains `{`, `}`, `:` or NUL.
        InvalidPrefix => "invalid key prefix (1 to 256 bytes, without '{{', '}}', ':' or NUL)",
        /// `permits` is 0 or above [`MAX_PERMITS`](crate::MAX_PERMITS).
        InvalidPermits => ("permits must be between 1 and {} (MAX_PERMITS)", crate::MAX_PERMITS),
        /// The label is empty, longer than
        /// [`MAX_LABEL_LEN`](volt_sem::inspect::MAX_LABEL_LEN) bytes, or has a
        /// byte that is not printable ASCII or is a space
        /// ([`is_valid_label`](volt_sem::inspect::is_valid_label)).
        InvalidLabel => ("{}", volt_sem::inspect::LABEL_RULE),
        /// An option is out of range (the text says which).
        InvalidOption(what: &'static str) => "invalid option: {what}",
        /// The server refused the credentials (wrong user or password).
        Auth => "Redis refused the credentials (wrong user or password)",
        /// The Redis user may not run a command the backend needs (an ACL
        /// `NOPERM` refusal; the text names the command). `connect` checks the
        /// commands it sends itself (`EVALSHA`, `EVAL`, `BLPOP`, `RPUSH`, and
        /// `WAIT`/`PUBLISH` with [`min_replicas_acked`](crate::ConnectOptions::min_replicas_acked));
        /// a command refused inside a script is reported the same way.
        NoPermission(command: String) => "Redis refused a command (ACL): {command}",
        /// The server is a read-only replica (`READONLY`): the URL names a
        /// replica, or a failover demoted the server. Through Sentinels this
        /// never reaches the caller: the connection is replaced and the master
        /// found again. The text is the server's.
        ReadOnly(detail: String) => "Redis is a read-only replica: {detail}",
        /// Redis could not be reached, or the connection failed (the text says
        /// how, without the password).
        Connection(detail: String) => "Redis connection failed: {detail}",
        /// TLS failed: the server's certificate is not trusted (or not for this
        /// host), the handshake failed (for example `rediss://` to a port that
        /// does not speak TLS), or a certificate file of the options cannot be
        /// read or parsed (the text says which).
        Tls(detail: String) => "TLS failed: {detail}",
        /// [`ConnectOptions::min_replicas_acked`](crate::ConnectOptions::min_replicas_acked):
        /// fewer replicas than asked acknowledged a script's writes in time. The
        /// write stands on the primary but could be lost by a failover, so the
        /// session was given up (its permits go back).
        NotReplicated {
            /// How many replicas acknowledged.
            acked: u64,
            /// How many were asked for.
            wanted: u64,
        } => "only {acked} of {wanted} replicas acknowledged the write in time (the session \
                was given up)",
        /// Redis reached its `maxmemory` and refused the call's writes (`OOM`:
        /// `noeviction`, Redis's default, or a `volatile-*` policy with nothing
        /// to evict). The call changed nothing: Redis refuses a script at its
        /// first write, so none stops half way. Transient: retry once memory is
        /// freed. A release so refused gives its session up, as any refused
        /// release (its permits come back); a waiter whose heartbeats are
        /// refused for a whole lease fails with [`Error::LeaseExpired`]. The
        /// text is the server's. See *Running Redis in production* in the crate
        /// docs.
        OutOfMemory(detail: String) => "Redis is out of memory (maxmemory reached); nothing was \
            changed: retry once memory is freed: {detail}",
        /// The server answered with an error (the text, without the password).
        Redis(detail: String) => "Redis error: {detail}",
        /// A reply the scripts never produce (a bug or a foreign key).
        Protocol(detail: String) => "unexpected reply from Redis: {detail}",
        /// A key in the semaphore's key space holds a value of another type
        /// than the one volt-sem keeps there (another program wrote it, say a
        /// `SET` on `{prefix:name}:queue`), or a field of one of its keys holds
        /// a value volt-sem never writes there (an operator's `HSET`, an old
        /// tool, a partial restore: a word or a negative number where a count
        /// is kept, `avail` above the total, a queued request's record that is
        /// not `need:got`, a grant record that is not a token, `0` or `T`; see
        /// *Foreign values* in the crate docs). The call
        /// changed nothing in Redis: every script finds such a key or value
        /// before its first write. The text names the key (and the field) when
        /// the script could tell which. Delete that key, or the semaphore (or
        /// give it another name or prefix). A release refused this way gives
        /// its session up, as any refused release.
        WrongType(detail: String) => "a key of the semaphore in Redis holds a value of another \
            type, or a value volt-sem never writes there (something else wrote it); nothing was \
            changed: {detail}",
        /// The semaphore was made by a release of volt-sem whose keys have
        /// another schema ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION), stored in
        /// the meta hash; 0: a release from before it was stored): this one
        /// could misread them. Refused by `connect`, [`inspect`](crate::inspect)
        /// and [`delete`](crate::delete) with nothing written. See *Upgrading* in
        /// the crate docs.
        VersionMismatch {
            /// The schema version of the semaphore's keys.
            found: u32,
            /// This release's ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION)).
            expected: u32,
        } => "the semaphore was made by another release of volt-sem (its keys' schema version \
                 {found}; this release's: {expected}); nothing was changed: stop the clients of \
                 the other release and delete the semaphore, or use another name or prefix",
        /// The semaphore exists with another total of permits; nothing was changed.
        TotalMismatch {
            /// The total of the existing semaphore.
            existing: u64,
        } => "the semaphore exists with a different total ({existing} permits)",
        // The words of the in-process semaphore's errors of the same meaning.
        /// The semaphore was closed (by any client).
        Closed => ("{}", AcquireError::Closed),
        /// [`delete`](crate::delete), [`inspect`](crate::inspect), and
        /// `connect` with [`ConnectOptions::attach_only`](crate::ConnectOptions::attach_only):
        /// no semaphore has this name (under this prefix).
        NotFound => "no semaphore has this name",
        /// [`delete`](crate::delete): the semaphore has live sessions (clients
        /// that hold permits, wait, or are only connected); nothing was deleted.
        InUse {
            /// How many sessions are live.
            sessions: u64,
        } => (
                "the semaphore is in use ({sessions} live {}); nothing was deleted",
                if *sessions == 1 {
                    "session holds, waits or is connected"
                } else {
                    "sessions hold, wait or are connected"
                }
            ),
        /// `try_acquire`: not enough permits now, or earlier requests are queued.
        NoPermits => ("{}", TryAcquireError::NoPermits),
        /// A request for more permits than the total (it could never be granted).
        TooManyPermits => "requested more permits than the total",
        /// `release(n)` with `n` above what this client holds; nothing was released.
        NotHeld {
            /// What this client's session holds.
            held: u64,
        } => "released more permits than this handle holds ({held}); nothing was released",
        /// The timeout elapsed first; any partial grant was handed on.
        TimedOut => ("{}", AcquireTimeoutError::TimedOut),
        /// This client's session lease expired (a pause, a partition, Redis out
        /// of reach longer than the lease): the permits it held went back to the
        /// pool and its queued requests were removed. A release of such permits
        /// reports this error and releases nothing.
        LeaseExpired => "this client's session lease expired: its permits and queued requests were \
                reclaimed",
        /// Redis lost the semaphore's state (restarted empty, flushed, the
        /// semaphore deleted, or one of its keys evicted by an `allkeys-*`
        /// `maxmemory` policy or deleted: see *Running Redis in production* in
        /// the crate docs): this handle refuses to go on rather than
        /// over-grant. Connect again to start afresh.
        StateLost => "Redis lost the semaphore's state (restarted empty or flushed); connect again",
        /// A blocking acquire was called inside a wake callback (on the agent
        /// thread), where it would wait for itself.
        InCallback => "blocking acquire inside a wake callback",
        /// A handle connected before `fork()`, used in the child: its sessions
        /// are the parent's. Connect again in the child. A future the parent
        /// queued, polled in the child, answers this too (its grant would come
        /// from a thread of the parent); dropping it there leaves the parent's
        /// request alone.
        Forked => "this Redis handle was connected before fork(): connect again in the child",
    }
}

/// Redis's text when `HINCRBY` meets a field that holds no integer.
const NOT_A_COUNT: &str = "hash value is not an integer";
/// Redis's text when `HINCRBY` would overflow a 64-bit integer.
const COUNT_OVERFLOW: &str = "increment or decrement would overflow";

/// The start of Redis's text when the ACL refuses a command a script runs.
const SCRIPT_ACL_REFUSAL: &str = "The user executing the script can't";

/// The description of errors for commands that were certainly not sent
/// (the connection was found dead and could not be replaced):
/// [`Error::from_redis`] makes them [`Error::Connection`]. Defined here, with
/// the mapping that recognises it, so that the connection depends on the
/// error and not the other way round.
const NOT_SENT: &str = "not sent: the connection was lost and could not be replaced";

/// A client-library error for a command that was certainly not sent
/// (`why`): [`Error::from_redis`] makes it [`Error::Connection`].
pub(crate) fn not_sent(why: String) -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::Client, NOT_SENT, why))
}

impl Error {
    /// Maps a client-library error, removing `secret` (the password) from
    /// any text it carries.
    pub(crate) fn from_redis(e: &redis::RedisError, secret: &str) -> Error {
        use redis::ErrorKind as K;
        let scrub = |s: String| {
            if secret.is_empty() {
                s
            } else {
                s.replace(secret, "***")
            }
        };
        let code = e.code().unwrap_or("");
        if e.kind() == K::AuthenticationFailed || code == "WRONGPASS" || code == "NOAUTH" {
            return Error::Auth;
        }
        // A command refused by the ACL inside a script: Redis 7.0 words it
        // "ERR The user executing the script can't run this command or
        // subcommand" (or "... can't access at least one of the keys ...",
        // "... can't publish to the channel ..."), not NOPERM.
        if code == "NOPERM"
            || e.kind() == K::Server(redis::ServerErrorKind::NoPerm)
            || e.to_string().contains(SCRIPT_ACL_REFUSAL)
        {
            return Error::NoPermission(scrub(e.to_string()));
        }
        // HINCRBY on a field that holds no integer (or would overflow):
        // only the scripts run it, on the semaphore's own counts, and as
        // the first write of their part (see head.lua's garbage()).
        if e.to_string().contains(NOT_A_COUNT) || e.to_string().contains(COUNT_OVERFLOW) {
            return Error::WrongType(scrub(e.to_string()));
        }
        if code == "WRONGTYPE" {
            // A typed read of a script (before its first write: see
            // head.lua) found a foreign value; the text is the server's,
            // which names the script line (and the key, for a guard's).
            return Error::WrongType(scrub(e.to_string()));
        }
        if code == "VERSIONMISMATCH" {
            // head.lua's check_schema: "VERSIONMISMATCH <found> <expected> ...".
            let found = e.detail().and_then(|d| d.split_whitespace().next());
            return Error::VersionMismatch {
                found: found.and_then(|w| w.parse().ok()).unwrap_or(0),
                expected: crate::SCHEMA_VERSION,
            };
        }
        if code == "OOM" {
            // `maxmemory` reached (noeviction, or a volatile-* policy with
            // nothing to evict): refused before the script's first write.
            return Error::OutOfMemory(scrub(e.to_string()));
        }
        if code == "READONLY" || e.kind() == K::Server(redis::ServerErrorKind::ReadOnly) {
            return Error::ReadOnly(scrub(e.to_string()));
        }
        if e.kind() == K::Client && e.to_string().starts_with(NOT_SENT) {
            return Error::Connection(scrub(e.to_string()));
        }
        if tls_cause(e) {
            return Error::Tls(scrub(e.to_string()));
        }
        match e.kind() {
            K::InvalidClientConfig => Error::InvalidUrl(crate::url::REFUSED),
            K::Server(_) => Error::Redis(scrub(e.to_string())),
            // A read that timed out (a server stopped, overloaded or behind
            // a black hole) is EAGAIN under a socket timeout: redis-rs's
            // text is "Resource temporarily unavailable (os error 11)",
            // which reads as a local shortage. Say what happened.
            _ if e.is_timeout() => {
                Error::Connection("no answer from Redis within the timeout".into())
            }
            _ if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                Error::Connection(scrub(e.to_string()))
            }
            _ => Error::Redis(scrub(e.to_string())),
        }
    }
}

/// Whether a rustls error is somewhere in `e`'s chain of causes (an
/// untrusted certificate, a failed handshake): redis-rs reports those as
/// I/O errors, which would otherwise read as an unreachable server.
fn tls_cause(e: &redis::RedisError) -> bool {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    fn is_tls(c: &(dyn std::error::Error + 'static)) -> bool {
        // redis-rs keeps its cause in an `Arc`: look through it.
        let c = match c.downcast_ref::<Shared>() {
            Some(a) => &**a as &(dyn std::error::Error + 'static),
            None => c,
        };
        c.is::<rustls::Error>()
            || c.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|i| i.is::<rustls::Error>())
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if is_tls(c) {
            return true;
        }
        cur = c.source();
    }
    false
}
