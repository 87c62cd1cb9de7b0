//! Node binding for volt-sem: the native half of the `volt-sem` npm package.
//!
//! The JS layer (`index.js`) owns the promises; this addon owns the semaphores
//! and the queue nodes. Every entry point is a hand-registered Node-API function
//! (the cheapest crossing, ~170 ns) that takes plain numbers and an `External`
//! handle and answers with a small integer code, so no JS object is created on
//! the hot path.
//!
//! # Wake path
//!
//! A pending acquire is a [`Node`] (a boxed, pinned [`Waiter`] plus its id) kept
//! in its environment's map until `finish_raw` consumed it. Its wake callback
//! runs on whichever thread completed the grant:
//!
//! * **Same environment, inside one of its own native calls** (`release`,
//!   `cancel`, `close`, which set the thread-local [`CURRENT`]): the id goes into
//!   the thread-local [`LOCAL`] list. Before that call returns it finishes the
//!   woken nodes and writes `(id, outcome)` pairs into the environment's shared
//!   `Uint32Array`; the call returns how many, and the JS layer settles those
//!   promises right away, still inside the `release()` that caused them.
//! * **Anywhere else** (another worker, a foreign thread): the id goes into the
//!   environment's mutex-guarded remote list, and the environment's single
//!   threadsafe function is poked (at most once until it ran). Its JS callback
//!   calls `drain()`, which finishes the nodes the same way.
//!
//! The threadsafe function is referenced only while the environment has pending
//! waiters on a *shared* semaphore (one that `share()` or `attach()` touched):
//! only then can a wake come from elsewhere, so only then must the thread stay
//! alive. A waiter on a private semaphore cannot be served by anyone but its own
//! thread, and must not keep it alive.
//!
//! # Delivery
//!
//! A grant on a *shared* semaphore is reported as `GRANTED_HELD`: its slot
//! stays `Delivered` (owning the permits) until JS confirms, in a microtask
//! queued after the promise's reactions, that user code saw it, or until this
//! thread releases permits of that semaphore. So a worker terminated between
//! the native collection and its JS continuation gives the grant back.
//!
//! # Abandoned semaphores
//!
//! A private semaphore (never shared) has exactly one JS object; when it is
//! garbage-collected (a `FinalizationRegistry` calls `abandon`), nobody can
//! release or close it, so its pending requests are swept in batches.
//!
//! # Removing permits
//!
//! `removePermits` owes the permits it could not take at once (`Sem::debt`);
//! every permit given back through this binding pays the debt first. A cancel
//! would hand a waiter's partial grant on past the debt, so while a debt is
//! owed a cancelled, still queued waiter is left queued as an *orphan* (owned
//! by its semaphore, out of its slot) and cancelled for real once the debt is
//! paid; if its grant completes first, its callback passes it on.
//!
//! # Teardown
//!
//! An environment cleanup hook (a terminated worker, or the process exiting)
//! detaches the threadsafe function and finishes every node still in the map:
//! a queued waiter is cancelled (its partial grant handed on, or orphaned while
//! a removal is owed), a grant that arrived but was never delivered to JS, or
//! was delivered and not confirmed, is released.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{JsValue, Object};
use napi::sys;
use napi_derive::napi;
use volt_sem::{AcquireError, Finish, RawAcquire, Semaphore, TryAcquireError, Waiter};

type RawEnv = sys::napi_env;
type RawValue = sys::napi_value;

/// The largest permit count JS sees: `min(Semaphore::MAX_PERMITS, 2^53 - 1)`,
/// so every count is an exact JS number.
const MAX_JS: usize = {
    let safe: u64 = (1 << 53) - 1;
    if (Semaphore::MAX_PERMITS as u64) < safe {
        Semaphore::MAX_PERMITS
    } else {
        safe as usize
    }
};

// Result codes shared with index.js.
const OK: i32 = 0;
const NO_PERMITS: i32 = 1;
const SLOT_BASE: i32 = 4;
const CLOSED: i32 = 2;
const BAD_COUNT: i32 = 3;
const RELEASE_OVERFLOW: i32 = -1;
const BAD_ARGS: i32 = -2;

// Outcome codes written into the ready buffer.
const GRANTED: u32 = 1;
const WOKEN_CLOSED: u32 = 2;
const LOST: u32 = 3;
/// Granted on a shared semaphore: the slot keeps the grant until JS confirms
/// it saw it (`confirm`), so a terminated thread gives it back.
const GRANTED_HELD: u32 = 4;

/// Generations are masked so that a key `gen << 32 | slot` is an exact JS number.
const GEN_MASK: u32 = (1 << 20) - 1;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (plain lists) is intact.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Semaphores and the process-wide registry used by share()/attach().

/// One semaphore, shared by every environment holding a handle to it.
struct Sem {
    core: Semaphore,
    id: u64,
    /// Set once share() or attach() touched it: waiters may then be woken from
    /// another thread, so they keep their thread alive.
    shared: AtomicBool,
    /// Queued requests (all threads): counted from the Pending acquire until
    /// the owning thread collected or cancelled the request.
    queued: AtomicUsize,
    /// A private semaphore whose JS object was garbage-collected: nobody can
    /// release or close it any more, so its waiters can be swept.
    abandoned: AtomicBool,
    /// Permits handed to JS (acquired) and not released since, all threads:
    /// a release first gives back held permits, the rest adds to the total.
    held: AtomicUsize,
    /// Permits `removePermits` still has to take out of the total: every
    /// permit coming back through this binding pays it first.
    debt: AtomicUsize,
    /// Cancelled requests that may hold a partial grant, left queued while
    /// `debt > 0` (a cancel would hand the partial grant on to the next waiter
    /// past the debt). Cancelled for real once the debt is paid; a grant that
    /// completes one meanwhile is released through `release_paying`.
    orphans: Mutex<Vec<OrphanNode>>,
    /// Orphans finished from inside their own wake callback: their memory may
    /// only be freed after it returned, so when the semaphore goes.
    graveyard: Mutex<Vec<OrphanNode>>,
}

/// A leaked `Pin<Box<Node>>` owned by its semaphore's orphan lists.
struct OrphanNode(*mut Node);
// SAFETY: an orphan is only touched through its atomics and `finish_raw` by
// whoever claimed it (see `Node::orphan`), and freed by the semaphore's drop.
unsafe impl Send for OrphanNode {}

