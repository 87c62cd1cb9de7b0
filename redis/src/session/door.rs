//! The door of a connected handle: its queue of jobs, and the door thread
//! that runs them; the only code that uses the command connection (apart
//! from the exit handler and the last `Drop`).
//!
//! Why: the seam every binding calls (`acquire_raw`, `release`,
//! `finish_raw`) must never block, as on the local and shared backends,
//! while each of those is a round trip to Redis. So the calling thread only
//! records what it wants (a waiter in the table, a count released) and
//! queues a [`Job`]; the jobs run one at a time, in the order they were
//! queued, and complete waiters through their callbacks (one wake-up from
//! the reply to the waiting task or thread). The calls that must answer
//! (`try_acquire`, `close`, `census`, `disconnect`, `flush`, the PING of a
//! shared `connect`) run after the jobs queued before them: so every
//! operation of a handle reaches Redis in the order its threads made them
//! (a `release` followed by a `try_acquire` on the same handle sees the
//! release).
//!
//! Who runs the jobs: the door thread, unless a caller that waits for Redis
//! anyway (one of the calls that answer, or a blocking acquire) finds no
//! thread running them: it then takes a [`Turn`] and runs the queued jobs
//! and its own call on its own thread, saving the two thread wake-ups a
//! round trip through the door thread costs. Signals are blocked during a
//! turn, so that a handler (a Python Ctrl-C) cannot interrupt a socket call
//! and turn it into an uncertain outcome.
//!
//! The thread holds a `Weak` of the handle (it never keeps it alive) and
//! ends when the handle is dropped. A job that panics is contained: the
//! waiter or caller it served gets an error, the door goes on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

use super::runs::Runs;
use super::{batch, lock, process_id, Grant, Inner};
use crate::census::Census;
use crate::error::Error;
use crate::reply::{Reply, Status};
use crate::scripts::CallError;
use crate::waiter::{deliver, Claimed, Finish};

/// What the door does for a caller.
pub(super) enum Job {
    /// Sends the queued request `ctr` (in the table, not yet sent).
    Acquire(u64),
    /// Completes the request `ctr` of 0 permits: granted unless the
    /// semaphore is closed (which only Redis knows for sure).
    Zero(u64),
    /// Gives back `n` permits of the session `epoch` (already taken off the
    /// handle's count by the caller).
    Release { n: u64, epoch: u64 },
    /// Takes the request `eid` (queued in Redis, in session `epoch`, for `n`
    /// permits) out of the queue; its owner has already been told it is
    /// cancelled.
    Cancel { eid: String, n: u64, epoch: u64 },
    /// A call whose caller waits for the answer: it computes the answer
    /// and returns what sends it, which the door runs after it dropped its
    /// reference to the handle (see [`run`]).
    Call(Box<dyn FnOnce(&Inner) -> Answer + Send>),
}

/// The door's queue (who runs its jobs: `runs.rs`), shared by the handle
/// (which pushes) and the door thread.
#[derive(Default)]
pub(super) struct Door {
    runs: Runs<Job>,
}

thread_local! {
    /// Set by [`quietly`]: this thread's pushes do not wake the door thread.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This thread's runner id (`runs.rs`).
    static ME: u64 = {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
}

/// This thread's runner id.
fn me() -> u64 {
    ME.with(|m| *m)
}

/// Runs `f` with the door thread left asleep by the jobs it pushes: for a
/// caller that runs them itself right after ([`help`]). Woken, the door
/// thread would take the job first (it preempts the caller that woke it),
/// and the caller would pay the two wake-ups it means to save.
pub(super) fn quietly<R>(f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(false));
        }
    }
    QUIET.with(|q| q.set(true));
    let _reset = Reset;
    f()
}

impl Door {
    /// Queues `job`; hands it back once the door is stopped (the handle was
    /// disconnected or dropped: no thread runs jobs any more), for the
    /// caller to deal with (see [`Inner::refused`]).
    #[must_use]
    pub(super) fn push(&self, job: Job) -> Option<Job> {
        self.runs.push(job, QUIET.with(|q| q.get()))
    }

    /// Ends the thread (the handle is being dropped, or was disconnected);
    /// returns the jobs it had not taken yet. Every job pushed from then on
    /// is handed back to its pusher.
    pub(super) fn stop(&self) -> std::collections::VecDeque<Job> {
        self.runs.stop()
    }

