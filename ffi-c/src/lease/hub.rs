//! Lease-loss callbacks for C (`volt_sem_watch_lease`).
//!
//! The Redis crate reports the loss of a session through a future
//! (`LeaseWatch`) whose waker it keeps until the session is lost (or the
//! handle dropped) and wakes *while holding the handle's state lock*. Two
//! consequences shape this module:
//!
//! * A C callback cannot run in that waker: it may call back into the library
//!   (release, acquire), which takes that lock. So the waker only posts to one
//!   notifier thread per process ("volt-sem-lease", started by the first
//!   watch), which runs the C callbacks one after another, under no lock of
//!   the library.
//! * Registering one waker per C watch would grow the handle's waker list by
//!   one entry per watch for as long as the session lives (a program that
//!   watches every grant of a long-lived handle would leak). So each handle
//!   registers one [`Hub`] per session, once, and the C watches of that
//!   session are entries in the hub's list, removed when freed: the memory
//!   is bounded by the watches alive.
//!
//! A watch moves through `ARMED -> FIRING -> DONE` (the notifier calls the
//! callback) or `ARMED -> CANCELLED` (`volt_lease_watch_free` first). The
//! compare-and-swap out of `ARMED` decides which, so the callback runs at
//! most once and never after the free returned. A free that finds `FIRING`
//! waits for `DONE` (the callback returned), unless it is made from inside
//! that very callback, where waiting would wait for itself.
//!
//! Ownership, without cycles: the Redis handle's waker list holds the hub;
//! the hub holds its watches and only a `Weak` reference to the C handle
//! (`volt_sem`), which holds the hub of its current session. Each C watch
//! (`volt_lease_watch`) holds a strong reference to the handle (so the
//! session is watched as long as the watch lives), its hub and its entry.

use std::cell::Cell;
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};

use volt_sem_backend::Error;

use crate::last_error::{forget_last_error, noted};
use crate::semaphore::volt_sem;
use crate::status::{status_of, volt_status};

const ARMED: u8 = 0;
const FIRING: u8 = 1;
const DONE: u8 = 2;
const CANCELLED: u8 = 3;

/// The C callback: `lost(ctx, why)`.
pub(crate) type LostFn = unsafe extern "C-unwind" fn(ctx: *mut c_void, why: volt_status);

/// One C watch: an entry in its session's hub.
pub(crate) struct Watch {
    state: AtomicU8,
    lost: LostFn,
    ctx: *mut c_void,
    /// Signalled when a firing ends (`state` leaves `FIRING`).
    fired: Condvar,
    fired_lock: Mutex<()>,
}

// SAFETY: `ctx` is the C caller's pointer, which it promised may be used by
// the callback from any thread until the watch is freed; everything else is
// Send + Sync.
unsafe impl Send for Watch {}
// SAFETY: as above.
unsafe impl Sync for Watch {}

/// The one registration of a handle for one of its sessions.
pub(crate) struct Hub {
    session: u64,
    handle: Weak<volt_sem>,
    /// The armed watches; `None` once the hub fired (the session is lost).
    watches: Mutex<Option<Vec<Arc<Watch>>>>,
}

thread_local! {
    /// The watch whose callback runs on this thread now.
    static CURRENT: Cell<*const Watch> = const { Cell::new(std::ptr::null()) };
}

/// The notifier's queue and the process that started its thread; `None`
/// until the first watch starts it. A child of `fork()` inherits the queue
/// but not the thread: its first watch starts its own.
static NOTIFIER: Mutex<Option<(u32, Sender<Arc<Hub>>)>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the notifier thread if it is not running. `false` if it cannot be
/// started (the OS refused a thread).
fn ensure_notifier() -> bool {
    let mut tx = lock(&NOTIFIER);
    let pid = std::process::id();
    if tx.as_ref().is_some_and(|(p, _)| *p == pid) {
        return true;
    }
    let (sender, receiver) = channel::<Arc<Hub>>();
    let started = std::thread::Builder::new()
        .name("volt-sem-lease".into())
        .spawn(move || {
            // Runs until the process exits (the sender lives in a static);
            // it never keeps the process alive.
            while let Ok(hub) = receiver.recv() {
                hub.fire();
                if std::process::id() != pid {
                    // A callback called fork(), and this is the child's
                    // copy of the thread, its only one, done with that
                    // hub's callbacks: nothing is ever sent to this queue
                    // here (the watched sessions are the parent's), so it
                    // ends (the child with it, as by exit(0)) instead of
                    // waiting for ever. The queue is leaked, as below.
                    std::mem::forget(receiver);
                    return;
                }
            }
        });
    if started.is_err() {
        return false;
    }
    // A queue inherited through fork() is leaked, never dropped: dropping
    // its last sender wakes the receiver under the channel's internal lock,
    // and the parent's notifier thread (absent here) may have held that lock
    // at the fork (it takes it while it starts waiting), which would block
    // this call for ever.
    if let Some(inherited) = tx.replace((pid, sender)) {
        std::mem::forget(inherited);
    }
    true
}