impl Drop for OrphanNode {
    fn drop(&mut self) {
        // SAFETY: leaked by `orphan()` from a Box; dropped once, when the
        // semaphore (whose queue is the last thing that may reference it) goes.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

// Node::orphan states.
const NOT_ORPHAN: u8 = 0;
const ORPHAN: u8 = 1;
const ORPHAN_CLAIMED: u8 = 2;

impl Sem {
    fn add_held(&self, n: usize) {
        self.held.fetch_add(n, Ordering::Relaxed);
    }

    /// Held permits given back (a release beyond them adds to the total).
    fn sub_held(&self, n: usize) {
        let _ = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| Some(h - h.min(n)));
    }
}

/// Gives `n` permits back: first to the debt of `removePermits`, the rest to
/// the semaphore. Paying the debt off cancels the orphans left meanwhile.
fn release_paying(sem: &Sem, mut n: usize) -> Result<(), volt_sem::ReleaseError> {
    let mut cleared = false;
    let mut d = sem.debt.load(Ordering::SeqCst);
    while d > 0 && n > 0 {
        let pay = d.min(n);
        match sem
            .debt
            .compare_exchange_weak(d, d - pay, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {
                n -= pay;
                cleared = d == pay;
                break;
            }
            Err(actual) => d = actual,
        }
    }
    let r = if n > 0 { sem.core.release(n) } else { Ok(()) };
    if cleared {
        cancel_orphans(sem);
    }
    r
}

/// The debt is paid: cancel the orphans for real (their partial grants now go
/// on to the next waiters, as any cancel's).
fn cancel_orphans(sem: &Sem) {
    let taken = std::mem::take(&mut *lock(&sem.orphans));
    for o in taken {
        // SAFETY: an orphan stays allocated until the semaphore drops.
        let node = unsafe { &*o.0 };
        if node
            .orphan
            .compare_exchange(ORPHAN, ORPHAN_CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // Its callback (or `orphan`) claimed it and finishes it, and may
            // still be using it: free it with the semaphore.
            lock(&sem.graveyard).push(o);
            continue;
        }
        // SAFETY: the node is pinned (leaked Box), last queued on `sem`.
        let finish = unsafe { sem.core.finish_raw(Pin::new_unchecked(&node.waiter)) };
        if let Finish::Granted = finish {
            let _ = release_paying(sem, node.n.get());
        }
        drop(o); // finished outside its callback: free it now
    }
}

/// Leaves a cancelled, still queued request `node` (out of its slot) as an
/// orphan of `sem` while `sem.debt > 0`, or finishes it if its grant already
/// came (or the debt was paid meanwhile).
fn orphan(node: Pin<Box<Node>>, sem: &Arc<Sem>) {
    // SAFETY: the Box stays where it is; it is freed through OrphanNode only.
    let raw = Box::into_raw(unsafe { Pin::into_inner_unchecked(node) });
    // SAFETY: just leaked, valid.
    let node = unsafe { &*raw };
    node.orphan_sem
        .store(Arc::as_ptr(sem) as *mut Sem, Ordering::SeqCst);
    lock(&sem.orphans).push(OrphanNode(raw));
    node.orphan.store(ORPHAN, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    // Pairs with the fence in `wake`: either its callback sees ORPHAN and
    // claims it, or we see that the waiter left the queue.
    let waiting = node.waiter.state() == volt_sem::WaiterState::Waiting;
    if !waiting || sem.debt.load(Ordering::SeqCst) == 0 {
        // Granted/closed meanwhile, or nothing to protect any more: finish it
        // (if its callback has not claimed it).
        if node
            .orphan
            .compare_exchange(ORPHAN, ORPHAN_CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let mine = {
                let mut list = lock(&sem.orphans);
                let at = list.iter().position(|o| o.0 == raw);
                at.map(|i| list.swap_remove(i))
            };
            // SAFETY: pinned, last queued on `sem`.
            let finish = unsafe { sem.core.finish_raw(Pin::new_unchecked(&node.waiter)) };
            if let Finish::Granted = finish {
                let _ = release_paying(sem, node.n.get());
            }
            // Frees it if it was still listed; else a canceller took it, and
            // files it in the graveyard when it sees it claimed.
            drop(mine);
        }
    }
}

static NEXT_SEM_ID: AtomicU64 = AtomicU64::new(1);
static REGISTRY: LazyLock<Mutex<HashMap<u64, Entry>>> = LazyLock::new(Default::default);

/// How long `share()` keeps a semaphore alive for an `attach()` that has not
/// come yet (the first attach ends it sooner).
const SHARE_PIN: Duration = Duration::from_secs(60);

struct Entry {
    sem: Weak<Sem>,
    /// Set by share(): keeps the semaphore alive until the next attach() or
    /// until `deadline`, so a share() value in flight (workerData, postMessage)
    /// can still be attached after the sharing thread dropped its handle.
    pin: Option<(Arc<Sem>, Instant)>,
}

/// Takes the pins whose deadline passed out of the registry (the caller drops
/// them after unlocking: dropping the last Arc locks the registry again).
fn expired_pins(reg: &mut HashMap<u64, Entry>, now: Instant) -> Vec<Arc<Sem>> {
    let mut out = Vec::new();
    for e in reg.values_mut() {
        if e.pin.as_ref().is_some_and(|(_, deadline)| *deadline <= now) {
            out.extend(e.pin.take().map(|(s, _)| s));
        }
    }
    out
}

/// When `share()`/`attach()` last scanned the registry for expired pins (ms
/// since `EPOCH`): they scan at most once a second, so sharing many semaphores
/// stays O(1) each; the JS timer (`expirePins`) does the rest.
static LAST_SCAN_MS: AtomicU64 = AtomicU64::new(0);
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn scan_due(now: Instant) -> bool {
    let ms = now.saturating_duration_since(*EPOCH).as_millis() as u64;
    let last = LAST_SCAN_MS.load(Ordering::Relaxed);
    ms >= last + 1000
        && LAST_SCAN_MS
            .compare_exchange(last, ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// Milliseconds until the earliest pin expires (`-1` if none is left).
fn next_pin_ms(reg: &HashMap<u64, Entry>, now: Instant) -> f64 {
    reg.values()
        .filter_map(|e| {
            e.pin
                .as_ref()
                .map(|(_, d)| d.saturating_duration_since(now).as_millis() as f64)
        })
        .fold(
            -1.0,
            |acc: f64, ms| if acc < 0.0 { ms } else { acc.min(ms) },
        )
}

impl Drop for Sem {
    fn drop(&mut self) {
        if self.shared.load(Ordering::Relaxed) {
            let mut reg = lock(&REGISTRY);
            // Only the entry of this semaphore: an entry whose Weak is dead.
            if reg.get(&self.id).is_some_and(|e| e.sem.strong_count() == 0) {
                reg.remove(&self.id);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Per-environment state.

/// The part of an environment other threads reach (through a node's `env`).
struct EnvShared {
    remote: Mutex<Remote>,
}

struct Remote {
    /// Ids woken from outside this environment's own native calls.
    ids: Vec<u64>,
    /// `None` once the environment is being torn down.
    tsfn: Option<Tsfn>,
    /// A call of the threadsafe function is queued and has not started yet.
    notified: bool,
}

#[derive(Clone, Copy)]
struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: a threadsafe function handle is meant to be used from any thread; we only
// call it while it is alive (the `Remote` mutex orders calls against its finalizer).
unsafe impl Send for Tsfn {}

impl EnvShared {
    fn push_remote(&self, id: u64) {
        let mut r = lock(&self.remote);
        r.ids.push(id);
        if !r.notified {
            if let Some(t) = r.tsfn {
                // SAFETY: `tsfn` is Some only between creation and its finalizer (or
                // our cleanup hook), both of which clear it under this same lock.
                let status = unsafe {
                    sys::napi_call_threadsafe_function(
                        t.0,
                        ptr::null_mut(),
                        sys::ThreadsafeFunctionCallMode::nonblocking,
                    )
                };
                r.notified = status == sys::Status::napi_ok;
            }
        }
    }
}

/// The JS-thread-only state of one environment (one main thread or worker, per
/// load of this addon). Reached through the `data` pointer of every function.
struct EnvCtx {
    env: RawEnv,
    shared: Arc<EnvShared>,
    /// Queue nodes, reused across requests; a pending request is identified by
    /// its key `gen << 32 | slot`, and JS knows it by its slot.
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
    /// Woken keys not yet written to the buffer (FIFO).
    ready: RefCell<VecDeque<u64>>,
    /// The JS `Uint32Array` the outcomes go to: pointer and capacity in pairs.
    buf: Cell<(*mut u32, usize)>,
    /// Pending nodes on shared semaphores; the tsfn is referenced while > 0.
    refs: Cell<usize>,
    /// Slots in the `Delivered` state (few: they live for one microtask).
    delivered: RefCell<Vec<u32>>,
    /// Slots in the `Active` state (each knows its index here).
    active_list: RefCell<Vec<u32>>,
    /// Pending requests on abandoned semaphores not swept yet.
    zombies: Cell<usize>,
    initialized: Cell<bool>,
}

thread_local! {
    /// The environment whose native call is running on this thread, if any.
    static CURRENT: Cell<*const EnvCtx> = const { Cell::new(ptr::null()) };
    /// Ids of `CURRENT`'s nodes woken during that call.
    static LOCAL: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Marks `ctx` as running a native call on this thread; restores on drop.
struct Enter(*const EnvCtx);

impl Enter {
    fn new(ctx: &EnvCtx) -> Self {
        Enter(CURRENT.with(|c| c.replace(ctx)))
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// A queue node: the waiter of one request at a time, and what its wake
/// callback needs. Boxed and pinned in a slot; reused once finished.
struct Node {
    waiter: Waiter,
    /// `gen << 32 | slot` of the current request. Written by the owner while the
    /// waiter is idle; the wake callback reads it after `acquire_raw` published
    /// the waiter under the semaphore's lock.
    key: Cell<u64>,
    /// Owner-thread fields of the current request.
    n: Cell<usize>,
    sem: RefCell<Option<Arc<Sem>>>,
    /// Whether this request holds a reference on the tsfn.
    counted: Cell<bool>,
    /// The handle it was queued through, and whether that handle was ref'd.
    handle: Cell<u64>,
    refd: Cell<bool>,
    env: Arc<EnvShared>,
    /// Identity of the owning `EnvCtx` (compared, never dereferenced off-thread).
    owner: *const EnvCtx,
    /// NOT_ORPHAN, or ORPHAN / ORPHAN_CLAIMED (see `Sem::orphans`).
    orphan: AtomicU8,
    /// The semaphore of an orphan (set before `orphan` becomes ORPHAN).
    orphan_sem: AtomicPtr<Sem>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// In the free list.
    Free,
    /// A pending request: the waiter is queued, or woken and not yet collected.
    Active,
    /// Granted on a shared semaphore and reported to JS, which has not yet
    /// confirmed (`confirm`) that it handed the grant to user code. Owns the
    /// `n` permits: the env cleanup hook releases them if JS never confirms.
    Delivered,
}

struct Slot {
    node: Pin<Box<Node>>,
    state: SlotState,
    gen: u32,
    /// Index in `EnvCtx::active` while `Active`.
    pos: u32,
}

impl Node {
    fn waiter(self: Pin<&Self>) -> Pin<&Waiter> {
        // SAFETY: structural pinning: `waiter` is never moved out of a pinned Node.
        unsafe { self.map_unchecked(|n| &n.waiter) }
    }

    /// Ends the request (cancel or collect). Afterwards the node may be reused.
    fn finish(self: Pin<&Self>) -> Finish {
        let sem = self.sem.borrow();
        match &*sem {
            // SAFETY: the waiter is idle or was last queued on this semaphore (the
            // only one of the current request), and it stays valid and pinned.
            Some(s) => unsafe { s.core.finish_raw(self.waiter()) },
            None => Finish::Idle,
        }
    }
}

/// The wake callback given to `acquire_raw`.
unsafe extern "C" fn wake(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned Node passed to acquire_raw; it stays valid until
    // finish_raw returned, and finish_raw waits for this callback to return.
    let node = unsafe { &*(ctx as *const Node) };
    fence(Ordering::SeqCst); // pairs with the fence in `orphan`
    if node.orphan.load(Ordering::SeqCst) != NOT_ORPHAN {
        if node
            .orphan
            .compare_exchange(ORPHAN, ORPHAN_CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            orphan_woken(node);
        }
        return; // claimed by whoever orphaned or cancels it: it finishes it
    }
    let key = node.key.get();
    if CURRENT.with(|c| c.get()) == node.owner {
        // Inside one of the owner's own native calls on its thread: it collects
        // LOCAL before returning. `try_borrow_mut` never fails here (nothing holds
        // LOCAL across a semaphore call); if it did, the remote path is still right.
        let pushed = LOCAL.with(|l| match l.try_borrow_mut() {
            Ok(mut v) => {
                v.push(key);
                true
            }
            Err(_) => false,
        });
        if pushed {
            return;
        }
    }
    node.env.push_remote(key);
}

/// An orphan's grant came (or its semaphore closed), inside its own callback:
/// pass the permits on through the debt, and file the node in the graveyard.
fn orphan_woken(node: &Node) {
    // SAFETY: set before the node became an orphan; the semaphore is alive while
    // one of its releases/closes runs this callback.
    let sem = unsafe { &*node.orphan_sem.load(Ordering::SeqCst) };
    // SAFETY: pinned (leaked Box), last queued on `sem`; inside its own callback
    // this returns the outcome at once.
    let finish = unsafe { sem.core.finish_raw(Pin::new_unchecked(&node.waiter)) };
    if let Finish::Granted = finish {
        let _ = release_paying(sem, node.n.get());
    }
    let raw = node as *const Node as *mut Node;
    let mine = {
        let mut list = lock(&sem.orphans);
        let at = list.iter().position(|o| o.0 == raw);
        at.map(|i| list.swap_remove(i))
    };
    // Still listed: the graveyard owns it now (it may only be freed after this
    // callback returned). Not listed: a canceller took it and files it there.
    if let Some(entry) = mine {
        lock(&sem.graveyard).push(entry);
    }
}

impl EnvCtx {
    /// The node of a pending request, by key; `None` if that request is over.
    fn active(&self, key: u64) -> Option<(u32, *const Node)> {
        let slot = key as u32;
        let slots = self.slots.borrow();
        let s = slots.get(slot as usize)?;
        (s.state == SlotState::Active && s.gen == (key >> 32) as u32)
            .then(|| (slot, &*s.node as *const Node))
    }

    fn new_node(&self) -> Pin<Box<Node>> {
        Box::pin(Node {
            waiter: Waiter::new(),
            key: Cell::new(0),
            n: Cell::new(0),
            sem: RefCell::new(None),
            counted: Cell::new(false),
            handle: Cell::new(0),
            refd: Cell::new(true),
            env: self.shared.clone(),
            owner: self,
            orphan: AtomicU8::new(NOT_ORPHAN),
            orphan_sem: AtomicPtr::new(ptr::null_mut()),
        })
    }

    /// Cancels the active request in `slot` and frees the slot. While a
    /// `removePermits` debt is pending, a request still queued (it may hold a
    /// partial grant) is left queued as an orphan instead of handing its
    /// partial grant on past the debt.
    fn cancel_slot(&self, slot: u32) {
        let node: *const Node = {
            let slots = self.slots.borrow();
            &*slots[slot as usize].node
        };
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        let sem = node.sem.borrow().clone();
        let Some(sem) = sem else {
            self.release_slot(slot);
            return;
        };
        if sem.debt.load(Ordering::SeqCst) > 0
            && node.waiter.state() == volt_sem::WaiterState::Waiting
        {
            self.release_slot(slot); // the bookkeeping; the node stays queued
            let old = std::mem::replace(
                &mut self.slots.borrow_mut()[slot as usize].node,
                self.new_node(),
            );
            orphan(old, &sem);
            return;
        }
        if let Finish::Granted = node.finish() {
            // Granted but not yet delivered: JS gave up on it, so give it back.
            let _ = release_paying(&sem, node.n.get());
        }
        self.release_slot(slot);
    }

    /// A free node for a new request of `n` permits on `sem`, and its slot.
    fn take_slot(&self, h: &Handle, n: usize) -> (u32, *const Node) {
        let sem = &h.sem;
        let mut slots = self.slots.borrow_mut();
        let slot = match self.free.borrow_mut().pop() {
            Some(slot) => slot,
            None => {
                slots.push(Slot {
                    node: self.new_node(),
                    state: SlotState::Free,
                    gen: 0,
                    pos: 0,
                });
                (slots.len() - 1) as u32
            }
        };
        let s = &slots[slot as usize];
        let node = &*s.node;
        node.key.set((s.gen as u64) << 32 | slot as u64);
        node.n.set(n);
        *node.sem.borrow_mut() = Some(sem.clone());
        node.handle.set(h.id);
        node.refd.set(h.refd.get());
        node.counted
            .set(h.refd.get() && sem.shared.load(Ordering::Relaxed));
        (slot, node)
    }

    /// Marks a queued request's slot active (and refs the tsfn if needed).
    fn activate(&self, slot: u32) {
        let counted = {
            let mut slots = self.slots.borrow_mut();
            let mut active = self.active_list.borrow_mut();
            let s = &mut slots[slot as usize];
            s.state = SlotState::Active;
            s.pos = active.len() as u32;
            active.push(slot);
            if let Some(sem) = &*s.node.sem.borrow() {
                sem.queued.fetch_add(1, Ordering::Relaxed);
            }
            s.node.counted.get()
        };
        if counted {
            let refs = self.refs.get();
            if refs == 0 {
                self.tsfn_ref(true);
            }
            self.refs.set(refs + 1);
        }
    }

    /// Returns a finished (or never queued, or delivered) request's node to the
    /// free list.
    fn release_slot(&self, slot: u32) {
        let (was_active, counted, sem) = {
            let mut slots = self.slots.borrow_mut();
            let was_active = slots[slot as usize].state == SlotState::Active;
            if was_active {
                self.leave_active(&mut slots, slot);
            }
            let s = &mut slots[slot as usize];
            s.state = SlotState::Free;
            s.gen = s.gen.wrapping_add(1) & GEN_MASK;
            let sem = s.node.sem.borrow_mut().take();
            (was_active, s.node.counted.get(), sem)
        };
        self.free.borrow_mut().push(slot);
        drop(sem); // may drop the last Arc: outside the borrows
        if was_active && counted {
            self.unref_one();
        }
    }

    /// Takes an `Active` slot out of the active list and its semaphore's count.
    fn leave_active(&self, slots: &mut [Slot], slot: u32) {
        let mut active = self.active_list.borrow_mut();
        let pos = slots[slot as usize].pos as usize;
        active.swap_remove(pos);
        if let Some(&moved) = active.get(pos) {
            slots[moved as usize].pos = pos as u32;
        }
        if let Some(sem) = &*slots[slot as usize].node.sem.borrow() {
            sem.queued.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Cancels every pending request of this environment on an abandoned
    /// semaphore (nobody can release or close it any more). Returns the
    /// outcomes written (requests of other semaphores are never completed by
    /// this, but `settle_local` also flushes leftovers).
    fn sweep_abandoned(&self) -> usize {
        self.zombies.set(0);
        let doomed: Vec<u32> = {
            let slots = self.slots.borrow();
            self.active_list
                .borrow()
                .iter()
                .copied()
                .filter(|&a| {
                    let sem = slots[a as usize].node.sem.borrow();
                    sem.as_ref()
                        .is_some_and(|s| s.abandoned.load(Ordering::Relaxed))
                })
                .collect()
        };
        let enter = Enter::new(self);
        for slot in doomed {
            let node: *const Node = {
                let slots = self.slots.borrow();
                &*slots[slot as usize].node
            };
            // SAFETY: slots never shrink while the env lives, and nodes are boxed.
            let node = unsafe { Pin::new_unchecked(&*node) };
            if let Finish::Granted = node.finish() {
                // Completed by a partial grant handed on in this sweep: the
                // permits go back to the (unreachable) semaphore.
                if let Some(sem) = &*node.sem.borrow() {
                    let _ = sem.core.release(node.n.get());
                }
            }
            self.release_slot(slot);
        }
        let k = self.settle_local();
        drop(enter);
        k
    }

    /// Recomputes whether the active requests selected by `pick` (which may
    /// update their `refd`) keep the thread alive: shared and ref'd.
    fn recount(&self, mut pick: impl FnMut(&Node) -> bool) {
        let (mut up, mut down) = (0usize, 0usize);
        {
            let slots = self.slots.borrow();
            for &a in self.active_list.borrow().iter() {
                let node = &*slots[a as usize].node;
                if !pick(node) {
                    continue;
                }
                let shared = node
                    .sem
                    .borrow()
                    .as_ref()
                    .is_some_and(|s| s.shared.load(Ordering::Relaxed));
                let want = shared && node.refd.get();
                if want != node.counted.replace(want) {
                    if want {
                        up += 1;
                    } else {
                        down += 1;
                    }
                }
            }
        }
        let before = self.refs.get();
        let after = before + up - down;
        self.refs.set(after);
        if before == 0 && after > 0 {
            self.tsfn_ref(true);
        } else if before > 0 && after == 0 {
            self.tsfn_ref(false);
        }
    }

    fn unref_one(&self) {
        let refs = self.refs.get() - 1;
        self.refs.set(refs);
        if refs == 0 {
            self.tsfn_ref(false);
        }
    }

    /// Active -> Delivered: the grant stays with the slot (and its key) until
    /// `confirm` or the env cleanup hook.
    fn deliver_slot(&self, slot: u32) {
        let counted = {
            let mut slots = self.slots.borrow_mut();
            self.leave_active(&mut slots, slot);
            let s = &mut slots[slot as usize];
            s.state = SlotState::Delivered;
            s.node.counted.get()
        };
        self.delivered.borrow_mut().push(slot);
        if counted {
            self.unref_one();
        }
    }

    /// The slot of a delivered grant, by key.
    fn delivered_slot(&self, key: u64) -> Option<u32> {
        let slot = key as u32;
        let slots = self.slots.borrow();
        let s = slots.get(slot as usize)?;
        (s.state == SlotState::Delivered && s.gen == (key >> 32) as u32).then_some(slot)
    }

    /// Ends a delivered grant: JS handed it over (`keep`), or gave up on it
    /// (the permits are released).
    fn confirm_slot(&self, slot: u32, keep: bool) {
        self.delivered.borrow_mut().retain(|&d| d != slot);
        if !keep {
            let sem = self.slots.borrow()[slot as usize].node.sem.borrow().clone();
            let n = self.slots.borrow()[slot as usize].node.n.get();
            if let Some(sem) = sem {
                sem.sub_held(n);
                let _ = release_paying(&sem, n);
            }
        }
        self.release_slot(slot);
    }

    /// A release in this thread on `sem` means its code has seen the grants it
    /// had: confirm every delivered grant on `sem` first, so the env cleanup hook
    /// cannot return permits user code already gave back.
    fn confirm_all_on(&self, sem: &Arc<Sem>) {
        if self.delivered.borrow().is_empty() {
            return;
        }
        let mine: Vec<u32> = {
            let slots = self.slots.borrow();
            self.delivered
                .borrow()
                .iter()
                .copied()
                .filter(|&d| {
                    slots[d as usize]
                        .node
                        .sem
                        .borrow()
                        .as_ref()
                        .is_some_and(|s| Arc::ptr_eq(s, sem))
                })
                .collect()
        };
        for slot in mine {
            self.confirm_slot(slot, true);
        }
    }

    /// Finishes the woken request `key` (if still pending): its slot and outcome.
    fn collect(&self, key: u64) -> Option<(u32, u32)> {
        let (slot, node) = self.active(key)?;
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        let code = match node.finish() {
            Finish::Granted => {
                if let Some(s) = &*node.sem.borrow() {
                    s.add_held(node.n.get());
                }
                let shared = node
                    .sem
                    .borrow()
                    .as_ref()
                    .is_some_and(|s| s.shared.load(Ordering::Relaxed));
                if shared {
                    // Another thread may terminate this one before JS ran the
                    // code awaiting this grant: keep it until JS confirms.
                    self.deliver_slot(slot);
                    return Some((slot, GRANTED_HELD));
                }
                GRANTED
            }
            Finish::Closed => WOKEN_CLOSED,
            // Cannot happen after a wake; report it rather than hang the promise.
            Finish::Cancelled { .. } | Finish::Idle => LOST,
        };
        self.release_slot(slot);
        Some((slot, code))
    }

    /// Writes `(slot, outcome)` to pair `k` of the buffer.
    fn write(&self, k: usize, slot: u32, code: u32) {
        let (buf, cap) = self.buf.get();
        debug_assert!(k < cap);
        // SAFETY: `buf` points to the live Uint32Array registered by init() (held
        // by a strong reference) of `2 * cap` elements, and k < cap.
        unsafe {
            *buf.add(2 * k) = slot;
            *buf.add(2 * k + 1) = code;
        }
    }

    /// Finishes queued woken requests into the buffer. Returns the number of
    /// pairs; `== capacity` means "call drain() again".
    fn write_ready(&self, mut k: usize) -> usize {
        let cap = self.buf.get().1;
        while k < cap {
            let Some(key) = self.ready.borrow_mut().pop_front() else {
                break;
            };
            if let Some((slot, code)) = self.collect(key) {
                self.write(k, slot, code);
                k += 1;
            }
        }
        k
    }

    /// Ends the current call's wake handling: the requests of this environment
    /// woken during it go to the buffer (the overflow, if any, to `ready`).
    fn settle_local(&self) -> usize {
        let cap = self.buf.get().1;
        let mut k = self.write_ready(0);
        LOCAL.with(|l| {
            let Ok(mut local) = l.try_borrow_mut() else {
                return;
            };
            if local.is_empty() {
                return;
            }
            // collect() never wakes anyone (it only consumes Granted/Closed), so
            // holding LOCAL across it is fine.
            let mut rest = local.drain(..);
            for key in rest.by_ref() {
                if k == cap {
                    self.ready.borrow_mut().push_back(key);
                    break;
                }
                if let Some((slot, code)) = self.collect(key) {
                    self.write(k, slot, code);
                    k += 1;
                }
            }
            self.ready.borrow_mut().extend(rest);
        });
        k
    }

    fn collect_remote(&self) {
        let ids = std::mem::take(&mut lock(&self.shared.remote).ids);
        if !ids.is_empty() {
            self.ready.borrow_mut().extend(ids);
        }
    }

    fn tsfn_ref(&self, on: bool) {
        let tsfn = lock(&self.shared.remote).tsfn;
        if let Some(t) = tsfn {
            // SAFETY: on the JS thread of `self.env`, while the tsfn is alive (it is
            // finalized only at teardown, when no JS runs any more).
            unsafe {
                if on {
                    sys::napi_ref_threadsafe_function(self.env, t.0);
                } else {
                    sys::napi_unref_threadsafe_function(self.env, t.0);
                }
            }
        }
    }
}

unsafe extern "C" fn tsfn_call_js(
    env: RawEnv,
    js_cb: RawValue,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || js_cb.is_null() {
        return; // the tsfn is being torn down
    }
    // SAFETY: `context` is the EnvShared kept alive by the Arc owned by the tsfn's
    // finalize data, which outlives every call.
    let shared = unsafe { &*(context as *const EnvShared) };
    // Nothing here can panic but the lock bookkeeping; never unwind into Node.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lock(&shared.remote).notified = false;
    }));
    // SAFETY: plain Node-API calls on the JS thread the tsfn belongs to.
    unsafe {
        let mut recv = ptr::null_mut();
        sys::napi_get_undefined(env, &mut recv);
        let mut result = ptr::null_mut();
        sys::napi_call_function(env, recv, js_cb, 0, ptr::null(), &mut result);
    }
}

unsafe extern "C" fn tsfn_finalize(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<EnvShared> leaked for the tsfn in `init`.
    let shared = unsafe { Arc::from_raw(data as *const EnvShared) };
    lock(&shared.remote).tsfn = None;
}

unsafe extern "C" fn env_cleanup(arg: *mut c_void) {
    // SAFETY: `arg` is the boxed EnvCtx leaked by module init; this hook runs once,
    // after the environment stopped running JS, so nothing else references it.
    let ctx = unsafe { Box::from_raw(arg as *mut EnvCtx) };
    let tsfn = lock(&ctx.shared.remote).tsfn.take();
    if let Some(t) = tsfn {
        // SAFETY: the tsfn was alive (its finalizer would have cleared the slot).
        unsafe {
            sys::napi_release_threadsafe_function(t.0, sys::ThreadsafeFunctionReleaseMode::abort)
        };
    }
    let _enter = Enter::new(&ctx);
    let mut slots = std::mem::take(&mut *ctx.slots.borrow_mut());
    // A panic must not unwind into Node; if one happened half-way, the nodes may
    // still be queued: leak them rather than free memory a semaphore points to.
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        give_back_all(&ctx, &mut slots)
    }));
    if done.is_err() {
        std::mem::forget(slots);
    } else {
        drop(slots);
    }
    LOCAL.with(|l| l.borrow_mut().clear());
    drop(_enter);
}

/// Env teardown: cancels queued requests and gives back grants nobody saw.
fn give_back_all(ctx: &EnvCtx, slots: &mut [Slot]) {
    for s in slots.iter_mut() {
        if s.state == SlotState::Active {
            let sem = s.node.sem.borrow().clone();
            if let Some(sem) = sem {
                if sem.debt.load(Ordering::SeqCst) > 0
                    && s.node.waiter.state() == volt_sem::WaiterState::Waiting
                {
                    // As in `cancel_slot`: do not hand a partial grant on past
                    // a pending `removePermits` debt.
                    sem.queued.fetch_sub(1, Ordering::Relaxed);
                    s.node.sem.borrow_mut().take();
                    s.state = SlotState::Free;
                    let old = std::mem::replace(&mut s.node, ctx.new_node());
                    orphan(old, &sem);
                    continue;
                }
            }
        }
        let give_back = match s.state {
            SlotState::Free => false,
            SlotState::Active => {
                if let Some(sem) = &*s.node.sem.borrow() {
                    sem.queued.fetch_sub(1, Ordering::Relaxed);
                }
                matches!(s.node.as_ref().finish(), Finish::Granted)
            }
            // Reported to JS, but the code awaiting it never ran.
            SlotState::Delivered => {
                if let Some(sem) = &*s.node.sem.borrow() {
                    sem.sub_held(s.node.n.get());
                }
                true
            }
        };
        if give_back {
            // A grant nobody will see: give it back (wakes the next waiters).
            if let Some(sem) = &*s.node.sem.borrow() {
                let _ = release_paying(sem, s.node.n.get());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Raw Node-API helpers.

/// Reads up to N arguments and the function's data pointer (the EnvCtx).
///
/// # Safety
/// Called from a Node-API callback with its `env` and `info`.
unsafe fn args<const N: usize>(
    env: RawEnv,
    info: sys::napi_callback_info,
) -> ([RawValue; N], *const EnvCtx) {
    let mut argv = [ptr::null_mut(); N];
    let mut argc = N;
    let mut data = ptr::null_mut();
    // SAFETY: argv has room for argc values; missing ones are filled with undefined.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    (argv, data as *const EnvCtx)
}

fn int(env: RawEnv, v: i32) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_int32(env, v, &mut out) };
    out
}

fn double(env: RawEnv, v: f64) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_double(env, v, &mut out) };
    out
}

fn boolean(env: RawEnv, v: bool) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value lookup on the JS thread.
    unsafe { sys::napi_get_boolean(env, v, &mut out) };
    out
}

fn null(env: RawEnv) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value lookup on the JS thread.
    unsafe { sys::napi_get_null(env, &mut out) };
    out
}

/// A JS number that is an integer in `0..=MAX_JS`.
fn count(env: RawEnv, v: RawValue) -> Option<usize> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    (d >= 0.0 && d <= MAX_JS as f64 && d.fract() == 0.0).then_some(d as usize)
}

/// A request key (`gen << 32 | slot`, below 2^53) passed back by JS.
fn key_arg(env: RawEnv, v: RawValue) -> Option<u64> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    (d >= 0.0 && d <= MAX_JS as f64 && d.fract() == 0.0).then_some(d as u64)
}

/// What a JS `Semaphore` object holds (through an External): the semaphore,
/// and this object's own settings.
struct Handle {
    sem: Arc<Sem>,
    /// Identifies the requests queued through this handle (never dereferenced).
    id: u64,
    /// Whether waiters queued through it keep their thread alive (`ref()`/`unref()`).
    refd: Cell<bool>,
}

static NEXT_HANDLE_ID: AtomicU64 = AtomicU64::new(1);

/// The handle behind an External made by `handle()`.
///
/// # Safety
/// `v` is an External created by this addon (the JS layer keeps handles private);
/// the returned reference lives as long as `v` is reachable (the call's duration).
unsafe fn handle_of<'a>(env: RawEnv, v: RawValue) -> Option<&'a Handle> {
    let mut p = ptr::null_mut();
    // SAFETY: fails on a non-external, leaving p null.
    let status = unsafe { sys::napi_get_value_external(env, v, &mut p) };
    if status != sys::Status::napi_ok || p.is_null() {
        return None;
    }
    // SAFETY: our externals point at a boxed Handle, freed only by their finalizer.
    Some(unsafe { &*(p as *const Handle) })
}

/// The semaphore behind a handle made by `handle()`.
///
/// # Safety
/// As for [`handle_of`].
unsafe fn sem<'a>(env: RawEnv, v: RawValue) -> Option<&'a Arc<Sem>> {
    // SAFETY: forwarded.
    unsafe { handle_of(env, v) }.map(|h| &h.sem)
}

unsafe extern "C" fn drop_handle(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Handle> leaked by `handle`.
    drop(unsafe { Box::from_raw(data as *mut Handle) });
}

/// Wraps an `Arc<Sem>` in a JS External that owns it.
fn handle(env: RawEnv, sem: Arc<Sem>) -> RawValue {
    let data = Box::into_raw(Box::new(Handle {
        sem,
        id: NEXT_HANDLE_ID.fetch_add(1, Ordering::Relaxed),
        refd: Cell::new(true),
    }));
    let mut out = ptr::null_mut();
    // SAFETY: the finalizer frees `data` exactly once.
    let status = unsafe {
        sys::napi_create_external(
            env,
            data.cast(),
            Some(drop_handle),
            ptr::null_mut(),
            &mut out,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to Node; still ours.
        drop(unsafe { Box::from_raw(data) });
        return null(env);
    }
    out
}

/// Defines a raw Node-API function body with `env`, `info` and the EnvCtx.
macro_rules! native {
    ($name:ident, |$env:ident, $ctx:ident, $argv:ident : [$n:literal]| $body:block) => {
        unsafe extern "C" fn $name($env: RawEnv, info: sys::napi_callback_info) -> RawValue {
            // SAFETY: called by Node-API with a valid env/info; `data` is the EnvCtx
            // registered with this function, alive until the env cleanup hook, after
            // which no JS (hence no call) runs.
            let ($argv, ctx_ptr) = unsafe { args::<$n>($env, info) };
            // SAFETY: see above.
            let $ctx: &EnvCtx = unsafe { &*ctx_ptr };
            // A panic must not unwind into Node (it would abort the process):
            // it becomes a JS exception.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| $body)) {
                Ok(v) => v,
                Err(e) => throw_internal($env, e),
            }
        }
    };
}

/// Throws an `Error` with `code === 'ERR_VOLT_INTERNAL'` for a caught panic.
fn throw_internal(env: RawEnv, panic: Box<dyn std::any::Any + Send>) -> RawValue {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    let msg =
        std::ffi::CString::new(format!("volt-sem: internal error: {what}").replace('\0', " "))
            .unwrap_or_default();
    // SAFETY: plain Node-API call on the JS thread.
    unsafe {
        sys::napi_throw_error(env, c"ERR_VOLT_INTERNAL".as_ptr(), msg.as_ptr());
    }
    ptr::null_mut()
}

// ---------------------------------------------------------------------------
// The functions index.js calls.

// init(buffer: Uint32Array, onWake: () => void): void
native!(js_init, |env, ctx, argv: [2]| {
    if ctx.initialized.get() {
        return int(env, BAD_ARGS);
    }
    let mut ty = 0;
    let mut len = 0;
    let mut data = ptr::null_mut();
    let mut ab = ptr::null_mut();
    let mut off = 0;
    // SAFETY: fails on a non-typed-array.
    let status = unsafe { sys::napi_get_typedarray_info(env, argv[0], &mut ty, &mut len, &mut data, &mut ab, &mut off) };
    if status != sys::Status::napi_ok || ty != sys::TypedarrayType::uint32_array || len < 2 || data.is_null() {
        return int(env, BAD_ARGS);
    }
    let mut buf_ref = ptr::null_mut();
    // SAFETY: a strong reference keeps the array (and its fixed backing store)
    // alive for the environment's life; Node frees it at teardown.
    unsafe { sys::napi_create_reference(env, argv[0], 1, &mut buf_ref) };
    let mut name = ptr::null_mut();
    let mut tsfn = ptr::null_mut();
    let fin = Arc::into_raw(ctx.shared.clone());
    // SAFETY: `argv[1]` is the JS callback; `fin` is owned by the tsfn's finalizer;
    // the context pointer stays valid as long as that Arc.
    let status = unsafe {
        sys::napi_create_string_utf8(env, c"volt-sem wake".as_ptr(), -1, &mut name);
        sys::napi_create_threadsafe_function(
            env,
            argv[1],
            ptr::null_mut(),
            name,
            0,
            1,
            fin as *mut c_void,
            Some(tsfn_finalize),
            fin as *mut c_void,
            Some(tsfn_call_js),
            &mut tsfn,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: the tsfn was not created, so its finalizer will not run.
        drop(unsafe { Arc::from_raw(fin) });
        return int(env, BAD_ARGS);
    }
    // SAFETY: on the JS thread; the tsfn was just created.
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    lock(&ctx.shared.remote).tsfn = Some(Tsfn(tsfn));
    ctx.buf.set((data.cast::<u32>(), len / 2));
    ctx.initialized.set(true);
    int(env, OK)
});

// create(permits): External | null
native!(js_create, |env, _ctx, argv: [1]| {
    let Some(permits) = count(env, argv[0]) else { return null(env) };
    let Some(core) = Semaphore::try_new(permits) else { return null(env) };
    let id = NEXT_SEM_ID.fetch_add(1, Ordering::Relaxed);
    handle(
        env,
        Arc::new(Sem {
            core,
            id,
            shared: AtomicBool::new(false),
            queued: AtomicUsize::new(0),
            abandoned: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            debt: AtomicUsize::new(0),
            orphans: Mutex::new(Vec::new()),
            graveyard: Mutex::new(Vec::new()),
        }),
    )
});

// share(h): number (the registry id) | null
native!(js_share, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    let now = Instant::now();
    let expired = {
        let mut reg = lock(&REGISTRY);
        let expired = if scan_due(now) { expired_pins(&mut reg, now) } else { Vec::new() };
        let e = reg.entry(s.id).or_insert_with(|| Entry { sem: Arc::downgrade(s), pin: None });
        e.pin = Some((s.clone(), now + SHARE_PIN));
        expired
    };
    drop(expired);
    if !s.shared.swap(true, Ordering::Relaxed) {
        // Its waiters of this thread may now be served by others: they keep
        // the thread alive like any waiter on a shared semaphore.
        ctx.recount(|node| node.sem.borrow().as_ref().is_some_and(|x| Arc::ptr_eq(x, s)));
    }
    double(env, s.id as f64)
});

// expirePins(): drops the share() pins whose time is up; returns the ms until
// the next one expires, or -1 if none is left.
native!(js_expire_pins, |env, _ctx, argv: [0]| {
    let _ = argv;
    let now = Instant::now();
    let (expired, next) = {
        let mut reg = lock(&REGISTRY);
        let expired = expired_pins(&mut reg, now);
        (expired, next_pin_ms(&reg, now))
    };
    drop(expired);
    double(env, next)
});

// setRef(h, on): whether waiters queued through this handle keep the thread alive.
native!(js_set_ref, |env, ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let mut on = true;
    // SAFETY: fails on a non-boolean, leaving `on` as is.
    unsafe { sys::napi_get_value_bool(env, argv[1], &mut on) };
    if h.refd.replace(on) != on {
        let id = h.id;
        ctx.recount(|node| {
            if node.handle.get() == id {
                node.refd.set(on);
                true
            } else {
                false
            }
        });
    }
    int(env, OK)
});

// removePermits(h, n): OK | BAD_COUNT. Takes `n` permits out of the total:
// the available ones at once, the rest (the debt) from the next permits given
// back through this binding, before any waiter is served.
native!(js_remove_permits, |env, _ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    if n == 0 {
        return int(env, OK);
    }
    let mut d = s.debt.load(Ordering::SeqCst);
    loop {
        if d > MAX_JS - n {
            return int(env, BAD_COUNT);
        }
        match s.debt.compare_exchange_weak(d, d + n, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(actual) => d = actual,
        }
    }
    loop {
        let available = s.core.available_permits();
        let owed = s.debt.load(Ordering::SeqCst);
        if available == 0 || owed == 0 {
            break;
        }
        match s.core.try_acquire(available.min(owed)) {
            Ok(p) => {
                let taken = p.num_permits();
                p.forget();
                // Pay the debt with them; a release may have paid part of it
                // meanwhile: give the excess back.
                let mut d = s.debt.load(Ordering::SeqCst);
                loop {
                    let pay = d.min(taken);
                    match s.debt.compare_exchange_weak(d, d - pay, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(_) => {
                            if taken > pay {
                                let _ = release_paying(s, taken - pay);
                            }
                            if pay > 0 && d == pay {
                                cancel_orphans(s);
                            }
                            break;
                        }
                        Err(actual) => d = actual,
                    }
                }
            }
            Err(TryAcquireError::NoPermits) => continue,
            Err(_) => break,
        }
    }
    int(env, OK)
});

// held(h): permits acquired and not released, all threads.
native!(js_held, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.held.load(Ordering::Relaxed) as f64)
});

