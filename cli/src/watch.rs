//! `volt-sem watch`: the inspection again every interval, with grants/s
//! estimated from what changed between two snapshots (no backend counts
//! grants; see [`grants_between`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use volt_sem::inspect::Inspection;

use crate::error::{out, CliError};
use crate::render::{inspection_json, inspection_table};
use crate::target::{Source, Target};

/// Set by SIGINT or SIGTERM: the loop ends at its next check and the
/// handle is dropped (a named semaphore's record detached cleanly).
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    // An atomic store is async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// Off Unix (Windows) Ctrl-C ends the process as usual: only a Redis
/// semaphore can be watched there, and it holds nothing to detach.
#[cfg(not(unix))]
fn catch_signals() {}

#[cfg(unix)]
fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid (empty mask, no flags); the
        // handler only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Grants seen from `before` to `after`: one per holder of `after` that
/// was not a holder in `before` (same label, host and pid), or whose
/// `held_for` went down (its holding fell to zero and rose again), or whose
/// fencing token changed (Redis: a grant since). A lower bound: grants to a
/// process that kept holding (named semaphores), and holdings that began
/// and ended between the two snapshots, leave no trace.
pub fn grants_between(before: &Inspection, after: &Inspection) -> usize {
    after
        .holders
        .iter()
        .filter(|h| {
            let prev = before
                .holders
                .iter()
                .find(|p| (&p.label, &p.host, p.pid) == (&h.label, &h.host, h.pid));
            match prev {
                None => true,
                Some(p) => {
                    (p.token.is_some() && h.token != p.token)
                        || matches!((p.held_for, h.held_for), (Some(a), Some(b)) if b < a)
                }
            }
        })
        .count()
}

/// Runs the loop: `count` refreshes (`None`: until a signal).
pub fn run(
    target: &Target,
    json: bool,
    interval: Duration,
    count: Option<u64>,
) -> Result<(), CliError> {
    catch_signals();
    let looker = Looker::start(target.open()?);
    let clear = !json && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let mut prev: Option<(Instant, Inspection)> = None;
    let mut n = 0u64;
    while !STOP.load(Ordering::Relaxed) {
        let seen = match looker.look() {
            Some(Ok(seen)) => seen,
            // Ctrl-C during a refresh: it is still waiting (a named
            // semaphore's lock held by a stopped process), or the signal
            // broke the read it waited in (a slow Redis: EINTR). End as
            // between two refreshes.
            None => return Ok(()),
            Some(Err(_)) if STOP.load(Ordering::Relaxed) => break,
            Some(Err(e)) => return Err(e),
        };
        let at = Instant::now();
        let rate = prev.as_ref().map(|(t, p)| {
            grants_between(p, &seen) as f64 / at.duration_since(*t).as_secs_f64().max(1e-3)
        });
        n += 1;
        let frame = if json {
            let mut v = inspection_json(&seen);
            v["grants_per_second"] = rate.into();
            format!("{v}\n")
        } else {
            let rate = rate.map_or("-".into(), |r| format!("{r:.1}"));
            format!(
                "{}every {:?}, refresh {n}, grants/s {rate} (at least; see --help)\n{}",
                if clear {
                    "\x1b[H\x1b[2J"
                } else if n > 1 {
                    "\n"
                } else {
                    ""
                },
                interval,
                inspection_table(&target.describe(), &seen),
            )
        };
        out(&frame)?;
        if count.is_some_and(|c| n >= c) {
            break;
        }
        prev = Some((at, seen));
        // In slices, so that a signal ends the wait soon.
        let until = Instant::now() + interval;
        while !STOP.load(Ordering::Relaxed) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    Ok(())
}

/// The refreshes, made on a thread of their own: one may wait without
/// bound (a named semaphore's lock held by a process stopped inside it,
/// which Ctrl-C cannot interrupt), and Ctrl-C must still end the watch at
/// once. The source lives on that thread, and is dropped there when the
/// watch ends normally (a named semaphore's record detached cleanly); a
/// watch that ends while a refresh waits leaves it to the process's exit
/// (its record is then reclaimed as any dead process's).
struct Looker {
    ask: Option<mpsc::Sender<()>>,
    answers: mpsc::Receiver<Result<Inspection, CliError>>,
    /// Told when the thread has dropped the source.
    done: mpsc::Receiver<()>,
    /// A refresh is still running (`look` gave up on it at a signal).
    busy: std::cell::Cell<bool>,
}

impl Looker {
    fn start(source: Source) -> Looker {
        let (ask, asked) = mpsc::channel::<()>();
        let (answer, answers) = mpsc::channel();
        let (finished, done) = mpsc::channel();
        std::thread::spawn(move || {
            for () in asked {
                let seen = source
                    .inspect()
                    .and_then(|seen| source.still_named().map(|()| seen));
                if answer.send(seen).is_err() {
                    break;
                }
            }
            drop(source);
            let _ = finished.send(());
        });
        Looker {
            ask: Some(ask),
            answers,
            done,
            busy: std::cell::Cell::new(false),
        }
    }

    /// One snapshot; `None` if a signal came first.
    fn look(&self) -> Option<Result<Inspection, CliError>> {
        if let Some(ask) = &self.ask {
            // The thread ended (it panicked): the receive below says so.
            let _ = ask.send(());
        }
        loop {
            match self.answers.recv_timeout(Duration::from_millis(50)) {
                Ok(seen) => return Some(seen),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if STOP.load(Ordering::Relaxed) {
                        self.busy.set(true);
                        return None;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Some(Err(CliError::Failed(
                        "the refreshing thread ended unexpectedly".into(),
                    )))
                }
            }
        }
    }
}

impl Drop for Looker {
    /// Ends the thread and waits for it to drop the source (a named
    /// semaphore's record detached cleanly before the process exits); not
    /// when a refresh is still running, and for at most a second: the
    /// detach takes the segment's lock, without a bound, and a process
    /// stopped inside it may hold it (the watch then ends without the
    /// detach, and its record is reclaimed as a dead process's).
    fn drop(&mut self) {
        drop(self.ask.take());
        if !self.busy.get() {
            let _ = self.done.recv_timeout(crate::target::DETACH_WAIT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volt_sem::inspect::{Holder, Process};

    fn holder(pid: u32, held_ms: u64, token: Option<u64>) -> Holder {
        let p = Process {
            label: format!("p{pid}"),
            host: "h".into(),
            pid,
        };
        let h = Holder::new(&p, 1, Some(Duration::from_millis(held_ms)));
        match token {
            Some(t) => h.with_lease(Duration::from_secs(1), t),
            None => h,
        }
    }

    fn seen(holders: Vec<Holder>) -> Inspection {
        Inspection::new(4, 0, false, holders, vec![])
    }

    #[test]
    fn grants_are_new_holders_restarted_holdings_and_new_tokens() {
        let before = seen(vec![holder(1, 500, None), holder(2, 500, Some(7))]);
        // 1 kept holding, 2 kept its token, 3 is new: one grant.
        let after = seen(vec![
            holder(1, 900, None),
            holder(2, 900, Some(7)),
            holder(3, 10, None),
        ]);
        assert_eq!(grants_between(&before, &after), 1);
        // 1 started again, 2 has a new token: two grants.
        let after = seen(vec![holder(1, 100, None), holder(2, 1000, Some(9))]);
        assert_eq!(grants_between(&before, &after), 2);
        assert_eq!(grants_between(&after, &seen(vec![])), 0);
    }
}
