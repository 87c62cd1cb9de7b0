//! The waiter table: the raw requests of a handle that are queued (or being
//! queued) in Redis, by request counter. A request leaves it exactly once:
//! completed by a grant record, collected or cancelled by its owner, or
//! failed with its session; whoever removes it owns the waiter's outcome.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::waiter::RedisWaiter;

/// One queued request.
pub(super) struct Entry {
    pub(super) w: *const RedisWaiter,
    /// Its id in Redis: `<session id>:<counter>` (empty until sent).
    pub(super) eid: String,
    pub(super) n: u64,
    /// The session (by epoch) it was sent in; 0 until the door sends it
    /// (a lost session then leaves it alone: it goes to the next one).
    pub(super) epoch: u64,
    /// Set once the acquire script answered PENDING: only then does the
    /// heartbeat ask about it (before, "not in Redis" is expected).
    pub(super) queued: bool,
    /// Its owner's deadline passed before the acquire script answered
    /// ([`expire`](super::Inner::expire)): the answer decides. A grant
    /// completes it as usual; "queued" makes the door take it out of Redis
    /// at once and complete it as cancelled.
    pub(super) expired: bool,
    /// When the door last sent its acquire script (`None` until then): its
    /// grace past an owner's deadline runs from here
    /// ([`expire`](super::Inner::expire)).
    pub(super) sent: Option<Instant>,
    /// When its owner made the request (`acquire_raw`): a queued grant's
    /// wait, for the stats, runs from here to the grant's arrival.
    pub(super) since: Instant,
}

pub(super) struct Table {
    next_ctr: u64,
    entries: HashMap<u64, Entry>,
    /// Requests their owners cancelled before the door had the acquire
    /// script's answer: the door undoes what the answer did (a cancel
    /// script for a queued one, a release for a granted one). Only these:
    /// a request taken out by anyone else (the agent completing it, a lost
    /// session) needs nothing undone.
    cancelled: HashSet<u64>,
}

impl Table {
    pub(super) fn new() -> Self {
        Table {
            next_ctr: 1,
            entries: HashMap::new(),
            cancelled: HashSet::new(),
        }
    }

    /// The counter of a new request (unique for the handle's lifetime).
    pub(super) fn next_ctr(&mut self) -> u64 {
        let ctr = self.next_ctr;
        self.next_ctr += 1;
        ctr
    }

    /// Whether request `ctr` was ever issued by [`next_ctr`](Self::next_ctr).
    pub(super) fn issued(&self, ctr: u64) -> bool {
        ctr > 0 && ctr < self.next_ctr
    }

    pub(super) fn insert(&mut self, ctr: u64, e: Entry) {
        self.entries.insert(ctr, e);
    }

    pub(super) fn remove(&mut self, ctr: u64) -> Option<Entry> {
        self.entries.remove(&ctr)
    }

    /// Removes request `ctr` if it is still waiter `w`'s.
    pub(super) fn remove_waiter(&mut self, ctr: u64, w: *const RedisWaiter) -> Option<Entry> {
        match self.entries.get(&ctr) {
            Some(e) if core::ptr::eq(e.w, w) => self.entries.remove(&ctr),
            _ => None,
        }
    }

    /// Request `ctr`, if it is still waiter `w`'s.
    pub(super) fn get_waiter_mut(&mut self, ctr: u64, w: *const RedisWaiter) -> Option<&mut Entry> {
        self.entries.get_mut(&ctr).filter(|e| core::ptr::eq(e.w, w))
    }

    /// Removes request `ctr` if its owner's deadline passed before the
    /// acquire script answered (see [`Entry::expired`]).
    pub(super) fn remove_expired(&mut self, ctr: u64) -> Option<Entry> {
        if !self.entries.get(&ctr)?.expired {
            return None;
        }
        self.entries.remove(&ctr)
    }

    /// Removes request `ctr` if it was queued in session `epoch`.
    pub(super) fn remove_of_session(&mut self, ctr: u64, epoch: u64) -> Option<Entry> {
        if self.entries.get(&ctr)?.epoch != epoch {
            return None;
        }
        self.entries.remove(&ctr)
    }

    /// The owner took out request `ctr` before its acquire script was
    /// answered.
    pub(super) fn cancelled_unanswered(&mut self, ctr: u64) {
        self.cancelled.insert(ctr);
    }

    /// Whether the owner cancelled request `ctr` before it was answered
    /// (forgotten here: asked once, by the door).
    pub(super) fn take_cancelled(&mut self, ctr: u64) -> bool {
        self.cancelled.remove(&ctr)
    }

    pub(super) fn get_mut(&mut self, ctr: u64) -> Option<&mut Entry> {
        self.entries.get_mut(&ctr)
    }

    /// The acquire script answered PENDING for request `ctr` (if it is still
    /// in the table): from now on the heartbeat asks about it.
    pub(super) fn mark_queued(&mut self, ctr: u64) {
        if let Some(e) = self.entries.get_mut(&ctr) {
            e.queued = true;
        }
    }

    /// How many requests Redis has queued (the stats' `queued` gauge).
    pub(super) fn queued_count(&self) -> usize {
        self.entries.values().filter(|e| e.queued).count()
    }

    /// Whether request `ctr` (Redis entry `eid`) is still in the table,
    /// neither finished nor cancelled.
    pub(super) fn still_queued(&self, ctr: u64, eid: &str) -> bool {
        self.entries.get(&ctr).is_some_and(|e| e.eid == eid)
    }

    /// The requests of session `epoch` that Redis has queued, as (counter,
    /// Redis entry id): what the heartbeat asks about.
    pub(super) fn queued_in(&self, epoch: u64) -> Vec<(u64, String)> {
        self.entries
            .iter()
            .filter(|(_, e)| e.epoch == epoch && e.queued)
            .map(|(k, e)| (*k, e.eid.clone()))
            .collect()
    }

    /// Takes out every request of session `epoch` (the session is lost).
    pub(super) fn take_session(&mut self, epoch: u64) -> Vec<Entry> {
        let ctrs: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.epoch == epoch)
            .map(|(k, _)| *k)
            .collect();
        ctrs.into_iter()
            .map(|c| self.entries.remove(&c).expect("listed"))
            .collect()
    }

    /// Takes out every request (Redis lost the state).
    pub(super) fn take_all(&mut self) -> Vec<Entry> {
        self.entries.drain().map(|(_, e)| e).collect()
    }
}
