//! `BatchLock<T>`: a combining critical section ("batched critical sections").
//!
//! Threads do not take turns holding a lock; they *submit* an operation. The
//! submitter that finds the queue empty becomes the **consumer** and runs every
//! queued operation, its own first, in FIFO order, until the queue is empty.
//! The other submitters are woken only after their operation ran. A burst of
//! contended critical sections thus runs back to back on one thread, with no
//! scheduler hand-off between them, and in arrival order (fair).
//!
//! # The queue (wait-free submit)
//!
//! An intrusive queue with only a `tail` pointer; each operation node carries a
//! `next` pointer which is null, the next node, or `SENTINEL`.
//!
//! ```text
//! submit(node):
//!     prev = tail.swap(node)                       // one unconditional swap
//!     if prev == null:        consume(node)       // queue was empty: we consume
//!     elif prev.next.swap(node) == SENTINEL:       // consumer gave up on prev
//!                             complete(prev); consume(node)
//!     else:                   wait until node is done
//!
//! consume(node):
//!     loop:
//!         run(node)
//!         next = node.next.load()
//!         if next == null:
//!             if tail.cas(node, null): complete(node); return     // queue empty
//!             next = node.next.swap(SENTINEL)    // a submitter is between its swaps
//!             if next == null: return              // it will see SENTINEL and take over
//!         complete(node); node = next
//! ```
//!
//! **Progress.** `submit` performs a bounded number of steps before it either
//! returns to wait or becomes the consumer: one `swap` on the tail and at most one
//! `swap` on its predecessor's `next`; no loop, no CAS retry, no spin. It is
//! therefore wait-free. The classic Vyukov MPSC queue makes the *consumer* spin
//! when a producer has swapped the tail but not yet linked itself; here the
//! consumer instead swaps `SENTINEL` into the unlinked `next` and leaves: exactly
//! one of the two swaps on that word comes first, so either the consumer sees the
//! link and continues, or the producer sees the sentinel and becomes the consumer.
//! No operation is ever left behind and none runs twice. (A lock-free variant,
//! CAS-pushing onto a stack, is not kept: it loses the wait-free bound and needs a
//! reversal step to restore FIFO order, for no gain in the measurements.)
//!
//! **Ownership.** A node may only be freed once it is *complete*. The node the
//! consumer stops at is completed by the submitter that takes over, because that
//! submitter still writes into it (`prev.next.swap`).
//!
//! The waiting submitter spins briefly, then parks (blocking `run`) or returns
//! `Pending` (async `run_async`); completions are collected during the batch and
//! their wakes delivered after it, outside the critical section.

use core::cell::UnsafeCell;
use core::future::Future;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::task::{Context, Poll, Waker};
use std::panic::{self, AssertUnwindSafe};

use crate::sync::{self, thread, AtomicPtr, AtomicU8, Mutex, Ordering};

/// A value guarded by a combining critical section. See the module docs.
pub struct BatchLock<T> {
    tail: AtomicPtr<Node<T>>,
    state: UnsafeCell<T>,
}

// SAFETY: `state` is only touched by the current consumer, and the consumer role
// is held by one thread at a time (the queue protocol hands it over with
// AcqRel swaps), so `T: Send` suffices, like for a mutex.
unsafe impl<T: Send> Send for BatchLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for BatchLock<T> {}

/// `Node::done` states. A blocking submitter spins while PENDING; if that lasts,
/// it stores its thread handle and moves PENDING -> PARKED before parking. The
/// consumer completes a PENDING node with one CAS to DONE (no wake needed); a
/// PARKED node goes PARKED -> WAKING, is unparked after the batch, then DONE.
/// WAKING keeps the submitter from freeing the node while the consumer still
/// reads its thread handle.
const PENDING: u8 = 0;
const DONE: u8 = 1;
const PARKED: u8 = 2;
const WAKING: u8 = 3;

/// How a submitter waits for its operation.
enum Signal {
    /// A blocking submitter's thread, written by the submitter just before it
    /// parks (PENDING -> PARKED publishes it).
    Thread(UnsafeCell<Option<thread::Thread>>),
    /// The task's current waker; the mutex orders re-registration against completion.
    Task(Mutex<Option<Waker>>),
}

/// The queue node, first field of every operation (`#[repr(C)]`), so a node
/// pointer is also an operation pointer.
#[repr(C)]
struct Node<T> {
    next: AtomicPtr<Node<T>>,
    run: unsafe fn(NonNull<Node<T>>, &mut T),
    done: AtomicU8,
    signal: Signal,
    _pinned: PhantomPinned,
}

