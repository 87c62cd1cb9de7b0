//! A connection to a standalone Redis, to the master a set of Sentinels
//! names, or to a Redis Cluster, behind one type; with or without TLS.
//!
//! * **Cluster.** Every key of one semaphore shares one hash tag, so every
//!   script, and the `BLPOP` on a notification list, goes to the one node
//!   that owns the semaphore's slot: one connection to that node, which
//!   follows the cluster's redirections itself (`cluster.rs`).
//! * **Sentinel** (`redis+sentinel://` or `rediss+sentinel://`). The master
//!   is resolved at every (re)connect, never cached: each Sentinel in turn is
//!   asked `SENTINEL get-master-addr-by-name`, and the address it gives is
//!   accepted only if that server says `ROLE` master (during a failover a
//!   Sentinel may still name the old master for a moment). The whole
//!   resolution is bounded by the connect timeout. Resolved here rather than
//!   with redis-rs's `SentinelClient`, whose synchronous calls take no
//!   timeout (a Sentinel that accepts but never answers would hang
//!   `connect`). A `READONLY` reply on a connection obtained through the
//!   Sentinels means the master was demoted under us: the connection reports
//!   it as a dropped connection, so it is replaced, and the replacement asks
//!   the Sentinels again.
//! * **TLS** (`rediss://`): redis-rs's rustls backend, with the CA file and
//!   client certificate of [`ConnectOptions`]; without a CA file the Mozilla
//!   roots compiled in (webpki-roots), never the system's trust store (see
//!   the crate docs). The handshake runs inside the connect timeout.

use std::io;
use std::time::{Duration, Instant};

use crate::cluster::{Seeds, SlotConn};
use crate::node::{set_name, single_client, IDLE_CHECK};
use redis::{Cmd, ConnectionLike, RedisError, RedisResult, Value};

use crate::error::{not_sent, Error};
use crate::options::ConnectOptions;

/// Where to connect, and the name every connection gets.
#[derive(Clone)]
pub(crate) struct Client {
    target: Target,
    /// The handle's label, sent as `CLIENT SETNAME` on each connection
    /// (`node::set_name`; a cluster's node connections get it from `Seeds`).
    name: String,
}

#[derive(Clone)]
enum Target {
    Single(redis::Client),
    Cluster(Seeds),
    Sentinel(Box<Sentinels>),
}

/// The Sentinels of one master, and how to reach the master they name.
#[derive(Clone)]
pub(crate) struct Sentinels {
    sentinels: Vec<redis::Client>,
    master: String,
    /// `redis` or `rediss` (the same for the Sentinels and the master).
    scheme: &'static str,
    /// The URL's `user:password@` part, as written (percent-encoded), or "".
    userinfo: String,
    db: i64,
    certs: Option<redis::TlsCertificates>,
}

/// One open connection. `sentinel`: obtained through Sentinels (a
/// `READONLY` reply then means a failover demoted its server).
///
/// A connection idle for [`IDLE_CHECK`] or longer is checked with a `PING`
/// before its next command, and replaced if the check fails: a connection
/// cut while idle (a proxy or load balancer dropping it, a failover, a
/// restart) is then found *before* a script is sent on it, so the script is
/// sent on the new connection instead of failing with an unknown outcome
/// (which would give the session up). A cut during a call is still an
/// unknown outcome. Back-to-back calls pay nothing.
pub(crate) struct Conn {
    kind: Kind,
    sentinel: bool,
    /// Where to reconnect (standalone and Sentinel; a cluster connection
    /// reconnects to its nodes itself).
    client: Option<Client>,
    connect_timeout: Duration,
    /// The read and write timeouts set, to set again on a replacement.
    timeouts: std::cell::Cell<Option<(Duration, Duration)>>,
    last_used: Instant,
}

enum Kind {
    Single(redis::Connection),
    Cluster(Box<SlotConn>),
}

