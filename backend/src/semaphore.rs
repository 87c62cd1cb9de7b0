//! The type-erased semaphore: one enum, one `match` per operation.

use core::ffi::c_void;
use core::pin::Pin;
use std::time::Duration;

use volt_sem::inspect::Inspection;
use volt_sem::raw::RawSemaphore;
use volt_sem::stats::Stats;
use volt_sem::{RawAcquire, WakeFn};
#[cfg(feature = "redis")]
use volt_sem_redis::{ConnectOptions, LeaseWatch, RedisSemaphore};
use volt_sem_shm::{OpenOptions, SharedSemaphore};

use crate::error::Error;
use crate::outcome::{Expiry, Finish, Grant};
use crate::session::SharedHandle;
use crate::waiter::{kind, Waiter};

/// Which backend a [`Semaphore`] runs on.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// In this process's memory ([`volt_sem::Semaphore`]).
    Local,
    /// A named segment shared by the processes of this machine
    /// ([`volt_sem_shm::SharedSemaphore`]).
    Shared,
    /// A semaphore stored in Redis, shared by every client on every host
    /// (`volt_sem_redis::RedisSemaphore`; the `redis` feature).
    Redis,
}

/// A semaphore of any backend, with the API the bindings need: `try`, raw
/// waiters (callback + context), blocking, close.
///
/// The local semaphore is held inline (not behind another `Arc`): a binding
/// keeps this type in its own reference-counted handle, exactly as it kept a
/// `volt_sem::Semaphore`, so the local path costs one `match` more than before
/// and no extra pointer.
#[non_exhaustive]
pub enum Semaphore {
    /// The in-process semaphore.
    Local(volt_sem::Semaphore),
    /// A named semaphore shared across processes (a cheap handle: clones share
    /// one attachment per process and name), with this handle's session
    /// ([`disconnect`](Semaphore::disconnect)).
    Shared(SharedHandle),
    /// A semaphore stored in Redis (a cheap handle: clones share one session,
    /// its connections and its agent thread).
    #[cfg(feature = "redis")]
    Redis(RedisSemaphore),
}

impl core::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Semaphore::Local(s) => f.debug_tuple("Local").field(s).finish(),
            Semaphore::Shared(s) => f.debug_tuple("Shared").field(s).finish(),
            // The handle's Debug never shows the URL (it may hold a password).
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => f.debug_tuple("Redis").field(s).finish(),
        }
    }
}

impl From<volt_sem::Semaphore> for Semaphore {
    fn from(s: volt_sem::Semaphore) -> Self {
        Semaphore::Local(s)
    }
}

impl From<SharedSemaphore> for Semaphore {
    fn from(s: SharedSemaphore) -> Self {
        Semaphore::Shared(s.into())
    }
}

#[cfg(feature = "redis")]
impl From<RedisSemaphore> for Semaphore {
    fn from(s: RedisSemaphore) -> Self {
        Semaphore::Redis(s)
    }
}

/// Removes the shared semaphore's name (processes attached keep using it; the
/// next `open` of the name creates a new one). [`Error::NotFound`] if no
/// semaphore has this name.
pub fn unlink(name: &str) -> Result<(), Error> {
    volt_sem_shm::unlink(name).map_err(Error::from)
}

/// Deletes the Redis semaphore `name` ([`volt_sem_redis::delete`]): refused
/// with [`Error::InUse`] while it has a live session, [`Error::NotFound`]
/// if there is none.
#[cfg(feature = "redis")]
pub fn delete_redis(url: &str, name: &str, options: ConnectOptions) -> Result<(), Error> {
    volt_sem_redis::delete(url, name, options).map_err(Error::from)
}

impl Semaphore {
    /// The largest request (and local permit count): [`volt_sem::Semaphore::MAX_PERMITS`].
    /// A shared semaphore's requests are further bounded by its total.
    pub const MAX_PERMITS: usize = volt_sem::Semaphore::MAX_PERMITS;

