//! The options of a connection ([`ConnectOptions`]) and the checks made
//! before anything is contacted: the name, the prefix, the total and the
//! options' ranges.

use std::time::Duration;

use crate::error::Error;

/// The longest semaphore name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// The longest key prefix, in bytes.
pub const MAX_PREFIX_LEN: usize = 256;
/// The largest total (Lua numbers are doubles: exact integers up to 2^53;
/// this leaves room for sums).
pub const MAX_PERMITS: usize = 1 << 40;
/// The longest lease and timeouts `connect` accepts: 2^64 - 1 ms (the
/// lease goes to the scripts in ms, as a u64), some 585 million years, and
/// far from an overflow of the clock arithmetic they enter (which
/// `Duration::MAX` caused: a panic in `connect`, or a dead agent thread).
/// What the bindings accept (Node: 1e12 ms; C: a u64 of ms) stays in range.
const MAX_DURATION: Duration = Duration::from_millis(u64::MAX);

/// Options of [`RedisSemaphore::connect`](crate::RedisSemaphore::connect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    pub(crate) lease: Duration,
    pub(crate) prefix: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) cluster: bool,
    pub(crate) own_session: bool,
    pub(crate) tls_ca_file: Option<std::path::PathBuf>,
    pub(crate) tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
    pub(crate) min_replicas: Option<(usize, Duration)>,
    /// `None`: [`volt_sem::inspect::default_label`].
    pub(crate) label: Option<String>,
    pub(crate) resize: bool,
    pub(crate) attach_only: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ConnectOptions {
    /// Lease 10 s, prefix `volt-sem`, connect and command timeouts 5 s.
    pub fn new() -> Self {
        ConnectOptions {
            lease: Duration::from_secs(10),
            prefix: "volt-sem".into(),
            connect_timeout: Duration::from_secs(5),
            command_timeout: Duration::from_secs(5),
            cluster: false,
            own_session: false,
            tls_ca_file: None,
            tls_client_cert: None,
            min_replicas: None,
            label: None,
            resize: false,
            attach_only: false,
        }
    }
    /// The session lease (at least 300 ms, at most 2^64 - 1 ms): a client not
    /// heard of for that long loses its permits and queue places.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
    /// The key prefix (for several tenants on one Redis): 1 to
    /// [`MAX_PREFIX_LEN`] bytes without `{`, `}`, `:` or NUL (else `connect`
    /// fails with [`Error::InvalidPrefix`]). Keys are `{<prefix>:<name>}:...`,
    /// and the prefix ends at the first `:`, so two prefixes never share a
    /// key whatever the names (which may contain `:`).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.into();
        self
    }
    /// How long `connect` (and a reconnect) may take: one deadline for the
    /// whole of it (TCP, TLS, `AUTH`, the checks and the first script),
    /// even against a server that accepts and never answers. Positive, at
    /// most 2^64 - 1 ms.
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }
    /// Connect to a Redis Cluster: the URL given to `connect` is then one or
    /// more seed node URLs separated by commas.
    pub fn cluster(mut self, cluster: bool) -> Self {
        self.cluster = cluster;
        self
    }
    /// A session of its own for this handle, never shared with another
    /// `connect` of this process (by default, a `connect` to the same URL,
    /// name and options shares the live one's session: see *Connections and
    /// threads*). Its held permits go back when it is dropped, whatever other
    /// handles of the process hold.
    pub fn own_session(mut self, own: bool) -> Self {
        self.own_session = own;
        self
    }
    /// How long one script call may take before the connection counts as
    /// failed. Positive, at most 2^64 - 1 ms.
    pub fn command_timeout(mut self, t: Duration) -> Self {
        self.command_timeout = t;
        self
    }
    /// Trust the CA certificates of this PEM file (instead of the system's
    /// trust store) for a `rediss://` URL: the server's certificate must be
    /// issued by one of them, for the URL's host name or IP address. The file
    /// is read by `connect` ([`Error::Tls`] if it cannot be read or parsed).
    pub fn tls_ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.tls_ca_file = Some(path.into());
        self
    }
    /// Present this client certificate (PEM, with its chain) and private key
    /// (PEM) to a `rediss://` server that asks for one (`tls-auth-clients`).
    pub fn tls_client_cert(
        mut self,
        cert: impl Into<std::path::PathBuf>,
        key: impl Into<std::path::PathBuf>,
    ) -> Self {
        self.tls_client_cert = Some((cert.into(), key.into()));
        self
    }
    /// After each script that changes the semaphore, wait (Redis `WAIT`, up
    /// to `timeout`) until at least `replicas` replicas acknowledged its
    /// writes; if fewer do, the call fails with [`Error::NotReplicated`] and
    /// the session is given up (see "Replicas and `WAIT`" in the crate
    /// docs). `replicas` 0 turns it off (the default). `timeout` must be
    /// below a third of the lease: the agent waits for it too, and must
    /// still renew the lease in time. On a Redis Cluster, `WAIT` goes to
    /// the node that owns the semaphore's slot (where its writes went), so
    /// that node needs `replicas` replicas.
    pub fn min_replicas_acked(mut self, replicas: usize, timeout: Duration) -> Self {
        self.min_replicas = (replicas > 0).then_some((replicas, timeout));
        self
    }
    /// The handle's label, which [`inspect`](crate::RedisSemaphore::inspect)
    /// reports for its holdings and queued requests, on every host (default
    /// [`volt_sem::inspect::default_label`], `"<hostname>:<pid>"`). 1 to
    /// [`MAX_LABEL_LEN`](volt_sem::inspect::MAX_LABEL_LEN) bytes of
    /// printable ASCII without spaces, else `connect` fails with
    /// [`Error::InvalidLabel`]. It is recorded with each session the handle
    /// starts, and also given to Redis as the client name of the handle's
    /// connections (`CLIENT SETNAME`, so that `CLIENT LIST` shows it): best
    /// effort, a server or ACL that refuses `CLIENT SETNAME` does not make
    /// `connect` fail. Being an option, it is part of what decides whether
    /// two `connect`s of one process share a session (see *Connections and
    /// threads*): handles sharing one always have the same label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// When the semaphore exists with another total, change its total to
    /// the one `connect` asks for (as [`RedisSemaphore::set_total`] does, in
    /// the script that registers the session) instead of failing with
    /// [`Error::TotalMismatch`]. Off by default. Meant for a rolling deploy
    /// that changes the total (8 to 10: the new processes connect with 10
    /// and `resize(true)`; nobody deletes the keys).
    ///
    /// Two clients that connect with different totals and `resize(true)`:
    /// **the last one wins** (each connect sets the total it asked for).
    ///
    /// [`RedisSemaphore::set_total`]: crate::RedisSemaphore::set_total
    pub fn resize(mut self, resize: bool) -> Self {
        self.resize = resize;
        self
    }
    /// Connect only to a semaphore that exists: if none has this name
    /// (under this prefix), `connect` fails with [`Error::NotFound`] instead
    /// of creating it, and writes nothing. Checked in the script that
    /// registers the session, so a semaphore deleted after some earlier look
    /// (a [`inspect`](crate::inspect) that found it) is not created again.
    /// Off by default (`connect` creates a missing semaphore). The same
    /// option, and the same call, as the shared-memory backend's
    /// `volt_sem_shm::OpenOptions::attach_only`: for a process that must
    /// only join a semaphore someone else set up, and for tools that change
    /// an existing one (the `volt-sem resize` and `reopen` commands).
    pub fn attach_only(mut self) -> Self {
        self.attach_only = true;
        self
    }
    /// The label given, or the default one.
    pub(crate) fn label_or_default(&self) -> String {
        self.label
            .clone()
            .unwrap_or_else(volt_sem::inspect::default_label)
    }
}