/// An operation: the node, the closure, and the slot for its result (or the
/// panic it raised, re-raised in the submitter's thread).
#[repr(C)]
struct Op<T, F, R> {
    node: Node<T>,
    f: UnsafeCell<Option<F>>,
    out: UnsafeCell<Option<std::thread::Result<R>>>,
}

fn sentinel<T>() -> *mut Node<T> {
    // A non-null address no node can have (nodes are at least 8-byte aligned).
    ptr::without_provenance_mut(1)
}

/// Runs an `Op<T, F, R>` given its node.
///
/// # Safety
/// `node` is the node of a live `Op<T, F, R>` whose closure has not run yet, and
/// the caller is the consumer.
unsafe fn run_op<T, F: FnOnce(&mut T) -> R, R>(node: NonNull<Node<T>>, state: &mut T) {
    // SAFETY: `Op` is `repr(C)` with the node first; the caller guarantees the
    // op is live and that only the consumer touches `f` and `out` until DONE.
    let op = unsafe { node.cast::<Op<T, F, R>>().as_ref() };
    let f = unsafe { (*op.f.get()).take() };
    if let Some(f) = f {
        // A panicking operation must not unwind through the consumer, which is
        // running other threads' operations: catch it and hand it to its owner.
        let result = panic::catch_unwind(AssertUnwindSafe(|| f(state)));
        // SAFETY: as above.
        unsafe { *op.out.get() = Some(result) };
    }
}

/// A completed node's wake, delivered after the batch.
enum Wake<T> {
    /// A parked submitter's node, in state WAKING: unpark, then store DONE.
    Parked(NonNull<Node<T>>),
    Waker(Waker),
}

/// Wakes gathered during one batch (bounded, no allocation).
struct Wakes<T> {
    buf: [Option<Wake<T>>; 16],
    len: usize,
}

impl<T> Wakes<T> {
    fn new() -> Self {
        Wakes {
            buf: [const { None }; 16],
            len: 0,
        }
    }
    fn push(&mut self, wake: Wake<T>) {
        if self.len == self.buf.len() {
            self.flush();
        }
        self.buf[self.len] = Some(wake);
        self.len += 1;
    }
    fn flush(&mut self) {
        for slot in &mut self.buf[..self.len] {
            match slot.take() {
                Some(Wake::Parked(node)) => {
                    // SAFETY: a WAKING node stays valid until the DONE store: its
                    // submitter waits for DONE. The handle was published by the
                    // PARKED transition, which `complete` acquired.
                    unsafe {
                        let n = node.as_ref();
                        if let Signal::Thread(t) = &n.signal {
                            if let Some(t) = &*t.get() {
                                t.unpark();
                            }
                        }
                        n.done.store(DONE, Ordering::Release); // last access
                    }
                }
                Some(Wake::Waker(w)) => w.wake(),
                None => {}
            }
        }
        self.len = 0;
    }
}

impl<T> Drop for Wakes<T> {
    fn drop(&mut self) {
        self.flush();
    }
}

impl<T> BatchLock<T> {
    /// A new lock holding `value`.
    pub fn new(value: T) -> Self {
        BatchLock {
            tail: AtomicPtr::new(ptr::null_mut()),
            state: UnsafeCell::new(value),
        }
    }

