//! A connection to the Redis Cluster node that owns one semaphore's slot,
//! following the cluster's redirections itself.
//!
//! Every key of one semaphore shares one hash tag, so everything a session
//! sends goes to one node: one plain connection, to whichever node answers
//! for the slot now, is enough. It starts on any seed node and learns the
//! owner from `MOVED`. This replaces redis-rs's `ClusterConnection`, whose
//! own retries did not fit a semaphore:
//!
//! * it waits at least 1.28 s (doubling up to 11 min, 16 times) after a
//!   `TRYAGAIN` or `CLUSTERDOWN`, which a slot migration answers to every
//!   script (their keys are declared with a fence key that never exists,
//!   see `head.lua`): one reshard stalled every client for seconds;
//! * it sends a command again after an I/O error (a timeout included): a
//!   script whose outcome is unknown could then run twice;
//! * its slot map refresh asks the nodes in map order and gives up at the
//!   first that fails: a killed master left in the map could keep it from
//!   ever learning its replica's promotion.
//!
//! Here, the replies that say the command was *not* run (`MOVED`, `ASK`,
//! `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `READONLY` from a demoted
//! master) are followed or retried, within the call's read timeout (a
//! round trip is bounded by it, however many redirections); an I/O error
//! ends the call (its outcome is unknown: the caller decides) and drops the
//! connection, so the next call connects again: to the last owner, or to
//! any known node (the seeds and every node a redirection named), whose
//! `MOVED` leads to the new owner after a failover.

use std::cell::Cell;
use std::time::{Duration, Instant};

use redis::{ConnectionLike, RedisError, RedisResult, ServerErrorKind, Value};

use crate::error::not_sent;
use crate::node::{set_name, single_client, IDLE_CHECK};

/// Where the nodes are and how to reach them.
#[derive(Clone)]
pub(crate) struct Seeds {
    /// `host:port` of the seed nodes, in the order given.
    addrs: Vec<String>,
    /// `redis` or `rediss`.
    scheme: String,
    /// The first seed URL's `user:password@` part (percent-encoded), or "".
    userinfo: String,
    certs: Option<redis::TlsCertificates>,
    /// The client name of every node connection (`CLIENT SETNAME`).
    name: String,
}

impl Seeds {
    /// The same seeds, whose connections are named `name`.
    pub(crate) fn named(mut self, name: &str) -> Seeds {
        self.name = name.to_string();
        self
    }

    /// Comma-separated seed URLs (`redis://` or `rediss://`, all with the
    /// same scheme and credentials: the first one's are used for every node).
    pub(crate) fn parse(urls: &str, certs: Option<redis::TlsCertificates>) -> RedisResult<Seeds> {
        let bad = |m: &'static str| RedisError::from((redis::ErrorKind::InvalidClientConfig, m));
        let mut addrs = Vec::new();
        let mut scheme = None;
        let mut userinfo = String::new();
        for u in urls.split(',').map(str::trim) {
            // Validated as a URL by redis-rs first (host, port, scheme).
            let _ = single_client(u, certs.as_ref())?;
            let (s, rest) = u.split_once("://").ok_or_else(|| bad("not a URL"))?;
            if s != "redis" && s != "rediss" {
                return Err(bad("a cluster seed is a redis:// or rediss:// URL"));
            }
            let (ui, rest) = match rest.rsplit_once('@') {
                Some((ui, r)) => (format!("{ui}@"), r),
                None => (String::new(), rest),
            };
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            if host.is_empty() {
                return Err(bad("empty cluster seed address"));
            }
            let host = crate::url::with_default_port(host, 6379);
            if scheme.is_none() {
                scheme = Some(s.to_string());
                userinfo = ui;
            }
            addrs.push(host);
        }
        Ok(Seeds {
            addrs,
            scheme: scheme.ok_or_else(|| bad("no cluster seed"))?,
            userinfo,
            certs,
            name: String::new(),
        })
    }

    pub(crate) fn is_tls(&self) -> bool {
        self.scheme == "rediss"
    }

    /// A connection to node `addr`, named (best effort), within `timeout`.
    fn open(&self, addr: &str, timeout: Duration) -> RedisResult<redis::Connection> {
        let deadline = Instant::now() + timeout;
        let url = format!("{}://{}{addr}", self.scheme, self.userinfo);
        let mut c =
            single_client(&url, self.certs.as_ref())?.get_connection_with_timeout(timeout)?;
        if !self.name.is_empty() {
            set_name(&mut c, &self.name, deadline)?;
        }
        Ok(c)
    }
}

/// The connection (see the module's documentation).
pub(crate) struct SlotConn {
    seeds: Seeds,
    /// Nodes learnt from redirections, tried after the last owner.
    known: Vec<String>,
    /// The node the last command went to (its owner, as far as we know).
    addr: Option<String>,
    con: Option<redis::Connection>,
    connect_timeout: Duration,
    /// The read and write timeouts (set through `&self`, as on `Conn`).
    read: Cell<Option<Duration>>,
    write: Cell<Option<Duration>>,
    last_used: Instant,
}