    /// A local semaphore with `permits` permits; `None` above `MAX_PERMITS`.
    /// Records [`stats`](Self::stats) from the start, as every handle this
    /// seam makes does (the bindings' handles).
    pub fn local(permits: usize) -> Option<Self> {
        let s = volt_sem::Semaphore::try_new(permits)?;
        s.enable_stats();
        Some(Semaphore::Local(s))
    }

    /// Opens (or creates, see [`OpenOptions`]) the named semaphore `name` with
    /// `permits` permits in total, shared by every process of this machine
    /// that opens the same name. A name that exists with another total is
    /// `TotalMismatch`, unless `OpenOptions::resize(true)` changes its total
    /// (as [`set_total`](Self::set_total) does). See [`volt_sem_shm`] for
    /// the segment, the crash safety and the limits.
    pub fn open(name: &str, permits: usize, options: OpenOptions) -> Result<Self, Error> {
        let s = SharedSemaphore::open(name, permits, options)?;
        s.enable_stats();
        Ok(Semaphore::Shared(s.into()))
    }

    /// Connects to the semaphore `name` stored in the Redis at `url`, with
    /// `permits` in total, creating it if it does not exist; every client on
    /// every host that connects to the same Redis, prefix and name shares the
    /// same permits. Talks to Redis at once. The handle has a session of its
    /// own (`ConnectOptions::own_session`; clones share it). Another total
    /// than the stored one is `TotalMismatch`, unless
    /// `ConnectOptions::resize(true)` changes it. See
    /// `volt_sem_redis` for the URL forms, the sessions and leases, and the
    /// guarantees.
    #[cfg(feature = "redis")]
    pub fn connect(
        url: &str,
        name: &str,
        permits: usize,
        options: ConnectOptions,
    ) -> Result<Self, Error> {
        // Its own session: a binding's object counts what it holds, and what
        // a dropped object held must go back with it (a session shared with
        // another object of the process would keep it).
        let s = RedisSemaphore::connect(url, name, permits, options.own_session(true))?;
        s.enable_stats();
        Ok(Semaphore::Redis(s))
    }

    /// A named handle that counts the permits granted through it and not
    /// released through it, so that [`disconnect`](Self::disconnect) gives
    /// them back: every binding's named handles (C, Python, Node: one rule,
    /// "disconnect this handle: what it holds goes back, its waiters
    /// fail"). Call it on a new handle, before its first acquire. Other
    /// backends: unchanged (a Redis session counts its own; a local
    /// semaphore has no session).
    ///
    /// Without it, a named handle's `disconnect` gives nothing back (the
    /// process's permits go back with its last handle of the name). A
    /// binding should not count beside it and release that count itself: a
    /// release on another thread racing it would give the same permits back
    /// twice. The count costs one atomic read-modify-write per acquire and
    /// one per release.
    pub fn counting_held(mut self) -> Self {
        if let Semaphore::Shared(s) = &mut self {
            s.count_held();
        }
        self
    }

    /// Which backend this is.
    #[inline]
    pub fn kind(&self) -> Kind {
        match self {
            Semaphore::Local(_) => Kind::Local,
            Semaphore::Shared(_) => Kind::Shared,
            #[cfg(feature = "redis")]
            Semaphore::Redis(_) => Kind::Redis,
        }
    }

    /// The Redis semaphore, if this is one (its census, its tokens, its
    /// session).
    #[cfg(feature = "redis")]
    #[inline]
    pub fn as_redis(&self) -> Option<&RedisSemaphore> {
        match self {
            Semaphore::Redis(s) => Some(s),
            _ => None,
        }
    }

    /// A watch on the Redis session that holds a grant (`Grant::session`,
    /// [`Waiter::session`]): a future that completes with
    /// [`Error::LeaseExpired`] or [`Error::StateLost`] when the permits of
    /// that grant are lost. `None` for the other backends (their grants
    /// cannot be lost).
    #[cfg(feature = "redis")]
    pub fn lease_watch(&self, session: u64) -> Option<LeaseWatch> {
        match self {
            Semaphore::Redis(s) => Some(s.lease_watch(session)),
            _ => None,
        }
    }