/// A read that timed out while a TLS connection was being set up (after
/// the TCP connect): typically `rediss://` to a port that does not speak
/// TLS, where the server waits for a line the handshake never sends. Made
/// a TLS error (a rustls error inside, which `Error::from_redis` finds).
/// A socket read timeout is `WouldBlock` on Unix (EAGAIN) but `TimedOut` on
/// Windows (WSAETIMEDOUT): both are this timeout (with `WouldBlock` alone,
/// Windows said "no answer from Redis", a connection error, not a TLS one).
fn handshake_timeout(e: RedisError) -> RedisError {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let src = std::error::Error::source(&e);
    let io = src
        .and_then(|s| s.downcast_ref::<Shared>())
        .and_then(|a| a.downcast_ref::<io::Error>())
        .or_else(|| src.and_then(|s| s.downcast_ref::<io::Error>()));
    if io.is_some_and(|io| {
        matches!(
            io.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        )
    }) {
        io::Error::new(
            io::ErrorKind::TimedOut,
            rustls::Error::General(
                "no TLS handshake within the connect timeout (does the port speak TLS?)".into(),
            ),
        )
        .into()
    } else {
        e
    }
}

fn io_error(kind: io::ErrorKind, msg: String) -> RedisError {
    io::Error::new(kind, msg).into()
}

fn bad_url(msg: &'static str) -> RedisError {
    RedisError::from((redis::ErrorKind::InvalidClientConfig, msg))
}

/// rustls needs a process-wide crypto provider when more than one is
/// compiled in (another crate of the program may enable aws-lc-rs); ours is
/// ring. Installed only if the program installed none, so a program's own
/// choice is kept.
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err: another thread installed one first; that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The certificates of the TLS options (files read now), or `None` if no
/// TLS option is set.
fn certificates(opts: &ConnectOptions) -> Result<Option<redis::TlsCertificates>, Error> {
    if opts.tls_ca_file.is_none() && opts.tls_client_cert.is_none() {
        return Ok(None);
    }
    let read = |p: &std::path::Path, what: &str| {
        std::fs::read(p)
            .map_err(|e| Error::Tls(format!("cannot read the {what} {}: {e}", p.display())))
    };
    let root_cert = match &opts.tls_ca_file {
        Some(p) => Some(read(p, "CA file")?),
        None => None,
    };
    let client_tls = match &opts.tls_client_cert {
        Some((cert, key)) => Some(redis::ClientTlsConfig {
            client_cert: read(cert, "client certificate")?,
            client_key: read(key, "client key")?,
        }),
        None => None,
    };
    Ok(Some(redis::TlsCertificates {
        client_tls,
        root_cert,
    }))
}

fn tls_scheme(url: &str) -> bool {
    let scheme = url.split_once("://").map(|x| x.0).unwrap_or("");
    scheme == "rediss" || scheme == "rediss+sentinel"
}

impl Client {
    /// `url`, or with `cluster`, comma-separated seed node URLs.
    ///
    /// `Err(Error::InvalidUrl(why))` for a malformed or unsupported URL,
    /// `Err(Error::Tls)` for unreadable or malformed certificate files,
    /// `Err(Error::InvalidOption)` for options the URL cannot take.
    pub(crate) fn open(url: &str, opts: &ConnectOptions) -> Result<Client, Error> {
        let name = opts.label_or_default();
        let certs = certificates(opts)?;
        let sentinel =
            url.starts_with("redis+sentinel://") || url.starts_with("rediss+sentinel://");
        if certs.is_some() && !tls_scheme(url) {
            return Err(Error::InvalidOption(
                "the TLS options need a rediss:// (or rediss+sentinel://) URL",
            ));
        }
        if tls_scheme(url) {
            ensure_crypto_provider();
        }
        // Certificates that do not parse are a TLS error, not a bad URL.
        let tls = tls_scheme(url);
        let map = |e: RedisError| {
            if tls && e.kind() != redis::ErrorKind::InvalidClientConfig && e.is_io_error() {
                Error::Tls(e.to_string())
            } else {
                Error::InvalidUrl(crate::url::problem(url, opts.cluster))
            }
        };
        let target = if opts.cluster {
            if sentinel {
                return Err(Error::InvalidOption(
                    "a Sentinel URL cannot be used with the cluster option",
                ));
            }
            Seeds::parse(url, certs)
                .map(|s| Target::Cluster(s.named(&name)))
                .map_err(map)
        } else if sentinel {
            Sentinels::parse(url, certs)
                .map(|s| Target::Sentinel(Box::new(s)))
                .map_err(map)
        } else {
            single_client(url, certs.as_ref())
                .map(Target::Single)
                .map_err(map)
        }?;
        Ok(Client { target, name })
    }