/// Whether a reply says the command was not run, and what to do.
enum Redirect {
    Moved(String),
    Ask(String),
    /// Wait a little and send it again (`TRYAGAIN`, `CLUSTERDOWN`, ...).
    Retry,
    /// Our node no longer serves the slot (a demoted master): find the owner.
    Rediscover,
}

fn redirect(e: &RedisError) -> Option<Redirect> {
    use redis::ErrorKind::Server;
    match e.kind() {
        Server(ServerErrorKind::Moved) => e
            .redirect_node()
            .map(|(a, _)| Redirect::Moved(a.to_string())),
        Server(ServerErrorKind::Ask) => {
            e.redirect_node().map(|(a, _)| Redirect::Ask(a.to_string()))
        }
        Server(ServerErrorKind::TryAgain)
        | Server(ServerErrorKind::ClusterDown)
        | Server(ServerErrorKind::MasterDown) => Some(Redirect::Retry),
        Server(ServerErrorKind::ReadOnly) => Some(Redirect::Rediscover),
        _ => None,
    }
}

impl SlotConn {
    /// Connects to the first seed that answers, within `timeout`.
    pub(crate) fn connect(seeds: &Seeds, timeout: Duration) -> RedisResult<SlotConn> {
        let mut c = SlotConn {
            seeds: seeds.clone(),
            known: Vec::new(),
            addr: None,
            con: None,
            connect_timeout: timeout,
            read: Cell::new(None),
            write: Cell::new(None),
            last_used: Instant::now(),
        };
        c.reconnect(None, Instant::now() + timeout)?;
        // A seed that is a standalone server would answer every command
        // itself (it never redirects): a misconfigured `cluster` option
        // would go unnoticed. It refuses CLUSTER commands; any other
        // refusal (an ACL without them) leaves the check to the redirects.
        if let Some(con) = c.con.as_mut() {
            if let Err(e) = redis::cmd("CLUSTER").arg("MYID").query::<String>(con) {
                if e.to_string().contains("cluster support disabled") {
                    return Err(e);
                }
            }
        }
        Ok(c)
    }

    pub(crate) fn set_read_timeout(&self, d: Duration) -> RedisResult<()> {
        self.read.set(Some(d));
        match &self.con {
            Some(c) => c.set_read_timeout(Some(d)),
            None => Ok(()),
        }
    }

    pub(crate) fn set_write_timeout(&self, d: Duration) -> RedisResult<()> {
        self.write.set(Some(d));
        match &self.con {
            Some(c) => c.set_write_timeout(Some(d)),
            None => Ok(()),
        }
    }