    /// The local semaphore, if this is one (e.g. for its state word).
    #[inline]
    pub fn as_local(&self) -> Option<&volt_sem::Semaphore> {
        match self {
            Semaphore::Local(s) => Some(s),
            _ => None,
        }
    }

    /// The shared semaphore, if this is one.
    #[inline]
    pub fn as_shared(&self) -> Option<&SharedSemaphore> {
        match self {
            Semaphore::Shared(s) => Some(s.shared()),
            _ => None,
        }
    }

    /// Takes `n` permits if they are available now and nobody is queued (no
    /// barging, in any process). `n == 0` succeeds unless closed. The caller
    /// then holds them and gives them back with [`release`](Self::release).
    /// Redis: one round trip (on the handle's door thread, or on this one
    /// when the door is idle): the one call of this seam's acquire side that blocks on the
    /// network (with `acquire_blocking`/`acquire_timeout`, which block by
    /// definition, and `close`, `available_permits`).
    #[inline]
    pub fn try_acquire(&self, n: usize) -> Result<Grant, Error> {
        match self {
            Semaphore::Local(s) => {
                s.try_acquire(n)?.forget();
                Ok(Grant::UNFENCED)
            }
            Semaphore::Shared(s) => {
                s.live()?;
                s.try_acquire(n)?.forget();
                s.granted(n)?;
                Ok(Grant::UNFENCED)
            }
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => Ok(redis_grant(s.try_acquire(n).map_err(|e| redis_err(s, e))?)),
        }
    }

