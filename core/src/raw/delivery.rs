//! The per-thread trampoline that runs wake callbacks, one per thread for
//! every backend: callbacks never nest, and stack use stays bounded however
//! long a chain of re-entrant releases gets.
//!
//! # Why
//!
//! A wake callback may call back into a semaphore (waker contract, rule 2).
//! If a callback's own `release` ran the callbacks it completes right there,
//! nested inside the running one, a chain of N waiters whose callbacks each
//! collect their grant and release it again would recurse N deep on the
//! releasing thread: about a kilobyte of stack per level, so a few hundred
//! levels overflow a small thread stack (musl's default is 128 KiB). The
//! same holds across backends: a local callback may release a shared or
//! Redis semaphore, and the other way round; one queue per thread for all
//! of them is what makes "never nested" true across crates.
//!
//! # How
//!
//! Every thread has one FIFO of *pending* nodes, linked through the nodes'
//! own `pending` links (so this allocates nothing). A completer claims its
//! waiters under its backend's lock (phase `NOTIFYING_*`), then, with the
//! lock released, [`push`]es them and calls [`enter`]; the first `enter` on
//! the stack (the *drainer*) then runs them one at a time, oldest first
//! ([`drain`]). One reached from inside a callback only appends: its nodes
//! run after the current callback returned, from the drainer's loop.
//! [`deliver`] is the three steps in one call.
//!
//! # What a thread knows
//!
//! * `current`: the node whose callback runs now (at most one, since
//!   callbacks never nest). `finish` called from inside it collects the
//!   outcome at once.
//! * `pending`: nodes claimed but not yet called back. Their owners' `finish`
//!   on other threads waits for the callback. `finish` on this very thread (a
//!   callback finishing a *sibling* completed by the same operation) cannot
//!   wait, since the callback would run only after it returns: `take_pending`
//!   unlinks the sibling instead, so its callback never runs and the outcome
//!   goes to the caller.
//!
//! # Ownership
//!
//! A node in a `NOTIFYING_*` phase belongs to the thread that claimed it: it
//! is in no backend queue, its owner may only read its phase, and the
//! backends' `acquire_raw` refuse it (busy). So this thread may use its
//! `pending` links and `notify` without any lock, until the store of the
//! final phase, which is its last access.

use core::cell::RefCell;
use core::ptr::{self, NonNull};
use core::task::Waker;

use super::node::{Backend, Links, Node, Notify};
use super::phase;
use crate::sync::Ordering;

/// An intrusive FIFO of nodes through their `pending` links.
struct Fifo {
    head: Option<NonNull<Node>>,
    tail: Option<NonNull<Node>>,
}

impl Fifo {
    const fn new() -> Self {
        Fifo {
            head: None,
            tail: None,
        }
    }

    /// # Safety
    /// `node` is valid, owned by this thread and in no list.
    unsafe fn push_back(&mut self, node: NonNull<Node>) {
        let links = Links {
            prev: self.tail,
            next: None,
        };
        // SAFETY: owned by this thread (contract); so is the old tail.
        unsafe {
            node.as_ref().pending.with_mut(|l| *l = links);
            match self.tail {
                Some(t) => t.as_ref().pending.with_mut(|l| (*l).next = Some(node)),
                None => self.head = Some(node),
            }
        }
        self.tail = Some(node);
    }

    fn pop_front(&mut self) -> Option<NonNull<Node>> {
        let head = self.head?;
        // SAFETY: every node in the list is valid and owned by this thread.
        unsafe { self.remove(head) };
        Some(head)
    }

    fn contains(&self, node: *const Node) -> bool {
        let mut at = self.head;
        while let Some(n) = at {
            if ptr::eq(n.as_ptr(), node) {
                return true;
            }
            // SAFETY: every node in the list is valid and owned by this thread.
            at = unsafe { n.as_ref().pending.with(|l| (*l).next) };
        }
        false
    }

