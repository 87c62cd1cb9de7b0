//! The waiter table: the raw requests of a handle that are queued (or being
//! queued) in Redis, by request counter. A request leaves it exactly once:
//! completed by a grant record, collected or cancelled by its owner, or
//! failed with its session; whoever removes it owns the waiter's outcome.

use std::collections::HashMap;

use crate::waiter::RedisWaiter;

/// One queued request.
pub(super) struct Entry {
    pub(super) w: *const RedisWaiter,
    /// Its id in Redis: `<session id>:<counter>`.
    pub(super) eid: String,
    pub(super) n: u64,
    /// The session (by epoch) it was queued in.
    pub(super) epoch: u64,
    /// Set once the acquire script answered PENDING: only then does the
    /// heartbeat ask about it (before, "not in Redis" is expected).
    pub(super) queued: bool,
}

pub(super) struct Table {
    next_ctr: u64,
    entries: HashMap<u64, Entry>,
}

impl Table {
    pub(super) fn new() -> Self {
        Table {
            next_ctr: 1,
            entries: HashMap::new(),
        }
    }

    /// The counter of a new request (unique for the handle's lifetime).
    pub(super) fn next_ctr(&mut self) -> u64 {
        let ctr = self.next_ctr;
        self.next_ctr += 1;
        ctr
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

    /// Removes request `ctr` if it was queued in session `epoch`.
    pub(super) fn remove_of_session(&mut self, ctr: u64, epoch: u64) -> Option<Entry> {
        if self.entries.get(&ctr)?.epoch != epoch {
            return None;
        }
        self.entries.remove(&ctr)
    }

    /// The acquire script answered PENDING for request `ctr`.
    pub(super) fn mark_queued(&mut self, ctr: u64) {
        if let Some(e) = self.entries.get_mut(&ctr) {
            e.queued = true;
        }
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