    /// Gives back `n` permits: to the oldest waiters first (in any process),
    /// the surplus to the counter. Works after `close`.
    ///
    /// Local: [`Error::Overflow`] when the counter would exceed `MAX_PERMITS`.
    /// Shared: [`Error::NotHeld`] when this process holds fewer than `n` (each
    /// process returns its own permits; see the shm crate's accounting).
    /// Redis: [`Error::NotHeld`] when this handle's session holds fewer;
    /// [`Error::LeaseExpired`] when permits were lost with an expired session
    /// (they are not released twice). Never blocks: the release reaches
    /// Redis right after, from the handle's door thread, before the
    /// handle's later calls.
    #[inline]
    pub fn release(&self, n: usize) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => Ok(s.release(n)?),
            Semaphore::Shared(s) => s.release(n),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.release(n).map_err(|e| redis_err(s, e)),
        }
    }

    /// Acquires `n` permits, blocking this thread until they are granted in
    /// FIFO order or the semaphore is closed (Redis: or the session is lost).
    pub fn acquire_blocking(&self, n: usize) -> Result<Grant, Error> {
        match self {
            Semaphore::Local(s) => {
                s.acquire_blocking(n)?.forget();
                Ok(Grant::UNFENCED)
            }
            Semaphore::Shared(s) => shared_wait(s, n, None),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => Ok(redis_grant(
                s.acquire_blocking(n).map_err(|e| redis_err(s, e))?,
            )),
        }
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), giving up after
    /// `timeout` with [`Error::TimedOut`] (any partial grant is handed on).
    pub fn acquire_timeout(&self, n: usize, timeout: Duration) -> Result<Grant, Error> {
        match self {
            Semaphore::Local(s) => {
                s.acquire_timeout(n, timeout)?.forget();
                Ok(Grant::UNFENCED)
            }
            Semaphore::Shared(s) => shared_wait(s, n, Some(timeout)),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => Ok(redis_grant(
                s.acquire_timeout(n, timeout).map_err(|e| redis_err(s, e))?,
            )),
        }
    }

    /// A named semaphore's blocking acquire that also calls `interrupted()`
    /// on this thread about every `poll` while it waits (a binding's signal
    /// checks): `true` gives the wait up, its FIFO place kept until then (a
    /// partial grant handed on), and the result is `Ok(false)`. `Ok(true)`:
    /// granted (also when the grant came before the interruption was
    /// honoured). As [`acquire_timeout`](Self::acquire_timeout) otherwise
    /// (`None`: no timeout; [`Error::TimedOut`] at the deadline), and
    /// [`disconnect`](Self::disconnect) ends it at once
    /// ([`Error::Disconnected`]). The other backends: [`Error::Unsupported`]
    /// (a binding waits on their raw requests, see [`RawSemaphore`]).
    pub fn acquire_blocking_interruptible(
        &self,
        n: usize,
        timeout: Option<Duration>,
        poll: Duration,
        mut interrupted: impl FnMut() -> bool,
    ) -> Result<bool, Error> {
        match self {
            Semaphore::Shared(s) => {
                shared_wait_polled(s, n, timeout, Some((poll, &mut interrupted)))
            }
            _ => Err(Error::Unsupported),
        }
    }

    /// Closes the semaphore: every queued request (in every process, for a
    /// shared one) completes as closed, later acquires fail. Held permits can
    /// still be released. Idempotent.
    pub fn close(&self) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => {
                s.close();
                Ok(())
            }
            Semaphore::Shared(s) => {
                s.live()?;
                Ok(s.close()?)
            }
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.close().map_err(|e| redis_err(s, e)),
        }
    }

    /// Whether the semaphore was closed (by anyone).
    #[inline]
    pub fn is_closed(&self) -> bool {
        match self {
            Semaphore::Local(s) => s.is_closed(),
            Semaphore::Shared(s) => s.is_closed(),
            // What this handle has seen (no round trip): a close by another
            // client shows once one of this handle's requests met it.
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.is_closed(),
        }
    }

    /// Permits available right now (0 while anyone is queued). A snapshot.
    /// Redis: one round trip (a census script); 0 if Redis cannot be reached.
    #[inline]
    pub fn available_permits(&self) -> usize {
        match self {
            Semaphore::Local(s) => s.available_permits(),
            Semaphore::Shared(s) => s.available_permits(),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.census().map_or(0, |c| c.available as usize),
        }
    }

    /// Who holds the permits and who waits, in queue order: see
    /// [`volt_sem::inspect`]. Local: this process and its queue (never
    /// fails); shared: every process of the machine, after reclaiming what
    /// dead ones held; Redis: every client, after reaping expired sessions
    /// (one round trip, on the handle's door: this thread waits for it).
    pub fn inspect(&self) -> Result<Inspection, Error> {
        match self {
            Semaphore::Local(s) => Ok(s.inspect()),
            Semaphore::Shared(s) => {
                s.live()?;
                Ok(s.inspect()?)
            }
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.inspect().map_err(|e| redis_err(s, e)),
        }
    }

    /// This handle's metrics ([`volt_sem::stats`]): counters since the
    /// handle was made (every constructor of this seam turns recording on),
    /// gauges now. Never blocks and never does I/O (Redis: `available` is
    /// what this handle last saw in a reply, `held` and `queued` are its
    /// own, known locally; the counters are its session's). Shared: the
    /// counters are this process's for the name (handles of one name in one
    /// process share them).
    pub fn stats(&self) -> Stats {
        match self {
            Semaphore::Local(s) => s.stats(),
            Semaphore::Shared(s) => s.stats(),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.stats(),
        }
    }

    /// Records that one of this handle's requests timed out: a binding that
    /// times its own waits calls it after cancelling the request (the
    /// cancel itself is counted by `finish_raw`).
    pub fn record_timeout(&self) {
        match self {
            Semaphore::Local(s) => s.record_timeout(),
            Semaphore::Shared(s) => s.record_timeout(),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.record_timeout(),
        }
    }

    /// Changes the total of a shared or Redis semaphore to `n` permits, for
    /// every process or client (`SharedSemaphore::set_total`,
    /// `RedisSemaphore::set_total`): growing serves the queue at once in
    /// FIFO order; shrinking revokes nothing (the cut is a debt paid by later
    /// releases); queued requests for more than `n` fail with
    /// `TooManyPermits`. `n` is 1 to the backend's maximum, else
    /// [`Error::InvalidPermits`]. Redis: one round trip, on the handle's
    /// door (this thread waits for it). A local semaphore has no total to
    /// change: [`Error::Unsupported`] (a binding says the call is for named
    /// and Redis semaphores).
    pub fn set_total(&self, n: usize) -> Result<(), Error> {
        match self {
            Semaphore::Local(_) => Err(Error::Unsupported),
            Semaphore::Shared(s) => {
                s.live()?;
                Ok(s.set_total(n)?)
            }
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.set_total(n).map_err(|e| redis_err(s, e)),
        }
    }

    /// Undoes [`close`](Self::close) of a shared or Redis semaphore, for
    /// every process or client; requests the close failed stay failed, and
    /// a semaphore that is not closed is left as it is. Redis: one round
    /// trip, on the handle's door. Local: [`Error::Unsupported`] (a local
    /// close is final: its waiters and guards rely on it).
    pub fn reopen(&self) -> Result<(), Error> {
        match self {
            Semaphore::Local(_) => Err(Error::Unsupported),
            Semaphore::Shared(s) => {
                s.live()?;
                Ok(s.reopen()?)
            }
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.reopen().map_err(|e| redis_err(s, e)),
        }
    }

    /// Ends this handle's session on a named or Redis semaphore, leaving the
    /// semaphore open for everyone else (`close` closes it for everyone):
    ///
    /// * its queued raw requests ([`acquire_raw`](RawSemaphore::acquire_raw))
    ///   end: their callbacks run (named: on the doorbell thread; Redis: on
    ///   the session's threads, before this returns) and their owners'
    ///   [`finish_raw`](RawSemaphore::finish_raw) report
    ///   `Finish::Failed(Error::Disconnected)`; a grant that landed before the
    ///   disconnect and is collected after it is given back and reported the
    ///   same way. Its blocking acquires fail with [`Error::Disconnected`]
    ///   at once (a partial grant of a named one handed on);
    /// * what it holds goes back, to the next waiters: named, if the handle
    ///   was made [`counting_held`](Self::counting_held), the permits granted
    ///   through it and not released through it, as far as the process still
    ///   holds them (its other handles share the process's count; without
    ///   the count, nothing: the process's permits go back with its last
    ///   handle of the name); Redis, everything its session holds (one round
    ///   trip; if Redis is out of reach, at the lease's expiry). When it
    ///   returns, a Redis handle's threads have exited and its connections
    ///   are closed (see `volt_sem_redis::RedisSemaphore::disconnect`);
    /// * every later call on the handle that can fail fails with
    ///   [`Error::Disconnected`]; the queries that cannot (`is_closed`,
    ///   `available_permits`, `stats`, `total_permits`) still answer.
    ///
    /// Idempotent (a second call racing the first, on another thread,
    /// returns once the first one gave back what the handle held; Redis:
    /// unless made from a callback the first one runs, or on a thread it
    /// waits for: the handle's own, or one running the handle's queued
    /// jobs itself, in a callback it delivers; those return at once). A local
    /// semaphore has no session: [`Error::Unsupported`] (close it). A named handle used in a `fork()` child: [`Error::Forked`]
    /// (nothing changed; a Redis handle there is the caller's to refuse, as
    /// for every call: its session is the parent's).
    pub fn disconnect(&self) -> Result<(), Error> {
        match self {
            Semaphore::Local(_) => Err(Error::Unsupported),
            Semaphore::Shared(s) => s.disconnect(),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => {
                s.disconnect();
                Ok(())
            }
        }
    }

    /// Whether [`disconnect`](Self::disconnect) ended this handle's session
    /// (`false` for a local semaphore).
    #[inline]
    pub fn is_disconnected(&self) -> bool {
        match self {
            Semaphore::Local(_) => false,
            Semaphore::Shared(s) => s.is_disconnected(),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => s.is_disconnected(),
        }
    }

    /// The total of a shared or Redis semaphore (the one of creation or of
    /// the last [`set_total`](Self::set_total)); `None` for a local one (its
    /// releases may add permits: it has no fixed total).
    #[inline]
    pub fn total_permits(&self) -> Option<usize> {
        match self {
            Semaphore::Local(_) => None,
            Semaphore::Shared(s) => Some(s.total_permits()),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => Some(s.total_permits()),
        }
    }
}

