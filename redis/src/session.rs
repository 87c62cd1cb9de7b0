//! One connected handle ([`Inner`]): its session, its connections and its
//! scripts' calls. Its waiter table is in `table.rs`, its agent thread in
//! `agent.rs`, and the process-wide registries of handles (sharing a
//! session, ending the sessions at exit) in `registry.rs`.
//!
//! Connections: two per connected handle (clones share them). The *command
//! connection* belongs to the door (`door.rs`), which runs the handle's
//! calls one at a time in the order they were made (acquire, try_acquire,
//! release, cancel, close, census, inspect), on its thread or, when it is idle, on
//! the thread of a call that waits for the answer anyway. The *agent connection* belongs to the
//! agent thread, which alternates between `BLPOP` on the session's
//! notification list (with a timeout that ends at the next heartbeat) and
//! the heartbeat script.
//!
//! Uncertain outcomes: when the connection fails while a mutating script was
//! in flight (it may or may not have run), the session is given up: it is
//! ended (its permits go back, its queue entries leave) as soon as Redis is
//! reachable, or expires with its lease; its holders learn
//! [`Error::LeaseExpired`]. So a retry never double-counts a permit.

use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

use volt_sem::{RawAcquire, WakeFn};

use crate::conn::{Client, Conn};
use crate::error::Error;
use crate::options::ConnectOptions;
use crate::reply::{Reply, Status};
use crate::scripts::{process_info, CallError, Keys, Scripts, Who};
use crate::stats::SessionStats;
use crate::waiter::{deliver, Claimed, Expiry, Finish, RedisWaiter};
use volt_sem::inspect::Process;
use volt_sem::raw::{self, phase};

mod agent;
mod batch;
mod door;
pub(crate) mod grace;
mod handle;
mod note;
mod runs;
/// The locks `runs.rs` uses (loom's in its model, `core/tests/loom_door.rs`).
mod sync {
    pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
}
mod registry;
mod table;

use agent::Kick;
use door::{call, Door, Job};
pub(crate) use handle::Handle;
pub(crate) use note::Grant;
pub(crate) use registry::connect_shared;
#[cfg(unix)]
pub(crate) use registry::end_all_sessions;
use table::{Entry, Table};

/// A random 128-bit id in hex (session ids, incarnation ids). std only:
/// `RandomState` is seeded from the OS; mixed with time, pid and a counter.
pub(crate) fn random_id() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut out = String::with_capacity(32);
    for i in 0..2u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(i);
        h.write_u32(std::process::id());
        h.write_u64(N.fetch_add(1, Ordering::Relaxed));
        if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(d.as_nanos());
        }
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// This process's id. `std::process::id()` is a system call each time
/// (glibc caches no pid), and [`Inner::forked`] asks several times per
/// acquire and release (about 8 `getpid` calls per uncontended pair under
/// `strace -c`, 0.2 us each on the bench VM): read once, and read again in
/// a `fork()` child, whose copy a `pthread_atfork` child handler clears
/// before `fork()` returns there (the child is then told apart from its
/// parent as before). A child made without the `fork()` of the C library
/// (a raw `clone`) runs no such handler; it could not use the parent's
/// handles safely either way (its threads are gone, as after any fork).
pub(crate) fn process_id() -> u32 {
    use std::sync::atomic::AtomicU32;
    static PID: AtomicU32 = AtomicU32::new(0);
    let p = PID.load(Relaxed);
    if p != 0 {
        return p;
    }
    #[cfg(unix)]
    {
        extern "C" fn child() {
            // Async-signal-safe: one atomic store.
            PID.store(0, Relaxed);
        }
        static AT_FORK: std::sync::Once = std::sync::Once::new();
        AT_FORK.call_once(|| {
            // SAFETY: registers a handler that only stores to a static;
            // registered once per process (the static lives as long).
            unsafe { libc::pthread_atfork(None, None, Some(child)) };
        });
    }
    // Read after the handler is registered: a fork from now on clears it.
    let p = std::process::id();
    PID.store(p, Relaxed);
    p
}

pub(crate) struct Session {
    pub(crate) sid: String,
    pub(crate) epoch: u64,
    /// When the last successful renewing call was *sent*: the lease surely
    /// lasts until `renewed + lease` (the server counts from a later instant).
    pub(crate) renewed: Instant,
}

impl Session {
    /// Whether the lease may have ended in Redis: not renewed for a whole
    /// lease. From then on the session counts as lost, whether or not the
    /// agent has given it up yet (it may be blocked on the network).
    fn expired(&self, lease: Duration) -> bool {
        self.renewed.elapsed() >= lease
    }

    /// How much of the lease surely remains (zero once expired).
    fn remaining(&self, lease: Duration) -> Duration {
        lease.saturating_sub(self.renewed.elapsed())
    }
}

pub(crate) struct State {
    pub(crate) session: Option<Session>,
    /// Epoch of the latest session (each new session gets the next one).
    pub(crate) epoch: u64,
    /// Permits held by the current session, as this handle counts them.
    pub(crate) held: u64,
    /// Permits held by lost sessions that no release has reported yet.
    pub(crate) lost: u64,
    /// Redis lost the state: the handle refuses everything.
    pub(crate) failed: bool,
    pub(crate) closed: bool,
    pub(crate) shutdown: bool,
    /// `disconnect()` ended the handle for good: every later request fails
    /// with `Error::Closed` (no new session is registered). Mirrored in
    /// [`Inner::disconnected`], which reads without this lock.
    pub(crate) disconnected: bool,
    /// The first `disconnect` returned (or is past ending the session):
    /// a second call waits for this ([`Inner::disconnect_done`]).
    disconnect_done: bool,
    /// The thread of the first `disconnect`, while it runs: a callback it
    /// delivers that disconnects again does not wait for it.
    disconnecting: Option<std::thread::ThreadId>,
    table: Table,
    /// Grant records collected from notifications, forgotten in Redis by the
    /// next heartbeat.
    acked: Vec<String>,
    /// Sessions given up that must still be ended in Redis.
    to_end: Vec<String>,
    /// Wakers of lease watches (each once: re-polls add nothing).
    lost_wakers: Vec<Waker>,
}

// SAFETY: the raw waiter pointers in the table are only dereferenced by the
// single thread that removes them (see waiter.rs).
unsafe impl Send for State {}

/// What giving a session up leaves to do once the state lock is released:
/// the waiters to notify and the lease watches to wake. Never under the
/// lock: a waker may hold the last [`Handle`] (the future of a task that
/// has ended, say), and dropping that takes the lock.
#[derive(Default)]
#[must_use]
pub(crate) struct Lost {
    claimed: Vec<Claimed>,
    wakers: Vec<Waker>,
}

impl Lost {
    fn wake(self) {
        deliver(self.claimed);
        for w in self.wakers {
            w.wake();
        }
    }
}

pub(crate) struct Inner {
    pub(crate) keys: Keys,
    pub(crate) name: String,
    /// The total as this handle last heard it from Redis (connect, a new
    /// session, set_total, census, inspect): another client's `set_total`
    /// changes it in Redis, which alone decides.
    pub(crate) total: AtomicU64,
    pub(crate) inc: String,
    pub(crate) opts: ConnectOptions,
    /// Who this process is, as each session records it for `inspect`
    /// (`scripts::process_info`: pid, label, host).
    process: String,
    secret: String,
    client: Client,
    scripts: Arc<Scripts>,
    cmd: Mutex<Option<Conn>>,
    /// `disconnect` closed the command connection for good: a call that
    /// still talks to Redis after it (`census`, `inspect`) opens one of its
    /// own for that call, closed when it returns.
    cmd_closed: AtomicBool,
    pub(crate) state: Mutex<State>,
    /// `State::disconnected`, read without the state lock: a `fork()` child
    /// asks it (the seam's finish of a parent's request) where a thread of
    /// the parent may have held that lock at the fork (for ever, there).
    disconnected: AtomicBool,
    /// Notified when the first `disconnect` is done (`State::disconnect_done`).
    disconnect_done: Condvar,
    kick: Arc<Kick>,
    door: Arc<Door>,
    /// The door and agent threads, joined by `disconnect`.
    threads: Mutex<Threads>,
    /// The process that connected. After `fork()` the child has a copy of
    /// the handle but not its agent thread, and its sessions are the
    /// parent's: the child must neither use them nor end them (its exit or
    /// its drop would otherwise return the parent's permits behind its back).
    pid: u32,
    /// What this session's requests did (`RedisSemaphore::stats`): shared
    /// by every handle on the session.
    pub(crate) stats: SessionStats,
    /// A release since the last [`flush`](Self::flush) that Redis did not
    /// apply (its round trip failed or was refused, and its session was
    /// given up): the next `flush` reports it, once.
    pub(super) unapplied: AtomicBool,
    /// The latest round trips of its scripts: they size the grace a timed
    /// acquire's first answer gets past its deadline ([`grace`]).
    round_trips: grace::RoundTrips,
}