    /// # Safety
    /// `node` is in this list.
    unsafe fn remove(&mut self, node: NonNull<Node>) {
        // SAFETY: `node` and its neighbours are in this list (contract), so
        // valid and owned by this thread.
        unsafe {
            let Links { prev, next } = node.as_ref().pending.with(|l| *l);
            match prev {
                Some(p) => p.as_ref().pending.with_mut(|l| (*l).next = next),
                None => self.head = next,
            }
            match next {
                Some(n) => n.as_ref().pending.with_mut(|l| (*l).prev = prev),
                None => self.tail = prev,
            }
            node.as_ref().pending.with_mut(|l| {
                *l = Links {
                    prev: None,
                    next: None,
                }
            });
        }
    }
}

struct Delivery {
    /// A drainer is below us on this thread's stack.
    draining: bool,
    /// The node whose callback is running now, or null.
    current: *const Node,
    pending: Fifo,
}

#[cfg(not(volt_loom))]
std::thread_local! {
    // `const` and without `Drop`: usable even while the thread's other
    // thread-locals are being destroyed (a release in a TLS destructor).
    static DELIVERY: RefCell<Delivery> = const {
        RefCell::new(Delivery { draining: false, current: ptr::null(), pending: Fifo::new() })
    };
}

#[cfg(volt_loom)]
loom::thread_local! {
    static DELIVERY: RefCell<Delivery> =
        RefCell::new(Delivery { draining: false, current: ptr::null(), pending: Fifo::new() });
}

// The task to wake once the running callback's node is final (see
// `wake_after_callback`). Apart from `DELIVERY`, which must stay free of
// `Drop`; at most one, since callbacks never nest.
#[cfg(not(volt_loom))]
std::thread_local! {
    static AFTER: core::cell::Cell<Option<Waker>> = const { core::cell::Cell::new(None) };
}

#[cfg(volt_loom)]
loom::thread_local! {
    static AFTER: core::cell::Cell<Option<Waker>> = core::cell::Cell::new(None);
}