// debt(h): permits removePermits still has to take out.
native!(js_debt, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.debt.load(Ordering::SeqCst) as f64)
});

// pending(h): queued requests on this semaphore, all threads.
native!(js_pending, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.queued.load(Ordering::Relaxed) as f64)
});

// attach(id): External | null (no such semaphore any more)
native!(js_attach, |env, _ctx, argv: [1]| {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, argv[0], &mut d) };
    if !(d >= 1.0 && d.fract() == 0.0 && d <= MAX_JS as f64) {
        return null(env);
    }
    let (found, unpinned) = {
        let mut reg = lock(&REGISTRY);
        let now = Instant::now();
        let mut expired = if scan_due(now) { expired_pins(&mut reg, now) } else { Vec::new() };
        let found = match reg.get_mut(&(d as u64)) {
            Some(e) => {
                expired.extend(e.pin.take().map(|(s, _)| s)); // attached: pin no more
                e.sem.upgrade()
            }
            None => None,
        };
        (found, expired)
    };
    drop(unpinned);
    match found {
        Some(s) => handle(env, s),
        None => null(env),
    }
});

// tryAcquire(h, n): OK | NO_PERMITS | CLOSED | BAD_COUNT
native!(js_try_acquire, |env, _ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    let code = match s.core.try_acquire(n) {
        Ok(p) => {
            p.forget();
            s.add_held(n);
            OK
        }
        Err(TryAcquireError::NoPermits) => NO_PERMITS,
        Err(TryAcquireError::Closed) => CLOSED,
        Err(TryAcquireError::TooManyPermits) => BAD_COUNT,
        // The core's error enums are non_exhaustive: a later variant maps here.
        Err(_) => BAD_COUNT,
    };
    int(env, code)
});