impl Semaphore {
    /// Whether `waiter`'s wake callback will never return in this process:
    /// this is a `fork()` child, and the request's outcome was being
    /// delivered at the fork by a thread of the parent (the local
    /// semaphore's releaser, closer or canceller; the shared semaphore's
    /// doorbell thread), which the child does not have. `finish_raw` then
    /// ends the request at once instead of waiting for that callback
    /// (local: its outcome; shared: `Closed`, the grant being the parent's
    /// record's). Not when the fork was made from inside a wake callback
    /// (that thread goes on delivering). `false` for Redis, whose handles
    /// refuse to work after `fork()`. For the C ABI's
    /// `volt_sem_try_cancel`, which must not answer "the callback is
    /// running" for ever then. `waiter` was last queued on this semaphore.
    pub fn callback_lost_to_fork(&self, waiter: &Waiter) -> bool {
        match self {
            Semaphore::Local(_) => waiter.callback_lost_to_fork(),
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) => {
                use volt_sem::raw::phase;
                // The doorbell thread is the attachment's process's; a
                // node it claimed and that is still NOTIFYING in another
                // process (a forked copy) was claimed in the parent: the
                // child's copy of the attachment claims nothing (it refuses
                // to work, `Forked`).
                waiter.kind() == kind::SHARED
                    && s.opener_pid() != std::process::id()
                    && matches!(
                        waiter
                            .local_ref()
                            .node()
                            .phase(core::sync::atomic::Ordering::Acquire),
                        phase::NOTIFYING_GRANTED
                            | phase::NOTIFYING_CLOSED
                            | phase::NOTIFYING_CONSUMED
                    )
                    && !volt_sem::raw::forked_in_delivery()
            }
            // Redis (its waiters are never claimed by a doorbell); without
            // the `redis` feature on Linux, no variant is left.
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
}

/// The raw waiter API ([`RawSemaphore`]'s contract) on whichever backend
/// this is. The callback runs, locally, on the thread that completes the
/// grant (a releaser, a canceller, the closer); shared, on this process's
/// doorbell thread of the name; Redis, on the handle's door or agent thread
/// (or a thread waiting in a call of the handle that made the door's round
/// trips itself)
/// (then `acquire_raw` always answers `Pending`, and the grant's token and
/// session are in [`Waiter::token`] / [`Waiter::session`]). `finish_raw` of
/// a waiter last queued on another backend reports `Idle` and leaves it
/// alone.
// SAFETY: each arm forwards to that backend's implementation, with the
// waiter's part of that backend; `kind` records which, so that
// `finish_raw` and `owns` ask the backend the waiter was queued on.
unsafe impl RawSemaphore for Semaphore {
    type Waiter = Waiter;
    type Error = Error;
    type Finish = Finish;