    /// Whether this thread is running the handle's jobs now (the door
    /// thread, or a caller in its [`Turn`]): a call it makes (from inside a
    /// callback that a job delivers) then runs at once.
    pub(super) fn is_here(&self) -> bool {
        self.runs.is_runner(me())
    }
}

/// A caller's turn at running the handle's jobs on its own thread.
///
/// Why: a caller that waits for Redis anyway (`try_acquire`, `census`,
/// `flush`, a blocking acquire) pays two thread wake-ups when the door
/// thread makes its round trip for it (the door's, then its own), which
/// on an idle machine cost more than the round trip. So when no thread is
/// running the jobs, the caller runs them itself: first the jobs queued
/// before it (a release its thread made just before, say, so that the
/// order of the handle's calls holds), then its own; jobs queued after it
/// took the turn are left to the door thread, woken when the turn ends.
/// Only callers that may block take a turn: the seam's `acquire_raw`,
/// `release` and cancel never do.
///
/// Signals are blocked on the thread while it holds the turn (see
/// [`SignalsBlocked`]).
pub(super) struct Turn<'a> {
    door: &'a Door,
    /// How many of the jobs queued when the turn began are left to run.
    before: usize,
    /// The process that took the turn: a `fork()` child's copy of the
    /// thread (a callback the turn delivered forked) leaves the turn alone.
    pid: u32,
    _signals: SignalsBlocked,
}

impl<'a> Turn<'a> {
    /// The turn, if no thread is running the jobs (`None`: the door thread,
    /// or another caller, runs them now).
    pub(super) fn take(door: &'a Door) -> Option<Turn<'a>> {
        let before = door.runs.take_turn(me())?;
        Some(Turn {
            door,
            before,
            pid: process_id(),
            _signals: SignalsBlocked::new(),
        })
    }

    /// Runs the jobs queued before the turn began, in order, then, with
    /// `try_n`, this caller's `try_acquire` of that many permits (all in
    /// one round trip when they can go in a pipeline, see `batch.rs`), and
    /// returns the latter's outcome.
    ///
    /// A wake callback a job delivers here runs on this caller's thread;
    /// if it calls `fork()`, the child's one thread is its copy of this
    /// one, which goes back to the caller's code in the child: there the
    /// turn stops (the jobs left are the parent's, for its connections)
    /// and the caller's own call answers [`Error::Forked`], taking no lock
    /// another thread of the parent may have held at the fork.
    pub(super) fn run_queued(
        &mut self,
        inner: &Inner,
        try_n: Option<u64>,
    ) -> Option<Result<(u64, u64), Error>> {
        let jobs = self.door.runs.take(std::mem::take(&mut self.before));
        if jobs.iter().all(batch::pipelined) {
            let mut jobs = jobs;
            while jobs.len() > batch::MAX_BATCH {
                let rest = jobs.split_off(batch::MAX_BATCH);
                inner.run_batch(std::mem::replace(&mut jobs, rest), None);
            }
            return inner.run_batch(jobs, try_n);
        }
        for job in jobs {
            // As on the door thread: a job that panics (a Rust callback
            // through `deliver`) must not unwind into this caller, whose
            // call has nothing to do with it; the caller it served learns
            // it through its answer being dropped.
            let answer =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.run_job(job)));
            if inner.forked() {
                // (A call's answer goes to a thread of the parent.)
                return try_n.map(|_| Err(Error::Forked));
            }
            if let Ok(Some(send)) = answer {
                send();
            }
        }
        if inner.forked() {
            return try_n.map(|_| Err(Error::Forked));
        }
        try_n.map(|n| inner.try_now(n))
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        // In a fork() child (a callback of the turn forked), the queue is a
        // copy of the parent's, which no thread of the child runs, and its
        // lock may have been held by another thread of the parent at the
        // fork (then it is held for ever here).
        if process_id() == self.pid {
            self.door.runs.end_turn();
        }
    }
}

/// Signals blocked on this thread while it makes round trips for the
/// handle (a [`Turn`]), then restored (a signal that came meanwhile is
/// delivered then): a handler that interrupted the socket call (Python's
/// for Ctrl-C, any installed without `SA_RESTART`) would turn it into an
/// uncertain outcome, and give the session up. A turn lasts a round trip
/// or a few, each bounded by the command timeout.
pub(super) struct SignalsBlocked {
    #[cfg(unix)]
    old: libc::sigset_t,
}

