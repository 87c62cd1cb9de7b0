//! The agent thread of a connected handle: it holds the second connection,
//! waits on the session's notification list (`BLPOP`, with a timeout that
//! ends at the next heartbeat), completes the waiters whose grants arrive,
//! and runs the heartbeat (renews the lease, acks collected grants, asks
//! about the queued requests, reaps expired sessions, ends the sessions
//! given up).
//!
//! When: every lease/3; but while the session waits (has requests in
//! Redis), as soon as the earliest lease deadline of any session has passed,
//! so that a dead client's permits come back soon after its lease ends,
//! whatever this client's lease. The heartbeat's reply says when the next
//! one runs (`lua/heartbeat.lua`), and a queued acquire that needs an
//! earlier one wakes the agent with a `reap` notification
//! (`lua/acquire.lua`).

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::note::{Grant, Note};
use super::{lock, Inner};
use crate::conn::{Client, Conn};
use crate::error::Error;
use crate::options::ConnectOptions;
use crate::reply::Status;
use crate::scripts::{CallError, Keys};
use crate::waiter::deliver;

/// Wakes the agent when it has no session to wait on, and ends its sleeps
/// for good once the handle is disconnected or dropped ([`Kick::stop`]).
#[derive(Default)]
pub(super) struct Kick {
    /// (kicked since the last wait, stopped for good)
    flag: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Kick {
    pub(super) fn kick(&self) {
        self.flag.lock().unwrap_or_else(|e| e.into_inner()).0 = true;
        self.cv.notify_all();
    }
    /// The handle is over (`disconnect`, the last handle dropped): every
    /// wait and back-off of the agent, now and later, ends at once, so
    /// that the thread exits right away (`disconnect` joins it).
    pub(super) fn stop(&self) {
        *self.flag.lock().unwrap_or_else(|e| e.into_inner()) = (true, true);
        self.cv.notify_all();
    }
    fn wait(&self, d: Duration) {
        let g = self.flag.lock().unwrap_or_else(|e| e.into_inner());
        let (mut g, _) = self
            .cv
            .wait_timeout_while(g, d, |f| !f.0 && !f.1)
            .unwrap_or_else(|e| e.into_inner());
        g.0 = false;
    }
    /// Sleeps `d`, or less if stopped meanwhile (a kick does not end it).
    fn sleep(&self, d: Duration) {
        let g = self.flag.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .cv
            .wait_timeout_while(g, d, |f| !f.1)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// A started thread: its handle, and a receiver whose sender the thread
/// drops as it ends (returning or unwinding), so that `disconnect` can wait
/// for its end with a time limit, which `JoinHandle::join` has not.
pub(super) struct Started {
    pub(super) handle: std::thread::JoinHandle<()>,
    pub(super) ended: std::sync::mpsc::Receiver<()>,
}

/// Starts the agent thread of a newly connected handle; `disconnect` joins
/// it.
pub(super) fn spawn(inner: &Arc<Inner>) -> Result<Started, Error> {
    let agent = Agent {
        weak: Arc::downgrade(inner),
        client: inner.client.clone(),
        opts: inner.opts.clone(),
        secret: inner.secret.clone(),
        keys: inner.keys.clone(),
        kick: inner.kick.clone(),
    };
    let (alive, ended) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("volt-sem-redis".into())
        .spawn(move || {
            let _alive = alive;
            agent.run()
        })
        .map(|handle| Started { handle, ended })
        .map_err(|e| Error::Connection(format!("cannot start the agent thread: {e}")))
}

/// The agent thread: everything it needs without keeping the handle alive
/// (it holds a `Weak`), so dropping the last handle ends it, and the thread
/// itself never keeps the process alive (Rust does not wait for it at exit).
struct Agent {
    weak: Weak<Inner>,
    client: Client,
    opts: ConnectOptions,
    secret: String,
    keys: Keys,
    kick: Arc<Kick>,
}

impl Agent {
    fn interval(&self) -> Duration {
        self.opts.lease / 3
    }

    /// `d` capped by what remains of the lease (`left`), at least 1 ms (a
    /// socket timeout of zero would mean none).
    fn capped(d: Duration, left: Duration) -> Duration {
        d.min(left).max(Duration::from_millis(1))
    }

    /// The agent's loop. Every blocking call in it (the `BLPOP`, the
    /// heartbeat, a reconnect, a back-off sleep, ending old sessions) is
    /// capped by what remains of the current session's lease, so that the
    /// loop comes back to `check_local_expiry` when the lease ends, however
    /// silent the network is, and gives the session up then.
    fn run(self) {
        let mut con: Option<Conn> = None;
        let mut next_hb = Instant::now();
        let mut backoff = Duration::from_millis(20);
        loop {
            let (sid, epoch, left) = {
                let Some(inner) = self.weak.upgrade() else {
                    return;
                };
                if inner.forked() {
                    // A callback this thread delivered called fork(), and
                    // this is the child's copy of it, its only thread, done
                    // with that delivery: it ends there (and the child with
                    // it, as by exit(0)). The session, its grants and this
                    // connection are the parent's: no heartbeat or BLPOP
                    // from here, and the connection is left as it is (its
                    // socket is the parent's too).
                    std::mem::forget(con);
                    return;
                }
                inner.check_local_expiry();
                let mut st = lock(&inner.state);
                if st.shutdown {
                    return;
                }
                let to_end: Vec<String> = st.to_end.drain(..).collect();
                let cur = st
                    .session
                    .as_ref()
                    .map(|s| (s.sid.clone(), s.epoch, s.remaining(self.opts.lease)));
                drop(st);
                if !to_end.is_empty() {
                    if let Some(c) = con.as_mut() {
                        let t = match &cur {
                            Some(x) => Self::capped(self.opts.command_timeout, x.2),
                            None => self.opts.command_timeout,
                        };
                        let _ = c.set_read_timeout(t);
                        let mut failed = Vec::new();
                        for sid in to_end {
                            if !failed.is_empty() {
                                failed.push(sid);
                                continue;
                            }
                            let r = inner.scripts.end(c, &inner.keys, inner.who(&sid));
                            if let Ok(r) = &r {
                                inner.stats.noted(r);
                            }
                            match r {
                                Ok(r) if r.status == Status::Lost => inner.fail_all(),
                                Ok(_) => {}
                                Err(_) => failed.push(sid),
                            }
                        }
                        if !failed.is_empty() {
                            con = None;
                            lock(&inner.state).to_end.extend(failed);
                        }
                    } else {
                        lock(&inner.state).to_end.extend(to_end);
                    }
                }
                match cur {
                    Some(c) => c,
                    None => {
                        // Sessions given up and not ended for want of a
                        // connection (Redis was out of reach): reconnect for
                        // them, backing off, rather than leave what they
                        // hold in Redis to their leases' end. (The
                        // reconnect below is for a current session only.)
                        let pending = con.is_none() && !lock(&inner.state).to_end.is_empty();
                        drop(inner);
                        if pending {
                            // Backing off as `back_off` does, but woken by a
                            // kick: a new session (Redis back) must not wait
                            // for the end of the back-off to be served.
                            self.kick.wait(backoff);
                            backoff =
                                (backoff * 2).min(self.interval().max(Duration::from_millis(20)));
                            // Kicked by the handle's drop or shutdown: no
                            // connection for nothing.
                            match self.weak.upgrade() {
                                Some(i) if !lock(&i.state).shutdown => {}
                                _ => return,
                            }
                            let deadline = Instant::now() + self.opts.connect_timeout;
                            if let Ok(c) = Inner::open_connection(
                                &self.client,
                                &self.opts,
                                &self.secret,
                                deadline,
                            ) {
                                con = Some(c);
                            }
                        } else {
                            self.kick.wait(self.interval());
                        }
                        continue;
                    }
                }
            };
            if left.is_zero() {
                continue; // given up at the loop's top
            }
            // Each wait below gets what remains until then, not `left`.
            let lease_end = Instant::now() + left;
            let left = || lease_end.saturating_duration_since(Instant::now());
            if con.is_none() {
                let deadline = Instant::now() + self.opts.connect_timeout.min(left());
                match Inner::open_connection(&self.client, &self.opts, &self.secret, deadline) {
                    Ok(c) => {
                        // The back-off is reset by a call that worked, not
                        // by a connection: a server that accepts and then
                        // refuses (an ACL, a replica) must not be hammered.
                        con = Some(c);
                        next_hb = Instant::now();
                    }
                    Err(_) => {
                        // Waiters keep their place while the lease lasts;
                        // check_local_expiry (loop top) fails them after it.
                        self.back_off(&mut backoff, left());
                        continue;
                    }
                }
            }
            let c = con.as_mut().expect("connected above");
            let now = Instant::now();
            if now >= next_hb {
                next_hb = now + self.interval();
                let Some(inner) = self.weak.upgrade() else {
                    return;
                };
                let (keep, renewed, next) = self.heartbeat(&inner, c, &sid, epoch, left());
                drop(inner);
                // Sooner while the session waits (a lease deadline comes
                // first): counted from the reply's arrival, which is after
                // the script ran, so that the deadline has surely passed by
                // the server's clock when the next one runs.
                if let Some(at) = next.and_then(|d| Instant::now().checked_add(d)) {
                    next_hb = next_hb.min(at);
                }
                if !keep {
                    con = None;
                }
                if renewed {
                    backoff = Duration::from_millis(20);
                } else {
                    self.back_off(&mut backoff, left());
                }
                continue;
            }
            let wait = Self::capped((next_hb - now).max(Duration::from_millis(10)), left());
            let _ = c.set_read_timeout(Self::capped(wait + self.opts.command_timeout, left()));
            // Bytes: a note that is no UTF-8 is foreign, not a failed call.
            let r: redis::RedisResult<Option<(String, Vec<u8>)>> = redis::cmd("BLPOP")
                .arg(self.keys.note(&sid))
                .arg(wait.as_secs_f64())
                .query(c);
            match r.map(|r| r.map(|(_, msg)| Note::parse(&msg, &sid))) {
                // A request queued by this handle needs a reap before the
                // next heartbeat (lua/acquire.lua): run it now. No grant
                // came, so no `WAIT` for replicas either. A foreign note
                // (note.rs) is read as nothing but a hint that a grant
                // record may have changed: the heartbeat reads them now
                // (a waiter whose notification it took the place of is
                // not left to the next one).
                Ok(Some(Note::Reap | Note::Foreign)) => {
                    backoff = Duration::from_millis(20);
                    next_hb = Instant::now();
                }
                // A wake-up: the loop's top ends the sessions given up.
                Ok(Some(Note::Bye)) => backoff = Duration::from_millis(20),
                Ok(Some(Note::Record(ctr, g))) => {
                    backoff = Duration::from_millis(20);
                    let Some(inner) = self.weak.upgrade() else {
                        return;
                    };
                    inner.check_local_expiry();
                    // min_replicas_acked: a write of ours after the pop
                    // follows the grant in the replication stream, so a
                    // WAIT after it covers the grant.
                    let left = inner.lease_remaining().unwrap_or_default();
                    if let Err(e) =
                        c.wait_replicas_after_pop(&self.opts, &self.keys.note(&sid), Some(left))
                    {
                        inner.lose_deferred(epoch, e);
                        con = None;
                        continue;
                    }
                    match inner.complete(&sid, ctr, g) {
                        Some(cl) => {
                            drop(inner);
                            deliver([cl]);
                        }
                        // A request never issued: a foreign note (one
                        // that no longer waits, cancelled or completed
                        // otherwise, is an old note).
                        None if !inner.issued(ctr) => next_hb = Instant::now(),
                        None => {}
                    }
                }
                Ok(None) => backoff = Duration::from_millis(20),
                Err(e) => {
                    // A refusal (NOPERM, READONLY, ...) keeps the
                    // connection; a failed connection is replaced. Either
                    // way the next try waits: every failure backs off.
                    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
                        con = None;
                    }
                    self.back_off(&mut backoff, left());
                }
            }
        }
    }

    /// Sleeps `backoff` (at most `left`, what remains of the lease) and
    /// doubles it, up to a heartbeat interval.
    fn back_off(&self, backoff: &mut Duration, left: Duration) {
        // Cut short by `disconnect` (which waits for this thread's exit).
        self.kick.sleep((*backoff).min(left));
        *backoff = (*backoff * 2).min(self.interval().max(Duration::from_millis(20)));
    }

    /// Renews the lease, acks collected grants, reconciles pending waiters.
    /// Returns (keep the connection, the lease was renewed, in how long the
    /// next heartbeat should run: the script's `d=`, when it answered).
    /// `left`: what remains of the lease, which caps every wait.
    fn heartbeat(
        &self,
        inner: &Inner,
        c: &mut Conn,
        sid: &str,
        epoch: u64,
        left: Duration,
    ) -> (bool, bool, Option<Duration>) {
        let _ = c.set_read_timeout(Self::capped(self.opts.command_timeout, left));
        let (acked, query): (Vec<String>, Vec<(u64, String)>) = {
            let mut st = lock(&inner.state);
            let acked = std::mem::take(&mut st.acked);
            let q = st.table.queued_in(epoch);
            (acked, q)
        };
        let eids: Vec<String> = query.iter().map(|(_, e)| e.clone()).collect();
        let sent = Instant::now();
        let r = inner
            .scripts
            .heartbeat(c, &inner.keys, inner.who(sid), &acked, &eids);
        if let Ok(r) = &r {
            inner.stats.noted(r);
        }
        match r {
            Ok(r) if r.status == Status::Ok => {
                inner.renewed(epoch, sent);
                let next = r.next_heartbeat.map(Duration::from_millis);
                let grants = r.rest.iter().any(|v| v != "Q" && v != "X");
                if grants {
                    let left = inner.lease_remaining().unwrap_or_default();
                    if let Err(e) = c.wait_replicas(&self.opts, Some(left)) {
                        inner.lose_deferred(epoch, e);
                        return (false, false, None);
                    }
                }
                let mut claimed = Vec::new();
                for ((ctr, eid), status) in query.iter().zip(&r.rest) {
                    match status.as_str() {
                        "Q" => {}
                        // Cancelled (or finished) since the list was taken:
                        // `finish` takes an entry out of the table before its
                        // cancel script runs, so one still in the table now
                        // was not cancelled before this heartbeat asked.
                        "X" if !inner.still_queued(*ctr, eid) => {}
                        "X" => {
                            // Gone from Redis while the session lives: a
                            // failover to a replica that missed the request's
                            // last writes (replication is asynchronous; seen
                            // on a Cluster failover), or a bug. What Redis
                            // holds for this session no longer matches what
                            // the handle knows: give the whole session up, as
                            // for an expired lease (its holders and waiters
                            // learn LeaseExpired; the agent ends it, so what
                            // Redis counts for it goes back), never hang and
                            // never fail with an untyped error.
                            deliver(claimed);
                            inner.lose_deferred(epoch, Error::LeaseExpired);
                            return (true, true, None);
                        }
                        v => match Grant::parse(v) {
                            Some(g) => claimed.extend(inner.complete(sid, *ctr, g)),
                            // A grant record volt-sem never writes: the
                            // request fails with WrongType (heartbeat.lua
                            // answers 'W' and the value).
                            None => {
                                let shown = v.strip_prefix('W').unwrap_or(v);
                                if inner.foreign_grant(sid, *ctr, shown) {
                                    deliver(claimed);
                                    return (true, true, None);
                                }
                            }
                        },
                    }
                }
                deliver(claimed);
                (true, true, next)
            }
            Ok(r) => {
                // As session_reply, without a round trip on this thread.
                match &r.status {
                    Status::Expired => inner.lose_deferred(epoch, Error::LeaseExpired),
                    Status::Lost => inner.fail_all(),
                    _ => {}
                }
                (true, false, None)
            }
            Err(e) => {
                // Not forgotten in Redis yet: ack them next time.
                lock(&inner.state).acked.extend(acked);
                (matches!(e, CallError::NotRun(_)), false, None)
            }
        }
    }
}