    unsafe fn acquire_raw(
        &self,
        waiter: Pin<&Waiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, Error> {
        debug_assert!(!waiter.is_busy(), "acquire_raw on a busy waiter");
        match self {
            Semaphore::Local(s) => {
                waiter.set_kind(kind::LOCAL);
                // SAFETY: forwarded contract.
                Ok(unsafe { s.acquire_raw(waiter.local(), n, wake, ctx) }?)
            }
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) => {
                s.live()?;
                waiter.set_kind(kind::SHARED);
                // `fork()` handlers of the core, for `callback_lost_to_fork`.
                volt_sem::raw::watch_forks();
                // SAFETY: forwarded contract.
                match unsafe { s.acquire_raw(waiter.local(), n, wake, ctx) }? {
                    RawAcquire::Ready => {
                        s.granted(n)?;
                        Ok(RawAcquire::Ready)
                    }
                    RawAcquire::Pending => {
                        // Listed for `disconnect` (which fails it).
                        s.queued(waiter.local_ref());
                        Ok(RawAcquire::Pending)
                    }
                }
            }
            #[cfg(not(target_os = "linux"))]
            Semaphore::Shared(_) => Err(Error::Unsupported),
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => {
                waiter.set_kind(kind::REDIS);
                // SAFETY: forwarded contract.
                unsafe { s.acquire_raw(waiter.redis(), n, wake, ctx) }.map_err(|e| redis_err(s, e))
            }
        }
    }