impl SignalsBlocked {
    fn new() -> Self {
        #[cfg(unix)]
        {
            // SAFETY: sigfillset/pthread_sigmask write the sets we own;
            // SIGKILL, SIGSTOP and the faults a thread raises itself are
            // not blockable or not affected.
            unsafe {
                let mut all: libc::sigset_t = std::mem::zeroed();
                let mut old: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
                SignalsBlocked { old }
            }
        }
        #[cfg(not(unix))]
        SignalsBlocked {}
    }
}

impl Drop for SignalsBlocked {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: restores the mask saved by `new` on this same thread
        // (the value is not Send: it never leaves the thread).
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

/// Starts the door thread of a newly connected handle; `disconnect` joins
/// it.
pub(super) fn spawn(inner: &Arc<Inner>) -> Result<std::thread::JoinHandle<()>, Error> {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let door = inner.door.clone();
    std::thread::Builder::new()
        .name("volt-sem-redis-door".into())
        .spawn(move || run(&weak, &door))
        .map_err(|e| Error::Connection(format!("cannot start the door thread: {e}")))
}

fn run(weak: &Weak<Inner>, door: &Door) {
    let me = me();
    while let Some(mut jobs) = door.runs.next(me, batch::pipelined, batch::MAX_BATCH) {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if inner.forked() {
            // A fork() child's copy of the door thread (see below): the
            // jobs are the parent's, for its connections.
            return;
        }
        if jobs.len() > 1 {
            // Releases and acquires only: no answer to send.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.run_batch(jobs, None)
            }));
            if inner.forked() {
                return; // as after a single job, below
            }
            continue;
        }
        let job = jobs.pop().expect("one job");
        // A panic inside a job (a bug, or a Rust callback that panicked
        // through `deliver`) must not end the door: the handle's later
        // calls would wait for ever.
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.run_job(job)));
        // A callback the job delivered called fork(), and this is the
        // child's copy of the thread, its only one, done with that batch:
        // it ends there (and the child with it, as by exit(0)), never
        // sending the parent's later jobs on the parent's connections (their
        // sockets are shared with it) nor calling back the parent's grants.
        let forked = inner.forked();
        // If this was the last handle, `Inner::drop` runs here and stops
        // the door. Before a call is answered: a caller that drops its last
        // handle right after a call that answers (a `try_acquire`, say) ends
        // the session then and there, on its own thread, as it always did,
        // rather than a moment later on this one.
        drop(inner);
        if forked {
            return;
        }
        if let Ok(Some(send)) = answer {
            send();
        }
    }
}

/// For a caller about to wait for its queued request (a blocking
/// acquire, queued [`quietly`]): if no thread runs the jobs now, sends them
/// (its own among them) from this thread, as [`call`] does, so that a
/// request Redis grants at once completes without a thread wake-up. Else
/// the thread running them gets to it: the door thread before it sleeps
/// again, or the door thread woken by the end of a caller's [`Turn`].
pub(super) fn help(inner: &Inner) {
    if inner.forked() || inner.door.is_here() {
        // The job is left to the door, woken now (a turn of this thread
        // would not have it in its snapshot, and wakes the door anyway).
        inner.door.runs.wake();
        return;
    }
    if let Some(mut turn) = Turn::take(&inner.door) {
        turn.run_queued(inner, None);
    }
}

/// `try_acquire(n)`, `n > 0`, as [`call`] runs a call: in its own turn
/// when the door is idle, where it goes in one round trip with the
/// releases and acquires queued before it.
pub(super) fn try_acquire(inner: &Inner, n: u64) -> Result<(u64, u64), Error> {
    if inner.forked() {
        return Err(Error::Forked);
    }
    if inner.door.is_here() {
        return inner.try_now(n);
    }
    if let Some(mut turn) = Turn::take(&inner.door) {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            turn.run_queued(inner, Some(n))
        }))
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            Err(Error::Protocol(
                "the handle's call panicked (a bug: please report it)".into(),
            ))
        });
    }
    call(inner, move |i| i.try_now(n))
}

/// What [`Inner::stamp_request`] found.
pub(super) enum Stamp {
    /// Stamped: send it, as this eid, for this many permits.
    Send(String, u64),
    /// Cancelled (or failed with a lost session) before it was sent:
    /// nothing to send or undo.
    Gone,
    /// The session it was to be sent under is no longer current: not
    /// stamped; send it under the session the handle has now, if any.
    Stale,
}

