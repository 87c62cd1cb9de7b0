//! The process-wide registries of connected handles: the one that lets a
//! second `connect` share the live session of the same URL, name and
//! options, and the one that ends the sessions still alive at exit (or on
//! SIGTERM/SIGINT, see `on_signals.rs`).

use std::sync::{Arc, Mutex, Weak};

use std::sync::atomic::Ordering::Relaxed;

use super::{lock, Handle, Inner, Lost};
use crate::census::Census;
use crate::error::Error;
use crate::options::ConnectOptions;

/// One session per process per semaphore: the live handles by (URL, name,
/// options), as weak references, so that a second `connect` shares the
/// first one's session, connections and agent thread instead of opening
/// another set. Two first `connect`s racing may each open one; later ones
/// share the first found.
type Registered = (String, String, ConnectOptions, Weak<Handle>);
static REGISTRY: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

pub(crate) fn connect_shared(
    url: &str,
    name: &str,
    total: u64,
    opts: ConnectOptions,
) -> Result<Arc<Handle>, Error> {
    let found = {
        let mut reg = lock(&REGISTRY);
        reg.retain(|e| e.3.strong_count() > 0);
        reg.iter()
            .filter(|e| e.0 == url && e.1 == name && e.2 == opts)
            .filter_map(|e| e.3.upgrade())
            // Never a handle inherited through fork(): its session is the
            // parent's; nor one whose session is over for good (Redis lost
            // the state, `disconnect`, the sessions ended on a signal): a
            // live handle may outlive that (a clone, a `Permit`), and this
            // `connect` would return a handle that refuses everything.
            .find(|i| {
                let st = lock(&i.state);
                i.total() == total && !i.forked() && !st.failed && !st.disconnected && !st.shutdown
            })
    };
    if let Some(inner) = found {
        // `connect` talks to Redis at once, shared or not, and holds the
        // total asked for against the one in Redis, which another client
        // may have changed since this handle last heard it (the census:
        // one round trip, as the ping it replaces).
        match inner.census().and_then(|r| Census::from_reply(&r)) {
            Ok(c) => {
                inner.total.store(c.total, Relaxed);
                if c.total != total {
                    if !opts.resize {
                        return Err(Error::TotalMismatch { existing: c.total });
                    }
                    inner.set_total(total)?;
                }
                return Ok(inner);
            }
            // Redis lost it (restarted empty, deleted): not shared, the
            // connect starts afresh, as for a handle that saw the loss.
            Err(Error::StateLost) => {}
            Err(e) => return Err(e),
        }
    }
    let inner = Inner::connect(url, name, total, opts.clone())?;
    lock(&REGISTRY).push((
        url.to_string(),
        name.to_string(),
        opts,
        Arc::downgrade(&inner),
    ));
    Ok(inner)
}

/// Ends every live session of this process now (permits back, queued
/// requests out of the queue); see `on_signals.rs` (Unix only).
#[cfg(unix)]
pub(crate) fn end_all_sessions() {
    at_exit::end_all_waiting();
}

/// Sessions still alive when the process exits (a handle in a `static`, a
/// leaked one, `std::process::exit`) are ended from an `atexit` handler, so
/// their permits go back at once instead of at lease expiry. Best effort and
/// never blocking: a handle whose command connection is busy is left to
/// expire.
pub(super) mod at_exit {
    use std::sync::{Mutex, Once, Weak};

    use super::super::Inner;

    static LIVE: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());
    static INSTALL: Once = Once::new();

    extern "C" fn end_all() {
        let Ok(list) = LIVE.try_lock() else {
            return;
        };
        for w in list.iter() {
            if let Some(inner) = w.upgrade() {
                inner.end_now(false);
            }
        }
    }

    /// From a plain thread (`end_sessions_on_signals`): may wait for a
    /// command in flight (bounded by the command timeout).
    #[cfg(unix)]
    pub(crate) fn end_all_waiting() {
        let live: Vec<_> = LIVE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for inner in live {
            inner.end_now(true);
        }
    }

    pub(in crate::session) fn register(w: Weak<Inner>) {
        INSTALL.call_once(|| {
            // SAFETY: `end_all` is an `extern "C" fn()` that never unwinds
            // (no panicking call: try_lock, upgrade, and `end_now` which
            // catches everything).
            unsafe { libc::atexit(end_all) };
        });
        let mut list = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.push(w);
    }
}

impl Inner {
    /// Ends every session of this handle now; without blocking on a lock
    /// unless `wait` (the exit handler may not wait: a lock holder may be
    /// a thread that exit() stopped).
    fn end_now(&self, wait: bool) {
        if self.forked() {
            return; // the parent's sessions: not this process's to end
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut st = match self.state.try_lock() {
                Ok(st) => st,
                Err(_) if wait => lock(&self.state),
                Err(_) => return,
            };
            if st.failed {
                return;
            }
            // From the signal thread (`wait`) the process may go on: an
            // application handler installed before runs next, and decides.
            // The session's waiters then learn it is over (`Closed`, as
            // from `disconnect`) and its holders' lease watches fire,
            // instead of waiting for ever for an agent that exits now. Not
            // from the exit handler: no callback runs while the process
            // exits (it may wait for a lock a stopped thread holds).
            let lost = match st.session.as_ref().map(|s| s.epoch) {
                Some(e) if wait => self.lose_locked(&mut st, e, &Error::Closed),
                _ => Lost::default(),
            };
            let mut sids: Vec<String> = st.to_end.drain(..).collect();
            if let Some(s) = st.session.take() {
                sids.push(s.sid);
            }
            st.shutdown = true;
            drop(st);
            let mut g = match self.cmd.try_lock() {
                Ok(g) => g,
                Err(_) if wait => lock(&self.cmd),
                Err(_) => return,
            };
            if let Some(con) = g.as_mut() {
                for sid in &sids {
                    let _ = self.scripts.end(con, &self.keys, self.who(sid));
                }
            }
            drop(g);
            // Once the sessions are ended: what this call is for comes first.
            lost.wake();
        }));
    }
}
