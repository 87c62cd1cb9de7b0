//! One limit across machines: a volt-sem whose state lives in Redis, shared
//! by every process on every host that connects to the same name. Strictly
//! FIFO and weighted across all clients, woken without polling, leased, and
//! fenced.
//!
//! ```no_run
//! use volt_sem_redis::{ConnectOptions, RedisSemaphore};
//! # fn main() -> Result<(), volt_sem_redis::Error> {
//! // Every client that connects to "db-pool" with 50 permits shares the same 50.
//! let sem = RedisSemaphore::connect("redis://127.0.0.1:6379", "db-pool", 50, ConnectOptions::new())?;
//! let permit = sem.acquire_blocking(2)?;
//! // Pass permit.token() to the guarded resource: it rejects smaller tokens.
//! println!("fencing token {}", permit.token());
//! drop(permit); // released
//! # Ok(()) }
//! ```
//!
//! # Client library
//!
//! [redis-rs](https://docs.rs/redis) 1.x, synchronous API only, default
//! features off (`script`, `acl`): no async runtime is forced on users or on
//! the C, Python and Node bindings, which plug their own wakers into the same
//! callback contract as volt-sem ([`RedisSemaphore::acquire_raw`]). fred was
//! the alternative; it is built on tokio and would run a runtime inside every
//! process for what two blocking connections and one thread do. redis-rs's
//! `Script` gives `EVALSHA` with the `NOSCRIPT` fallback to `EVAL`.
//!
//! # Design
//!
//! Every operation is one Lua script (atomic on the server), one round trip:
//! an uncontended acquire + release is two round trips. Every key of one
//! semaphore shares the hash tag `{prefix:name}` (prefix
//! [`ConnectOptions::prefix`], default `volt-sem`), so one semaphore lives in
//! one Redis Cluster slot:
//!
//! ```text
//!   {p:n}:meta      hash   total | avail | closed | token (last fencing token) | inc (incarnation id) | seq
//!   {p:n}:queue     zset   request id -> arrival number (FIFO order = the order Redis ran the scripts)
//!   {p:n}:entries   hash   request id -> "requested:granted so far"
//!   {p:n}:sessions  zset   session id -> lease deadline (server ms)
//!   {p:n}:held      hash   session id -> permits held
//!   {p:n}:grants    hash   request id -> token of a completed grant not yet collected ("0": closed)
//!   {p:n}:own       zset   request id (score 0): a lexicographic index of each session's requests
//!   {p:n}:note:<session>   list   notifications for that session's agent
//! ```
//!
//! A request id is `<session id>:<counter>`. Permits live in exactly one
//! place: `avail`, a session's `held` (which includes completed grants not yet
//! collected), or the partial grant of a queued request. **Conservation**:
//! `avail + Σ held + Σ partial == total` after every script; the tests check
//! it after every crash ([`RedisSemaphore::census`]).
//!
//! * **Strict FIFO, weights included, direct hand-off.** An acquire takes
//!   permits at once only if the queue is empty and enough are available;
//!   otherwise it is queued at the tail, and if it is the head it drains
//!   `avail` as a partial grant. So a queued request exists ⇒ `avail == 0`,
//!   and neither a later `acquire(1)` nor `try_acquire` can overtake a queued
//!   `acquire(4)`. A release hands its permits to the head itself: partial
//!   grants accumulate at the head until complete; the hand-off stops at a
//!   head it cannot complete; only the surplus of an emptied queue is banked.
//!   A cancel returns its partial grant through the same hand-off.
//! * **No polling, no thundering herd.** The release script completes the
//!   grants itself and pushes `"<request id> <token>"` to the notification
//!   list of exactly the sessions it completed. Each process's agent thread
//!   waits on its list with `BLPOP` on its own connection. A woken waiter
//!   already holds its permits: no second round trip. A list (rather than
//!   pub/sub or RESP3 push) keeps a notification sent while the client is
//!   reconnecting: it is read after the reconnect. Notifications are hints,
//!   the hashes are the truth: every heartbeat asks about each request still
//!   pending locally and completes those whose grant record exists, so a lost
//!   notification delays a wake by at most one heartbeat, and never loses a
//!   grant. Collected grant records are forgotten by the next heartbeat.
//! * **Sessions and leases.** Each connected handle has a session with a
//!   lease ([`ConnectOptions::lease`], default 10 s) renewed by its agent's
//!   heartbeat every lease/3 (and by every script it runs). Lease deadlines
//!   are computed with the server's clock (`TIME` inside the scripts), so
//!   client clock skew cannot break them. Every script first reaps (up to 16)
//!   sessions whose deadline passed: their held permits, uncollected grants
//!   and the partial grants of their queued requests go back through the
//!   hand-off, their requests leave the queue. No reaper process is needed;
//!   while anyone waits, its own heartbeat reaps, so **the permits of a dead
//!   client reach a waiter within lease + one heartbeat interval** (lease ×
//!   4/3). A handle dropped normally ends its session at once; so does the
//!   process's exit (an `atexit` handler) for handles never dropped (a
//!   `static`, a leak, `std::process::exit`).
//! * **Fencing tokens.** Every grant gets `max(previous + 1, server time in
//!   µs)`: strictly increasing per semaphore, and still increasing after a
//!   failover that lost the last stored token (as long as the new primary's
//!   clock is not behind). [`Permit::token`], [`RedisWaiter::token`].
//! * **Lease loss is visible.** A session is lost when a script reports it
//!   expired, or when the handle has not renewed it for a whole lease (a
//!   `SIGSTOP`, a long GC pause, Redis out of reach): then every waiter of the
//!   handle fails with [`Error::LeaseExpired`], each [`Permit`] of it reports
//!   [`Permit::is_lost`] and completes [`Permit::lost`], and releasing those
//!   permits returns [`Error::LeaseExpired`] and releases nothing (they were
//!   already reclaimed; nothing is released twice). The next acquire starts
//!   a new session transparently.
//! * **Uncertain outcomes.** If the connection fails while a mutating script
//!   was in flight, the session is given up (ended when Redis is reachable
//!   again, else it expires): a retry can never count a permit twice.
//! * **Incarnation.** The semaphore's `meta` carries a random incarnation id
//!   chosen by its creator; every script checks it. A Redis restarted empty
//!   (or flushed) has none: the handle fails its holders and waiters with
//!   [`Error::StateLost`] and refuses to go on, rather than re-create the
//!   semaphore with all permits free while old holders still run.
//! * `connect` with a total different from the existing semaphore's fails
//!   with [`Error::TotalMismatch`] and changes nothing.
//!
//! ## Cost of each script (n = queue length)
//!
//! | script | cost |
//! | --- | --- |
//! | acquire / try_acquire | O(log n) |
//! | release | O((g + 1) log n), g = waiters it completes (each is woken: inherent) |
//! | cancel | O(log n) + the hand-off of its partial grant |
//! | heartbeat | O((a + q) log n), a grants acked, q requests of this client queried |
//! | reap of one dead session | O((k + 1) log n), k its requests; ≤ 16 sessions per script |
//! | close | O(n log n): it wakes everyone |
//! | census (diagnostics) | O(n + sessions) |
//!
//! ## What is guaranteed, and what is not
//!
//! Guaranteed while leases hold and Redis does not lose acknowledged writes:
//! at most `total` permits are held, grants are strictly FIFO across every
//! client, and the permits of a crashed or partitioned client come back
//! within lease + one heartbeat interval.
//!
//! Not guaranteed: **a paused holder past its lease** still believes it holds
//! its permits until its agent runs again; meanwhile they were granted to
//! someone else. This is inherent to leases; the fencing token is the
//! defence: a guarded resource that remembers the largest token it saw
//! rejects the paused holder's smaller one. **A failover with asynchronous
//! replication** may lose the last writes (grants, releases): a replica
//! promoted without them may grant permits again. Redis `WAIT` (waiting for
//! replicas to acknowledge each script's writes) narrows that window but is
//! not consensus; this version does not issue it yet (planned as an option).
//!
//! # Redis Cluster
//!
//! [`ConnectOptions::cluster`]: `connect` then takes one or more seed node
//! URLs separated by commas. All keys of one semaphore share its hash tag,
//! so one semaphore lives on one node (the scripts, and the `BLPOP` on a
//! notification list, go to the node that owns the slot); different
//! semaphores spread over the nodes. The scripts are sent with `EVALSHA`
//! and, on `NOSCRIPT`, with `EVAL` (routed by key), never with a
//! `SCRIPT LOAD` that might reach another node.
//!
//! # Connections and threads
//!
//! Two connections per connected handle (clones share them): one command
//! connection for the calling threads, one for the agent thread (`BLPOP` and
//! the heartbeat). One agent thread per connected handle; it holds no strong
//! reference to the handle and never keeps the process alive. `connect`
//! talks to Redis at once: unreachable, wrong password or a malformed URL is
//! an error from `connect` within [`ConnectOptions::connect_timeout`].
//! Passwords never appear in errors or `Debug` output.

