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
//! The count costs one atomic read-modify-write per acquire and one per
//! release (about +10 to +12 ns on a 41 ns uncontended `try_acquire` +
//! `release` pair in C, best of 7 x 2 million pairs; +0.5 ns uncounted);
//! every binding's named handles pay it (C, Python and Node), for one
//! meaning of `disconnect` in every language. Only the seam's count, one
//! word with the end, keeps a release racing the disconnect from returning
//! the same permits twice: a binding must not count beside it.
//!
//! [`Semaphore::disconnect`]: crate::Semaphore::disconnect

use core::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use volt_sem_shm::{BlockingTicket, SharedSemaphore};

// `volt_sem_shm::ShmWaiter` on Linux (the only place it queues).
type ShmWaiter = volt_sem::Waiter;

use crate::error::Error;

/// `SharedHandle::state`'s end bit (the count of held permits, at most a
/// total, stays far below it).
const ENDED: usize = 1 << (usize::BITS - 1);

/// How many times a give-back reads what the process holds again after
/// another handle's release made its release `NotHeld`.
const GIVE_BACK_TRIES: u32 = 64;

/// A handle of a named semaphore, as [`Semaphore::Shared`](crate::Semaphore::Shared)
/// holds it: the [`SharedSemaphore`] (which it dereferences to) and this
/// handle's session (see [`Semaphore::disconnect`](crate::Semaphore::disconnect)).
pub struct SharedHandle {
    sem: SharedSemaphore,
    /// [`ENDED`] (set once by `disconnect`, under `queued`'s lock) and,
    /// below it, the permits granted through this handle and not released
    /// through it (kept only when `counting`). One word, so that a grant or
    /// a release is counted, or refused, atomically with the end: a release
    /// takes its permits out of the count before it gives them back, so
    /// `disconnect` never gives them back a second time.
    state: AtomicUsize,
    /// Whether the count is kept (`Semaphore::counting_held`).
    counting: bool,
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
            state: AtomicUsize::new(0),
            counting: false,
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
        self.state.load(SeqCst) & ENDED != 0
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
        // SeqCst, one word with `disconnect`'s swap: either it took this
        // count (and gave the permits back), or this sees the end.
        let ended = if self.counting {
            self.state
                .fetch_update(SeqCst, SeqCst, |s| (s & ENDED == 0).then(|| s + n))
                .is_err()
        } else {
            self.is_disconnected()
        };
        if ended {
            self.release_held(n);
            return Err(Error::Disconnected);
        }
        Ok(())
    }

    /// Releases `n` permits through this handle. A counting handle takes
    /// them out of its count first (at most what it counts: a process may
    /// release, through one handle, permits another took), in one step with
    /// the check for the end, so that a `disconnect` racing this either
    /// came first (then this is refused, the permits went back with the
    /// handle's) or does not see them (then this gives them back).
    #[inline]
    pub(crate) fn release(&self, n: usize) -> Result<(), Error> {
        if !self.counting {
            self.live()?;
            return Ok(self.sem.release(n)?);
        }
        let took = match self
            .state
            .fetch_update(SeqCst, SeqCst, |s| (s & ENDED == 0).then(|| s - s.min(n)))
        {
            Ok(s) => s.min(n),
            Err(_) => return Err(Error::Disconnected),
        };
        stage(Stage::BeforeRelease);
        let r = self.sem.release(n);
        stage(Stage::AfterRelease);
        if r.is_err() && took > 0 {
            // Nothing was released: the handle holds them still, unless
            // `disconnect` came meanwhile (without them): then they go back.
            let back = self
                .state
                .fetch_update(SeqCst, SeqCst, |s| (s & ENDED == 0).then(|| s + took));
            if back.is_err() {
                self.release_held(took);
            }
        }
        Ok(r?)
    }

    /// Releases `n` permits, or fewer if the process holds fewer (another
    /// handle of the process released them): never `NotHeld`. What the
    /// process holds is read, then released: a release through another
    /// handle in between makes the release `NotHeld` (all or nothing), and
    /// what is left is read again (a bounded number of times: each miss is
    /// another handle's release).
    fn release_held(&self, n: usize) {
        if n == 0 {
            return;
        }
        for _ in 0..GIVE_BACK_TRIES {
            let k = n.min(self.sem.held_permits().unwrap_or(0));
            stage(Stage::BeforeGiveBack);
            if k == 0 {
                return;
            }
            match self.sem.release(k) {
                Err(volt_sem_shm::Error::NotHeld { .. }) => continue,
                // A failure here (the segment's lock unrecoverable, a fork)
                // leaves them to the process's exit, as every named permit.
                _ => return,
            }
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

    /// Takes a raw request out of the list, before its `finish_raw`. Not in
    /// a `fork()` child, where a thread of the parent may have held the lock
    /// at the fork (for ever, there): the list is the child's copy, which
    /// nothing there reads (its `disconnect` is `Forked`), and the parent's
    /// requests end there at once. (Checked only when the lock is taken: the
    /// uncontended finish pays nothing for it.)
    pub(crate) fn unlist(&self, w: &ShmWaiter) {
        let addr = w as *const ShmWaiter as usize;
        let mut q = match self.queued.try_lock() {
            Ok(q) => q,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if self.sem.opener_pid() != std::process::id() {
                    return;
                }
                self.lock()
            }
        };
        if let Some(i) = q.raw.iter().position(|&a| a == addr) {
            q.raw.swap_remove(i);
        }
    }

    /// A blocking acquire of `n` permits through this handle (`None`: no
    /// timeout) that `disconnect` ends at once: if it queues, its ticket is
    /// listed for `disconnect` to fail (which wakes it; it then returns
    /// `TooManyPermits`, which the caller reports as `Disconnected`), and
    /// taken out when it returns. The uncontended acquire lists nothing.
    /// With `poll`, `interrupted()` is called about every `poll` while it
    /// waits, and `true` gives the wait up (`Ok(false)`, a partial grant
    /// handed on), as `SharedSemaphore::acquire_blocking_interruptible`.
    /// `Ok(true)`: granted (the caller holds the permits by count).
    pub(crate) fn acquire_blocking_listed(
        &self,
        n: usize,
        timeout: Option<Duration>,
        poll: Option<(Duration, &mut dyn FnMut() -> bool)>,
    ) -> Result<bool, Error> {
        let mut listed = None;
        let on_queued = |t| {
            listed = Some(t);
            let mut q = self.lock();
            if self.is_disconnected() {
                drop(q);
                // Disconnected meanwhile (it did not see this ticket).
                let _ = self.sem.fail_blocking(t);
                return;
            }
            q.blocking.push(t);
        };
        let r = match poll {
            None => self
                .sem
                .acquire_blocking_ticketed(n, timeout, on_queued)
                .map(|p| p.forget())
                .map(|()| true),
            Some((every, interrupted)) => self
                .sem
                .acquire_blocking_interruptible_ticketed(n, timeout, every, interrupted, on_queued)
                .map(|p| p.map(|p| p.forget()).is_some()),
        };
        // Not in a fork child (its check forked: a signal handler): the list
        // is the child's copy, which nothing there reads (its `disconnect`
        // is `Forked`), and its lock may be held for ever by a thread of the
        // parent that the child does not have.
        if let (Some(t), false) = (listed, matches!(r, Err(volt_sem_shm::Error::Forked))) {
            let mut q = self.lock();
            if let Some(i) = q.blocking.iter().position(|&b| b == t) {
                q.blocking.swap_remove(i);
            }
        }
        r.map_err(Error::from)
    }

    /// Ends this handle's session: refuses every later call, fails its queued
    /// raw requests (their callbacks run on the doorbell thread), and gives
    /// back what it holds if it counts it. Its blocking acquires that queued
    /// are failed too, which wakes them at once (they return `Disconnected`).
    /// Idempotent: a second call returns once the first one gave back what
    /// the handle held (the give-back is made under the list's lock, which
    /// the second call takes first). [`Error::Forked`] in a `fork()` child
    /// (the handle is the parent's: nothing changed), as every other call.
    pub(crate) fn disconnect(&self) -> Result<(), Error> {
        if self.sem.opener_pid() != std::process::id() {
            return Err(Error::Forked);
        }
        {
            let mut q = self.lock();
            // The count goes with the end, in one step (see `state`).
            let old = self.state.swap(ENDED, SeqCst);
            if old & ENDED != 0 {
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
            // Still under the lock: a second `disconnect` returns after this.
            // (The lock order is this lock, then the segment's, as for the
            // fails above; nothing takes them the other way round.)
            self.release_held(old);
        }
        Ok(())
    }
}

/// The steps of [`SharedHandle::release`] where a test runs a
/// disconnect (a race made deterministic).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    /// After the handle's checks (and its count's update), before the
    /// process's release.
    BeforeRelease,
    /// After the process's release.
    AfterRelease,
    /// In a give-back (`disconnect`'s, or a grant's that came after it):
    /// after it read what the process holds, before it releases.
    BeforeGiveBack,
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

    /// Two counted handles of one process on a fresh name of `total`
    /// permits, each holding `each` of them.
    fn counted_pair(
        tag: &str,
        total: usize,
        each: usize,
    ) -> (String, Arc<SharedHandle>, Arc<SharedHandle>) {
        let name = format!("session-{tag}-{}", std::process::id());
        let _ = volt_sem_shm::unlink(&name);
        let open = || {
            let mut h = SharedHandle::from(
                SharedSemaphore::open(&name, total, OpenOptions::new()).unwrap(),
            );
            h.count_held();
            h.sem.try_acquire(each).unwrap().forget();
            h.granted(each).unwrap();
            Arc::new(h)
        };
        let (a, b) = (open(), open());
        assert_eq!(a.sem.held_permits(), Ok(2 * each));
        (name, a, b)
    }

    /// Two counted handles of one process on a fresh name, each holding one
    /// of the two permits.
    fn two_holding(tag: &str) -> (String, Arc<SharedHandle>, Arc<SharedHandle>) {
        counted_pair(tag, 2, 1)
    }

    /// Runs `f` at step `at` of this thread's next release or give-back.
    fn at(at: Stage, f: impl FnOnce() + 'static) {
        AT.with(|s| *s.borrow_mut() = Some((at, Box::new(f))));
    }

    /// A release through handle `a` racing `a`'s disconnect (the disconnect
    /// lands at step `at` of the release): between them they give back `a`'s
    /// one permit, never `b`'s, and `b` releases its own after.
    fn release_racing_disconnect(tag: &str, at: Stage) {
        let (name, a, b) = two_holding(tag);
        let d = Arc::clone(&a);
        self::at(at, move || d.disconnect().unwrap());
        let r = a.release(1);
        assert!(matches!(r, Ok(()) | Err(Error::Disconnected)), "{r:?}");
        assert_eq!(a.sem.held_permits(), Ok(1), "b's permit is b's ({at:?})");
        assert_eq!(
            a.sem.available_permits(),
            1,
            "a's permit went back once ({at:?})"
        );
        assert_eq!(b.release(1), Ok(()));
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

    /// `a`'s disconnect reads what the process holds (2, both `a`'s), then
    /// another handle of the process releases one of them (a process's
    /// permits are its own, whichever handle took them): the disconnect
    /// gives back the one the process still holds, not nothing.
    #[test]
    fn a_give_back_racing_a_release_through_another_handle_gives_back_what_is_left() {
        let (name, a, b) = counted_pair("give-back", 3, 0);
        a.sem.try_acquire(2).unwrap().forget();
        a.granted(2).unwrap();
        let b2 = Arc::clone(&b);
        at(Stage::BeforeGiveBack, move || b2.release(1).unwrap());
        a.disconnect().unwrap();
        assert_eq!(
            (a.sem.held_permits(), a.sem.available_permits()),
            (Ok(0), 3),
            "the permit the process still held went back"
        );
        let _ = volt_sem_shm::unlink(&name);
    }

    /// A thread that, once told (`go`), takes `a`'s list lock, says so
    /// (`locked`), and holds it until the child whose pid it is sent is gone:
    /// it returns the child's exit status, or `None` if the child did not end
    /// within 10 s (then killed).
    #[allow(clippy::type_complexity)]
    fn hold_list_lock_for_a_child(
        a: &Arc<SharedHandle>,
    ) -> (
        std::sync::mpsc::Sender<()>,
        std::sync::mpsc::Receiver<()>,
        std::sync::mpsc::Sender<libc::pid_t>,
        std::thread::JoinHandle<Option<i32>>,
    ) {
        let (to_holder, pids) = std::sync::mpsc::channel::<libc::pid_t>();
        let (go_tx, go) = std::sync::mpsc::channel();
        let (locked_tx, locked) = std::sync::mpsc::channel();
        let a = Arc::clone(a);
        let holder = std::thread::spawn(move || {
            go.recv().unwrap();
            let q = a.lock();
            locked_tx.send(()).unwrap();
            let pid = pids.recv().unwrap();
            let mut status = 0;
            let mut ended = None;
            for _ in 0..1_000 {
                // SAFETY: plain syscall on our child.
                if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                    ended = Some(status);
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if ended.is_none() {
                // SAFETY: plain syscalls on our child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
            }
            drop(q);
            ended
        });
        (go_tx, locked, to_holder, holder)
    }

    /// A raw request the parent queued, finished in a fork child made while
    /// another thread of the parent held the handle's list lock (listing a
    /// request, disconnecting): it ends at once (`Closed`: the request is
    /// the parent's), as the C header promises for `volt_sem_cancel` there,
    /// instead of waiting for ever for that lock.
    #[test]
    fn a_parent_s_raw_request_finished_in_a_fork_child_ends_at_once() {
        let (name, a, _b) = counted_pair("fork-finish", 2, 1);
        let w = core::pin::pin!(ShmWaiter::new());
        unsafe extern "C" fn nothing(_: *mut core::ffi::c_void) {}
        // SAFETY: fresh; finished below (in both processes).
        let r = unsafe {
            volt_sem::raw::RawSemaphore::acquire_raw(
                &a.sem,
                w.as_ref(),
                1,
                nothing,
                core::ptr::null_mut(),
            )
        };
        assert_eq!(r, Ok(volt_sem::RawAcquire::Pending));
        a.queued(&w);
        let (go_tx, locked, to_holder, holder) = hold_list_lock_for_a_child(&a);
        go_tx.send(()).unwrap();
        locked.recv().unwrap();
        // SAFETY: plain fork; the child only runs the finish below, then
        // `_exit`s.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            a.unlist(&w);
            // SAFETY: queued by the parent on this semaphore.
            let f = unsafe { volt_sem::raw::RawSemaphore::finish_raw(&a.sem, w.as_ref()) };
            let code = if f == volt_sem_shm::Finish::Closed {
                0
            } else {
                1
            };
            // SAFETY: ends the child without running the parent's exit code.
            unsafe { libc::_exit(code) };
        }
        to_holder.send(pid).unwrap();
        let ended = holder.join().unwrap();
        a.unlist(&w);
        // SAFETY: queued on `a.sem`.
        let f = unsafe { volt_sem::raw::RawSemaphore::finish_raw(&a.sem, w.as_ref()) };
        assert!(matches!(f, volt_sem_shm::Finish::Cancelled { .. }), "{f:?}");
        assert_eq!(ended, Some(0), "the child's finish ended at once, Closed");
        let _ = volt_sem_shm::unlink(&name);
    }

    /// A blocking wait whose interruption check forks (a Python signal
    /// handler calling `os.fork()`) while another thread of the parent holds
    /// the handle's list lock (listing its own request, or disconnecting):
    /// the child's call ends with `Forked` at once, without that lock
    /// (held for ever in the child: its holder is the parent's thread).
    #[test]
    fn a_wait_forked_from_its_interruption_check_ends_in_the_child() {
        let (name, a, _b) = counted_pair("fork-in-poll", 2, 1);
        let (go_tx, locked, to_holder, holder) = hold_list_lock_for_a_child(&a);
        let mut forked = false;
        let r = a.acquire_blocking_listed(
            1,
            None,
            Some((Duration::from_millis(1), &mut || {
                if forked {
                    return true;
                }
                forked = true;
                go_tx.send(()).unwrap();
                locked.recv().unwrap();
                // SAFETY: the child only returns through the wait's code
                // (no allocation in this closure), then `_exit`s below.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    return false;
                }
                to_holder.send(pid).unwrap();
                // The parent gives its wait up.
                true
            })),
        );
        if a.sem.opener_pid() != std::process::id() {
            // The child: its verdict is its exit code.
            let code = if r == Err(Error::Forked) { 0 } else { 1 };
            // SAFETY: ends the child without running the parent's exit code.
            unsafe { libc::_exit(code) };
        }
        assert_eq!(r, Ok(false));
        let ended = holder.join().unwrap();
        assert_eq!(ended, Some(0), "the child's wait ended with Forked at once");
        let _ = volt_sem_shm::unlink(&name);
    }

    /// A second `disconnect` of a handle, on another thread, while the first
    /// one is giving back what the handle held: when it returns, the
    /// permits are back (as `disconnect` promises), not still on their way.
    #[test]
    fn a_second_disconnect_returns_once_the_handles_permits_are_back() {
        let (name, a, b) = two_holding("second-disconnect");
        let (tx, rx) = std::sync::mpsc::channel();
        let a2 = Arc::clone(&a);
        let second = std::sync::Arc::new(std::sync::Mutex::new(None));
        let second2 = Arc::clone(&second);
        at(Stage::BeforeGiveBack, move || {
            let t = std::thread::spawn(move || {
                let r = a2.disconnect();
                let seen = a2.sem.available_permits();
                let _ = tx.send(());
                (r, seen)
            });
            // Give the second disconnect the time to return if it
            // does not wait for this one (it must not: then this
            // wait ends empty, and the test's verdict is the same).
            let _ = rx.recv_timeout(Duration::from_secs(1));
            *second2.lock().unwrap() = Some(t);
        });
        a.disconnect().unwrap();
        let t = second.lock().unwrap().take().unwrap();
        let (r, seen) = t.join().unwrap();
        assert_eq!(r, Ok(()));
        assert_eq!(
            seen, 1,
            "a's permit was back when the second disconnect returned"
        );
        assert_eq!(b.release(1), Ok(()));
        let _ = volt_sem_shm::unlink(&name);
    }
}