// acquire(h, n): OK (taken) | CLOSED | BAD_COUNT | SLOT_BASE + slot (queued)
native!(js_acquire, |env, ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let s = &h.sem;
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    match s.core.try_acquire(n) {
        Ok(p) => {
            p.forget();
            s.add_held(n);
            return int(env, OK);
        }
        Err(TryAcquireError::Closed) => return int(env, CLOSED),
        Err(TryAcquireError::TooManyPermits) => return int(env, BAD_COUNT),
        Err(TryAcquireError::NoPermits) => {}
        // The core's error enums are non_exhaustive: a later variant maps here.
        Err(_) => return int(env, BAD_COUNT),
    }
    let (slot, node) = ctx.take_slot(h, n);
    // SAFETY: the node is boxed in a slot that lives (unmoved) as long as the env.
    let node = unsafe { Pin::new_unchecked(&*node) };
    // SAFETY: the waiter is idle (its slot was free); after Pending the node stays
    // pinned in its slot, and the slot stays reserved until finish_raw (drain,
    // cancel or cleanup) returned.
    let r = unsafe { s.core.acquire_raw(node.waiter(), n, wake, &*node as *const Node as *mut c_void) };
    let code = match r {
        Ok(RawAcquire::Pending) => {
            ctx.activate(slot);
            return double(env, SLOT_BASE as f64 + node.key.get() as f64);
        }
        Ok(RawAcquire::Ready) => {
            s.add_held(n);
            OK
        }
        Err(AcquireError::Closed) => CLOSED,
        Err(AcquireError::TooManyPermits) => BAD_COUNT,
        // The core's error enums are non_exhaustive: a later variant maps here.
        Err(_) => BAD_COUNT,
    };
    ctx.release_slot(slot);
    int(env, code)
});

