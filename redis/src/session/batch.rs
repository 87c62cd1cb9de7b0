//! Several of a handle's jobs in one round trip: the releases and acquires
//! queued on the door (and a `try_acquire` that a caller makes in its
//! [`Turn`](super::door::Turn)) are sent as one pipeline of scripts, which
//! Redis runs one after the other, in the order they were queued, as if
//! each had been sent alone.
//!
//! Why: an acquire made right after a release of the same handle (a loop
//! that takes and gives back a permit, the contended case where every
//! thread does that) otherwise waits for the release's round trip first;
//! and an event loop with many requests in flight on one handle sends them
//! all at once. The replies are handled as each job's own (`acquire_reply`,
//! `release_reply`, `try_reply` in `door.rs`).
//!
//! What is sent this way: only jobs whose command is known without a round
//! trip (a current session; a request still in the table). Anything else
//! (no session yet, a cancel, a call) runs as before, one job at a time.
//! A command Redis refuses without running it (`NOSCRIPT` after a restart
//! or `SCRIPT FLUSH`, a cluster's redirection) is sent again alone, after
//! the pipeline: a queued acquire it passes then meets the release later,
//! which hands the permits to the queue's head as it would have; a
//! `try_acquire` that found no permits after such a refusal is asked again,
//! so that it always sees the releases queued before it.

use std::time::Instant;

use super::door::{Job, Sent, Stamp};
use super::{lock, Inner};
use crate::error::Error;
use crate::scripts::{CallError, Scripts};

/// The most jobs in one pipeline (the rest wait for the next).
pub(super) const MAX_BATCH: usize = 64;

/// One command of the pipeline, and what its reply is for.
enum Item {
    Release { n: u64 },
    Acquire { ctr: u64, eid: String, n: u64 },
    Try { n: u64 },
}

/// Whether `job` can go in a pipeline.
pub(super) fn pipelined(job: &Job) -> bool {
    matches!(job, Job::Release { .. } | Job::Acquire(_))
}

impl Inner {
    /// Runs `jobs` (each [`pipelined`], in queue order) and then, with
    /// `try_n`, a `try_acquire` of that many permits, in one round trip
    /// when there is a current session; one by one otherwise. Returns the
    /// `try_acquire`'s outcome.
    pub(super) fn run_batch(
        &self,
        jobs: Vec<Job>,
        try_n: Option<u64>,
    ) -> Option<Result<(u64, u64), Error>> {
        let session = lock(&self.state)
            .session
            .as_ref()
            .map(|s| (s.sid.clone(), s.epoch));
        let Some((sid, epoch)) = session.filter(|_| jobs.len() + usize::from(try_n.is_some()) > 1)
        else {
            for job in jobs {
                if self.forked() {
                    // A callback of a job before forked, and this is the
                    // child's copy of the thread: see `Turn::run_queued`.
                    return try_n.map(|_| Err(Error::Forked));
                }
                contained(|| {
                    let _ = self.run_job(job);
                });
            }
            if self.forked() {
                return try_n.map(|_| Err(Error::Forked));
            }
            return try_n.map(|n| self.try_now(n));
        };
        let mut items = Vec::with_capacity(jobs.len() + 1);
        let mut cmds = Vec::with_capacity(jobs.len() + 1);
        let mut stale = Vec::new();
        for job in jobs {
            match job {
                // A release of a session given up: ending it returns them.
                Job::Release { n, epoch: e } if e == epoch => {
                    cmds.push(self.scripts.release_cmd(&self.keys, self.who(&sid), n));
                    items.push(Item::Release { n });
                }
                Job::Release { .. } => {}
                Job::Acquire(ctr) => match self.stamp_request(ctr, &sid, epoch) {
                    Stamp::Send(eid, n) => {
                        cmds.push(self.scripts.acquire_cmd(
                            &self.keys,
                            self.who(&sid),
                            &eid,
                            n,
                            true,
                        ));
                        items.push(Item::Acquire { ctr, eid, n });
                    }
                    Stamp::Gone => {}
                    // The session ended while the batch was built: sent
                    // alone after it, under the session the handle has then.
                    Stamp::Stale => stale.push(ctr),
                },
                other => contained(|| {
                    let _ = self.run_job(other);
                }),
            }
        }
        if let Some(n) = try_n {
            let eid = self.new_eid(&sid);
            cmds.push(
                self.scripts
                    .acquire_cmd(&self.keys, self.who(&sid), &eid, n, false),
            );
            items.push(Item::Try { n });
        }
        if cmds.is_empty() {
            self.send_alone(stale);
            return None;
        }
        let sent = Instant::now();
        // A pipeline that failed as a whole: each command failed as it would
        // have alone (uncertain: its session is given up; not sent: it is
        // sent again alone).
        let replies = self
            .script(|con| Scripts::pipeline(con, &cmds))
            .unwrap_or_else(|e| items.iter().map(|_| Err(e.clone())).collect());
        let mut refused = false;
        let mut out = None;
        for (item, r) in items.into_iter().zip(replies) {
            if self.forked() {
                // A callback an earlier reply delivered forked, and this is
                // the child's copy of the thread: the replies left are the
                // parent's to handle (it got them too), and what they would
                // do here (send again, complete requests) takes locks
                // another thread of the parent may have held at the fork.
                return try_n.map(|_| Err(Error::Forked));
            }
            let not_run = matches!(r, Err(CallError::NotRun(_)));
            match item {
                Item::Release { n } => contained(|| {
                    if self.release_reply(r, epoch, sent, 0) {
                        self.release_now(n, epoch);
                    }
                }),
                Item::Acquire { ctr, eid, n } => contained(|| {
                    let s = Sent {
                        ctr,
                        eid: &eid,
                        n,
                        epoch,
                        sent,
                        attempt: 0,
                    };
                    if not_run || self.acquire_reply(r, s) {
                        self.send_acquire(ctr);
                    }
                }),
                Item::Try { n } => {
                    out = match (not_run, self.try_reply(r, n, epoch, sent, 0)) {
                        (false, Some(Err(Error::NoPermits))) if refused => Some(self.try_now(n)),
                        (false, Some(done)) => Some(done),
                        _ => Some(self.try_now(n)),
                    };
                }
            }
            refused |= not_run;
        }
        if self.forked() {
            return try_n.map(|_| Err(Error::Forked));
        }
        self.send_alone(stale);
        out
    }

    /// Sends the acquires found stale in a batch, in their order, each
    /// under the handle's session then (`send_acquire`).
    fn send_alone(&self, stale: Vec<u64>) {
        for ctr in stale {
            contained(|| self.send_acquire(ctr));
        }
    }
}

/// Runs `f`, containing a panic (a Rust callback that panicked through
/// `deliver`) as the door thread does: the other jobs of the batch still
/// get their replies, and the caller whose thread runs them does not
/// unwind for a job that was not its own.
fn contained(f: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}
