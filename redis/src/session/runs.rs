//! The door's queue of jobs and the one rule of who runs them: one thread
//! at a time (the *runner*), taking the jobs in the order they were pushed.
//!
//! The runner is the door thread, or a caller that waits for Redis anyway
//! and found no runner (its *turn*: it runs the jobs queued before it, then
//! its own call; see `door.rs`). The invariants, model-checked by
//! `core/tests/loom_door.rs` (which includes this file, its `sync` seam
//! then being loom's; `make test-loom`):
//!
//! 1. At most one runner at any time; each job is taken once, in order.
//! 2. No job is left behind: a job pushed *with* a wake is taken by the
//!    door thread unless a runner takes it first; a job pushed *without*
//!    one (a caller about to take its turn) is taken by that caller's turn,
//!    or, when another thread was the runner, by that runner (the door
//!    thread looks at the queue before it sleeps) or by the door thread,
//!    which the end of a turn wakes when jobs remain.
//! 3. A turn takes only the jobs queued when it began (`take_turn` counts
//!    them): a caller never runs an unbounded stream of other threads' jobs.
//!
//! Runner ids are plain numbers (one per thread, the door thread's
//! included), so that the model can name its threads.

use std::collections::VecDeque;

use super::sync::{Condvar, Mutex, MutexGuard};

struct State<J> {
    jobs: VecDeque<J>,
    stop: bool,
    runner: Option<u64>,
}

/// The queue, shared by the threads that push and the door thread.
pub(crate) struct Runs<J> {
    state: Mutex<State<J>>,
    cv: Condvar,
}

impl<J> Default for Runs<J> {
    fn default() -> Self {
        Runs {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                stop: false,
                runner: None,
            }),
            cv: Condvar::new(),
        }
    }
}

impl<J> Runs<J> {
    fn lock(&self) -> MutexGuard<'_, State<J>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job`; wakes the door thread unless `quiet` (the caller takes
    /// its turn right after: see invariant 2). Once stopped, queues nothing
    /// and hands `job` back: no thread would ever run it (the pusher deals
    /// with it itself).
    pub(crate) fn push(&self, job: J, quiet: bool) -> Option<J> {
        {
            let mut s = self.lock();
            if s.stop {
                return Some(job);
            }
            s.jobs.push_back(job);
        }
        if !quiet {
            self.cv.notify_one();
        }
        None
    }

    /// Wakes the door thread (a quiet push whose caller cannot take a turn).
    pub(crate) fn wake(&self) {
        self.cv.notify_all();
    }

    /// Ends the door thread; returns the jobs never taken.
    pub(crate) fn stop(&self) -> VecDeque<J> {
        let jobs = {
            let mut s = self.lock();
            s.stop = true;
            std::mem::take(&mut s.jobs)
        };
        self.cv.notify_all();
        jobs
    }

    /// Whether `me` is the runner now.
    pub(crate) fn is_runner(&self, me: u64) -> bool {
        self.lock().runner == Some(me)
    }

    /// The next jobs of the door thread `me`, once no other thread runs
    /// them: the first job and, if `batch` accepts it, the jobs after it
    /// that `batch` accepts (up to `max` in all). `None` once stopped. Ends
    /// the door thread's previous run first.
    pub(crate) fn next(&self, me: u64, batch: impl Fn(&J) -> bool, max: usize) -> Option<Vec<J>> {
        let mut s = self.lock();
        if s.runner == Some(me) {
            s.runner = None;
        }
        loop {
            if s.stop {
                return None;
            }
            if s.runner.is_none() {
                if let Some(j) = s.jobs.pop_front() {
                    s.runner = Some(me);
                    let mut jobs = vec![j];
                    while batch(&jobs[0]) && jobs.len() < max && s.jobs.front().is_some_and(&batch)
                    {
                        jobs.extend(s.jobs.pop_front());
                    }
                    return Some(jobs);
                }
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A turn for `me` if no thread runs the jobs: how many jobs were
    /// queued then (the ones the turn runs, with [`Runs::take`]).
    pub(crate) fn take_turn(&self, me: u64) -> Option<usize> {
        let mut s = self.lock();
        if s.runner.is_some() || s.stop {
            return None;
        }
        s.runner = Some(me);
        Some(s.jobs.len())
    }

    /// The runner takes up to `k` jobs from the front.
    pub(crate) fn take(&self, k: usize) -> Vec<J> {
        let mut s = self.lock();
        let k = k.min(s.jobs.len());
        s.jobs.drain(..k).collect()
    }

    /// Ends a caller's turn; wakes the door thread for the jobs left.
    pub(crate) fn end_turn(&self) {
        let mut s = self.lock();
        s.runner = None;
        if !s.jobs.is_empty() || s.stop {
            self.cv.notify_all();
        }
    }
}