/// An acquire request as it was sent (for [`Inner::acquire_reply`]).
#[derive(Clone, Copy)]
pub(super) struct Sent<'a> {
    pub(super) ctr: u64,
    pub(super) eid: &'a str,
    pub(super) n: u64,
    pub(super) epoch: u64,
    pub(super) sent: Instant,
    pub(super) attempt: u32,
}

/// What sends a [`Job::Call`]'s answer to its waiting caller.
pub(super) type Answer = Box<dyn FnOnce() + Send>;

/// Runs `f` after the handle's jobs queued before it, and returns its
/// answer: on this thread if no thread runs the jobs now (a [`Turn`]) or if
/// this thread is the one running them (a call from inside a callback a
/// job delivers), else on the runner (the door thread), waiting for it.
/// [`Error::Forked`] in a `fork()` child (the door thread was not copied).
pub(super) fn call<R: Send + 'static>(
    inner: &Inner,
    f: impl FnOnce(&Inner) -> Result<R, Error> + Send + 'static,
) -> Result<R, Error> {
    if inner.forked() {
        return Err(Error::Forked);
    }
    if inner.door.is_here() {
        return f(inner);
    }
    if let Some(mut turn) = Turn::take(&inner.door) {
        turn.run_queued(inner, None);
        if inner.forked() {
            // A callback of the turn forked: see `Turn::run_queued`.
            return Err(Error::Forked);
        }
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(inner))).unwrap_or_else(
            |_| {
                Err(Error::Protocol(
                    "the handle's call panicked (a bug: please report it)".into(),
                ))
            },
        );
    }
    let slot: Arc<Mailbox<R>> = Arc::new(Mailbox {
        value: Mutex::new(None),
        cv: Condvar::new(),
    });
    let reply = Answering(slot.clone(), false);
    let job = Job::Call(Box::new(move |i: &Inner| -> Answer {
        let v = f(i);
        Box::new(move || {
            let mut reply = reply;
            reply.send(v);
        })
    }));
    if let Some(job) = inner.door.push(job) {
        // The door is stopped (`disconnect`): no thread runs the handle's
        // jobs any more, this one runs its own call (the answer is in the
        // slot when it returns).
        inner.refused(job);
    }
    let mut g = lock(&slot.value);
    loop {
        if let Some(v) = g.take() {
            return v;
        }
        g = slot.cv.wait(g).unwrap_or_else(|e| e.into_inner());
    }
}

struct Mailbox<R> {
    value: Mutex<Option<Result<R, Error>>>,
    cv: Condvar,
}

/// The door's end of a [`call`]: answers once; dropped unanswered (the job
/// panicked, or the door stopped) it answers with an error, so that the
/// caller never waits for ever.
struct Answering<R>(Arc<Mailbox<R>>, bool);

impl<R> Answering<R> {
    fn send(&mut self, v: Result<R, Error>) {
        *lock(&self.0.value) = Some(v);
        self.1 = true;
        self.0.cv.notify_all();
    }
}

impl<R> Drop for Answering<R> {
    fn drop(&mut self) {
        if !self.1 {
            self.send(Err(Error::Protocol(
                "the handle's door thread could not run the call".into(),
            )));
        }
    }
}

/// The jobs, run on the door thread only.
impl Inner {
    /// Runs `job`; for a call, returns what sends its answer.
    pub(super) fn run_job(&self, job: Job) -> Option<Answer> {
        match job {
            Job::Acquire(ctr) => self.send_acquire(ctr),
            Job::Zero(ctr) => {
                let f = match self.census_now().and_then(|r| Census::from_reply(&r)) {
                    Ok(c) if c.closed => {
                        lock(&self.state).closed = true;
                        Finish::Closed
                    }
                    Ok(_) => {
                        lock(&self.state).closed = false;
                        Finish::Granted { token: 0 }
                    }
                    Err(e) => Finish::Failed(e),
                };
                let granted = matches!(f, Finish::Granted { .. });
                if self.complete_request(ctr, f) && granted {
                    if let Some(r) = self.stats.recorder() {
                        r.granted(0);
                    }
                }
            }
            Job::Release { n, epoch } => self.release_now(n, epoch),
            Job::Cancel { eid, n, epoch } => self.cancel_now(&eid, n, epoch),
            Job::Call(f) => return Some(f(self)),
        }
        None
    }

    /// Completes request `ctr` with `f`, unless its owner cancelled it
    /// (false then).
    pub(super) fn complete_request(&self, ctr: u64, f: Finish) -> bool {
        let claimed = {
            let mut st = lock(&self.state);
            st.table.take_cancelled(ctr);
            let e = st.table.remove(ctr);
            // SAFETY: it was in the table, so its waiter is valid.
            e.map(|e| unsafe { Claimed::claim(e.w, f) })
        };
        let done = claimed.is_some();
        deliver(claimed);
        done
    }