/// Wakes `waker` once the callback running on this thread has returned and
/// its node's final phase is stored, or at once outside a callback. For a
/// callback that wakes a task: the task's waker may drop the future the node
/// lives in (a `select` cancelling its loser, an executor polling inline),
/// which must not happen while the node is still being delivered.
pub(crate) fn wake_after_callback(waker: Waker) {
    let in_callback = DELIVERY
        .try_with(|d| !d.borrow().current.is_null())
        .unwrap_or(false);
    let mut waker = Some(waker);
    if in_callback {
        // A previous one (the callback woke twice) is woken now: the node is
        // still busy, but the same holds for the first call's task.
        let _ = AFTER.try_with(|a| waker = a.replace(waker.take()));
    }
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// Whether this thread is running `node`'s wake callback now.
pub(crate) fn in_own_callback(node: &Node) -> bool {
    DELIVERY
        .try_with(|d| ptr::eq(d.borrow().current, node))
        .unwrap_or(false)
}

/// The backend whose callback this thread is running now, if any.
pub fn current_backend() -> Option<Backend> {
    DELIVERY
        .try_with(|d| {
            let cur = d.borrow().current;
            // SAFETY: `current` is valid while its callback runs (it is
            // NOTIFYING and owned by this thread until the final store).
            (!cur.is_null()).then(|| unsafe { (*cur).backend() })
        })
        .ok()
        .flatten()
}

/// Appends a claimed node to this thread's pending deliveries; it runs when
/// the drainer gets to it ([`enter`], [`drain`]).
///
/// # Safety
/// `node` was just claimed by this thread (moved from `WAITING` to
/// `NOTIFYING_GRANTED` or `NOTIFYING_CLOSED` under its backend's lock, now
/// released), so it is in no backend queue and no other thread touches it;
/// it stays valid until the trampoline stores its final phase.
pub unsafe fn push(node: NonNull<Node>) {
    // SAFETY: per the contract, the node is owned by this thread and in no
    // other list.
    DELIVERY.with(|d| unsafe { d.borrow_mut().pending.push_back(node) });
}

/// Becomes this thread's drainer, unless one is already below on the stack.
/// Returns whether the caller must call [`drain`].
pub fn enter() -> bool {
    DELIVERY.with(|d| {
        let mut d = d.borrow_mut();
        !core::mem::replace(&mut d.draining, true)
    })
}

/// Pushes every claimed node, then runs them unless a drainer below on the
/// stack will ([`push`], [`enter`], [`drain`]).
///
/// # Safety
/// As [`push`], for every node.
pub unsafe fn deliver(nodes: impl IntoIterator<Item = NonNull<Node>>) {
    for node in nodes {
        // SAFETY: forwarded contract.
        unsafe { push(node) };
    }
    if enter() {
        drain();
    }
}

/// Runs every pending callback, oldest first, including those that the
/// callbacks themselves add, then stops being the drainer. Only the caller
/// to which [`enter`] returned `true`.
pub fn drain() {
    loop {
        let next = DELIVERY.with(|d| d.borrow_mut().pending.pop_front());
        let Some(node) = next else { break };
        // SAFETY: pending nodes are NOTIFYING, owned by this thread and valid
        // until the final phase store below (module docs).
        let n = unsafe { node.as_ref() };
        // SAFETY: owned by this thread (see above); nobody else touches `notify`.
        let notify = n
            .notify
            .with_mut(|x| unsafe { core::mem::replace(&mut *x, Notify::None) });
        if let Notify::Callback(wake, ctx) = notify {
            DELIVERY.with(|d| d.borrow_mut().current = node.as_ptr());
            // SAFETY: `wake`/`ctx` were registered through a backend's
            // `acquire_raw`, whose contract makes them callable once, from any
            // thread, until the node leaves the NOTIFYING phase (just below).
            // Being `extern "C"`, a callback cannot unwind into this loop (an
            // unwind aborts), so `current` is always reset.
            unsafe { wake(ctx) };
            DELIVERY.with(|d| d.borrow_mut().current = ptr::null());
        }
        // The callback may have consumed the outcome itself (NOTIFYING_CONSUMED):
        // then the node becomes IDLE. Only this thread writes the phase while it
        // is NOTIFYING (the callback ran on it too), so a relaxed load-then-store
        // is race-free. Release publishes everything the callback did to the
        // owner, whose `finish` is spinning on this store; it is the last
        // access to the node.
        let last = match n.phase(Ordering::Relaxed) {
            phase::NOTIFYING_GRANTED => phase::GRANTED,
            phase::NOTIFYING_CLOSED => phase::CLOSED,
            _ => phase::IDLE,
        };
        n.set_phase(last, Ordering::Release);
        if let Some(waker) = AFTER.try_with(|a| a.take()).ok().flatten() {
            // The node is final: the task may now drop its future. A panic
            // here would leave this thread's deliveries half done (and
            // aborted before, escaping the `extern "C"` callback): abort.
            let woken = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| waker.wake()));
            if woken.is_err() {
                eprintln!("volt-sem: a Waker panicked while woken by a wake callback; aborting");
                std::process::abort();
            }
        }
    }
    DELIVERY.with(|d| d.borrow_mut().draining = false);
}

/// Whether this thread is delivering callbacks now (a drainer is on its
/// stack: it is inside a callback, or about to run one). `true` when it
/// cannot tell (its state is being changed: a signal handler interrupted
/// it), the answer that keeps `finish` waiting. For `fork`'s prepare handler.
#[cfg(all(unix, not(volt_loom), not(miri)))]
pub(crate) fn draining_here() -> bool {
    DELIVERY
        .try_with(|d| d.try_borrow().map_or(true, |d| d.draining))
        .unwrap_or(true)
}

/// Whether `node` is waiting in this thread's pending deliveries (its
/// callback is still to run here, after the one running now).
pub(crate) fn is_pending_here(node: &Node) -> bool {
    DELIVERY
        .try_with(|d| {
            let d = d.borrow();
            d.draining && d.pending.contains(node)
        })
        .unwrap_or(false)
}

/// If `node` is waiting in this thread's pending deliveries, unlinks it so
/// that its callback never runs, and returns `true`: the caller then owns
/// its outcome.
pub(crate) fn take_pending(node: &Node) -> bool {
    DELIVERY.with(|d| {
        let mut d = d.borrow_mut();
        if !d.draining || !d.pending.contains(node) {
            return false;
        }
        let node = NonNull::from(node);
        // SAFETY: linked in this list (checked just above); owned by this thread.
        unsafe {
            d.pending.remove(node);
            node.as_ref().notify.with_mut(|n| *n = Notify::None);
        }
        true
    })
}