    fn open(&self, addr: &str, deadline: Instant) -> RedisResult<redis::Connection> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(not_sent(format!("no time left to connect to {addr}")));
        }
        let c = self.seeds.open(addr, left.min(self.connect_timeout))?;
        c.set_read_timeout(self.read.get())?;
        c.set_write_timeout(self.write.get())?;
        Ok(c)
    }

    /// Connects to `first` if given, else to the last owner, then to any
    /// known node, then to any seed: the first that accepts.
    fn reconnect(&mut self, first: Option<String>, deadline: Instant) -> RedisResult<()> {
        self.con = None;
        let mut order: Vec<String> = first.into_iter().chain(self.addr.clone()).collect();
        for a in self.known.iter().chain(&self.seeds.addrs) {
            if !order.contains(a) {
                order.push(a.clone());
            }
        }
        let mut last = None;
        for a in order {
            match self.open(&a, deadline) {
                Ok(c) => {
                    self.con = Some(c);
                    self.addr = Some(a);
                    return Ok(());
                }
                Err(e) if e.kind() == redis::ErrorKind::AuthenticationFailed => return Err(e),
                Err(e) => last = Some(e),
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        Err(not_sent(format!(
            "no cluster node reachable: {}",
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    /// Before a command: connected, and if idle for a while, checked with a
    /// `PING` (replaced if dead), so that a connection cut while idle (a
    /// failover, a restart) is found before a script is sent on it, not
    /// by the script's unknown outcome (as `Conn` does for one server).
    fn revive(&mut self, deadline: Instant) -> RedisResult<()> {
        if let Some(c) = &mut self.con {
            if self.last_used.elapsed() < IDLE_CHECK
                || redis::cmd("PING").query::<String>(c).is_ok()
            {
                return Ok(());
            }
        }
        self.reconnect(None, deadline)
    }

    /// A connection to every master of the cluster (`CLUSTER SLOTS`, asked
    /// of the node this connection reaches), for what must visit each node
    /// (`SCAN`: `crate::list`). Within the connect timeout each.
    pub(crate) fn master_connections(&mut self) -> RedisResult<Vec<redis::Connection>> {
        let slots: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(self)?;
        let mut masters: Vec<String> = Vec::new();
        for range in &slots {
            // [start, end, [ip, port, id, ...], replicas...]
            let Value::Array(parts) = range else { continue };
            let Some(Value::Array(master)) = parts.get(2) else {
                continue;
            };
            let host = match master.first() {
                Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(Value::SimpleString(s)) => s.clone(),
                _ => continue,
            };
            let Some(Value::Int(port)) = master.get(1) else {
                continue;
            };
            // An empty host means "the node you asked" (its address as we
            // reached it).
            let addr = if host.is_empty() {
                match self.addr.as_deref().and_then(|a| a.rsplit_once(':')) {
                    Some((h, _)) => format!("{h}:{port}"),
                    None => continue,
                }
            } else if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            if !masters.contains(&addr) {
                masters.push(addr);
            }
        }
        masters
            .iter()
            .map(|a| self.open(a, Instant::now() + self.connect_timeout))
            .collect()
    }

    fn learn(&mut self, addr: &str) {
        if !self.known.iter().any(|a| a == addr) && !self.seeds.addrs.iter().any(|a| a == addr) {
            self.known.push(addr.to_string());
        }
    }

    /// Sends `cmd` (one packed command) to the slot's owner, following
    /// redirections until the read timeout has passed.
    fn request(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        let deadline = Instant::now() + self.read.get().unwrap_or(self.connect_timeout);
        let mut ask: Option<String> = None;
        let mut pause = Duration::from_millis(2);
        loop {
            let r = if let Some(a) = ask.take() {
                // ASKING and the command on a connection of their own to the
                // importing node (the flag is for the next command only).
                self.learn(&a);
                let mut c = self.open(&a, deadline)?;
                let mut packed = b"*1\r\n$6\r\nASKING\r\n".to_vec();
                packed.extend_from_slice(cmd);
                c.req_packed_commands(&packed, 1, 1)
                    .and_then(|mut v| v.pop().ok_or_else(|| not_sent("no reply".into())))
                    .and_then(Value::extract_error)
            } else {
                self.revive(deadline)?;
                let c = self.con.as_mut().expect("connected");
                let r = c.req_packed_command(cmd).and_then(Value::extract_error);
                if matches!(&r, Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped())
                {
                    // Unknown outcome: reported; the next call reconnects.
                    self.con = None;
                }
                r
            };
            self.last_used = Instant::now();
            let e = match r {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let Some(what) = redirect(&e) else {
                return Err(e);
            };
            if Instant::now() >= deadline {
                // Not run: the slot had no reachable owner in time (a
                // failover or a migration longer than the timeout), which
                // is a connection failure, not an error of the command.
                return Err(not_sent(format!(
                    "the cluster did not serve the slot within the timeout ({e})"
                )));
            }
            match what {
                Redirect::Moved(a) => {
                    self.learn(&a);
                    let r = self.reconnect(Some(a.clone()), deadline);
                    if r.is_err() || self.addr.as_deref() != Some(a.as_str()) {
                        // The owner named is unreachable (a killed master the
                        // others still name): wait for the failover.
                        if Instant::now() >= deadline {
                            return Err(not_sent(format!(
                                "the slot's owner {a} is unreachable ({})",
                                r.err().map(|e| e.to_string()).unwrap_or_default()
                            )));
                        }
                        std::thread::sleep(
                            pause.min(deadline.saturating_duration_since(Instant::now())),
                        );
                        pause = (pause * 2).min(Duration::from_millis(100));
                    }
                }
                Redirect::Ask(a) => ask = Some(a),
                Redirect::Retry | Redirect::Rediscover => {
                    if matches!(what, Redirect::Rediscover) {
                        self.con = None;
                        self.addr = None;
                    }
                    std::thread::sleep(
                        pause.min(deadline.saturating_duration_since(Instant::now())),
                    );
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
            }
        }
    }
}

impl ConnectionLike for SlotConn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.request(cmd)
    }
    /// A pipeline goes to the current node as it is (no redirections: a
    /// command a redirection refuses gets that reply; a batch's is sent
    /// again alone, `session/batch.rs`, and the `bye` of
    /// `Inner::lose_answered`, sent after a script's answer, is then left
    /// to the heartbeat).
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.revive(Instant::now() + self.connect_timeout)?;
        let c = self.con.as_mut().expect("connected");
        let r = c.req_packed_commands(cmd, offset, count);
        self.last_used = Instant::now();
        if r.is_err() {
            self.con = None;
        }
        r
    }
    fn get_db(&self) -> i64 {
        0
    }
    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }
    fn is_open(&self) -> bool {
        self.con.as_ref().is_some_and(|c| c.is_open())
    }
}