#![warn(missing_docs)]

mod conn;
mod error;
#[doc(hidden)]
pub mod scripts;
mod session;
mod waiter;

use core::ffi::c_void;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use error::Error;
pub use volt_sem::{RawAcquire, WakeFn};
pub use waiter::{Finish, RedisWaiter, RedisWaiterState};

use session::Inner;

/// The longest semaphore name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// The longest key prefix, in bytes.
pub const MAX_PREFIX_LEN: usize = 256;
/// The largest total (Lua numbers are doubles: exact integers up to 2^53;
/// this leaves room for sums).
pub const MAX_PERMITS: usize = 1 << 40;

/// Options of [`RedisSemaphore::connect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    pub(crate) lease: Duration,
    pub(crate) prefix: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) cluster: bool,
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
        }
    }
    /// The session lease (at least 300 ms): a client not heard of for that
    /// long loses its permits and queue places.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
    /// The key prefix (for several tenants on one Redis).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.into();
        self
    }
    /// How long `connect` (and a reconnect) may take.
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
    /// How long one script call may take before the connection counts as failed.
    pub fn command_timeout(mut self, t: Duration) -> Self {
        self.command_timeout = t;
        self
    }
}

/// Checks a semaphore name: 1 to [`MAX_NAME_LEN`] bytes, no `{` or `}`.
pub fn validate_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.contains(['{', '}']) {
        return Err(Error::InvalidName);
    }
    Ok(())
}