    /// Sends the queued request `ctr`: the acquire script, which grants it
    /// at once (`Ready`: completed here) or queues it in Redis (`Pending`:
    /// a notification or a heartbeat completes it).
    pub(super) fn send_acquire(&self, ctr: u64) {
        // One retry: a session found expired is replaced by a new one (the
        // request has nothing to do with the old lease).
        for attempt in 0..2 {
            let (sid, epoch) = match self.ensure_session() {
                Ok(s) => s,
                Err(e) => {
                    self.complete_request(ctr, Finish::Failed(e));
                    return;
                }
            };
            let (eid, n) = match self.stamp_request(ctr, &sid, epoch) {
                Stamp::Send(eid, n) => (eid, n),
                Stamp::Gone => return,
                // The session ended since `ensure_session` (a disconnect, a
                // loss): ask again, which fails it or makes a new one.
                Stamp::Stale => continue,
            };
            let sent = Instant::now();
            let r = self.script(|con| {
                self.scripts
                    .acquire(con, &self.keys, self.who(&sid), &eid, n, true)
            });
            let sent_again = self.acquire_reply(
                r,
                Sent {
                    ctr,
                    eid: &eid,
                    n,
                    epoch,
                    sent,
                    attempt,
                },
            );
            if !sent_again {
                return;
            }
        }
        self.complete_request(ctr, Finish::Failed(Error::LeaseExpired));
    }

    /// Stamps request `ctr` with session `epoch` (`sid`) before it is sent,
    /// if that is still the handle's current session: a loss or a
    /// `disconnect` fails the requests stamped with the session it ends, so
    /// one stamped after it would be sent under an ended session, and
    /// nothing would ever complete it.
    pub(super) fn stamp_request(&self, ctr: u64, sid: &str, epoch: u64) -> Stamp {
        let mut st = lock(&self.state);
        if st.table.get_mut(ctr).is_none() {
            st.table.take_cancelled(ctr);
            return Stamp::Gone;
        }
        let current = st.session.as_ref().is_some_and(|s| s.epoch == epoch);
        if !current || self.check_usable(&st).is_err() {
            return Stamp::Stale;
        }
        let Some(e) = st.table.get_mut(ctr) else {
            unreachable!("checked under the same lock");
        };
        e.eid = format!("{sid}:{ctr}");
        e.epoch = epoch;
        // Sent right after this (alone or in a batch).
        e.sent = Some(Instant::now());
        // SAFETY: in the table, so valid; `epoch` is read by the owner only
        // after the request completed.
        unsafe { &*e.w }.epoch.store(epoch, Ordering::Relaxed);
        Stamp::Send(e.eid.clone(), e.n)
    }

