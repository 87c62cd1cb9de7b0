//! A named handle's session: what [`Semaphore::disconnect`] ends on a
//! handle of a named semaphore (a Redis handle's session is the Redis
//! crate's own: `RedisSemaphore::disconnect`).
//!
//! A named semaphore counts permits per *process* (its attachment to the
//! name, shared by every handle of the process on that name), so a handle
//! keeps its own share here: its requests queued in the segment and, if it
//! was made with [`Semaphore::counting_held`](crate::Semaphore::counting_held),
//! the permits granted through it and not released through it. `disconnect`
//! fails those requests (`SharedSemaphore::fail_queued`: their callbacks
//! run, their owners' `finish_raw` report [`Error::Disconnected`]), gives
//! back what the handle holds if it counts it (as far as the process still
//! holds it: another handle of the process may have returned some; else
//! the process's permits go back with its last handle of the name), and
//! refuses every later call; the other handles of the process, and every
//! other process, go on.
//!
//! The count costs two atomic read-modify-writes per acquire and release
//! (about +10 to +12 ns on a 41 ns uncontended `try_acquire` + `release`
//! pair, best of 7 x 2 million pairs; +0.5 ns uncounted), so a
//! binding that counts its holds itself (Node) or hands the process's back
//! with its last handle (Python) does without.
//!
//! [`Semaphore::disconnect`]: crate::Semaphore::disconnect

use core::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use volt_sem_shm::{BlockingTicket, SharedSemaphore};

// `volt_sem_shm::ShmWaiter` on Linux (the only place it queues).
type ShmWaiter = volt_sem::Waiter;

use crate::error::Error;

/// A handle of a named semaphore, as [`Semaphore::Shared`](crate::Semaphore::Shared)
/// holds it: the [`SharedSemaphore`] (which it dereferences to) and this
/// handle's session (see [`Semaphore::disconnect`](crate::Semaphore::disconnect)).
pub struct SharedHandle {
    sem: SharedSemaphore,
    /// Set once by `disconnect`, under `queued`'s lock.
    ended: AtomicBool,
    /// Whether `held` is kept (`Semaphore::counting_held`).
    counting: bool,
    /// Permits granted through this handle and not released through it
    /// (kept only when `counting`).
    held: AtomicUsize,
    /// This handle's requests that may be queued in the segment.
    queued: Mutex<Queued>,
}

/// A handle's requests that `disconnect` fails.
#[derive(Default)]
struct Queued {
    /// Raw requests (their waiters' addresses): listed by `acquire_raw`,
    /// taken out by `finish_raw` before it finishes them, so that a waiter
    /// in the list is live while the lock is held (`disconnect` fails them
    /// under it).
    raw: Vec<usize>,
    /// Blocking acquires that queued: listed when they queue, taken out when
    /// they return (a ticket left a moment too long is harmless: failing it
    /// changes nothing once its request is not queued).
    blocking: Vec<BlockingTicket>,
}

impl core::fmt::Debug for SharedHandle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.sem.fmt(f)
    }
}

impl Deref for SharedHandle {
    type Target = SharedSemaphore;
    #[inline]
    fn deref(&self) -> &SharedSemaphore {
        &self.sem
    }
}

impl From<SharedSemaphore> for SharedHandle {
    fn from(sem: SharedSemaphore) -> Self {
        SharedHandle {
            sem,
            ended: AtomicBool::new(false),
            counting: false,
            held: AtomicUsize::new(0),
            queued: Mutex::new(Queued::default()),
        }
    }
}

impl SharedHandle {
    /// The shared semaphore.
    #[inline]
    pub fn shared(&self) -> &SharedSemaphore {
        &self.sem
    }

    /// Counts what this handle holds from now on (before its first acquire).
    pub(crate) fn count_held(&mut self) {
        self.counting = true;
    }

    /// Whether `disconnect` ended this handle.
    #[inline]
    pub(crate) fn is_disconnected(&self) -> bool {
        self.ended.load(SeqCst)
    }

    /// `Err(Disconnected)` once this handle was disconnected.
    #[inline]
    pub(crate) fn live(&self) -> Result<(), Error> {
        if self.is_disconnected() {
            return Err(Error::Disconnected);
        }
        Ok(())
    }

    /// Counts `n` permits granted through this handle. A grant that lands
    /// after `disconnect` took the handle's count is given back here and
    /// reported as [`Error::Disconnected`]: the handle holds nothing once
    /// disconnected.
    #[inline]
    pub(crate) fn granted(&self, n: usize) -> Result<(), Error> {
        if self.counting {
            self.held.fetch_add(n, SeqCst);
        }
        // SeqCst with `disconnect`'s store then swap: either its swap saw
        // this add (and gave the permits back), or this load sees the end.
        if self.is_disconnected() {
            self.give_back(n);
            return Err(Error::Disconnected);
        }
        Ok(())
    }