    /// Whether connections are TLS (rustls shakes hands at the first
    /// read or write: a silent TLS port looks like a silent server).
    pub(crate) fn is_tls(&self) -> bool {
        match &self.target {
            Target::Single(c) => matches!(
                c.get_connection_info().addr(),
                redis::ConnectionAddr::TcpTls { .. }
            ),
            Target::Sentinel(s) => s.scheme == "rediss",
            Target::Cluster(s) => s.is_tls(),
        }
    }

    /// A connection, named (`CLIENT SETNAME`, best effort), all within
    /// `timeout`.
    pub(crate) fn connect(&self, timeout: Duration) -> RedisResult<Conn> {
        let deadline = Instant::now() + timeout;
        let named = |mut c: redis::Connection| {
            set_name(&mut c, &self.name, deadline)?;
            Ok(c)
        };
        match &self.target {
            // With TLS, the handshake happens in the `CLIENT SETNAME`.
            Target::Single(c) => c
                .get_connection_with_timeout(timeout)
                .and_then(named)
                .map_err(|e| {
                    let tls = matches!(
                        c.get_connection_info().addr(),
                        redis::ConnectionAddr::TcpTls { .. }
                    );
                    if tls {
                        handshake_timeout(e)
                    } else {
                        e
                    }
                })
                .map(|c| self.conn(Kind::Single(c), timeout)),
            Target::Cluster(s) => SlotConn::connect(s, timeout)
                .map(|c| self.conn(Kind::Cluster(Box::new(c)), timeout)),
            Target::Sentinel(s) => s
                .connect(timeout)
                .and_then(named)
                .map(|c| self.conn(Kind::Single(c), timeout)),
        }
    }

    fn conn(&self, kind: Kind, connect_timeout: Duration) -> Conn {
        let (sentinel, client) = match &self.target {
            Target::Single(_) => (false, Some(self.clone())),
            Target::Cluster(_) => (false, None),
            Target::Sentinel(_) => (true, Some(self.clone())),
        };
        Conn {
            kind,
            sentinel,
            client,
            connect_timeout,
            timeouts: std::cell::Cell::new(None),
            last_used: Instant::now(),
        }
    }
}

impl Sentinels {
    /// `redis[s]+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]`:
    /// the credentials and the db are the master's; the Sentinels are
    /// asked without credentials (port 26379 by default).
    fn parse(url: &str, certs: Option<redis::TlsCertificates>) -> RedisResult<Sentinels> {
        let (scheme, rest) = match url.split_once("://") {
            Some(("redis+sentinel", r)) => ("redis", r),
            Some(("rediss+sentinel", r)) => ("rediss", r),
            _ => return Err(bad_url("not a Sentinel URL")),
        };
        let (userinfo, rest) = match rest.rsplit_once('@') {
            Some((u, r)) => (format!("{u}@"), r),
            None => (String::new(), rest),
        };
        let (hosts, path) = rest
            .split_once('/')
            .ok_or_else(|| bad_url("a Sentinel URL names the master: .../master"))?;
        let (master, db) = match path.split_once('/') {
            Some((m, d)) => (m, d),
            None => (path, ""),
        };
        if master.is_empty() || master.contains(['?', '#']) {
            return Err(bad_url("a Sentinel URL names the master: .../master"));
        }
        let db = match db.trim_end_matches('/') {
            "" => 0,
            d => d.parse().map_err(|_| bad_url("invalid database number"))?,
        };
        let mut sentinels = Vec::new();
        for h in hosts.split(',').map(str::trim) {
            if h.is_empty() {
                return Err(bad_url("empty Sentinel address"));
            }
            let h = crate::url::with_default_port(h, 26379);
            let u = format!("{scheme}://{h}");
            sentinels.push(match &certs {
                Some(c) => redis::Client::build_with_tls(u, c.clone())?,
                None => redis::Client::open(u)?,
            });
        }
        Ok(Sentinels {
            sentinels,
            master: master.to_string(),
            scheme,
            userinfo,
            db,
            certs,
        })
    }