    /// A new lock holding `value`, in a `const` context.
    #[cfg(not(volt_loom))]
    pub const fn const_new(value: T) -> Self {
        BatchLock {
            tail: AtomicPtr::new(ptr::null_mut()),
            state: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock, returning the value.
    pub fn into_inner(self) -> T {
        self.state.into_inner()
    }

    /// Mutable access without the queue: `&mut self` proves nobody submits.
    pub fn get_mut(&mut self) -> &mut T {
        self.state.get_mut()
    }

    /// Runs `f` on the guarded value, in FIFO order with other submissions, and
    /// returns its result. Blocks (spins briefly, then parks) until `f` ran; the
    /// calling thread may run other threads' operations meanwhile, as consumer.
    /// A panic in `f` is re-raised here, never in the consumer's thread.
    ///
    /// `f` may run on another thread (the current consumer's), hence `Send`.
    pub fn run<R: Send>(&self, f: impl FnOnce(&mut T) -> R + Send) -> R {
        let op = core::pin::pin!(Self::op(f, Signal::Thread(UnsafeCell::new(None))));
        // SAFETY: the op is pinned on this frame and we do not return before it is
        // complete (the loop below).
        unsafe { self.submit(NonNull::from(&op.node)) };
        let done = &op.node.done;
        let mut round = 0;
        while done.load(Ordering::Acquire) == PENDING && round < 10 {
            sync::spin_wait(round);
            round += 1;
        }
        if done.load(Ordering::Acquire) == PENDING {
            if let Signal::Thread(slot) = &op.node.signal {
                // SAFETY: only we write the slot, and only while PENDING, before
                // the Release CAS below publishes it.
                unsafe { *slot.get() = Some(thread::current()) };
            }
            let _ = done.compare_exchange(PENDING, PARKED, Ordering::AcqRel, Ordering::Acquire);
        }
        let mut round = 0;
        loop {
            match done.load(Ordering::Acquire) {
                DONE => break,
                PARKED => thread::park(),
                _ => {
                    // WAKING: the consumer is about to unpark us and store DONE.
                    sync::spin_wait(round);
                    round = round.saturating_add(1);
                }
            }
        }
        Self::take_result(&op)
    }

    /// Async form of [`run`](Self::run): the future completes once `f` ran. The
    /// operation is submitted on the first poll. Operations cannot be withdrawn:
    /// dropping the future after its first poll waits until `f` has run.
    pub fn run_async<F, R>(&self, f: F) -> RunAsync<'_, T, F, R>
    where
        F: FnOnce(&mut T) -> R + Send,
        R: Send,
    {
        RunAsync {
            lock: self,
            op: Self::op(f, Signal::Task(Mutex::new(None))),
            submitted: false,
        }
    }

    fn op<F: FnOnce(&mut T) -> R, R>(f: F, signal: Signal) -> Op<T, F, R> {
        Op {
            node: Node {
                next: AtomicPtr::new(ptr::null_mut()),
                run: run_op::<T, F, R>,
                done: AtomicU8::new(PENDING),
                signal,
                _pinned: PhantomPinned,
            },
            f: UnsafeCell::new(Some(f)),
            out: UnsafeCell::new(None),
        }
    }

    fn take_result<F, R>(op: &Op<T, F, R>) -> R {
        // SAFETY: DONE was observed with Acquire, so the consumer's write to `out`
        // happened-before, and nobody else touches the op any more.
        match unsafe { (*op.out.get()).take() } {
            Some(Ok(r)) => r,
            Some(Err(payload)) => panic::resume_unwind(payload),
            None => unreachable!("a completed operation always has a result"),
        }
    }

    /// Enqueues `node`; runs the queue if this makes us the consumer.
    ///
    /// # Safety
    /// `node` is a fresh, pinned operation node that stays valid until complete.
    unsafe fn submit(&self, node: NonNull<Node<T>>) {
        // AcqRel: Release publishes the node's contents to the consumer that will
        // read it through the chain; Acquire makes the previous tail's contents
        // (and, when we become consumer, the last consumer's writes to `state`)
        // visible to us.
        let prev = self.tail.swap(node.as_ptr(), Ordering::AcqRel);
        let Some(prev) = NonNull::new(prev) else {
            // SAFETY: the queue was empty: we are the consumer.
            return unsafe { self.consume(node) };
        };
        // Link ourselves behind `prev`. AcqRel: publishes our node to a consumer
        // that reads `prev.next`; acquires the retiring consumer's writes if it
        // left SENTINEL there.
        // SAFETY: `prev` is not complete until we linked it: the consumer that
        // stops at it leaves its completion to us (see `consume`).
        let seen = unsafe { prev.as_ref() }
            .next
            .swap(node.as_ptr(), Ordering::AcqRel);
        if seen == sentinel() {
            // The consumer ran `prev` and retired before our link: take over.
            let mut wakes = Wakes::new();
            // SAFETY: `prev` ran, and only we may complete it now.
            unsafe { Self::complete(prev, &mut wakes) };
            drop(wakes);
            // SAFETY: we hold the consumer role now.
            unsafe { self.consume(node) };
        }
    }

    /// Runs operations from `node` on, in order, until the queue is empty or the
    /// consumer role is handed over.
    ///
    /// # Safety
    /// The caller holds the consumer role, and `node` is a live, not yet run node.
    unsafe fn consume(&self, mut node: NonNull<Node<T>>) {
        let mut wakes = Wakes::new();
        loop {
            // SAFETY: the consumer role gives exclusive access to `state`; `node`
            // is live and not yet run (caller contract / loop invariant).
            unsafe { (node.as_ref().run)(node, &mut *self.state.get()) };
            // SAFETY: `node` is not complete, hence live.
            let n = unsafe { node.as_ref() };
            let mut next = n.next.load(Ordering::Acquire);
            if next.is_null() {
                // AcqRel on success: the next consumer (who swaps tail from null)
                // acquires our writes to `state` through the tail.
                if self
                    .tail
                    .compare_exchange(
                        node.as_ptr(),
                        ptr::null_mut(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                {
                    // SAFETY: ran, no successor can appear behind it now.
                    unsafe { Self::complete(node, &mut wakes) };
                    return;
                }
                // A submitter swapped the tail but has not linked yet: whichever
                // swap on `next` comes first decides who continues. AcqRel:
                // Release hands our `state` writes to that submitter.
                next = n.next.swap(sentinel(), Ordering::AcqRel);
                if next.is_null() {
                    return; // it will see SENTINEL, complete `node` and consume
                }
            }
            // SAFETY: ran, and its successor is linked: nobody writes to it again.
            unsafe { Self::complete(node, &mut wakes) };
            // SAFETY: a linked successor is a live, not yet run node.
            node = unsafe { NonNull::new_unchecked(next) };
        }
    }

    /// Marks a node done and queues its submitter's wake. After the DONE store the
    /// submitter may free the node, so nothing of it is read afterwards.
    ///
    /// # Safety
    /// `node` ran and nobody else will write to it.
    unsafe fn complete(node: NonNull<Node<T>>, wakes: &mut Wakes<T>) {
        // SAFETY: live until the DONE store below (caller contract).
        let n = unsafe { node.as_ref() };
        match &n.signal {
            Signal::Thread(_) => {
                // Spinning submitter: one CAS and it is done. AcqRel: Release
                // publishes the result; Acquire (also on failure) receives the
                // thread handle a parked submitter published.
                if let Err(PARKED) =
                    n.done
                        .compare_exchange(PENDING, DONE, Ordering::AcqRel, Ordering::Acquire)
                {
                    n.done.store(WAKING, Ordering::Relaxed);
                    wakes.push(Wake::Parked(node));
                }
            }
            Signal::Task(waker) => {
                // DONE is stored under the waker mutex, so a concurrent poll either
                // sees DONE or has registered the waker we take here.
                let mut slot = sync::lock(waker);
                let w = slot.take();
                n.done.store(DONE, Ordering::Release);
                drop(slot);
                if let Some(w) = w {
                    wakes.push(Wake::Waker(w));
                }
            }
        }
    }
}

impl<T: Default> Default for BatchLock<T> {
    fn default() -> Self {
        BatchLock::new(T::default())
    }
}

/// Future returned by [`BatchLock::run_async`].
#[must_use = "futures do nothing unless polled"]
pub struct RunAsync<'a, T, F, R> {
    lock: &'a BatchLock<T>,
    op: Op<T, F, R>,
    submitted: bool,
}

impl<T, F: FnOnce(&mut T) -> R, R> Future for RunAsync<'_, T, F, R> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        // SAFETY: nothing is moved out; the op stays pinned inside the future.
        let this = unsafe { self.get_unchecked_mut() };
        if !this.submitted {
            this.register(cx.waker());
            this.submitted = true;
            // SAFETY: pinned (we are in `poll` on a pinned future), and Drop waits
            // for completion before the memory goes away.
            unsafe { this.lock.submit(NonNull::from(&this.op.node)) };
        }
        if this.register(cx.waker()) {
            this.submitted = false;
            return Poll::Ready(BatchLock::take_result(&this.op));
        }
        Poll::Pending
    }
}

impl<T, F, R> RunAsync<'_, T, F, R> {
    /// Under the waker mutex: returns whether the op is done, else (re)registers
    /// `waker`. DONE is only trusted under this mutex, because the consumer still
    /// unlocks it after storing DONE: seeing DONE under the lock proves the
    /// consumer is past its last access to the node.
    fn register(&self, waker: &Waker) -> bool {
        let Signal::Task(slot) = &self.op.node.signal else {
            unreachable!("async ops use Signal::Task")
        };
        let mut slot = sync::lock(slot);
        if self.op.node.done.load(Ordering::Acquire) == DONE {
            return true;
        }
        match &*slot {
            Some(w) if w.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
        false
    }

    fn is_done(&self) -> bool {
        let Signal::Task(slot) = &self.op.node.signal else {
            unreachable!("async ops use Signal::Task")
        };
        let _slot = sync::lock(slot);
        self.op.node.done.load(Ordering::Acquire) == DONE
    }
}

impl<T, F, R> Drop for RunAsync<'_, T, F, R> {
    fn drop(&mut self) {
        if !self.submitted {
            return;
        }
        // Cannot withdraw a queued operation: wait for the consumer to run it.
        // The consumer is another thread that is running operations right now.
        let mut round = 0;
        while !self.is_done() {
            sync::spin_wait(round.min(8));
            round += 1;
        }
    }
}