/// Conservation sums read in one script (tests, diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// The total.
    pub total: u64,
    /// Permits free.
    pub available: u64,
    /// Permits held by live sessions (granted ones included).
    pub held: u64,
    /// Partial grants of queued requests.
    pub partial: u64,
    /// Requests queued.
    pub queued: u64,
    /// Live sessions.
    pub sessions: u64,
    /// Whether closed.
    pub closed: bool,
    /// The last fencing token issued.
    pub last_token: u64,
}

impl Census {
    /// `available + held + partial == total`.
    pub fn conserved(&self) -> bool {
        self.available + self.held + self.partial == self.total
    }
}

/// A handle on a semaphore stored in Redis. Cheap to clone; clones share one
/// session, two connections and one agent thread. When the last clone is
/// dropped, the session ends and whatever it still holds goes back.
#[derive(Clone)]
pub struct RedisSemaphore {
    inner: Arc<Inner>,
}

impl core::fmt::Debug for RedisSemaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the URL: it may carry a password.
        f.debug_struct("RedisSemaphore")
            .field("name", &self.inner.name)
            .field("prefix", &self.inner.opts.prefix)
            .field("total", &self.inner.total)
            .finish_non_exhaustive()
    }
}

impl RedisSemaphore {
    /// Connects to the semaphore `name` with `permits` in total, creating it
    /// if it does not exist. `url`: `redis://[user:password@]host[:port][/db]`
    /// or `unix:///path`. Talks to Redis at once.
    ///
    /// Errors: [`Error::InvalidUrl`], [`Error::InvalidName`],
    /// [`Error::InvalidPrefix`], [`Error::InvalidPermits`],
    /// [`Error::InvalidOption`], [`Error::Auth`], [`Error::Connection`]
    /// (within the connect timeout), [`Error::TotalMismatch`].
    pub fn connect(
        url: &str,
        name: &str,
        permits: usize,
        options: ConnectOptions,
    ) -> Result<Self, Error> {
        validate_name(name)?;
        let p = &options.prefix;
        if p.is_empty() || p.len() > MAX_PREFIX_LEN || p.contains(['{', '}']) {
            return Err(Error::InvalidPrefix);
        }
        if permits == 0 || permits > MAX_PERMITS {
            return Err(Error::InvalidPermits);
        }
        if options.lease < Duration::from_millis(300) {
            return Err(Error::InvalidOption("lease must be at least 300 ms"));
        }
        if options.connect_timeout.is_zero() || options.command_timeout.is_zero() {
            return Err(Error::InvalidOption("timeouts must be positive"));
        }
        let inner = Inner::connect(url, name, permits as u64, options)?;
        Ok(RedisSemaphore { inner })
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The total number of permits.
    pub fn total_permits(&self) -> usize {
        self.inner.total as usize
    }

    /// Permits held by this handle's current session, as it counts them.
    pub fn held_permits(&self) -> usize {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .held as usize
    }

    /// Whether this handle saw the semaphore closed.
    pub fn is_closed(&self) -> bool {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed
    }

    /// Takes `n` permits if they are available now and nobody is queued.
    pub fn try_acquire(&self, n: usize) -> Result<Permit, Error> {
        if n == 0 {
            return Ok(self.permit(0, 0, 0));
        }
        // SAFETY: no waiter.
        let (_, token, epoch) = unsafe { self.inner.acquire(None, n as u64) }?;
        Ok(self.permit(n, token, epoch))
    }

    fn permit(&self, n: usize, token: u64, epoch: u64) -> Permit {
        Permit {
            sem: self.clone(),
            n,
            token,
            epoch,
        }
    }

    /// Acquires `n` permits, blocking this thread until they are granted in
    /// FIFO order across every client, or the semaphore is closed, or the
    /// session is lost.
    pub fn acquire_blocking(&self, n: usize) -> Result<Permit, Error> {
        self.acquire_deadline(n, None)
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), giving up after
    /// `timeout` with [`Error::TimedOut`]; a partial grant is handed on.
    pub fn acquire_timeout(&self, n: usize, timeout: Duration) -> Result<Permit, Error> {
        self.acquire_deadline(n, Instant::now().checked_add(timeout))
    }

    fn acquire_deadline(&self, n: usize, deadline: Option<Instant>) -> Result<Permit, Error> {
        if n == 0 {
            return Ok(self.permit(0, 0, 0));
        }
        if waiter::CURRENT.with(|c| !c.get().is_null()) {
            return Err(Error::InCallback);
        }
        let park = Arc::new(Parker::default());
        let w = Box::pin(RedisWaiter::new());
        // SAFETY: the waiter is boxed (pinned) and `park` lives in this frame
        // until finish_raw returned below.
        let r =
            unsafe { self.acquire_raw(w.as_ref(), n, unpark, Arc::as_ptr(&park) as *mut c_void) }?;
        let epoch = w.epoch.load(core::sync::atomic::Ordering::Relaxed);
        if r == RawAcquire::Ready {
            return Ok(self.permit(n, w.token(), epoch));
        }
        park.wait(deadline, || w.state() != RedisWaiterState::Waiting);
        // SAFETY: queued on this handle; `park` still alive.
        match unsafe { self.finish_raw(w.as_ref()) } {
            Finish::Granted { token } => Ok(self.permit(n, token, epoch)),
            Finish::Cancelled { .. } => Err(Error::TimedOut),
            Finish::Closed => Err(Error::Closed),
            Finish::Failed(e) => Err(e),
            Finish::Idle => Err(Error::Protocol("waiter idle after wait".into())),
        }
    }

    /// Acquires `n` permits asynchronously (any executor). Cancel-safe:
    /// dropping the future before it completes hands any partial grant on.
    pub fn acquire(&self, n: usize) -> Acquire<'_> {
        Acquire {
            sem: self,
            n,
            wait: None,
            done: false,
        }
    }