    unsafe fn finish_raw(&self, waiter: Pin<&Waiter>) -> Finish {
        match self {
            Semaphore::Local(s) if waiter.kind() == kind::LOCAL => {
                // SAFETY: forwarded contract.
                unsafe { s.finish_raw(waiter.local()) }.into()
            }
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) if waiter.kind() == kind::SHARED => {
                // In a forked child this never waits: the shared semaphore
                // ends a forked handle's waiter at once (`Closed`, or `Idle`),
                // a callback the parent's doorbell thread was running included
                // (see `callback_lost_to_fork`).
                // Out of `disconnect`'s list first: it fails only the
                // requests listed while it holds the list's lock.
                s.unlist(waiter.local_ref());
                // SAFETY: forwarded contract.
                let f: Finish = unsafe { s.finish_raw(waiter.local()) }.into();
                match f {
                    // Failed by `disconnect`, or met it: the handle's own
                    // error (its partial grant was handed on).
                    Finish::Closed if s.is_disconnected() => Finish::Failed(Error::Disconnected),
                    // A request that `set_total` failed ends as closed in the
                    // raw phases; its owner gets the error every backend gives.
                    Finish::Closed if s.failed_above_total(&waiter.local()) => {
                        Finish::Failed(Error::TooManyPermits)
                    }
                    Finish::Granted => match s.granted(waiter.requested()) {
                        Ok(()) => Finish::Granted,
                        Err(e) => Finish::Failed(e),
                    },
                    f => f,
                }
            }
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) if waiter.kind() == kind::REDIS => {
                // SAFETY: forwarded contract.
                redis_finish(s, unsafe { s.finish_raw(waiter.redis()) })
            }
            _ => Finish::Idle,
        }
    }

    fn owns(&self, waiter: &Waiter) -> bool {
        match self {
            Semaphore::Local(s) => waiter.kind() == kind::LOCAL && waiter.local_ref().belongs_to(s),
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) => waiter.kind() == kind::SHARED && s.owns(waiter.local_ref()),
            #[cfg(not(target_os = "linux"))]
            Semaphore::Shared(_) => false,
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) => waiter.kind() == kind::REDIS && s.owns(waiter.redis_ref()),
        }
    }
}

/// A Redis request's outcome on `s` as the seam's [`Finish`] (the token
/// stays readable in the redis waiter), whether `finish_raw` or
/// `expire_raw` collected it: ended by the handle's `disconnect`, the
/// handle's own error, [`Error::Disconnected`].
#[cfg(feature = "redis")]
fn redis_finish(s: &RedisSemaphore, f: volt_sem_redis::Finish) -> Finish {
    use volt_sem_redis::Finish as R;
    match f {
        R::Closed | R::Failed(volt_sem_redis::Error::Closed) if s.is_disconnected() => {
            Finish::Failed(Error::Disconnected)
        }
        R::Cancelled { returned } => Finish::Cancelled { returned },
        R::Granted { .. } => Finish::Granted,
        R::Closed => Finish::Closed,
        R::Failed(e) => Finish::Failed(e.into()),
        R::Idle => Finish::Idle,
    }
}

