//! Ending one handle's session on a named or Redis semaphore:
//! `volt_sem_disconnect`.

use crate::boundary::ffi_status;
use crate::semaphore::volt_sem;
use crate::status::volt_status;
use crate::total::on_shared;

/// Ends the session of a named (`volt_sem_open`) or Redis (`volt_sem_connect`)
/// handle, leaving the semaphore open for every other process and client
/// (`volt_sem_close` closes it for everyone). The handle is the object behind
/// `sem`: every reference to it (`volt_sem_clone` returns the same pointer)
/// is disconnected; another `volt_sem_open` or `volt_sem_connect` of the same
/// name, in this process or another, is another handle and goes on.
///
/// * What the handle holds goes back, to the next waiters, before this
///   returns. Named: the permits granted through this handle and not
///   released through it, as far as the process still holds them (the
///   process's handles on a name share one count: what another handle of the
///   process released for it is not released twice). Redis: everything its
///   session holds (one round trip, up to the command timeout; if Redis is out
///   of reach, the permits come back at the lease's expiry); when it returns,
///   the handle's threads have exited and its connections are closed.
/// * Its queued requests fail, on any thread. A `volt_waiter` queued on it
///   (`volt_sem_acquire`) is woken: its callback runs (named: on the
///   process's doorbell thread, shortly after this returns; Redis: before
///   this returns, on the handle's threads), `volt_waiter_status` reads
///   `VOLT_CLOSED`, and the owner's `volt_sem_cancel` (still required: it
///   gives the waiter's reference back) returns `VOLT_DISCONNECTED`; a
///   partial grant is handed on. A grant that arrived before the disconnect
///   and was not collected yet is given back too (`volt_sem_cancel` then
///   returns `VOLT_DISCONNECTED`: the permits are not the caller's). A
///   thread blocked in `volt_sem_acquire_blocking` on it returns
///   `VOLT_DISCONNECTED` at once (its request is failed, which wakes it;
///   named: a partial grant is handed on).
/// * Every later call on it that returns a status returns
///   `VOLT_DISCONNECTED`: acquires (a `volt_waiter` is left idle), releases
///   (the permits went back already), `volt_sem_close`, `volt_sem_set_total`,
///   `volt_sem_reopen`, a named semaphore's `volt_sem_inspect`... The
///   queries without a status still answer (`volt_sem_is_closed`,
///   `volt_sem_total_permits`, `volt_sem_available_permits`,
///   `volt_sem_stats`), and so do a Redis semaphore's `volt_sem_census` and
///   `volt_sem_inspect` (reads of the semaphore, on a connection for that
///   call, closed when it returns; the handle holds and queues nothing
///   there). `volt_sem_cancel` of a waiter queued before works. Free each
///   reference with `volt_sem_free` as usual.
/// * Thread-safe: may be called from any thread, concurrently with the
///   handle's other calls (a call racing it either completes before the end,
///   and its permits go back with the handle's, or fails with
///   `VOLT_DISCONNECTED`), and from inside a wake callback.
///
/// Idempotent: a second call returns `VOLT_OK` and does nothing (one racing
/// the first, on another thread, returns once the first one gave back what
/// the handle held; Redis: unless made from a wake callback that the first
/// one runs, or that runs on the handle's own threads or on the thread of a
/// call running the handle's queued jobs itself, such as
/// `volt_sem_try_acquire` (the first one waits for all of these): that
/// one returns at once).
///
/// Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (a
/// local semaphore has no session: nothing changed; `volt_sem_close` it), or
/// `VOLT_FORKED` (a handle opened or connected before `fork()`, in the child:
/// nothing changed; its session is the parent's).
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_disconnect(sem: *const volt_sem) -> volt_status {
    // SAFETY: NULL or a live handle (contract).
    ffi_status!("volt_sem_disconnect", || unsafe {
        on_shared(sem, |sem| sem.disconnect())
    })
}