    /// Gives back `n` permits this handle holds, outside of a [`Permit`]
    /// (after [`Permit::forget`]). [`Error::NotHeld`] if it holds fewer
    /// (nothing released); [`Error::LeaseExpired`] if permits were lost with
    /// a session and not yet reported (those are counted first).
    pub fn release(&self, n: usize) -> Result<(), Error> {
        self.inner.release(n as u64, None)
    }

    /// Closes the semaphore for every client: every queued request, on every
    /// host, fails with [`Error::Closed`] (partial grants go back), and every
    /// later acquire fails. Held permits can still be released.
    pub fn close(&self) -> Result<(), Error> {
        self.inner.close()
    }

    /// The conservation sums, read in one script after a reap.
    pub fn census(&self) -> Result<Census, Error> {
        let r = self.inner.census()?;
        Ok(Census {
            total: r.int(0)?,
            available: r.int(1)?,
            held: r.int(2)?,
            partial: r.int(3)?,
            queued: r.int(4)?,
            sessions: r.int(5)?,
            closed: r.int(6)? == 1,
            last_token: r.int(7)?,
        })
    }

    /// Queues an acquire of `n` permits that completes by calling
    /// `wake(ctx)` (volt-sem's waker contract), on the agent thread or on a
    /// thread that found the session lost. One round trip on this thread.
    ///
    /// `Ready`: taken at once, [`RedisWaiter::token`] has the token, no
    /// callback. `Pending`: queued; the callback runs once, when the grant is
    /// complete, the semaphore closed or the session lost (possibly before
    /// this returns); then pass the waiter to [`finish_raw`](Self::finish_raw).
    ///
    /// # Safety
    /// * `waiter` is not busy ([`RedisWaiter::is_busy`]).
    /// * After `Pending`, `waiter` stays valid (and pinned) and `ctx` valid for
    ///   `wake`, until `finish_raw` returned.
    /// * `wake(ctx)` may be called on another thread; it must not unwind.
    pub unsafe fn acquire_raw(
        &self,
        waiter: Pin<&RedisWaiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, Error> {
        debug_assert!(!waiter.is_busy(), "acquire_raw on a busy waiter");
        if n == 0 {
            return if self.is_closed() {
                Err(Error::Closed)
            } else {
                Ok(RawAcquire::Ready)
            };
        }
        waiter.sem.store(
            Arc::as_ptr(&self.inner) as *mut (),
            core::sync::atomic::Ordering::Relaxed,
        );
        // SAFETY: forwarded contract.
        unsafe { self.inner.acquire(Some((waiter, wake, ctx)), n as u64) }.map(|r| r.0)
    }

    /// Ends a raw request: cancels it if still queued (its partial grant is
    /// handed on: `Cancelled`), or collects its outcome (`Granted`: this
    /// handle now holds the permits; `Closed`; `Failed`). When it returns,
    /// the callback has returned or never will. From inside the waiter's own
    /// callback it returns at once.
    ///
    /// # Safety
    /// `waiter` is idle or was last queued through this handle (or a clone):
    /// [`owns`](Self::owns) checks it.
    pub unsafe fn finish_raw(&self, waiter: Pin<&RedisWaiter>) -> Finish {
        // SAFETY: forwarded contract.
        unsafe { self.inner.finish(waiter) }
    }

    /// Whether `waiter` was last queued through this handle or a clone.
    pub fn owns(&self, waiter: &RedisWaiter) -> bool {
        core::ptr::eq(
            waiter.sem.load(core::sync::atomic::Ordering::Relaxed),
            Arc::as_ptr(&self.inner) as *mut (),
        )
    }
}

/// Blocking acquires park on this; the wake callback unparks.
#[derive(Default)]
struct Parker {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Parker {
    fn wait(&self, deadline: Option<Instant>, done: impl Fn() -> bool) {
        let mut g = self.woken.lock().unwrap_or_else(|e| e.into_inner());
        while !*g && !done() {
            match deadline {
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return;
                    }
                    g = self
                        .cv
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

unsafe extern "C" fn unpark(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `Parker` kept alive by the blocked thread until
    // finish_raw returned.
    let p = unsafe { &*(ctx as *const Parker) };
    *p.woken.lock().unwrap_or_else(|e| e.into_inner()) = true;
    p.cv.notify_all();
}

/// Permits held through a [`RedisSemaphore`]; released on drop.
#[must_use = "dropping a Permit releases it at once"]
pub struct Permit {
    sem: RedisSemaphore,
    n: usize,
    token: u64,
    epoch: u64,
}

impl core::fmt::Debug for Permit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Permit")
            .field("permits", &self.n)
            .field("token", &self.token)
            .finish()
    }
}

impl Permit {
    /// How many permits.
    pub fn permits(&self) -> usize {
        self.n
    }
    /// The grant's fencing token (strictly increasing per grant of the
    /// semaphore; 0 for a permit of 0).
    pub fn token(&self) -> u64 {
        self.token
    }
    /// Whether the session that holds these permits was lost (they were
    /// reclaimed; the holder must stop using the resource).
    pub fn is_lost(&self) -> bool {
        self.n > 0 && self.sem.inner.is_lost(self.epoch)
    }
    /// Completes when the session that holds these permits is lost.
    pub fn lost(&self) -> LeaseLost<'_> {
        LeaseLost { permit: self }
    }
    /// Releases now, reporting what happened: [`Error::LeaseExpired`] if the
    /// session was lost (nothing is released twice).
    pub fn release(mut self) -> Result<(), Error> {
        let n = std::mem::take(&mut self.n);
        self.sem.inner.release(n as u64, Some(self.epoch))
    }
    /// Keeps the permits held without a guard (release them with
    /// [`RedisSemaphore::release`]).
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.n > 0 {
            let _ = self.sem.inner.release(self.n as u64, Some(self.epoch));
        }
    }
}

/// The future of [`Permit::lost`].
#[must_use = "futures do nothing unless polled"]
pub struct LeaseLost<'a> {
    permit: &'a Permit,
}