impl Semaphore {
    /// What a binding that times its own wait on a raw request calls at the
    /// deadline, instead of [`finish_raw`](RawSemaphore::finish_raw), so
    /// that every backend tries before it waits: local and shared requests
    /// were tried by `acquire_raw` already, and are finished here as by
    /// `finish_raw` ([`Expiry::Finished`]). A Redis request whose acquire
    /// script has not answered yet is left to that answer for its grace
    /// ([`Expiry::Deferred`] `{ until }`, the grace's end: see
    /// `volt_sem_redis::RedisSemaphore::expire_raw`): its callback comes if
    /// the answer is in by then, `Granted` if the script granted it,
    /// whatever the deadline, else `Cancelled` (taken out of Redis, its
    /// partial grant handed on), `Closed` or `Failed` (a Redis request
    /// already completed, its callback run or coming, is deferred too: a
    /// grant that came before the deadline is kept). The owner waits for
    /// the callback until `until` at most, then calls `finish_raw`, which
    /// collects the outcome or cancels the request (a server that stopped
    /// answering: a grant answered later is given back), and counts a
    /// `Cancelled` as its timeout ([`record_timeout`](Self::record_timeout)),
    /// as after a `Finished` `Cancelled`.
    ///
    /// # Safety
    /// As [`finish_raw`](RawSemaphore::finish_raw).
    pub unsafe fn expire_raw(&self, waiter: Pin<&Waiter>) -> Expiry {
        match self {
            #[cfg(feature = "redis")]
            Semaphore::Redis(s) if waiter.kind() == kind::REDIS => {
                // SAFETY: forwarded contract.
                unsafe { s.expire_raw(waiter.redis()) }.map(|f| redis_finish(s, f))
            }
            // SAFETY: forwarded contract.
            _ => Expiry::Finished(unsafe { self.finish_raw(waiter) }),
        }
    }
}

/// A blocking acquire on a named handle: waits in the segment's queue, its
/// request listed for the handle's `disconnect`, which fails it at once (a
/// partial grant handed on): then `Disconnected`.
fn shared_wait(s: &SharedHandle, n: usize, timeout: Option<Duration>) -> Result<Grant, Error> {
    shared_wait_polled(s, n, timeout, None)?;
    Ok(Grant::UNFENCED)
}

/// [`shared_wait`], polled: `Ok(false)` when `interrupted()` gave it up.
fn shared_wait_polled(
    s: &SharedHandle,
    n: usize,
    timeout: Option<Duration>,
    poll: Option<(Duration, &mut dyn FnMut() -> bool)>,
) -> Result<bool, Error> {
    s.live()?;
    match s.acquire_blocking_listed(n, timeout, poll) {
        Ok(true) => {
            s.granted(n)?;
            Ok(true)
        }
        Ok(false) => Ok(false),
        Err(Error::TooManyPermits | Error::Closed) if s.is_disconnected() => {
            Err(Error::Disconnected)
        }
        Err(e) => Err(e),
    }
}

/// A Redis handle's error: `Closed` from a handle that `disconnect` ended
/// is that handle's own error.
#[cfg(feature = "redis")]
#[cold]
fn redis_err(s: &RedisSemaphore, e: volt_sem_redis::Error) -> Error {
    let e = Error::from(e);
    if e == Error::Closed && s.is_disconnected() {
        return Error::Disconnected;
    }
    e
}

#[cfg(feature = "redis")]
fn redis_grant(p: volt_sem_redis::Permit) -> Grant {
    let g = Grant::fenced(p.token(), p.session());
    // The caller holds the permits by count from here on (released with
    // `Semaphore::release`), like the other backends' grants.
    p.forget();
    g
}