    /// Asks each Sentinel in turn for the master and connects to it, all
    /// within `timeout`.
    fn connect(&self, timeout: Duration) -> RedisResult<redis::Connection> {
        let deadline = Instant::now() + timeout;
        let mut last = None;
        for s in &self.sentinels {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.via(s, deadline) {
                Ok(c) => return Ok(c),
                // Wrong credentials are the master's: every Sentinel would
                // lead to the same refusal.
                Err(e) if e.kind() == redis::ErrorKind::AuthenticationFailed => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io_error(
                io::ErrorKind::TimedOut,
                "no Sentinel answered within the connect timeout".into(),
            )
        }))
    }

    fn via(&self, sentinel: &redis::Client, deadline: Instant) -> RedisResult<redis::Connection> {
        let left = || {
            let d = deadline.saturating_duration_since(Instant::now());
            if d.is_zero() {
                Err(io_error(
                    io::ErrorKind::TimedOut,
                    "Sentinel resolution timed out".into(),
                ))
            } else {
                Ok(d)
            }
        };
        let mut sc = sentinel.get_connection_with_timeout(left()?)?;
        sc.set_read_timeout(Some(left()?))?;
        sc.set_write_timeout(Some(left()?))?;
        let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&self.master)
            .query(&mut sc)?;
        let Some((host, port)) = addr else {
            return Err(io_error(
                io::ErrorKind::NotFound,
                format!("the Sentinels know no master named '{}'", self.master),
            ));
        };
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let url = format!(
            "{}://{}{host}:{port}/{}",
            self.scheme, self.userinfo, self.db
        );
        let client = single_client(&url, self.certs.as_ref())?;
        let mut c = client.get_connection_with_timeout(left()?)?;
        c.set_read_timeout(Some(left()?))?;
        let role: Vec<Value> = redis::cmd("ROLE").query(&mut c)?;
        match role.first() {
            Some(Value::BulkString(r)) if r == b"master" => Ok(c),
            Some(Value::SimpleString(r)) if r == "master" => Ok(c),
            _ => Err(io_error(
                io::ErrorKind::NotConnected,
                format!(
                    "the server the Sentinels name for '{}' is not a master (a failover is under way)",
                    self.master
                ),
            )),
        }
    }
}

impl Conn {
    pub(crate) fn set_timeouts(&self, read: Duration, write: Duration) -> RedisResult<()> {
        self.timeouts.set(Some((read, write)));
        match &self.kind {
            Kind::Single(c) => {
                c.set_read_timeout(Some(read))?;
                c.set_write_timeout(Some(write))
            }
            Kind::Cluster(c) => {
                c.set_read_timeout(read)?;
                c.set_write_timeout(write)
            }
        }
    }

    /// On a Redis Cluster, a connection to each master (for a command that
    /// must visit every node); `None` on a standalone or Sentinel server.
    pub(crate) fn master_connections(&mut self) -> Option<RedisResult<Vec<redis::Connection>>> {
        match &mut self.kind {
            Kind::Single(_) => None,
            Kind::Cluster(c) => Some(c.master_connections()),
        }
    }