impl ConnectOptions {
    /// The checks of `connect`, in this order: the name, the prefix, the
    /// total, the lease, the timeouts, the `WAIT` timeout, the label.
    pub(crate) fn check_connect(&self, name: &str, permits: usize) -> Result<(), Error> {
        validate_name(name)?;
        self.check_prefix()?;
        if permits == 0 || permits > MAX_PERMITS {
            return Err(Error::InvalidPermits);
        }
        if self.lease < Duration::from_millis(300) {
            return Err(Error::InvalidOption("lease must be at least 300 ms"));
        }
        if self.lease > MAX_DURATION {
            return Err(Error::InvalidOption("lease must be at most 2^64 - 1 ms"));
        }
        self.check_timeouts()?;
        if let Some((_, t)) = self.min_replicas {
            if t.is_zero() || t >= self.lease / 3 {
                return Err(Error::InvalidOption(
                    "the min_replicas_acked timeout must be positive and below a third of the lease",
                ));
            }
        }
        self.check_label()
    }

    /// The checks of `delete`, in this order: the name, the prefix, the
    /// timeouts, the label (it has no session: the lease does not matter;
    /// the label names its connection).
    pub(crate) fn check_delete(&self, name: &str) -> Result<(), Error> {
        validate_name(name)?;
        self.check_prefix()?;
        self.check_timeouts()?;
        self.check_label()
    }

    fn check_label(&self) -> Result<(), Error> {
        match &self.label {
            Some(l) if !volt_sem::inspect::is_valid_label(l) => Err(Error::InvalidLabel),
            _ => Ok(()),
        }
    }

    /// 1 to [`MAX_PREFIX_LEN`] bytes, no NUL (C could not pass it), no `{`,
    /// `}` (the prefix is inside the keys' hash tag) or `:` (it ends the prefix in the tag `{prefix:name}`:
    /// with a `:` allowed, prefix `a` and name `b:c` would share their keys
    /// with prefix `a:b` and name `c`, one tenant's semaphore another's).
    fn check_prefix(&self) -> Result<(), Error> {
        let p = &self.prefix;
        if p.is_empty() || p.len() > MAX_PREFIX_LEN || p.contains(['{', '}', ':', '\0']) {
            return Err(Error::InvalidPrefix);
        }
        Ok(())
    }

    fn check_timeouts(&self) -> Result<(), Error> {
        if self.connect_timeout.is_zero() || self.command_timeout.is_zero() {
            return Err(Error::InvalidOption("timeouts must be positive"));
        }
        if self.connect_timeout > MAX_DURATION || self.command_timeout > MAX_DURATION {
            return Err(Error::InvalidOption("timeouts must be at most 2^64 - 1 ms"));
        }
        Ok(())
    }
}

/// Checks a semaphore name: 1 to [`MAX_NAME_LEN`] bytes, no `{`, `}` or NUL
/// (a name with NUL could not be reached from C, whose names are
/// NUL-terminated, nor from the command line).
pub fn validate_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.contains(['{', '}', '\0']) {
        return Err(Error::InvalidName);
    }
    Ok(())
}