impl Future for LeaseLost<'_> {
    type Output = Error;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Error> {
        let p = self.permit;
        if p.n > 0 && p.sem.inner.register_lost_waker(p.epoch, cx.waker()) {
            let failed = p
                .sem
                .inner
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .failed;
            Poll::Ready(if failed {
                Error::StateLost
            } else {
                Error::LeaseExpired
            })
        } else {
            Poll::Pending
        }
    }
}

/// The future of [`RedisSemaphore::acquire`].
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a> {
    sem: &'a RedisSemaphore,
    n: usize,
    wait: Option<(Arc<AsyncWait>, u64)>,
    done: bool,
}

impl core::fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Acquire")
            .field("n", &self.n)
            .field("queued", &self.wait.is_some())
            .finish()
    }
}

struct AsyncWait {
    waiter: RedisWaiter,
    waker: Mutex<Option<Waker>>,
}

unsafe extern "C" fn wake_task(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `AsyncWait` kept alive by the future until
    // finish_raw returned.
    let w = unsafe { &*(ctx as *const AsyncWait) };
    let waker = w.waker.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl Future for Acquire<'_> {
    type Output = Result<Permit, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        assert!(!self.done, "`Acquire` polled after it completed");
        let this = &mut *self;
        if this.n == 0 {
            this.done = true;
            return Poll::Ready(Ok(this.sem.permit(0, 0, 0)));
        }
        match &this.wait {
            None => {
                let w = Arc::new(AsyncWait {
                    waiter: RedisWaiter::new(),
                    waker: Mutex::new(Some(cx.waker().clone())),
                });
                // SAFETY: the Arc's contents never move; the Arc is kept (in
                // `wait`) until finish_raw returned (poll or drop).
                let r = unsafe {
                    this.sem.acquire_raw(
                        Pin::new_unchecked(&w.waiter),
                        this.n,
                        wake_task,
                        Arc::as_ptr(&w) as *mut c_void,
                    )
                };
                match r {
                    Ok(RawAcquire::Pending) => {
                        let epoch = w.waiter.epoch.load(core::sync::atomic::Ordering::Relaxed);
                        this.wait = Some((w, epoch));
                        Poll::Pending
                    }
                    Ok(RawAcquire::Ready) => {
                        this.done = true;
                        let epoch = w.waiter.epoch.load(core::sync::atomic::Ordering::Relaxed);
                        Poll::Ready(Ok(this.sem.permit(this.n, w.waiter.token(), epoch)))
                    }
                    Err(e) => {
                        this.done = true;
                        Poll::Ready(Err(e))
                    }
                }
            }
            Some((w, _)) => {
                *w.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
                if w.waiter.state() == RedisWaiterState::Waiting {
                    return Poll::Pending;
                }
                let (w, epoch) = this.wait.take().expect("checked");
                // SAFETY: queued on this handle above.
                let f = unsafe { this.sem.finish_raw(Pin::new_unchecked(&w.waiter)) };
                this.done = true;
                Poll::Ready(match f {
                    Finish::Granted { token } => Ok(this.sem.permit(this.n, token, epoch)),
                    Finish::Closed => Err(Error::Closed),
                    Finish::Failed(e) => Err(e),
                    Finish::Cancelled { .. } | Finish::Idle => {
                        Err(Error::Protocol("request vanished".into()))
                    }
                })
            }
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        if let Some((w, epoch)) = self.wait.take() {
            // SAFETY: queued on this handle; `w` lives until after finish_raw.
            let f = unsafe { self.sem.finish_raw(Pin::new_unchecked(&w.waiter)) };
            if let Finish::Granted { .. } = f {
                // Granted after the last poll: the caller never saw it.
                let _ = self.sem.inner.release(self.n as u64, Some(epoch));
            }
        }
    }
}
