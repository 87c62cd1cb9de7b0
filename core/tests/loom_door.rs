//! loom model of the Redis door's queue and its runner rule
//! (`redis/src/session/runs.rs`, included here with loom's locks: the redis
//! crate itself does not build under `--cfg volt_loom`, the core does): every interleaving, up to
//! `LOOM_MAX_PREEMPTIONS`, of the door thread, a thread that pushes with a
//! wake (a release), and a caller that pushes quietly and takes its turn (a
//! blocking acquire) or waits for an answer (a call). Checked: never two
//! runners at once; every job run exactly once; one thread's jobs run in the
//! order it pushed them; nobody sleeps for ever (loom reports a deadlock when
//! a job is left in the queue with the door thread asleep). Run with `make
//! test-loom`.
#![cfg(volt_loom)]

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

#[allow(dead_code)]
mod sync {
    pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
}

#[allow(dead_code)]
#[path = "../../redis/src/session/runs.rs"]
mod runs;
use runs::Runs;

#[path = "support/loom_model.rs"]
mod loom_model;
use loom_model::model;

/// A job: who pushed it and its number among that thread's jobs.
type Job = (u64, u32);

/// What the model records: the jobs run, in order, and whether a runner is
/// inside a job now.
struct World {
    runs: Runs<Job>,
    busy: AtomicBool,
    done: Mutex<Vec<Job>>,
    more: Condvar,
}

impl World {
    fn run(&self, jobs: Vec<Job>) {
        for j in jobs {
            assert!(!self.busy.swap(true, SeqCst), "two runners at once");
            self.done.lock().unwrap().push(j);
            self.busy.store(false, SeqCst);
            self.more.notify_all();
        }
    }

    /// A caller's turn (id `me`): the jobs queued before it, then its own
    /// call (not a job of the queue).
    fn turn(&self, me: u64) -> bool {
        let Some(k) = self.runs.take_turn(me) else {
            return false;
        };
        self.run(self.runs.take(k));
        self.runs.end_turn();
        true
    }

    /// Waits until `n` jobs ran.
    fn wait_for(&self, n: usize) {
        let mut d = self.done.lock().unwrap();
        while d.len() < n {
            d = self.more.wait(d).unwrap();
        }
    }
}

fn world() -> Arc<World> {
    Arc::new(World {
        runs: Runs::default(),
        busy: AtomicBool::new(false),
        done: Mutex::new(Vec::new()),
        more: Condvar::new(),
    })
}

fn door(w: &Arc<World>) -> thread::JoinHandle<()> {
    let w = w.clone();
    thread::spawn(move || {
        // Runs of more than one job, as the door batches releases.
        while let Some(jobs) = w.runs.next(0, |_| true, 2) {
            w.run(jobs);
        }
    })
}

/// Each thread's jobs ran once each, in its order.
fn check(w: &World, pushed: &[(u64, u32)]) {
    let done = w.done.lock().unwrap();
    let total: u32 = pushed.iter().map(|p| p.1).sum();
    assert_eq!(done.len(), total as usize, "{done:?}");
    for &(who, n) in pushed {
        let mine: Vec<u32> = done.iter().filter(|j| j.0 == who).map(|j| j.1).collect();
        assert_eq!(mine, (0..n).collect::<Vec<_>>(), "{done:?}");
    }
}

/// A release (pushed with a wake) and a blocking acquire (pushed quietly,
/// then a turn) at once: both run, once, whoever runs them.
#[test]
fn quiet_push_then_turn_with_a_woken_door() {
    model(|| {
        let w = world();
        let d = door(&w);
        let w1 = w.clone();
        let releaser = thread::spawn(move || w1.runs.push((1, 0), false));
        let w2 = w.clone();
        let acquirer = thread::spawn(move || {
            w2.runs.push((2, 0), true);
            w2.turn(2);
        });
        releaser.join().unwrap();
        acquirer.join().unwrap();
        w.wait_for(2);
        check(&w, &[(1, 1), (2, 1)]);
        drop(w.runs.stop());
        d.join().unwrap();
    });
}

/// Two callers pushing quietly and taking turns, one of them twice, with
/// the door thread asleep throughout unless a turn's end wakes it.
#[test]
fn two_callers_turns_leave_nothing_behind() {
    model(|| {
        let w = world();
        let d = door(&w);
        let w1 = w.clone();
        let a = thread::spawn(move || {
            for i in 0..2 {
                w1.runs.push((1, i), true);
                w1.turn(1);
            }
        });
        let w2 = w.clone();
        let b = thread::spawn(move || {
            w2.runs.push((2, 0), true);
            w2.turn(2);
        });
        a.join().unwrap();
        b.join().unwrap();
        w.wait_for(3);
        check(&w, &[(1, 2), (2, 1)]);
        drop(w.runs.stop());
        d.join().unwrap();
    });
}

/// A caller whose turn is refused (another runner) and a thread that pushes
/// with a wake between: the door thread runs what the turn did not.
#[test]
fn a_refused_turn_leaves_its_job_to_the_runner() {
    model(|| {
        let w = world();
        let d = door(&w);
        let w1 = w.clone();
        let pusher = thread::spawn(move || {
            w1.runs.push((1, 0), false);
            w1.runs.push((1, 1), false);
        });
        let w2 = w.clone();
        let caller = thread::spawn(move || {
            w2.runs.push((2, 0), true);
            if !w2.turn(2) {
                // Refused: the runner (the door thread, or nobody any more,
                // in which case a push of its own woke the door) has it.
            }
        });
        pusher.join().unwrap();
        caller.join().unwrap();
        w.wait_for(3);
        check(&w, &[(1, 2), (2, 1)]);
        drop(w.runs.stop());
        d.join().unwrap();
    });
}

/// A job pushed while the door is stopped (`disconnect` stops it, then
/// joins the door thread and runs what the stop found queued): it is run by
/// the door thread, found by the stop, or handed back to its pusher, never
/// left in a queue nobody reads any more.
#[test]
fn a_push_racing_stop_is_run_drained_or_handed_back() {
    model(|| {
        let w = world();
        let d = door(&w);
        let w1 = w.clone();
        let pusher = thread::spawn(move || w1.runs.push((1, 0), false));
        let left = w.runs.stop();
        d.join().unwrap();
        let back = pusher.join().unwrap();
        // Ran by the door thread before the stop, drained by the stop, or
        // handed back: exactly one of the three.
        let ran = w.done.lock().unwrap().len();
        let drained = left.len();
        let handed = usize::from(back.is_some());
        assert_eq!(
            ran + drained + handed,
            1,
            "ran {ran}, drained {drained}, handed back {handed}"
        );
        // Once stopped, every push is handed back.
        assert_eq!(w.runs.push((1, 1), true), Some((1, 1)));
    });
}