// release(h, n, adding?): k >= 0 outcomes written | RELEASE_OVERFLOW | BAD_COUNT(-3)
native!(js_release, |env, ctx, argv: [3]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, -BAD_COUNT) };
    // The core's limit is far above 2^53; keep JS counts exact. (Racy against a
    // concurrent release on another thread; the core's own check is exact.)
    if s.core.available_permits() > MAX_JS - n {
        return int(env, RELEASE_OVERFLOW);
    }
    ctx.confirm_all_on(s);
    let enter = Enter::new(ctx);
    if release_paying(s, n).is_err() {
        return int(env, RELEASE_OVERFLOW);
    }
    // A third argument `true` (addPermits) grows the total: no held permits back.
    let mut adding = false;
    // SAFETY: fails on a non-boolean (undefined), leaving `adding` false.
    unsafe { sys::napi_get_value_bool(env, argv[2], &mut adding) };
    if !adding {
        s.sub_held(n);
    }
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// cancel(key): k >= 0 outcomes written (the cancelled request is not among them)
native!(js_cancel, |env, ctx, argv: [1]| {
    let Some(key) = key_arg(env, argv[0]) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    if let Some((slot, _)) = ctx.active(key) {
        ctx.cancel_slot(slot);
    }
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// confirm(key, keep): k >= 0 outcomes written. Ends a GRANTED_HELD grant: JS
// handed it to user code (keep = true), or nobody will ever see it (false: the
// permits are released). Unknown keys (already confirmed) are ignored.
native!(js_confirm, |env, ctx, argv: [2]| {
    let Some(key) = key_arg(env, argv[0]) else { return int(env, BAD_ARGS) };
    let mut keep = true;
    // SAFETY: fails on a non-boolean, leaving `keep` as is.
    unsafe { sys::napi_get_value_bool(env, argv[1], &mut keep) };
    let Some(slot) = ctx.delivered_slot(key) else { return int(env, 0) };
    let enter = Enter::new(ctx);
    ctx.confirm_slot(slot, keep);
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// abandon(h): k >= 0 outcomes written. The JS object of a semaphore was
// garbage-collected. A private semaphore had only that object, so nobody can
// release or close it any more: its pending requests are swept (cancelled and
// their slots freed), in batches once they are at least half of the pending
// requests of this environment, so sweeping costs O(1) per request.
native!(js_abandon, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    if s.shared.load(Ordering::Relaxed) || s.abandoned.swap(true, Ordering::Relaxed) {
        return int(env, 0);
    }
    let queued = s.queued.load(Ordering::Relaxed);
    if queued == 0 {
        return int(env, 0);
    }
    ctx.zombies.set(ctx.zombies.get() + queued);
    if ctx.zombies.get() * 2 < ctx.active_list.borrow().len() {
        return int(env, 0);
    }
    let k = ctx.sweep_abandoned();
    int(env, k as i32)
});

// stats(): { slots, active, delivered, free } of this environment (tests).
native!(js_stats, |env, ctx, argv: [0]| {
    let _ = argv;
    let mut obj = ptr::null_mut();
    let fields = [
        (c"slots", ctx.slots.borrow().len()),
        (c"active", ctx.active_list.borrow().len()),
        (c"delivered", ctx.delivered.borrow().len()),
        (c"free", ctx.free.borrow().len()),
    ];
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_object(env, &mut obj);
        for (name, v) in fields {
            sys::napi_set_named_property(env, obj, name.as_ptr(), double(env, v as f64));
        }
    }
    obj
});

// close(h): k >= 0 outcomes written
native!(js_close, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    s.core.close();
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// drain(): k >= 0 outcomes written (woken from other threads, or left over)
native!(js_drain, |env, ctx, argv: [0]| {
    let _ = argv;
    ctx.collect_remote();
    let k = ctx.write_ready(0);
    int(env, k as i32)
});

// available(h): number
native!(js_available, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.core.available_permits() as f64)
});

// isClosed(h): boolean
native!(js_is_closed, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    boolean(env, s.core.is_closed())
});