    /// Handles the acquire script's reply `r` for a request sent as
    /// `s`. True: send it again (its session was found expired at the
    /// first attempt, and given up).
    pub(super) fn acquire_reply(&self, r: Result<Reply, CallError>, s: Sent<'_>) -> bool {
        let Sent {
            ctr,
            eid,
            n,
            epoch,
            sent,
            attempt,
        } = s;
        let r = match r {
            Ok(r) => r,
            Err(CallError::NotRun(e)) => {
                self.complete_request(ctr, Finish::Failed(e));
                return false;
            }
            Err(CallError::Uncertain(e)) => {
                // It may be queued or granted: giving the session up
                // (ending it) undoes either.
                self.complete_request(ctr, Finish::Failed(e));
                self.lose(epoch, Error::LeaseExpired);
                return false;
            }
        };
        match &r.status {
            Status::Ready => {
                let token = r.int(0).unwrap_or(0);
                self.renewed_fast(epoch, sent);
                let (claimed, cancelled) = {
                    let mut st = lock(&self.state);
                    // Granted: the semaphore is open (reopened, if this
                    // handle saw it closed).
                    st.closed = false;
                    let cancelled = st.table.take_cancelled(ctr);
                    let claimed = st.table.remove(ctr).map(|e| {
                        if st.session.as_ref().map(|s| s.epoch) == Some(epoch) {
                            st.held += n;
                        } else {
                            st.lost += n;
                        }
                        // SAFETY: it was in the table.
                        unsafe { Claimed::claim(e.w, Finish::Granted { token }) }
                    });
                    (claimed, cancelled)
                };
                match claimed {
                    Some(c) => {
                        // Granted at once (no wait recorded: the round
                        // trip is not a wait in the queue).
                        if let Some(r) = self.stats.recorder() {
                            r.granted(n as usize);
                        }
                        deliver([c])
                    }
                    // Cancelled while the script ran: give them back.
                    None if cancelled => self.release_now(n, epoch),
                    // Failed with its session meanwhile: ending the
                    // session gives them back.
                    None => {}
                }
            }
            Status::Pending => {
                self.renewed_fast(epoch, sent);
                let (cancelled, expired) = {
                    let mut st = lock(&self.state);
                    st.closed = false;
                    st.table.mark_queued(ctr);
                    let cancelled = st.table.take_cancelled(ctr);
                    // Its owner's deadline passed before this answer, which
                    // did not grant it: it times out now. Out of the table
                    // under the same lock as `mark_queued`, so that no
                    // notification completes it meanwhile.
                    // SAFETY: it was in the table, so its waiter is valid.
                    let expired = st
                        .table
                        .remove_expired(ctr)
                        .map(|e| unsafe { Claimed::claim(e.w, Finish::Cancelled { returned: 0 }) });
                    (cancelled, expired)
                };
                if let Some(c) = expired {
                    // A waiting request left without its permits, as a
                    // cancel through `finish` counts it (its owner records
                    // the timeout).
                    if let Some(r) = self.stats.recorder() {
                        r.cancelled();
                    }
                    // Its owner learns it first; the cancel below is the
                    // door's next round trip, before any later job of the
                    // handle (a `flush` sees it applied), and releases a
                    // grant that beat it, as for any cancel.
                    deliver([c]);
                    self.cancel_now(eid, n, epoch);
                } else if cancelled {
                    // Cancelled while the script ran: take it out. (Gone
                    // from the table but not cancelled: the agent already
                    // completed it, a release of another client having
                    // granted it before this answer was read; or its
                    // session was lost. Nothing to undo then.)
                    self.cancel_now(eid, n, epoch);
                }
            }
            Status::Closed => {
                lock(&self.state).closed = true;
                self.complete_request(ctr, Finish::Closed);
            }
            Status::TooMany => {
                self.complete_request(ctr, Finish::Failed(Error::TooManyPermits));
            }
            Status::Expired if attempt == 0 => {
                // Not sent as far as the lost session goes: unstamped, so
                // that losing the session leaves it to the retry.
                if let Some(e) = lock(&self.state).table.get_mut(ctr) {
                    e.epoch = 0;
                }
                self.lose_answered(epoch, Error::LeaseExpired);
                return true;
            }
            _ => {
                let e = self
                    .session_reply(&r, epoch)
                    .unwrap_or_else(|| Error::Protocol(format!("{r:?}")));
                self.complete_request(ctr, Finish::Failed(e));
            }
        }
        false
    }

    /// `try_acquire(n)`, `n > 0`: the acquire script without queueing.
    pub(super) fn try_now(&self, n: u64) -> Result<(u64, u64), Error> {
        for attempt in 0..2 {
            let (sid, epoch) = self.ensure_session()?;
            let eid = self.new_eid(&sid);
            let sent = Instant::now();
            let r = self.script(|con| {
                self.scripts
                    .acquire(con, &self.keys, self.who(&sid), &eid, n, false)
            });
            if let Some(done) = self.try_reply(r, n, epoch, sent, attempt) {
                return done;
            }
        }
        Err(Error::LeaseExpired)
    }

    /// A request id of session `sid` that no other request uses.
    pub(super) fn new_eid(&self, sid: &str) -> String {
        let mut st = lock(&self.state);
        format!("{sid}:{}", st.table.next_ctr())
    }