    /// Releases `n` permits through this handle ([`Error::Disconnected`] once
    /// disconnected). A counting handle takes them out of its count *before*
    /// the process's release, so that a disconnect racing it gives back only
    /// the rest: with the count taken after, a disconnect in between counted
    /// them still the handle's and gave back as many of the process's
    /// permits, those of its other handles (which then answered
    /// `NotHeld`, while another process got their permits).
    #[inline]
    pub(crate) fn release_through(&self, n: usize) -> Result<(), Error> {
        self.live()?;
        if !self.counting {
            stage(Stage::BeforeRelease);
            self.sem.release(n)?;
            stage(Stage::AfterRelease);
            return Ok(());
        }
        // At most what it counts (a process may release, through one handle,
        // permits another took). SeqCst with `disconnect`'s store of `ended`
        // then swap of `held`: either its swap comes after this take (and
        // leaves these permits to this call), or this call sees the end.
        let took = match self
            .held
            .fetch_update(SeqCst, SeqCst, |h| Some(h.saturating_sub(n)))
        {
            Ok(h) | Err(h) => h.min(n),
        };
        stage(Stage::BeforeRelease);
        if self.is_disconnected() {
            // The disconnect gave back what it still counted; what this call
            // took out before its swap goes back here.
            self.release_held(took);
            return Err(Error::Disconnected);
        }
        if let Err(e) = self.sem.release(n) {
            // Nothing released: back into the count (given back at once if a
            // disconnect came meanwhile, which did not see them).
            if took > 0 {
                let _ = self.granted(took);
            }
            return Err(e.into());
        }
        stage(Stage::AfterRelease);
        Ok(())
    }

    /// Takes up to `n` of this handle's permits out of its count and releases
    /// them (as far as the process still holds them); without a count, the
    /// `n` just granted after the end.
    fn give_back(&self, n: usize) {
        if !self.counting {
            self.release_held(n);
            return;
        }
        let took = match self
            .held
            .fetch_update(SeqCst, SeqCst, |h| Some(h.saturating_sub(n)))
        {
            Ok(h) | Err(h) => h.min(n),
        };
        self.release_held(took);
    }