/// Registers the raw functions on `exports`, bound to a fresh per-environment
/// context that an env cleanup hook tears down.
#[napi(module_exports)]
pub fn init(exports: Object) -> napi::Result<()> {
    let env = exports.value().env;
    let target = exports.raw();
    let ctx = Box::into_raw(Box::new(EnvCtx {
        env,
        shared: Arc::new(EnvShared {
            remote: Mutex::new(Remote {
                ids: Vec::new(),
                tsfn: None,
                notified: false,
            }),
        }),
        slots: RefCell::new(Vec::new()),
        free: RefCell::new(Vec::new()),
        ready: RefCell::new(VecDeque::new()),
        buf: Cell::new((ptr::null_mut(), 0)),
        refs: Cell::new(0),
        delivered: RefCell::new(Vec::new()),
        active_list: RefCell::new(Vec::new()),
        zombies: Cell::new(0),
        initialized: Cell::new(false),
    }));
    type Cb = unsafe extern "C" fn(RawEnv, sys::napi_callback_info) -> RawValue;
    let fns: [(&std::ffi::CStr, Cb); 21] = [
        (c"init", js_init),
        (c"create", js_create),
        (c"share", js_share),
        (c"attach", js_attach),
        (c"tryAcquire", js_try_acquire),
        (c"acquire", js_acquire),
        (c"release", js_release),
        (c"cancel", js_cancel),
        (c"confirm", js_confirm),
        (c"abandon", js_abandon),
        (c"stats", js_stats),
        (c"expirePins", js_expire_pins),
        (c"setRef", js_set_ref),
        (c"pending", js_pending),
        (c"removePermits", js_remove_permits),
        (c"debt", js_debt),
        (c"held", js_held),
        (c"close", js_close),
        (c"drain", js_drain),
        (c"available", js_available),
        (c"isClosed", js_is_closed),
    ];
    // SAFETY: plain Node-API calls during module init on the JS thread; `ctx` lives
    // until the cleanup hook registered here frees it.
    unsafe {
        let status = sys::napi_add_env_cleanup_hook(env, Some(env_cleanup), ctx.cast());
        if status != sys::Status::napi_ok {
            drop(Box::from_raw(ctx));
            return Err(napi::Error::from_reason(
                "volt-sem: cannot register the env cleanup hook",
            ));
        }
        for (name, cb) in fns {
            let mut f = ptr::null_mut();
            sys::napi_create_function(env, name.as_ptr(), -1, Some(cb), ctx.cast(), &mut f);
            sys::napi_set_named_property(env, target, name.as_ptr(), f);
        }
        sys::napi_set_named_property(
            env,
            target,
            c"maxPermits".as_ptr(),
            double(env, MAX_JS as f64),
        );
    }
    Ok(())
}