    /// Handles the reply of a `try_acquire(n)` sent at `sent` in session
    /// `epoch`; `None`: try again (its session was found expired at the
    /// first attempt, and given up).
    pub(super) fn try_reply(
        &self,
        r: Result<Reply, CallError>,
        n: u64,
        epoch: u64,
        sent: Instant,
        attempt: u32,
    ) -> Option<Result<(u64, u64), Error>> {
        let r = match r {
            Ok(r) => r,
            Err(CallError::NotRun(e)) => return Some(Err(e)),
            Err(CallError::Uncertain(e)) => {
                self.lose(epoch, Error::LeaseExpired);
                return Some(Err(if lock(&self.state).failed {
                    Error::StateLost
                } else {
                    e
                }));
            }
        };
        Some(match &r.status {
            Status::Ready => {
                let token = match r.int(0) {
                    Ok(t) => t,
                    Err(e) => return Some(Err(e)),
                };
                self.renewed_fast(epoch, sent);
                lock(&self.state).closed = false;
                self.count_granted(n, epoch);
                if let Some(r) = self.stats.recorder() {
                    r.granted(n as usize);
                }
                Ok((token, epoch))
            }
            Status::NoPermits => Err(Error::NoPermits),
            Status::Closed => {
                lock(&self.state).closed = true;
                Err(Error::Closed)
            }
            Status::TooMany => Err(Error::TooManyPermits),
            Status::Expired if attempt == 0 => {
                self.lose_answered(epoch, Error::LeaseExpired);
                return None;
            }
            _ => Err(self
                .session_reply(&r, epoch)
                .unwrap_or_else(|| Error::Protocol(format!("{r:?}")))),
        })
    }

    /// The release script for `n` permits of session `epoch` (nothing if
    /// that session was given up: ending it returns what it held). Waiters
    /// of this handle it completed are woken here. If it did not run (or
    /// may not have), Redis still counts the permits for a session that
    /// the handle no longer does: after one retry the session is given up,
    /// which returns them.
    pub(super) fn release_now(&self, n: u64, epoch: u64) {
        let _ = self.release_checked(n, epoch);
    }

    /// [`release_now`](Self::release_now), telling whether Redis applied
    /// it: if not (its session given up before or by it), the error the
    /// session's holders learn; the permits go back with the session's end.
    pub(super) fn release_checked(&self, n: u64, epoch: u64) -> Result<(), Error> {
        for attempt in 0..2 {
            let Some(sid) = self.sid_of(epoch) else {
                // Its session was given up before it went out: the
                // permits go back with the session's end.
                self.unapplied.store(true, Ordering::Relaxed);
                break;
            };
            let sent = Instant::now();
            let r = self.script(|con| self.scripts.release(con, &self.keys, self.who(&sid), n));
            let applied = matches!(&r, Ok(r) if r.status == Status::Ok);
            if !self.release_reply(r, epoch, sent, attempt) {
                if applied {
                    return Ok(());
                }
                break;
            }
        }
        Err(self.unapplied_error())
    }

    /// The id of session `epoch`, if it is still the handle's.
    pub(super) fn sid_of(&self, epoch: u64) -> Option<String> {
        let st = lock(&self.state);
        st.session
            .as_ref()
            .filter(|s| s.epoch == epoch)
            .map(|s| s.sid.clone())
    }

    /// Handles the release script's reply for session `epoch`. True: send
    /// it again (it did not run, at the first attempt).
    pub(super) fn release_reply(
        &self,
        r: Result<Reply, CallError>,
        epoch: u64,
        sent: Instant,
        attempt: u32,
    ) -> bool {
        match r {
            Ok(r) => match &r.status {
                Status::Ok => {
                    self.renewed_fast(epoch, sent);
                    // Our own waiters this release completed: woken here,
                    // one hop sooner than through the agent (whose
                    // notification then finds them done).
                    let claimed: Vec<Claimed> = r
                        .rest
                        .chunks_exact(2)
                        .filter_map(|g| {
                            let (s, ctr) = g[0].split_once(':')?;
                            self.complete(s, ctr.parse().ok()?, Grant::parse(&g[1])?)
                        })
                        .collect();
                    deliver(claimed);
                }
                // Redis counts fewer than the handle did: what it holds no
                // longer matches what the handle knows.
                Status::NotHeld => {
                    self.unapplied.store(true, Ordering::Relaxed);
                    self.lose_answered(epoch, Error::LeaseExpired)
                }
                _ => {
                    self.unapplied.store(true, Ordering::Relaxed);
                    let _ = self.session_reply(&r, epoch);
                }
            },
            Err(CallError::NotRun(_)) if attempt == 0 => return true,
            // Not applied, or not known to be: the next flush says so.
            Err(CallError::NotRun(_)) => {
                self.unapplied.store(true, Ordering::Relaxed);
                self.lose_answered(epoch, Error::LeaseExpired)
            }
            Err(CallError::Uncertain(_)) => {
                self.unapplied.store(true, Ordering::Relaxed);
                self.lose(epoch, Error::LeaseExpired)
            }
        }
        false
    }