/// The join handles of a connected handle's two threads.
struct Threads {
    door: Option<std::thread::JoinHandle<()>>,
    agent: Option<agent::Started>,
    /// The two threads' ids, kept once they are joined: a second
    /// `disconnect` made on one of them (a callback it delivers) does not
    /// wait for the first, which waits for that thread.
    ids: Vec<std::thread::ThreadId>,
    /// The process that started them.
    pid: u32,
}

impl Drop for Threads {
    fn drop(&mut self) {
        // In a fork() child the threads are the parent's: detaching a
        // thread this process does not have would act on a stale
        // descriptor. Leaked instead (a few bytes, once per handle).
        if process_id() != self.pid {
            std::mem::forget(self.door.take());
            std::mem::forget(self.agent.take());
        }
    }
}

/// Waits for the thread `h` to end, unless it is this thread (a callback
/// it delivered called `disconnect`): that one ends as soon as it is back
/// in its loop, which it finds stopped.
fn join_unless_current(h: Option<std::thread::JoinHandle<()>>) {
    if let Some(h) = h {
        if h.thread().id() != std::thread::current().id() {
            // A thread that panicked has ended all the same.
            let _ = h.join();
        }
    }
}

/// Waits for the agent thread to end, until `deadline`, unless it is this
/// thread (as [`join_unless_current`]). Past the deadline it is let go:
/// Redis is out of reach and the thread is blocked in a call (a `BLPOP` or
/// a heartbeat) that ends only at its own timeout, after which it finds the
/// handle stopped and exits, closing its connection. `disconnect` so takes
/// no longer in an outage than its own round trip (the command timeout).
fn join_agent_until(agent: Option<agent::Started>, deadline: Instant) {
    let Some(agent) = agent else {
        return;
    };
    if agent.handle.thread().id() == std::thread::current().id() {
        return;
    }
    let left = deadline.saturating_duration_since(Instant::now());
    match agent.ended.recv_timeout(left) {
        // Detached (dropping a JoinHandle does not stop the thread).
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => drop(agent.handle),
        // Its sender is gone: the thread has ended (nothing is ever sent).
        _ => {
            let _ = agent.handle.join();
        }
    }
}

/// What remains until `deadline`, or a connection error once it passed.
fn time_left(deadline: Instant) -> Result<Duration, Error> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(Error::Connection(
            "timed out (the connect timeout, or what remained of the lease)".into(),
        )),
    }
}

/// A connection of its own, for the calls without a session (`delete`,
/// `inspect`, `list`): opened within the connect timeout, closed when
/// dropped.
fn sessionless_connection(url: &str, opts: &ConnectOptions) -> Result<Conn, Error> {
    let secret = url_secret(url);
    let client = Client::open(url, opts)?;
    let deadline = Instant::now() + opts.connect_timeout;
    Inner::open_connection(&client, opts, &secret, deadline)
}