impl Wake for Hub {
    /// Called by the Redis crate, under its state lock: only post.
    fn wake(self: Arc<Self>) {
        if let Some((_, tx)) = lock(&NOTIFIER).as_ref() {
            let _ = tx.send(self);
        }
    }
}

/// Calls the C callback; an `extern "C"` function, so a foreign exception
/// thrown out of the callback aborts the process here instead of unwinding
/// through the notifier.
extern "C" fn call_lost(lost: LostFn, ctx: *mut c_void, why: volt_status) {
    // SAFETY: the caller of `volt_sem_watch_lease` made `lost(ctx, why)`
    // callable once, from any thread, until the watch is freed (and the
    // free waits for a running callback).
    unsafe { lost(ctx, why) };
}

/// Polls the session's loss with `waker`: `Some(error)` if it is lost.
fn poll_loss(handle: &volt_sem, session: u64, waker: &Waker) -> Option<Error> {
    let mut watch = handle.sem.lease_watch(session)?;
    match Pin::new(&mut watch).poll(&mut Context::from_waker(waker)) {
        Poll::Ready(e) => Some(e.into()),
        Poll::Pending => None,
    }
}

/// Adds a watch on `session` of `handle` (a Redis handle). `Err(status)`:
/// the session is already lost (no callback will run), or the notifier
/// cannot start (`VOLT_OS_ERROR`).
pub(crate) fn watch(
    handle: &Arc<volt_sem>,
    session: u64,
    lost: LostFn,
    ctx: *mut c_void,
) -> Result<(Arc<Hub>, Arc<Watch>), volt_status> {
    if !ensure_notifier() {
        return Err(noted(
            volt_status::VOLT_OS_ERROR,
            "cannot start the lease thread",
        ));
    }
    let watch = Arc::new(Watch {
        state: AtomicU8::new(ARMED),
        lost,
        ctx,
        fired: Condvar::new(),
        fired_lock: Mutex::new(()),
    });
    let mut current = lock(&handle.hub);
    let hub = match current.as_ref().filter(|h| h.session == session) {
        Some(hub) => hub.clone(),
        None => {
            let hub = Arc::new(Hub {
                session,
                handle: Arc::downgrade(handle),
                watches: Mutex::new(Some(Vec::new())),
            });
            // Registers the hub's waker, once for this session.
            if let Some(e) = poll_loss(handle, session, &Waker::from(hub.clone())) {
                return Err(status_of(e));
            }
            // A hub of an older session is done with: that session was lost
            // (a handle has one session at a time), so it has fired.
            *current = Some(hub.clone());
            hub
        }
    };
    drop(current);
    match lock(&hub.watches).as_mut() {
        Some(list) => list.push(watch.clone()),
        // Fired between the lookup and here: the session is lost.
        None => {
            let e = poll_loss(handle, session, Waker::noop()).unwrap_or(Error::LeaseExpired);
            return Err(status_of(e));
        }
    }
    Ok((hub, watch))
}

impl Hub {
    /// On the notifier thread: the session was lost; call every armed watch.
    fn fire(self: Arc<Self>) {
        let Some(handle) = self.handle.upgrade() else {
            return; // no handle, so no watch left (each holds the handle)
        };
        let why = match poll_loss(&handle, self.session, &Waker::from(self.clone())) {
            Some(why) => why,
            // A wake without a loss (not done by the Redis crate today): the
            // poll registered the hub again; stay armed.
            None => return,
        };
        let Some(list) = lock(&self.watches).take() else {
            return; // fired already
        };
        drop(handle);
        for w in list {
            if w.state
                .compare_exchange(ARMED, FIRING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue; // freed meanwhile
            }
            // The callback starts with the loss's text for
            // `volt_last_error_message` (that of `why`), whatever an earlier
            // callback on this thread left: this thread makes no call of its
            // own that would forget it.
            forget_last_error();
            let status = status_of(why.clone());
            let prev = CURRENT.with(|c| c.replace(Arc::as_ptr(&w)));
            call_lost(w.lost, w.ctx, status);
            CURRENT.with(|c| c.set(prev));
            let _g = lock(&w.fired_lock);
            w.state.store(DONE, Ordering::Release);
            w.fired.notify_all();
        }
        forget_last_error();
    }

    /// Ends `watch`: when it returns, its callback has returned or will never
    /// run (except from inside the callback itself, which returns at once).
    pub(crate) fn cancel(&self, watch: &Arc<Watch>) {
        loop {
            match watch.state.compare_exchange(
                ARMED,
                CANCELLED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) | Err(DONE) | Err(CANCELLED) => break,
                Err(_) => {
                    if CURRENT.with(|c| std::ptr::eq(c.get(), Arc::as_ptr(watch))) {
                        break;
                    }
                    let mut g = lock(&watch.fired_lock);
                    while watch.state.load(Ordering::Acquire) == FIRING {
                        g = watch.fired.wait(g).unwrap_or_else(|e| e.into_inner());
                    }
                }
            }
        }
        if let Some(list) = lock(&self.watches).as_mut() {
            list.retain(|w| !Arc::ptr_eq(w, watch));
        }
    }
}