    /// A connection to a Redis Cluster (its nodes, routed by key).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    pub(crate) fn set_read_timeout(&self, d: Duration) -> RedisResult<()> {
        if let Some((_, w)) = self.timeouts.get() {
            self.timeouts.set(Some((d, w)));
        }
        match &self.kind {
            Kind::Single(c) => c.set_read_timeout(Some(d)),
            Kind::Cluster(c) => c.set_read_timeout(d),
        }
    }

    /// With [`ConnectOptions::min_replicas_acked`]: `WAIT` until that many
    /// replicas acknowledged every write this connection made, at most the
    /// option's timeout. `Ok` if the option is off or enough replicas
    /// acknowledged; [`Error::NotReplicated`] if fewer did in time;
    /// [`Error::Connection`] if the connection failed.
    /// `cap`: the longest this may block (the agent passes what remains of
    /// its lease).
    pub(crate) fn wait_replicas(
        &mut self,
        opts: &ConnectOptions,
        cap: Option<Duration>,
    ) -> Result<(), Error> {
        let Some((wanted, timeout)) = opts.min_replicas else {
            return Ok(());
        };
        // WAIT's timeout is in ms, 0 meaning forever: at least 1.
        let ms = (timeout.as_millis() as u64).max(1);
        let mut read = timeout + opts.command_timeout;
        if let Some(cap) = cap {
            read = read.min(cap).max(Duration::from_millis(1));
        }
        let _ = self.set_read_timeout(read);
        let r: RedisResult<u64> = redis::cmd("WAIT").arg(wanted).arg(ms).query(self);
        let _ = self.set_read_timeout(opts.command_timeout);
        match r {
            Ok(acked) if acked >= wanted as u64 => Ok(()),
            Ok(acked) => Err(Error::NotReplicated {
                acked,
                wanted: wanted as u64,
            }),
            Err(e) => Err(Error::from_redis(&e, "")),
        }
    }

    /// Before a command: if idle for a while, check the connection and
    /// replace it if it is dead. `Err`: dead and not replaceable now (the
    /// command must not be sent; it was not).
    ///
    /// The check, the replacement and the command share one deadline, the
    /// read timeout from now (issue 32, item 2: a check that timed out, then
    /// a reconnect, then the command, each with a whole timeout, made a call
    /// on a silent server block several timeouts): the `PING` gets half of
    /// it (a live server answers in far less), the reconnect at most what
    /// remains, and the command what remains after that. Returns the read
    /// timeout to restore after the command when it was shortened.
    fn revive(&mut self) -> RedisResult<Option<Duration>> {
        if self.last_used.elapsed() < IDLE_CHECK || self.client.is_none() {
            return Ok(None);
        }
        let Some((read, write)) = self.timeouts.get() else {
            return Ok(None);
        };
        let deadline = Instant::now() + read;
        let left = || deadline.saturating_duration_since(Instant::now());
        let _ = self.set_inner_read((read / 2).max(Duration::from_millis(1)));
        if redis::cmd("PING").query::<String>(self.inner()).is_ok() {
            let _ = self.set_inner_read(left().max(Duration::from_millis(1)));
            return Ok(Some(read));
        }
        if left().is_zero() {
            return Err(not_sent("no time left to reconnect".into()));
        }
        let client = self.client.as_ref().expect("checked");
        let fresh = client
            .connect(self.connect_timeout.min(left()))
            .and_then(|c| {
                c.set_timeouts(left().max(Duration::from_millis(1)), write)?;
                Ok(c)
            });
        match fresh {
            Ok(c) => {
                self.kind = c.kind;
                self.last_used = Instant::now();
                Ok(Some(read))
            }
            Err(e) => Err(not_sent(e.to_string())),
        }
    }

    /// Sets the read timeout of the connection only (not the one recorded).
    fn set_inner_read(&self, d: Duration) -> RedisResult<()> {
        match &self.kind {
            Kind::Single(c) => c.set_read_timeout(Some(d)),
            Kind::Cluster(c) => c.set_read_timeout(d),
        }
    }

    /// After a command that [`revive`](Self::revive) shortened: the read
    /// timeout recorded, again.
    fn restore(&self, read: Option<Duration>) {
        if let Some(r) = read {
            let _ = self.set_inner_read(r);
        }
    }

    /// [`wait_replicas`](Self::wait_replicas) for a grant this connection
    /// learnt by popping its notification. `WAIT` counts the replicas that
    /// acknowledged this client's *own* last propagated write, and a pop
    /// that served a blocked `BLPOP` does not always count as one (Redis 7.0
    /// tests showed `WAIT` answering at once after such a pop while the
    /// replica was frozen). So the connection first makes a write of its own
    /// that is always propagated and changes no key, a `PUBLISH` (sharded,
    /// `SPUBLISH`, on a cluster, so that it goes to the slot's node) on
    /// `channel`, which follows the grant in the replication stream.
    pub(crate) fn wait_replicas_after_pop(
        &mut self,
        opts: &ConnectOptions,
        channel: &str,
        cap: Option<Duration>,
    ) -> Result<(), Error> {
        if opts.min_replicas.is_none() {
            return Ok(());
        }
        let verb = match self.kind {
            Kind::Single(_) => "PUBLISH",
            Kind::Cluster(_) => "SPUBLISH",
        };
        redis::cmd(verb)
            .arg(channel)
            .arg("")
            .query::<i64>(self)
            .map_err(|e| Error::from_redis(&e, ""))?;
        self.wait_replicas(opts, cap)
    }

    fn inner(&mut self) -> &mut dyn ConnectionLike {
        match &mut self.kind {
            Kind::Single(c) => c,
            Kind::Cluster(c) => &mut **c,
        }
    }

    /// Through Sentinels, a `READONLY` reply means our server was demoted:
    /// report it as a dropped connection so that the connection is replaced
    /// (and the master resolved again).
    fn demoted<T>(&self, r: RedisResult<T>) -> RedisResult<T> {
        match r {
            Err(e)
                if self.sentinel
                    && e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly) =>
            {
                Err(io_error(
                    io::ErrorKind::ConnectionAborted,
                    "the master was demoted to a replica (a failover): reconnecting".into(),
                ))
            }
            r => r,
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        let read = self.revive()?;
        let r = self.inner().req_packed_command(cmd);
        self.restore(read);
        self.last_used = Instant::now();
        self.demoted(r)
    }
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let read = self.revive()?;
        let r = self.inner().req_packed_commands(cmd, offset, count);
        self.restore(read);
        self.last_used = Instant::now();
        self.demoted(r)
    }
    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        let read = self.revive()?;
        let r = self.inner().req_command(cmd);
        self.restore(read);
        self.last_used = Instant::now();
        self.demoted(r)
    }
    fn get_db(&self) -> i64 {
        match &self.kind {
            Kind::Single(c) => c.get_db(),
            Kind::Cluster(c) => c.get_db(),
        }
    }
    fn supports_pipelining(&self) -> bool {
        match &self.kind {
            Kind::Single(c) => c.supports_pipelining(),
            Kind::Cluster(c) => c.supports_pipelining(),
        }
    }
    fn check_connection(&mut self) -> bool {
        self.inner().check_connection()
    }
    fn is_open(&self) -> bool {
        match &self.kind {
            Kind::Single(c) => c.is_open(),
            Kind::Cluster(c) => c.is_open(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read timeout in the TLS setup is a TLS error whichever kind the
    /// platform gives it (Windows: `TimedOut`, which was a connection error).
    #[test]
    fn a_read_timeout_in_the_tls_setup_is_a_tls_error_on_every_platform() {
        for kind in [io::ErrorKind::WouldBlock, io::ErrorKind::TimedOut] {
            let e = handshake_timeout(io::Error::new(kind, "read timed out").into());
            match Error::from_redis(&e, "") {
                Error::Tls(m) => assert!(m.contains("does the port speak TLS?"), "{kind:?}: {m}"),
                other => panic!("{kind:?}: not a TLS error: {other:?}"),
            }
        }
    }

    /// Any other error of the TLS setup is left as it is.
    #[test]
    fn a_refused_connection_in_the_tls_setup_stays_a_connection_error() {
        let e =
            handshake_timeout(io::Error::new(io::ErrorKind::ConnectionRefused, "refused").into());
        assert!(matches!(Error::from_redis(&e, ""), Error::Connection(_)));
    }
}