/// Runs one script of `Scripts` without a session: no session id, no
/// incarnation (the scripts that allow it: `delete`, `inspect`).
fn sessionless_script(
    url: &str,
    keys: &Keys,
    opts: &ConnectOptions,
    script: impl FnOnce(&Scripts, &mut Conn, &Keys, Who<'_>) -> Result<Reply, CallError>,
) -> Result<Reply, Error> {
    let mut con = sessionless_connection(url, opts)?;
    let who = Who {
        sid: "",
        inc: "",
        lease_ms: opts.lease.as_millis() as u64,
    };
    script(&Scripts::new(), &mut con, keys, who).map_err(|e| match e {
        CallError::NotRun(e) | CallError::Uncertain(e) => e,
    })
}

/// Deletes the semaphore `keys` names, without a session (see
/// [`crate::delete`]).
pub(crate) fn delete(url: &str, keys: &Keys, opts: &ConnectOptions) -> Result<(), Error> {
    let r = sessionless_script(url, keys, opts, |s, con, keys, who| {
        s.delete(con, keys, who)
    })?;
    match &r.status {
        Status::Ok => Ok(()),
        Status::NotFound => Err(Error::NotFound),
        Status::InUse => Err(Error::InUse {
            sessions: r.int(0)?,
        }),
        _ => Err(Error::Protocol(format!("{r:?}"))),
    }
}

/// Inspects the semaphore `keys` names, without a session (see
/// [`crate::inspect`]): `inspect.lua` with an empty incarnation, which
/// answers `NOTFOUND` for a name that does not exist.
pub(crate) fn inspect(url: &str, keys: &Keys, opts: &ConnectOptions) -> Result<Reply, Error> {
    let r = sessionless_script(url, keys, opts, |s, con, keys, who| {
        s.inspect(con, keys, who)
    })?;
    match &r.status {
        Status::Ok => Ok(r),
        Status::NotFound => Err(Error::NotFound),
        _ => Err(Error::Protocol(format!("{r:?}"))),
    }
}

/// The names of the semaphores under `prefix` (see [`crate::list`]): a
/// `SCAN` for their `{prefix:<name>}:meta` keys, on one server.
pub(crate) fn list(url: &str, opts: &ConnectOptions) -> Result<Vec<String>, Error> {
    let secret = url_secret(url);
    let mut con = sessionless_connection(url, opts)?;
    // The prefix is literal: escape what SCAN's glob would read as a pattern.
    let mut pattern = String::from("{");
    for c in opts.prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push_str(":*}:meta");
    let head = format!("{{{}:", opts.prefix);
    let mut names = Vec::new();
    // SCAN visits one node's keys: on a Cluster, every master's.
    let scanned = match con.master_connections() {
        None => scan_names(&mut con, &pattern, &head, &mut names),
        Some(nodes) => nodes.and_then(|nodes| {
            nodes
                .into_iter()
                .try_for_each(|mut node| scan_names(&mut node, &pattern, &head, &mut names))
        }),
    };
    scanned.map_err(|e| Error::from_redis(&e, &secret))?;
    // SCAN may return a key more than once.
    names.sort();
    names.dedup();
    Ok(names)
}

/// The semaphore names of the keys `pattern` matches on the node `con`
/// reaches, appended to `names`.
fn scan_names(
    con: &mut impl redis::ConnectionLike,
    pattern: &str,
    head: &str,
    names: &mut Vec<String>,
) -> redis::RedisResult<()> {
    let mut cursor = String::from("0");
    // Bounded: SCAN ends (cursor 0) after visiting every key once; the cap
    // guards against a server that never does.
    for _ in 0..1_000_000 {
        let (next, keys): (String, Vec<String>) = redis::cmd("SCAN")
            .arg(&cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(con)?;
        names.extend(keys.iter().filter_map(|k| {
            let name = k.strip_prefix(head)?.strip_suffix("}:meta")?;
            crate::validate_name(name).is_ok().then(|| name.to_owned())
        }));
        if next == "0" {
            break;
        }
        cursor = next;
    }
    Ok(())
}

/// SHA-1 of `return 1`, the probe script of [`check_commands`].
const PROBE: &str = "return 1";
const PROBE_SHA: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";

/// Checks, in one round trip, that the server lets this user run the
/// commands the backend sends itself, so that `connect` fails with a clear
/// error instead of a handle whose agent is refused at every turn: `RPUSH`
/// (the scripts notify with it) and `BLPOP` (the agent waits with it) on
/// the session's own notification list (pushed first, so the pop never
/// blocks; it expires anyway), `EVALSHA` and `EVAL` (the scripts; a probe
/// script), and with `min_replicas_acked`, `PUBLISH` and `WAIT`. Not a
/// transaction (a user may lack `MULTI`, which the backend never needs).
/// `NOPERM` is [`Error::NoPermission`] naming the command; `READONLY` (a
/// replica) is [`Error::ReadOnly`]; an unknown command (renamed away with
/// `rename-command`) is [`Error::Redis`] naming it. The commands the scripts run inside are
/// checked by Redis at each call (same errors). Skipped on a Cluster,
/// where keyless commands go to any node.
fn check_commands(
    con: &mut Conn,
    keys: &Keys,
    sid: &str,
    opts: &ConnectOptions,
    secret: &str,
    deadline: Instant,
) -> Result<(), Error> {
    use redis::{ConnectionLike, Value};
    if con.is_cluster() {
        return Ok(());
    }
    let note = keys.note(sid);
    let mut p = redis::pipe();
    p.cmd("RPUSH").arg(&note).arg("probe");
    p.cmd("PEXPIRE").arg(&note).arg(5000);
    // A short timeout, not 0 (forever), should the push have been refused.
    p.cmd("BLPOP").arg(&note).arg("0.001");
    p.cmd("EVALSHA").arg(PROBE_SHA).arg(0);
    p.cmd("EVAL").arg(PROBE).arg(0);
    let mut names = vec!["RPUSH", "PEXPIRE", "BLPOP", "EVALSHA", "EVAL"];
    if opts.min_replicas.is_some() {
        p.cmd("PUBLISH").arg(&note).arg("");
        p.cmd("WAIT").arg(0).arg(1);
        names.extend(["PUBLISH", "WAIT"]);
    }
    // redis-rs reads every reply of a pipeline even after one timed out,
    // each with the whole read timeout: give each its share of what
    // remains, so that the check stays within the connect deadline.
    let share = time_left(deadline)? / names.len() as u32;
    con.set_read_timeout(share.max(Duration::from_millis(1)))
        .map_err(|e| Error::from_redis(&e, secret))?;
    let replies = con
        .req_packed_commands(&p.get_packed_pipeline(), 0, names.len())
        .map_err(|e| {
            if e.is_timeout() {
                Error::Connection("no answer from Redis within the connect timeout".into())
            } else {
                Error::from_redis(&e, secret)
            }
        })?;
    let t = time_left(deadline)?;
    con.set_timeouts(t, t)
        .map_err(|e| Error::from_redis(&e, secret))?;
    for (v, name) in replies.iter().zip(&names) {
        let Value::ServerError(e) = v else { continue };
        let text = || {
            let d = e.details().unwrap_or("");
            let d = if secret.is_empty() {
                d.to_string()
            } else {
                d.replace(secret, "***")
            };
            format!("{} {d}", e.code())
        };
        match e.code() {
            "NOPERM" => {
                return Err(Error::NoPermission(format!(
                    "this user may not run {name}, which the Redis backend needs ({})",
                    text()
                )))
            }
            "READONLY" => return Err(Error::ReadOnly(text())),
            // Renamed away (`rename-command BLPOP ""` in the server's
            // configuration): without BLPOP or RPUSH nothing is refused
            // later, every wake just waits for a heartbeat (a third of the
            // lease), and the agent's every wait fails.
            _ if e
                .details()
                .is_some_and(|d| d.starts_with("unknown command")) =>
            {
                return Err(Error::Redis(format!(
                    "this server does not know {name} (renamed or disabled with \
                     rename-command?), which the Redis backend needs ({})",
                    text()
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// What a script call returns: one reply, or a pipeline's replies; each
/// noted in the session's stats ([`Inner::script`]).
trait Noted {
    fn note(&self, stats: &SessionStats);
}

impl Noted for Reply {
    fn note(&self, stats: &SessionStats) {
        stats.noted(self);
    }
}

impl Noted for Vec<Result<Reply, CallError>> {
    fn note(&self, stats: &SessionStats) {
        for r in self.iter().flatten() {
            stats.noted(r);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The password of a `redis://user:password@host` URL (raw and
/// percent-decoded), to keep it out of every error text.
fn url_secret(url: &str) -> String {
    let rest = url.split_once("://").map(|x| x.1).unwrap_or("");
    let auth = match rest.rsplit_once('@') {
        Some((a, _)) => a,
        None => return String::new(),
    };
    match auth.split_once(':') {
        Some((_, p)) => p.to_string(),
        None => auth.to_string(),
    }
}

impl Inner {
    fn lease_ms(&self) -> u64 {
        self.opts.lease.as_millis() as u64
    }

    /// Opens a connection and checks it with a `PING`, all before
    /// `deadline` (each step gets only what remains of it); it is left with
    /// the command timeout for reads and writes.
    fn open_connection(
        client: &Client,
        opts: &ConnectOptions,
        secret: &str,
        deadline: Instant,
    ) -> Result<Conn, Error> {
        let con = client
            .connect(time_left(deadline)?)
            .map_err(|e| Error::from_redis(&e, secret))?;
        let t = time_left(deadline)?;
        con.set_timeouts(t, t)
            .map_err(|e| Error::from_redis(&e, secret))?;
        // A server that wants a password we did not give answers NOAUTH
        // here, clearly, rather than close the connection at the first
        // script (whose size an unauthenticated client may not send).
        let mut con = con;
        redis::cmd("PING").query::<String>(&mut con).map_err(|e| {
            if !e.is_timeout() {
                Error::from_redis(&e, secret)
            } else if client.is_tls() {
                // The TLS handshake happens at the first read or write.
                Error::Tls(
                    "no TLS handshake within the connect timeout (does the port speak TLS?)".into(),
                )
            } else {
                Error::Connection("no answer from Redis within the connect timeout".into())
            }
        })?;
        con.set_timeouts(opts.command_timeout, opts.command_timeout)
            .map_err(|e| Error::from_redis(&e, secret))?;
        Ok(con)
    }

    /// Connects, registers the first session and starts the agent.
    pub(crate) fn connect(
        url: &str,
        name: &str,
        total: u64,
        opts: ConnectOptions,
    ) -> Result<Arc<Handle>, Error> {
        let secret = url_secret(url);
        let client = Client::open(url, &opts)?;
        // One deadline for the whole connect: the connection (TCP, TLS,
        // AUTH, PING), the checks and the first script.
        let deadline = Instant::now() + opts.connect_timeout;
        let mut con = Self::open_connection(&client, &opts, &secret, deadline)?;
        let t = time_left(deadline)?;
        con.set_timeouts(t, t)
            .map_err(|e| Error::from_redis(&e, &secret))?;
        let keys = Keys::new(&opts.prefix, name);
        let scripts = Arc::new(Scripts::new());
        let sid = random_id();
        check_commands(&mut con, &keys, &sid, &opts, &secret, deadline)?;
        let new_inc = random_id();
        let process = process_info(&Process::this(opts.label.as_deref()));
        let who = Who {
            sid: &sid,
            inc: "",
            lease_ms: opts.lease.as_millis() as u64,
        };
        let sent = Instant::now();
        let mode = if opts.resize { "resize" } else { "" };
        let r = scripts
            .connect(
                &mut con,
                &keys,
                who,
                total,
                &new_inc,
                &process,
                mode,
                opts.attach_only,
            )
            .map_err(|e| match e {
                CallError::NotRun(e) => e,
                // Timed out at the deadline: a session it may have
                // registered expires with its lease.
                CallError::Uncertain(_) if Instant::now() >= deadline => {
                    Error::Connection("no answer from Redis within the connect timeout".into())
                }
                CallError::Uncertain(e) => e,
            })?;
        con.set_timeouts(opts.command_timeout, opts.command_timeout)
            .map_err(|e| Error::from_redis(&e, &secret))?;
        let (inc, closed, total) = match &r.status {
            Status::Ok => (
                r.rest.first().cloned().unwrap_or_default(),
                r.int(1)? == 1,
                r.int(2)?,
            ),
            Status::Total => {
                return Err(Error::TotalMismatch {
                    existing: r.int(0)?,
                })
            }
            Status::NotFound => return Err(Error::NotFound),
            _ => return Err(Error::Protocol(format!("{r:?}"))),
        };
        let inner = Arc::new(Inner {
            keys,
            name: name.to_string(),
            total: AtomicU64::new(total),
            inc,
            opts,
            process,
            secret,
            client,
            scripts,
            cmd: Mutex::new(Some(con)),
            cmd_closed: AtomicBool::new(false),
            state: Mutex::new(State {
                session: Some(Session {
                    sid,
                    epoch: 1,
                    renewed: sent,
                }),
                epoch: 1,
                held: 0,
                lost: 0,
                failed: false,
                closed,
                shutdown: false,
                disconnected: false,
                disconnect_done: false,
                disconnecting: None,
                table: Table::new(),
                acked: Vec::new(),
                to_end: Vec::new(),
                lost_wakers: Vec::new(),
            }),
            kick: Arc::new(Kick::default()),
            door: Arc::new(Door::default()),
            disconnected: AtomicBool::new(false),
            disconnect_done: Condvar::new(),
            threads: Mutex::new(Threads {
                door: None,
                agent: None,
                ids: Vec::with_capacity(2),
                pid: process_id(),
            }),
            pid: process_id(),
            stats: SessionStats::default(),
            unapplied: AtomicBool::new(false),
            round_trips: grace::RoundTrips::new(),
        });
        inner.stats.noted(&r);
        registry::at_exit::register(Arc::downgrade(&inner));
        // Owned by a handle before the threads start: if one cannot start,
        // dropping the handle ends the session just registered.
        let handle = Handle::new(Arc::clone(&inner));
        let agent = agent::spawn(&inner)?;
        {
            let mut t = lock(&inner.threads);
            t.ids.push(agent.handle.thread().id());
            t.agent = Some(agent);
        }
        let door = door::spawn(&inner)?;
        {
            let mut t = lock(&inner.threads);
            t.ids.push(door.thread().id());
            t.door = Some(door);
        }
        Ok(handle)
    }

    fn who<'a>(&'a self, sid: &'a str) -> Who<'a> {
        Who {
            sid,
            inc: &self.inc,
            lease_ms: self.lease_ms(),
        }
    }

    /// Runs `f` on the command connection, (re)connecting first if needed.
    fn with_cmd<R>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        if self.forked() {
            return Err(CallError::NotRun(Error::Forked));
        }
        let mut g = lock(&self.cmd);
        if self.cmd_closed.load(Ordering::Relaxed) {
            // Disconnected: a connection for this call only (closed when
            // it returns), never kept (see `disconnect`).
            let deadline = Instant::now() + self.opts.connect_timeout;
            let mut c = Self::open_connection(&self.client, &self.opts, &self.secret, deadline)
                .map_err(CallError::NotRun)?;
            let mut r = f(&mut c);
            if r.is_ok() {
                if let Err(e) = c.wait_replicas(&self.opts, None) {
                    r = Err(CallError::Uncertain(e));
                }
            }
            return r;
        }
        if g.is_none() {
            let deadline = Instant::now() + self.opts.connect_timeout;
            let c = Self::open_connection(&self.client, &self.opts, &self.secret, deadline)
                .map_err(CallError::NotRun)?;
            *g = Some(c);
        }
        let mut r = f(g.as_mut().expect("connected above"));
        if r.is_ok() {
            // min_replicas_acked: a write too few replicas acknowledged may
            // be lost by a failover, as if the call had an unknown outcome.
            if let Err(e) = g
                .as_mut()
                .expect("connected")
                .wait_replicas(&self.opts, None)
            {
                r = Err(CallError::Uncertain(e));
            }
        }
        if matches!(r, Err(CallError::Uncertain(_))) {
            *g = None;
        }
        r
    }

    /// Runs a script (or a pipeline of them) on the command connection, as
    /// [`with_cmd`](Self::with_cmd), and notes what each reply tells the
    /// stats (sessions reaped, permits available).
    fn script<R: Noted>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        let started = Instant::now();
        let r = self.with_cmd(f);
        if let Ok(r) = &r {
            self.round_trips.note(started.elapsed());
            r.note(&self.stats);
        }
        r
    }

    /// The current session, registering a new one if the last was lost.
    fn ensure_session(&self) -> Result<(String, u64), Error> {
        {
            let st = lock(&self.state);
            if st.failed {
                return Err(Error::StateLost);
            }
            if st.disconnected || st.shutdown {
                return Err(Error::Closed);
            }
            if let Some(s) = &st.session {
                if s.renewed.elapsed() < self.opts.lease {
                    return Ok((s.sid.clone(), s.epoch));
                }
            }
        }
        self.check_local_expiry();
        let sid = random_id();
        let sent = Instant::now();
        // A new session of a handle: the semaphore's total now is the
        // handle's, whoever changed it ("adopt").
        let r = self.script(|con| {
            self.scripts.connect(
                con,
                &self.keys,
                self.who(&sid),
                self.total(),
                "",
                &self.process,
                "adopt",
                // The incarnation is checked instead: a semaphore gone
                // since is `LOST`.
                false,
            )
        });
        let r = match r {
            Ok(r) => r,
            // A session that may have been registered simply expires.
            Err(CallError::NotRun(e) | CallError::Uncertain(e)) => return Err(e),
        };
        match &r.status {
            Status::Ok => {
                let mut st = lock(&self.state);
                if st.failed {
                    return Err(Error::StateLost);
                }
                if st.disconnected || st.shutdown {
                    // `disconnect` came while the script ran: the handle
                    // takes no new session (its agent has exited or is
                    // exiting, nobody would renew it or deliver its
                    // grants). End it now, on this runner, and refuse the
                    // call as every request after the disconnect is.
                    drop(st);
                    self.end_sessions(vec![sid]);
                    return Err(Error::Closed);
                }
                if let Some(s) = &st.session {
                    // Another thread registered one meanwhile: keep it, end ours.
                    let keep = (s.sid.clone(), s.epoch);
                    st.to_end.push(sid);
                    drop(st);
                    self.kick.kick();
                    return Ok(keep);
                }
                st.epoch += 1;
                let epoch = st.epoch;
                st.closed = r.int(1)? == 1;
                self.total.store(r.int(2)?, Relaxed);
                st.session = Some(Session {
                    sid: sid.clone(),
                    epoch,
                    renewed: sent,
                });
                drop(st);
                self.kick.kick();
                Ok((sid, epoch))
            }
            Status::Lost => {
                self.fail_all();
                Err(Error::StateLost)
            }
            Status::Total => Err(Error::TotalMismatch {
                existing: r.int(0)?,
            }),
            _ => Err(Error::Protocol(format!("{r:?}"))),
        }
    }

    /// Gives up the session of `epoch` (if it is still the current one):
    /// its holders and waiters learn `err`; its permits count as lost; it is
    /// ended in Redis by the agent. Returns what to wake once the lock is
    /// released.
    fn lose_locked(&self, st: &mut State, epoch: u64, err: &Error) -> Lost {
        let mut lost = Lost::default();
        let Some(s) = &st.session else {
            return lost;
        };
        if s.epoch != epoch {
            return lost;
        }
        let s = st.session.take().expect("checked");
        st.to_end.push(s.sid);
        let waiting = st.table.take_session(epoch);
        // A lease lost while the session held or waited (not an end the
        // handle chose, nor Redis losing everything: those are not losses
        // of a lease).
        if (st.held > 0 || !waiting.is_empty()) && !matches!(err, Error::Closed | Error::StateLost)
        {
            if let Some(r) = self.stats.recorder() {
                r.lease_lost();
            }
        }
        st.lost += st.held;
        st.held = 0;
        for e in waiting {
            // SAFETY: it was in the table, so it is valid.
            lost.claimed
                .push(unsafe { Claimed::claim(e.w, Finish::Failed(err.clone())) });
        }
        lost.wakers.append(&mut st.lost_wakers);
        lost
    }

    /// [`lose`](Self::lose) without ending the session now: the agent ends
    /// it (on its own connection) at its next turn. For the agent itself and
    /// for a local expiry, where a round trip now could block on the network
    /// (or on the command connection's lock) for longer than what remains of
    /// the next session's lease.
    pub(crate) fn lose_deferred(&self, epoch: u64, err: Error) {
        let lost = {
            let mut st = lock(&self.state);
            self.lose_locked(&mut st, epoch, &err)
        };
        lost.wake();
        self.kick.kick();
    }

    /// Gives up the session of `epoch` after a call's uncertain outcome.
    /// Ending it in Redis is the agent's job, as in
    /// [`lose_deferred`](Self::lose_deferred): the caller's round trip has
    /// just failed, and ending it here too (a reconnect, then the end
    /// script) made the call block about three times its timeout when
    /// Redis went silent (issue 32, item 2).
    pub(crate) fn lose(&self, epoch: u64, err: Error) {
        self.lose_deferred(epoch, err);
    }

    /// [`lose`](Self::lose) after an answer from Redis (a refusal, a lease
    /// found lost), on the door or a caller's turn: the agent, likely
    /// blocked in its `BLPOP` on that session's list until its next
    /// heartbeat (a third of the lease), is woken by a `bye` pushed there
    /// now (as the end script's), on the command connection that just
    /// answered, so that it ends the session (what Redis counts for it
    /// goes back) and moves to the handle's next one at once.
    ///
    /// A push rather than `CLIENT UNBLOCK` (an `@admin` command an ACL
    /// often denies, sent to whichever node the door's connection is on,
    /// with the agent's client id to learn at each of its connects) or
    /// closing the agent's socket (redis-rs gives no access to it): the
    /// scripts already push to these lists, so an ACL that lets the
    /// handle work lets it push. On a Cluster it goes to the node that
    /// just answered for the slot (a pipeline is not redirected: a
    /// `MOVED` or `ASK` there, a slot moved meanwhile, leaves the
    /// heartbeat bound). Never
    /// a new connection: without one (or if the push fails) the heartbeat
    /// bound stands, as before.
    pub(crate) fn lose_answered(&self, epoch: u64, err: Error) {
        let Some(sid) = self.sid_of(epoch) else {
            return;
        };
        self.lose_deferred(epoch, err);
        if self.forked() {
            return;
        }
        let mut g = lock(&self.cmd);
        if self.cmd_closed.load(Ordering::Relaxed) {
            return;
        }
        let Some(con) = g.as_mut() else {
            return;
        };
        let note = self.keys.note(&sid);
        let r: redis::RedisResult<()> = redis::pipe()
            .cmd("RPUSH")
            .arg(&note)
            .arg("bye")
            .ignore()
            .cmd("PEXPIRE")
            .arg(&note)
            .arg(5000)
            .ignore()
            .query(con);
        if r.is_err_and(|e| e.is_io_error() || e.is_timeout() || e.is_connection_dropped()) {
            *g = None;
        }
    }

    /// Ends the sessions `sids` now, on the door (for `disconnect`, which
    /// promises one round trip: their permits go back, and the `bye` wakes
    /// the agent if it is blocked on an old notification list); what fails
    /// goes back to the list the agent ends.
    fn end_sessions(&self, sids: Vec<String>) {
        let mut failed = Vec::new();
        let mut state_lost = false;
        for sid in sids {
            let r = self.script(|con| self.scripts.end(con, &self.keys, self.who(&sid)));
            match r {
                Ok(r) if r.status == Status::Lost => state_lost = true,
                Ok(_) => {}
                Err(_) => failed.push(sid),
            }
        }
        if !failed.is_empty() {
            lock(&self.state).to_end.extend(failed);
        }
        if state_lost {
            self.fail_all();
        }
    }

    /// Redis lost the state: every waiter fails, the handle refuses everything.
    pub(crate) fn fail_all(&self) {
        let lost = {
            let mut st = lock(&self.state);
            st.failed = true;
            let mut lost = match st.session.as_ref().map(|s| s.epoch) {
                Some(e) => self.lose_locked(&mut st, e, &Error::StateLost),
                None => Lost::default(),
            };
            st.to_end.clear();
            for e in st.table.take_all() {
                // SAFETY: it was in the table.
                lost.claimed
                    .push(unsafe { Claimed::claim(e.w, Finish::Failed(Error::StateLost)) });
            }
            lost.wakers.append(&mut st.lost_wakers);
            lost
        };
        lost.wake();
        self.kick.kick();
    }

    /// Ends this handle's session now and for good (`disconnect`): its
    /// queued requests fail with [`Error::Closed`], the session is ended in
    /// Redis (what it held goes to the next waiters, its queued entries
    /// leave the queue; one round trip, or the lease's expiry if Redis is
    /// out of reach), and every later request of the handle fails with
    /// `Closed`. The semaphore itself stays open for every other client.
    pub(crate) fn disconnect(&self) {
        // In a fork() child the session and the queued waiters are the
        // parent's: nothing here to end (every request fails with `Forked`).
        if self.forked() {
            return;
        }
        let started = Instant::now();
        let me = std::thread::current().id();
        // Asked before the state lock (the threads' lock and the door's
        // are never taken under it): the handle's door and agent threads,
        // or a caller running the handle's queued jobs itself now (a
        // callback one of them delivers, in a `try_acquire`, `census` or
        // blocking acquire that found no thread running them): the first
        // call's end goes out after those jobs, so it waits for that
        // caller's turn to end.
        let on_own_thread = lock(&self.threads).ids.contains(&me) || self.door.is_here();
        let (lost, sids) = {
            let mut st = lock(&self.state);
            if st.disconnected {
                // A second call returns once the first one is done (what
                // the session held is back then), unless it is made on the
                // first one's thread (a callback it delivers) or on a thread
                // it waits for (the handle's own, which it joins; a caller
                // in its turn, whose jobs come before its end).
                if st.disconnecting != Some(me) && !on_own_thread {
                    while !st.disconnect_done {
                        st = self
                            .disconnect_done
                            .wait(st)
                            .unwrap_or_else(|e| e.into_inner());
                    }
                }
                return;
            }
            st.disconnected = true;
            st.disconnecting = Some(me);
            self.disconnected.store(true, Ordering::SeqCst);
            let lost = match st.session.as_ref().map(|s| s.epoch) {
                Some(e) => self.lose_locked(&mut st, e, &Error::Closed),
                None => Lost::default(),
            };
            // Ended with the session, not lost: a later release is refused
            // as `Closed`, never reported as a lease expiry.
            st.lost = 0;
            // Taken off the agent's list in the same critical section: the
            // agent (woken, say, by a grant to a request of this session)
            // must not take them and end them on its own while the door
            // finds nothing to end, or this call would return before the
            // end was sent, and a process that dies right after (a signal
            // handler disconnects, then re-raises the signal) would leave
            // the session to its lease's expiry.
            (lost, std::mem::take(&mut st.to_end))
        };
        // A lease watch's waker that panics (the waiters' callbacks cannot
        // unwind: a Rust waker's panic there aborts) is let go on only once
        // the session is ended and the calls waiting for this one have
        // returned: unwinding from here would leave them waiting for ever,
        // and the session to its lease's expiry.
        let woken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lost.wake()));
        // On the door, after the calls queued before it (an acquire queued
        // before the disconnect fails there with `Closed`).
        let _ = call(self, move |i| {
            i.end_sessions(sids);
            Ok(())
        });
        // Nothing left for the agent to renew: it exits.
        lock(&self.state).shutdown = true;
        self.kick.stop();
        // The agent gets what remains of a command timeout since this call
        // began, and at least 100 ms (its exit, woken by the end's `bye`,
        // takes about a millisecond).
        let agent_deadline =
            (started + self.opts.command_timeout).max(Instant::now() + Duration::from_millis(100));
        self.release_threads_and_connections(agent_deadline);
        {
            let mut st = lock(&self.state);
            st.disconnect_done = true;
            st.disconnecting = None;
        }
        self.disconnect_done.notify_all();
        if let Err(panic) = woken {
            std::panic::resume_unwind(panic);
        }
    }

    /// Whether `disconnect` ended this handle, without the state lock (see
    /// [`Inner::disconnected`]).
    pub(crate) fn is_disconnected(&self) -> bool {
        self.disconnected.load(Ordering::SeqCst)
    }

    /// The end of `disconnect`: nothing of the handle will use its threads
    /// or its command connection again (every request is refused, a handle
    /// sharing the session is this same handle), so they go now rather
    /// than when the last handle is dropped (which a garbage collector may
    /// put off for as long as it likes): the door is stopped and its thread
    /// joined, the jobs queued after the disconnect's run here, the command
    /// connection is closed, and the agent thread (told to stop, its
    /// `BLPOP` woken by the end's `bye`) is joined, closing its connection.
    /// A thread that is this one (a callback it delivered called
    /// `disconnect`) is not joined: it exits as soon as that callback
    /// returns. The agent is joined last: a callback it is delivering may
    /// wait for a call queued on the door, which runs before. It is waited
    /// for until `agent_deadline` (see [`join_agent_until`]).
    fn release_threads_and_connections(&self, agent_deadline: Instant) {
        let left = self.door.stop();
        let (door, agent) = {
            let mut t = lock(&self.threads);
            (t.door.take(), t.agent.take())
        };
        join_unless_current(door);
        // Queued between the disconnect's job and the stop, never taken
        // by a runner: run in order here (an acquire fails with `Closed`,
        // a call gets its answer).
        for job in left {
            self.refused(job);
        }
        {
            let mut g = lock(&self.cmd);
            self.cmd_closed.store(true, Ordering::Relaxed);
            // Dropped: the socket is closed (every node's, on a Cluster).
            *g = None;
        }
        join_agent_until(agent, agent_deadline);
    }

    /// A job the stopped door will not run (handed back by its `push`, or
    /// left in its queue by the stop), dealt with on this thread: a call
    /// runs here (its caller waits for it); a request not sent fails with
    /// `Closed`, as every request after a disconnect; a release or a cancel
    /// has nothing left to do (the session's end gave back what it held
    /// and took its requests out of the queue; if Redis was out of reach,
    /// the lease's expiry does).
    fn refused(&self, job: Job) {
        match job {
            Job::Call(f) => {
                // A panic drops the call's answer unsent, which answers
                // its caller with an error (as on the door thread).
                let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
                if let Ok(send) = answer {
                    send();
                }
            }
            Job::Acquire(ctr) | Job::Zero(ctr) => {
                self.complete_request(ctr, Finish::Failed(Error::Closed));
            }
            Job::Release { .. } | Job::Cancel { .. } => {}
        }
    }

    /// A session not renewed for a whole lease may be expired in Redis (a
    /// long pause such as `SIGSTOP`, or Redis out of reach): give it up.
    /// No I/O here (Redis is likely out of reach): the agent ends it later.
    pub(crate) fn check_local_expiry(&self) {
        let expired = {
            let st = lock(&self.state);
            st.session
                .as_ref()
                .filter(|s| s.expired(self.opts.lease))
                .map(|s| s.epoch)
        };
        if let Some(e) = expired {
            self.lose_deferred(e, Error::LeaseExpired);
        }
    }

    /// How much of the current session's lease surely remains (`None`: no
    /// session). The agent caps every blocking call by it, so that it is
    /// free to give the session up when the lease ends.
    pub(crate) fn lease_remaining(&self) -> Option<Duration> {
        lock(&self.state)
            .session
            .as_ref()
            .map(|s| s.remaining(self.opts.lease))
    }

    /// Handles the replies every script may give about the session.
    fn session_reply(&self, r: &Reply, epoch: u64) -> Option<Error> {
        match &r.status {
            Status::Expired => {
                self.lose_answered(epoch, Error::LeaseExpired);
                Some(Error::LeaseExpired)
            }
            Status::Lost => {
                self.fail_all();
                Some(Error::StateLost)
            }
            _ => None,
        }
    }

    /// After an acquire or release script: its fast path renews the lease
    /// only once a third of it has passed (lua/fast.lua), so the lease
    /// surely lasts from lease/3 before the call was sent.
    fn renewed_fast(&self, epoch: u64, sent: Instant) {
        if let Some(t) = sent.checked_sub(self.opts.lease / 3) {
            self.renewed(epoch, t);
        }
    }

    fn renewed(&self, epoch: u64, sent: Instant) {
        let mut st = lock(&self.state);
        if let Some(s) = st.session.as_mut().filter(|s| s.epoch == epoch) {
            // A session already seen expired stays lost (`is_lost` may have
            // said so): a renewal confirmed too late does not revive it; the
            // agent gives it up and ends it.
            if sent > s.renewed && !s.expired(self.opts.lease) {
                s.renewed = sent;
            }
        }
    }

    /// [`check_usable`](Self::check_usable) on the current state: for a
    /// request of 0 permits, which asks Redis only whether it is closed.
    pub(crate) fn usable(&self) -> Result<(), Error> {
        if self.forked() {
            return Err(Error::Forked);
        }
        self.check_usable(&lock(&self.state))
    }

    /// The errors a request meets on the handle's own state, known without
    /// a round trip.
    fn check_usable(&self, st: &State) -> Result<(), Error> {
        if st.failed {
            return Err(Error::StateLost);
        }
        // (Not `st.closed`: another client may have reopened it; the
        // script answers CLOSED if it is still closed.)
        if st.disconnected || st.shutdown {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Queues an acquire of `n` permits for `waiter` (`n == 0`: granted
    /// unless the semaphore is closed): publishes it in the table, not yet
    /// sent, and hands it to the door, which sends it and completes it
    /// through its callback. Never blocks: the errors the handle knows
    /// itself come at once, every other outcome through the callback.
    ///
    /// # Safety
    /// As [`acquire_raw`](crate::RawSemaphore::acquire_raw).
    pub(crate) unsafe fn acquire_raw(
        &self,
        waiter: Pin<&RedisWaiter>,
        n: u64,
        wake: WakeFn,
        ctx: *mut core::ffi::c_void,
    ) -> Result<RawAcquire, Error> {
        // (No check of `n` against the total here: another client may have
        // changed it; the script answers TOOMANY.)
        if self.forked() {
            return Err(Error::Forked);
        }
        let ctr = {
            let mut st = lock(&self.state);
            self.check_usable(&st)?;
            let ctr = st.table.next_ctr();
            let w = waiter.get_ref();
            w.ctr.store(ctr, Ordering::Relaxed);
            w.requested.store(n, Ordering::Relaxed);
            // The session is chosen when the door sends it.
            w.epoch.store(0, Ordering::Relaxed);
            // SAFETY: not busy (contract), so not in the table: nobody else
            // reads the callback until it is published below.
            unsafe { w.node.set_callback(wake, ctx) };
            *w.outcome.lock().unwrap_or_else(|e| e.into_inner()) = None;
            w.node.set_phase(phase::WAITING, Ordering::Release);
            st.table.insert(
                ctr,
                Entry {
                    w,
                    eid: String::new(),
                    n,
                    epoch: 0,
                    queued: false,
                    expired: false,
                    sent: None,
                    since: Instant::now(),
                },
            );
            ctr
        };
        let refused = self.door.push(if n == 0 {
            Job::Zero(ctr)
        } else {
            Job::Acquire(ctr)
        });
        if refused.is_some() {
            // Disconnected since the check above, its door stopped: taken
            // back out and refused now, as after the disconnect (unless a
            // thread that failed every request completed it meanwhile:
            // then its callback tells).
            let mut st = lock(&self.state);
            if st.table.remove(ctr).is_some() {
                st.table.take_cancelled(ctr);
                waiter
                    .get_ref()
                    .node
                    .set_phase(phase::IDLE, Ordering::Release);
                return Err(Error::Closed);
            }
        }
        Ok(RawAcquire::Pending)
    }

    /// `try_acquire` of `n > 0` permits: one round trip, after (or with)
    /// the handle's jobs queued before it.
    /// Returns the grant's token and session.
    pub(crate) fn try_acquire(&self, n: u64) -> Result<(u64, u64), Error> {
        // (No check of `n` against the total here: another client may have
        // changed it; the script answers TOOMANY.)
        door::try_acquire(self, n)
    }

    /// Counts `n` permits granted in session `epoch` as held (or as lost,
    /// if that session was given up meanwhile).
    fn count_granted(&self, n: u64, epoch: u64) {
        let mut st = lock(&self.state);
        if st.session.as_ref().map(|s| s.epoch) == Some(epoch) {
            st.held += n;
        } else {
            st.lost += n;
        }
    }

    /// Cancels or collects a raw request. Never blocks on the network: a
    /// request still queued is taken out of the table here (its owner is
    /// done with it at once: `Cancelled`) and out of Redis by the door,
    /// which hands its partial grant on, and releases its permits should
    /// the grant have beaten the cancel.
    ///
    /// # Safety
    /// `waiter` is idle or was queued on this handle.
    pub(crate) unsafe fn finish(&self, waiter: Pin<&RedisWaiter>) -> Finish {
        /// The session's part of `raw::finish`.
        struct Session<'a>(&'a Inner, &'a RedisWaiter);
        impl raw::Finisher for Session<'_> {
            type Output = Finish;
            fn idle(&mut self) -> Finish {
                Finish::Idle
            }
            fn cancel(&mut self) -> Option<Finish> {
                let Session(inner, w) = *self;
                let ctr = w.ctr.load(Ordering::Relaxed);
                let e = {
                    let mut st = lock(&inner.state);
                    let e = st.table.remove_waiter(ctr, w);
                    if e.as_ref().is_some_and(|e| !e.queued) {
                        st.table.cancelled_unanswered(ctr);
                    }
                    e
                }?; // completed by the door or agent meanwhile
                    // Queued in Redis: the door takes it out. Not yet answered
                    // (or not yet sent): the door learns it when it gets there,
                    // and undoes what the answer did.
                if e.queued {
                    // Refused once disconnected: the session's end took the
                    // request out of the queue.
                    let _ = inner.door.push(Job::Cancel {
                        eid: e.eid,
                        n: e.n,
                        epoch: e.epoch,
                    });
                }
                w.node.set_phase(phase::IDLE, Ordering::Release);
                // A waiting request left without its permits (a cancel, a
                // dropped future, a timeout: `acquire_timeout` and the
                // bindings record the timeout besides).
                if let Some(r) = inner.stats.recorder() {
                    r.cancelled();
                }
                Some(Finish::Cancelled { returned: 0 })
            }
            fn outcome(&mut self, _granted: bool) -> Finish {
                let Session(inner, w) = *self;
                // The detail (token, failure) is in the waiter.
                match w.take_outcome() {
                    // A grant collected once `disconnect` began: the session's
                    // end gives back everything it holds, this grant too (it
                    // was counted held when it completed), so it is not the
                    // caller's; it ends as the disconnect's requests do (the
                    // caller's `Closed`, `Disconnected` through the seam). A
                    // grant collected before the disconnect began stays the
                    // caller's and goes back with the session's permits, as
                    // any held permit does.
                    Finish::Granted { .. } if lock(&inner.state).disconnected => Finish::Closed,
                    f => f,
                }
            }
        }
        let w = waiter.get_ref();
        // SAFETY: forwarded contract: idle or queued on this handle, pinned.
        unsafe { raw::finish(&w.node, Session(self, w)) }
    }

    /// The owner's deadline for `waiter`'s request passed. A request whose
    /// acquire script has not answered yet (not sent, or its round trip
    /// under way) is left to that answer for a while, as the other backends
    /// try before they wait: [`Expiry::Deferred`] until its grace ends
    /// ([`grace`]: from when the script was sent, or from now if the door
    /// has not sent it yet), and the request completes through its callback
    /// if the answer comes by then, `Granted` if the script granted it
    /// (whatever the deadline), else `Cancelled` (the door takes it out of
    /// Redis at once, its partial grant handed on) or whatever else ended it
    /// (closed, failed). At `until` the owner cancels it with
    /// [`finish`](Self::finish) (a grant answered later is given back by
    /// the door). A request already completed is deferred too (its callback
    /// has run or is about to; a grant that came before the deadline is
    /// kept). A request queued in Redis, or one whose grace already ended,
    /// is cancelled here, as by [`finish`](Self::finish)
    /// ([`Expiry::Finished`]). Never blocks on the network.
    ///
    /// # Safety
    /// As [`finish`](Self::finish).
    pub(crate) unsafe fn expire(&self, waiter: Pin<&RedisWaiter>) -> Expiry {
        let w = waiter.get_ref();
        let grace = self.round_trips.grace(self.opts.command_timeout);
        {
            let mut st = lock(&self.state);
            let ctr = w.ctr.load(Ordering::Relaxed);
            let now = Instant::now();
            match st.table.get_waiter_mut(ctr, w) {
                Some(e) if !e.queued => {
                    let until = e.sent.unwrap_or(now) + grace;
                    if until > now {
                        e.expired = true;
                        return Expiry::Deferred { until };
                    }
                    // Unanswered for a whole grace: given up below.
                }
                // Queued in Redis: cancelled below.
                Some(_) => {}
                // Out of the table and not idle: completed (under this
                // lock, with its phase), its callback run or coming. A
                // grant that came before the deadline is the caller's.
                None if w.node.phase(Ordering::Acquire) != phase::IDLE => {
                    return Expiry::Deferred { until: now + grace };
                }
                None => {}
            }
        }
        // SAFETY: forwarded contract.
        Expiry::Finished(unsafe { self.finish(waiter) })
    }

    /// Releases `n` permits of the session `epoch` (`None`: whichever; lost
    /// permits are reported first). Never blocks: the handle's count is
    /// checked and lowered here, the release script runs on the door, in
    /// order with this handle's other calls. What only Redis could refuse
    /// (a session it expired behind the handle's back, which the handle's
    /// own clock makes all but impossible) gives the session up, and the
    /// holders learn it through the lease watches.
    pub(crate) fn release(&self, n: u64, epoch: Option<u64>) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let epoch = self.take_released(n, epoch)?;
        // Refused once disconnected (the door stopped after this release
        // was counted): the session's end gave the permits back.
        let _ = self.door.push(Job::Release { n, epoch });
        Ok(())
    }

    /// The local part of a release of `n > 0` permits: the refusals, the
    /// handle's count lowered. Returns the session to release them in.
    fn take_released(&self, n: u64, epoch: Option<u64>) -> Result<u64, Error> {
        if self.forked() {
            return Err(Error::Forked);
        }
        self.check_local_expiry();
        let epoch = {
            let mut st = lock(&self.state);
            // The same refusals as every other request (a release answered
            // NotHeld after a signal ended the sessions while it checked
            // its own copy of them).
            self.check_usable(&st)?;
            let cur = st.session.as_ref().map(|s| s.epoch);
            let stale = match (epoch, cur) {
                (Some(e), Some(c)) => e != c,
                (Some(_), None) => true,
                (None, _) => st.lost >= n,
            };
            if stale {
                st.lost = st.lost.saturating_sub(n);
                return Err(Error::LeaseExpired);
            }
            let Some(cur) = cur else {
                return Err(Error::NotHeld { held: 0 });
            };
            if n > st.held {
                return Err(Error::NotHeld { held: st.held });
            }
            st.held -= n;
            cur
        };
        Ok(epoch)
    }

    /// [`release`](Self::release), returning once Redis has applied it:
    /// sent as a call of the door, after the jobs queued before it (from
    /// this thread when no thread runs the handle's jobs, which saves
    /// waking the door thread). `Ok` only if Redis applied it; if it did
    /// not (a connection cut during the call, a refusal), its session was
    /// given up, and the permits go back when the session is ended:
    /// [`Error::LeaseExpired`] ([`Error::StateLost`] if Redis lost the
    /// semaphore).
    pub(crate) fn release_blocking(&self, n: u64, epoch: Option<u64>) -> Result<(), Error> {
        if n == 0 {
            return self.flush();
        }
        let epoch = self.take_released(n, epoch)?;
        call(self, move |i| i.release_checked(n, epoch))
    }

    pub(crate) fn close(&self) -> Result<(), Error> {
        call(self, |i| i.close_now())
    }

    pub(crate) fn reopen(&self) -> Result<(), Error> {
        call(self, |i| i.reopen_now())
    }

    pub(crate) fn set_total(&self, n: u64) -> Result<(), Error> {
        call(self, move |i| i.set_total_now(n))
    }

    /// The total as this handle last heard it.
    pub(crate) fn total(&self) -> u64 {
        self.total.load(Relaxed)
    }

    /// Runs `f` (which queues a blocking acquire's request) without waking
    /// the door thread, then sends the handle's queued jobs from this
    /// thread if no thread runs them now (see `door::help`).
    pub(crate) fn queue_and_help<R>(&self, f: impl FnOnce() -> R) -> R {
        let r = door::quietly(f);
        door::help(self);
        r
    }

    /// Returns once the door has run every job queued before this call.
    /// Returns once every job queued before it ran (they run in order on
    /// the door): `Ok` if each release among them was applied in Redis,
    /// else the error of the session it was given up with.
    pub(crate) fn flush(&self) -> Result<(), Error> {
        call(self, |i| {
            // Relaxed: the flag is set and taken on the door's side of
            // `call`, which orders them (one job after another).
            if i.unapplied.swap(false, Ordering::Relaxed) {
                Err(i.unapplied_error())
            } else {
                Ok(())
            }
        })
    }

    /// Why a release was not applied: its session was given up, or Redis
    /// lost the semaphore.
    pub(super) fn unapplied_error(&self) -> Error {
        if lock(&self.state).failed {
            Error::StateLost
        } else {
            Error::LeaseExpired
        }
    }

    pub(crate) fn census(&self) -> Result<Reply, Error> {
        call(self, |i| i.census_now())
    }

    pub(crate) fn inspect(&self) -> Result<Reply, Error> {
        call(self, |i| i.inspect_now())
    }

    /// Whether request `ctr` was ever issued (by this handle, in any of its
    /// sessions).
    fn issued(&self, ctr: u64) -> bool {
        lock(&self.state).table.issued(ctr)
    }

    /// Whether request `ctr` (Redis entry `eid`) is still in the table,
    /// neither finished nor cancelled.
    fn still_queued(&self, ctr: u64, eid: &str) -> bool {
        lock(&self.state).table.still_queued(ctr, eid)
    }

    /// Whether session `epoch` is lost: given up, replaced, or not renewed
    /// for a whole lease (read from the clock: true at the lease's end even
    /// while the agent is still blocked on the network).
    pub(crate) fn is_lost(&self, epoch: u64) -> bool {
        let st = lock(&self.state);
        st.failed
            || st
                .session
                .as_ref()
                .is_none_or(|s| s.epoch != epoch || s.expired(self.opts.lease))
    }

    /// Registers `w` for the loss of session `epoch` (once: a waker that
    /// would wake the same task is not added again); true if it is lost
    /// already. Registrations stay until the session is lost or the handle
    /// dropped, so a binding registers one waker per session (its own hub),
    /// not one per watch.
    pub(crate) fn register_lost_waker(&self, epoch: u64, w: &Waker) -> bool {
        let mut st = lock(&self.state);
        if st.failed
            || st
                .session
                .as_ref()
                .is_none_or(|s| s.epoch != epoch || s.expired(self.opts.lease))
        {
            return true;
        }
        if !st.lost_wakers.iter().any(|old| old.will_wake(w)) {
            st.lost_wakers.push(w.clone());
        }
        false
    }

    /// The stats' local gauges, read under the state lock (no I/O):
    /// permits the current session holds, requests of it in the Redis
    /// queue.
    pub(crate) fn gauges(&self) -> (usize, usize) {
        let st = lock(&self.state);
        (st.held as usize, st.table.queued_count())
    }

    /// Whether this is a copy of the handle in a `fork()` child.
    pub(crate) fn forked(&self) -> bool {
        process_id() != self.pid
    }

    /// Completes the waiter `ctr` of session `sid` with a grant record's
    /// value. Returns what to notify.
    fn complete(&self, sid: &str, ctr: u64, g: Grant) -> Option<Claimed> {
        let mut st = lock(&self.state);
        let cur = st.session.as_ref().filter(|s| s.sid == sid)?.epoch;
        let e = st.table.remove_of_session(ctr, cur)?;
        st.acked.push(e.eid.clone());
        let outcome = match g {
            // Failed by set_total (above the new total).
            Grant::TooMany => Finish::Failed(Error::TooManyPermits),
            Grant::Closed => {
                st.closed = true;
                Finish::Closed
            }
            Grant::Token(token) => {
                st.held += e.n;
                if let Some(r) = self.stats.recorder() {
                    r.granted_after(e.n as usize, e.since.elapsed());
                }
                Finish::Granted { token }
            }
        };
        // SAFETY: it was in the table.
        Some(unsafe { Claimed::claim(e.w, outcome) })
    }
}

impl Inner {
    /// Request `ctr`'s grant record holds `shown` (its first 40 bytes), a
    /// value no script writes there (an operator's `HSET`; heartbeat.lua
    /// answers `W`): its waiter fails with [`Error::WrongType`], and the
    /// session is given up (its other holders and waiters learn
    /// `LeaseExpired`, the agent ends it): whether Redis counts the
    /// request's permits for the session (a grant) or not (a close, a
    /// set_total) cannot be told, and only its end squares the two. Returns
    /// false, doing nothing, if the request no longer waits (its
    /// notification completed it, and the ack forgets the record; or its
    /// owner cancelled it, and the cancel script refuses the record).
    fn foreign_grant(&self, sid: &str, ctr: u64, shown: &str) -> bool {
        let (claimed, lost) = {
            let mut st = lock(&self.state);
            let Some(epoch) = st
                .session
                .as_ref()
                .filter(|s| s.sid == sid)
                .map(|s| s.epoch)
            else {
                return false;
            };
            let Some(e) = st.table.remove_of_session(ctr, epoch) else {
                return false;
            };
            let err = Error::WrongType(format!(
                "{} field {} holds {shown:?}, where volt-sem keeps a grant's token, 0 or T",
                self.keys.all()[5],
                e.eid
            ));
            // SAFETY: it was in the table.
            let claimed = unsafe { Claimed::claim(e.w, Finish::Failed(err)) };
            // Under the same lock: no notification completes it meanwhile.
            (
                claimed,
                self.lose_locked(&mut st, epoch, &Error::LeaseExpired),
            )
        };
        deliver([claimed]);
        lost.wake();
        self.kick.kick();
        true
    }

    /// The last [`Handle`] is gone: ends the session (its permits go back
    /// at once rather than at lease expiry), stops the door and lets the
    /// agent exit.
    fn shut_down(&self) {
        // A copy in a fork() child ends nothing (the sessions are the
        // parent's) and has no agent to kick; and it must take no lock the
        // parent's agent thread may have held at the fork (the kick's).
        if self.forked() {
            return;
        }
        drop(self.door.stop());
        let (sids, failed) = {
            let mut st = lock(&self.state);
            st.shutdown = true;
            let mut sids: Vec<String> = st.to_end.drain(..).collect();
            if let Some(s) = st.session.take() {
                sids.push(s.sid);
            }
            (sids, st.failed)
        };
        if !failed {
            // After a call the door (or a caller's turn) may still be making:
            // one round trip at most, bounded by the command timeout.
            if let Some(con) = lock(&self.cmd).as_mut() {
                for sid in &sids {
                    let _ = self.scripts.end(con, &self.keys, self.who(sid));
                }
            }
        }
        // Every wait and back-off of the agent ends: it exits now.
        self.kick.stop();
    }
}