    /// Takes request `eid` (queued in Redis in session `epoch`, for `n`)
    /// out of the queue, its partial grant handed on; a grant that beat
    /// the cancel is released.
    pub(super) fn cancel_now(&self, eid: &str, n: u64, epoch: u64) {
        let Some((sid, _)) = eid.split_once(':') else {
            return;
        };
        let r = self.script(|con| self.scripts.cancel(con, &self.keys, self.who(sid), eid));
        match r {
            Ok(r) => match &r.status {
                Status::Cancelled => {}
                Status::Granted => {
                    // Held by the session in Redis, never by the handle's
                    // count: its owner was told it is cancelled.
                    self.release_now(n, epoch)
                }
                Status::Closed => lock(&self.state).closed = true,
                // Failed by set_total: nothing held, nothing to hand on.
                Status::TooMany => {}
                // The session is gone: nothing is held, nothing to hand on.
                _ => {
                    let _ = self.session_reply(&r, epoch);
                }
            },
            // Still queued in Redis (or unknown): give the session up so
            // that its entry cannot be granted to nobody.
            Err(CallError::NotRun(_)) => self.lose_answered(epoch, Error::LeaseExpired),
            Err(CallError::Uncertain(_)) => self.lose(epoch, Error::LeaseExpired),
        }
    }

    pub(super) fn close_now(&self) -> Result<(), Error> {
        let (sid, epoch) = self.ensure_session()?;
        let r = self.script(|con| self.scripts.close(con, &self.keys, self.who(&sid)));
        let r = match r {
            Ok(r) => r,
            Err(CallError::NotRun(e) | CallError::Uncertain(e)) => return Err(e),
        };
        match &r.status {
            Status::Ok => {
                lock(&self.state).closed = true;
                Ok(())
            }
            _ => Err(self
                .session_reply(&r, epoch)
                .unwrap_or_else(|| Error::Protocol(format!("{r:?}")))),
        }
    }

    pub(super) fn reopen_now(&self) -> Result<(), Error> {
        let (sid, epoch) = self.ensure_session()?;
        let r = self.script(|con| self.scripts.reopen(con, &self.keys, self.who(&sid)));
        let r = match r {
            Ok(r) => r,
            Err(CallError::NotRun(e) | CallError::Uncertain(e)) => return Err(e),
        };
        match &r.status {
            Status::Ok => {
                lock(&self.state).closed = false;
                Ok(())
            }
            _ => Err(self
                .session_reply(&r, epoch)
                .unwrap_or_else(|| Error::Protocol(format!("{r:?}")))),
        }
    }

    pub(super) fn set_total_now(&self, n: u64) -> Result<(), Error> {
        let (sid, epoch) = self.ensure_session()?;
        let r = self.script(|con| self.scripts.set_total(con, &self.keys, self.who(&sid), n));
        let r = match r {
            Ok(r) => r,
            Err(CallError::NotRun(e) | CallError::Uncertain(e)) => return Err(e),
        };
        match &r.status {
            Status::Ok => {
                self.total.store(n, core::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            _ => Err(self
                .session_reply(&r, epoch)
                .unwrap_or_else(|| Error::Protocol(format!("{r:?}")))),
        }
    }

    pub(super) fn census_now(&self) -> Result<Reply, Error> {
        self.diagnostic(|con, who| self.scripts.census(con, &self.keys, who))
    }

    pub(super) fn inspect_now(&self) -> Result<Reply, Error> {
        self.diagnostic(|con, who| self.scripts.inspect(con, &self.keys, who))
    }

    /// Runs a read-only script (census, inspect) that needs no live
    /// session (it renews none), after the reap every script makes.
    fn diagnostic(
        &self,
        script: impl FnOnce(&mut crate::conn::Conn, crate::scripts::Who<'_>) -> Result<Reply, CallError>,
    ) -> Result<Reply, Error> {
        let sid = {
            let st = lock(&self.state);
            if st.failed {
                return Err(Error::StateLost);
            }
            st.session
                .as_ref()
                .map(|s| s.sid.clone())
                .unwrap_or_default()
        };
        let r = self
            .script(|con| script(con, self.who(&sid)))
            .map_err(|e| match e {
                CallError::NotRun(e) | CallError::Uncertain(e) => e,
            })?;
        if r.status == Status::Lost {
            // As any script's LOST: the holders and waiters learn it now,
            // not at the agent's next heartbeat (a third of a lease on).
            self.fail_all();
            return Err(Error::StateLost);
        }
        Ok(r)
    }
}