    /// Releases `n` permits, or fewer if the process holds fewer (another
    /// handle of the process released them): never `NotHeld`.
    fn release_held(&self, n: usize) {
        if n == 0 {
            return;
        }
        let n = n.min(self.sem.held_permits().unwrap_or(0));
        if n > 0 {
            // A failure here (the segment's lock unrecoverable, a fork) leaves
            // them to the process's exit, as every named permit.
            let _ = self.sem.release(n);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lists a raw request that `acquire_raw` queued; fails it at once if
    /// `disconnect` came meanwhile (it did not see it).
    pub(crate) fn queued(&self, w: &ShmWaiter) {
        let mut q = self.lock();
        if self.is_disconnected() {
            drop(q);
            // SAFETY: queued by its owner, whose `finish_raw` has not run
            // (this is still its `acquire_raw`).
            unsafe { fail(&self.sem, w) };
            return;
        }
        q.raw.push(w as *const ShmWaiter as usize);
    }

    /// Takes a raw request out of the list, before its `finish_raw`.
    pub(crate) fn unlist(&self, w: &ShmWaiter) {
        let addr = w as *const ShmWaiter as usize;
        let mut q = self.lock();
        if let Some(i) = q.raw.iter().position(|&a| a == addr) {
            q.raw.swap_remove(i);
        }
    }

    /// A blocking acquire of `n` permits through this handle (`None`: no
    /// timeout) that `disconnect` ends at once: if it queues, its ticket is
    /// listed for `disconnect` to fail (which wakes it; it then returns
    /// `TooManyPermits`, which the caller reports as `Disconnected`), and
    /// taken out when it returns. The uncontended acquire lists nothing.
    pub(crate) fn acquire_blocking_listed(
        &self,
        n: usize,
        timeout: Option<Duration>,
    ) -> Result<(), Error> {
        let mut listed = None;
        let r = self.sem.acquire_blocking_ticketed(n, timeout, |t| {
            listed = Some(t);
            let mut q = self.lock();
            if self.is_disconnected() {
                drop(q);
                // Disconnected meanwhile (it did not see this ticket).
                let _ = self.sem.fail_blocking(t);
                return;
            }
            q.blocking.push(t);
        });
        if let Some(t) = listed {
            let mut q = self.lock();
            if let Some(i) = q.blocking.iter().position(|&b| b == t) {
                q.blocking.swap_remove(i);
            }
        }
        r.map(|p| p.forget()).map_err(Error::from)
    }

    /// Ends this handle's session: refuses every later call, fails its queued
    /// raw requests (their callbacks run on the doorbell thread), and gives
    /// back what it holds if it counts it. Its blocking acquires that queued
    /// are failed too, which wakes them at once (they return `Disconnected`).
    /// Idempotent. [`Error::Forked`] in a `fork()` child (the handle is the
    /// parent's: nothing changed), as every other call.
    pub(crate) fn disconnect(&self) -> Result<(), Error> {
        if self.sem.opener_pid() != std::process::id() {
            return Err(Error::Forked);
        }
        {
            let mut q = self.lock();
            if self.ended.swap(true, SeqCst) {
                return Ok(());
            }
            for &addr in q.raw.iter() {
                // SAFETY: a listed waiter is live while the lock is held: its
                // owner's `finish_raw` takes it out under this lock first.
                unsafe { fail(&self.sem, &*(addr as *const ShmWaiter)) };
            }
            q.raw.clear();
            for &t in q.blocking.iter() {
                // An error (the segment's lock unrecoverable, a fork) leaves
                // the request queued: its wait ends as it would have.
                let _ = self.sem.fail_blocking(t);
            }
            q.blocking.clear();
        }
        let held = self.held.swap(0, SeqCst);
        self.release_held(held);
        Ok(())
    }
}

/// The steps of [`SharedHandle::release_through`] where a test runs a
/// disconnect (a race made deterministic).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    /// After the handle's checks (and its count's update), before the
    /// process's release.
    BeforeRelease,
    /// After the process's release.
    AfterRelease,
}

/// A test's action at one step of a release.
#[cfg(test)]
type StageAction = Option<(Stage, Box<dyn FnOnce()>)>;

#[cfg(test)]
std::thread_local! {
    /// The test's action at one step of this thread's next release.
    static AT: core::cell::RefCell<StageAction> =
        const { core::cell::RefCell::new(None) };
}

/// Runs the test's action for step `s` (nothing outside tests).
#[inline(always)]
fn stage(s: Stage) {
    #[cfg(test)]
    {
        let f = AT.with(|a| {
            let mut a = a.borrow_mut();
            match a.take() {
                Some((at, f)) if at == s => Some(f),
                other => {
                    *a = other;
                    None
                }
            }
        });
        if let Some(f) = f {
            f();
        }
    }
    #[cfg(not(test))]
    let _ = s;
}

/// `SharedSemaphore::fail_queued` where named semaphores exist (elsewhere no
/// request is ever queued).
///
/// # Safety
/// As `SharedSemaphore::fail_queued`.
unsafe fn fail(sem: &SharedSemaphore, w: &ShmWaiter) {
    #[cfg(target_os = "linux")]
    // SAFETY: forwarded contract. An error (the segment's lock unrecoverable,
    // a fork) leaves the request queued: its owner's finish_raw ends it.
    let _ = unsafe { sem.fail_queued(w) };
    #[cfg(not(target_os = "linux"))]
    let _ = (sem, w);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use volt_sem_shm::OpenOptions;

    /// Two counted handles of one process on a fresh name, each holding one
    /// of the two permits.
    fn two_holding(tag: &str) -> (String, Arc<SharedHandle>, Arc<SharedHandle>) {
        let name = format!("session-{tag}-{}", std::process::id());
        let _ = volt_sem_shm::unlink(&name);
        let open = || {
            let mut h =
                SharedHandle::from(SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap());
            h.count_held();
            h.sem.try_acquire(1).unwrap().forget();
            h.granted(1).unwrap();
            Arc::new(h)
        };
        let (a, b) = (open(), open());
        assert_eq!(a.sem.held_permits(), Ok(2));
        (name, a, b)
    }

    /// A release through handle `a` racing `a`'s disconnect (the disconnect
    /// lands at step `at` of the release): between them they give back `a`'s
    /// one permit, never `b`'s, and `b` releases its own after.
    fn release_racing_disconnect(tag: &str, at: Stage) {
        let (name, a, b) = two_holding(tag);
        let d = Arc::clone(&a);
        AT.with(|s| *s.borrow_mut() = Some((at, Box::new(move || d.disconnect().unwrap()))));
        let r = a.release_through(1);
        assert!(matches!(r, Ok(()) | Err(Error::Disconnected)), "{r:?}");
        assert_eq!(a.sem.held_permits(), Ok(1), "b's permit is b's ({at:?})");
        assert_eq!(
            a.sem.available_permits(),
            1,
            "a's permit went back once ({at:?})"
        );
        assert_eq!(b.release_through(1), Ok(()));
        assert_eq!(b.sem.available_permits(), 2);
        let _ = volt_sem_shm::unlink(&name);
    }

    #[test]
    fn a_disconnect_before_a_racing_release_takes_only_its_handles_permits() {
        release_racing_disconnect("race-before", Stage::BeforeRelease);
    }

    #[test]
    fn a_disconnect_after_a_racing_release_takes_only_its_handles_permits() {
        release_racing_disconnect("race-after", Stage::AfterRelease);
    }
}
