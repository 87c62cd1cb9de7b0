//! The blocking acquire (`volt_sem_acquire_blocking`): parks the calling
//! thread until the grant, the close or the timeout.

use std::time::Duration;

use volt_sem_backend::{Error, Grant};

use crate::boundary::{count, ffi_status};
use crate::semaphore::handle;
use crate::semaphore::volt_sem;
use crate::status::status;
use crate::status::volt_status;

/// Acquires `n` permits, blocking (parked, no busy wait) the calling thread until
/// they are granted in FIFO order, the semaphore is closed, or `timeout_ns`
/// nanoseconds passed; a negative timeout waits for ever. Do not call it on an
/// event-loop thread.
///
/// `timeout_ns` is relative to the call (a duration, not a deadline), measured on
/// a monotonic clock (`CLOCK_MONOTONIC` on Linux): changes to the wall clock do
/// not shorten or lengthen it. A timeout too large for the clock waits for ever.
/// A timeout of 0 is one attempt (`VOLT_TIMED_OUT` when the permits are not free
/// now). Permits free at the call are granted whatever the timeout, on every
/// backend: on a Redis semaphore the answer to the request's first round trip
/// (the acquire script) is waited for past the timeout, and its grant kept,
/// even with a timeout far shorter than that round trip (1 ns), for a grace
/// counted from when the script was sent: 250 ms, or four times the median
/// of the handle's last eight round trips to Redis if longer (a far-away
/// Redis), at most the command timeout. A request still unanswered at the
/// grace's end (a server that stopped answering) is cancelled then:
/// `VOLT_TIMED_OUT`, a grant answered later given back. So a timed acquire on
/// Redis returns at the later of its timeout and that grace's end, not at the
/// command timeout. A request that had to queue is bound by the timeout
/// (cancelled, its partial grant handed on).
/// On a shared semaphore the timeout also bounds the waits for the segment's
/// lock: a process stopped inside it (`SIGSTOP`, a debugger) does not make a
/// timed acquire overrun its timeout; if the request is still queued then, its
/// removal from the queue is left to the process's doorbell thread (it holds
/// no permit meanwhile: a grant that comes first is given back at once).
/// That wait for the lock is on `CLOCK_MONOTONIC` too where the C library has
/// `pthread_mutex_clocklock` (glibc 2.30 and later, found at run time); on an
/// older one it falls back to `pthread_mutex_timedlock`, on `CLOCK_REALTIME`,
/// and a wall-clock step during that wait shortens or lengthens it.
///
/// Returns `VOLT_OK` (the caller owns the permits), `VOLT_TIMED_OUT` (any partial
/// grant was handed on), `VOLT_CLOSED` or `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`,
/// `n > volt_max_permits()`, or above a shared semaphore's total); on a shared
/// semaphore also `VOLT_QUEUE_FULL`, `VOLT_IN_CALLBACK` (called inside one of its
/// wake callbacks), `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`. On a Redis
/// semaphore (the request is sent by the handle's door thread, then the
/// wait; the grant arrives without polling; `volt_sem_acquire_blocking_fenced` also returns the fencing
/// token): `VOLT_IN_CALLBACK` inside one of its wake callbacks,
/// `VOLT_LEASE_EXPIRED` and `VOLT_STATE_LOST` (the session was lost while
/// waiting), `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_acquire_blocking(
    sem: *const volt_sem,
    n: usize,
    timeout_ns: i64,
) -> volt_status {
    ffi_status!("volt_sem_acquire_blocking", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        count(n)?;
        // The C caller owns the permits on VOLT_OK.
        Ok(status(wait(sem, n, timeout_ns)))
    })
}

/// The wait of both blocking acquires: for ever when `timeout_ns` is
/// negative, else for at most that many nanoseconds.
pub(crate) fn wait(sem: &volt_sem, n: usize, timeout_ns: i64) -> Result<Grant, Error> {
    if timeout_ns < 0 {
        return sem.sem.acquire_blocking(n);
    }
    sem.sem
        .acquire_timeout(n, Duration::from_nanos(timeout_ns as u64))
}
