//! `volt_sem_inspect`: who holds a semaphore's permits and who waits, on
//! every backend, into arrays the caller provides.
//!
//! Why caller arrays and fixed-size strings: nothing to free, no ownership
//! to document per field, and a caller that wants every entry asks for the
//! counts first (arrays of capacity 0), allocates, and asks again (the counts
//! may have grown meanwhile: `VOLT_TRUNCATED` says so).

use std::ffi::c_char;

use volt_sem_backend::inspect::{Holder, Inspection, QueuedWaiter};

use crate::boundary::{ffi_status, invalid, non_null};
use crate::semaphore::handle;
use crate::semaphore::volt_sem;
use crate::status::status_of;
use crate::status::volt_status::{self, *};

/// Size of the `label` arrays of `volt_holder` and `volt_queued_waiter`: the
/// longest label (128 bytes) and its NUL.
pub const VOLT_LABEL_CAP: usize = 129;

/// Size of the `host` arrays: a host name of up to 255 bytes and its NUL
/// (longer ones are cut).
pub const VOLT_HOST_CAP: usize = 256;

/// The semaphore as a whole, as `volt_sem_inspect` saw it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct volt_inspection {
    /// The number of permits the semaphore has (for a local one, see
    /// `volt_sem_inspect`).
    pub total: usize,
    /// Permits free now.
    pub available: usize,
    /// Whether the semaphore is closed.
    pub closed: bool,
    /// How many holders there are (the array holds the first
    /// `min(holders, holders_cap)`).
    pub holders: usize,
    /// How many waiters are queued (the array holds the first
    /// `min(waiters, waiters_cap)`, in queue order).
    pub waiters: usize,
}

/// A process (or Redis session) holding permits.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct volt_holder {
    /// The label of the holder's handle, NUL-terminated.
    pub label: [c_char; VOLT_LABEL_CAP],
    /// The holder's host name, NUL-terminated.
    pub host: [c_char; VOLT_HOST_CAP],
    /// The holder's process id.
    pub pid: u32,
    /// Permits held.
    pub permits: usize,
    /// Nanoseconds since the holder's oldest grant still held; -1 where the
    /// backend does not time grants (a local semaphore).
    pub held_for_ns: i64,
    /// Redis: nanoseconds left of the holder's lease, by the server's clock;
    /// -1 on the other backends.
    pub lease_remaining_ns: i64,
    /// Redis: the fencing token of the holder's latest grant; 0 on the other
    /// backends (a Redis grant's token is never 0).
    pub token: u64,
}

/// A queued request.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct volt_queued_waiter {
    /// The label of the handle that queued it, NUL-terminated.
    pub label: [c_char; VOLT_LABEL_CAP],
    /// Its host name, NUL-terminated.
    pub host: [c_char; VOLT_HOST_CAP],
    /// Its process id.
    pub pid: u32,
    /// Permits requested.
    pub permits: usize,
    /// Permits granted to it so far (a partial grant).
    pub granted: usize,
    /// Nanoseconds since it was queued.
    pub waiting_for_ns: u64,
    /// Its place in the queue: 0 is the next to be served (equal to its index
    /// in the array).
    pub position: usize,
}

/// Reports who holds `sem`'s permits and who waits for them, in queue order.
///
/// Writes the totals and the counts to `*out`, the first `holders_cap`
/// holders to `holders` and the first `waiters_cap` waiters to `waiters`
/// (either array may be NULL when its capacity is 0). One snapshot:
/// `available + Σ holders[i].permits + Σ waiters[i].granted == total` when
/// every entry fit (after a `volt_sem_set_total` below what is held, the sum
/// is above `total` by the permits still to be taken back as released).
///
/// A local semaphore reports this process as its one holder (label
/// `"<hostname>:<pid>"`, `held_for_ns` -1) and its own queue; its `total` is
/// the permits it was created with: `volt_sem_release` is taken to give back
/// what was acquired: a release beyond that shows in `total` only while its
/// extra permits are available or granted (a local semaphore does not count
/// what is held: once they are acquired again, `total` and the holder's
/// count are back to the nominal ones, e.g. a holder of 4 on a semaphore
/// created with 3 is reported holding 3). A shared
/// semaphore reports every process of the machine, after reclaiming what
/// dead ones held; a Redis one every client, after reaping expired sessions
/// (one round trip, up to the command timeout; this thread waits for it, so
/// do not call it from an event loop's thread).
///
/// Returns `VOLT_OK`; `VOLT_TRUNCATED` if an array was too small (`*out`
/// has the full counts; call again with larger arrays); `VOLT_INVALID_ARGUMENT`
/// (NULL `sem` or `out`, or a NULL array with a non-zero capacity); or the
/// backend's failure (`VOLT_CONNECTION_FAILED`, `VOLT_STATE_LOST`, ...), with
/// nothing written.
///
/// # Safety
/// `sem` is NULL or a live handle; `out` is NULL or writable; `holders` and
/// `waiters` are NULL or point to `holders_cap` / `waiters_cap` writable
/// elements.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_inspect(
    sem: *const volt_sem,
    out: *mut volt_inspection,
    holders: *mut volt_holder,
    holders_cap: usize,
    waiters: *mut volt_queued_waiter,
    waiters_cap: usize,
) -> volt_status {
    ffi_status!("volt_sem_inspect", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        non_null(out, "out")?;
        if holders_cap > 0 && holders.is_null() {
            return invalid("`holders` is NULL and `holders_cap` is not 0");
        }
        if waiters_cap > 0 && waiters.is_null() {
            return invalid("`waiters` is NULL and `waiters_cap` is not 0");
        }
        let i: Inspection = match sem.sem.inspect() {
            Ok(i) => i,
            Err(e) => return Ok(status_of(e)),
        };
        for (k, h) in i.holders.iter().take(holders_cap).enumerate() {
            // SAFETY: `k < holders_cap` elements are writable (contract).
            unsafe { holders.add(k).write(holder(h)) };
        }
        for (k, w) in i.waiters.iter().take(waiters_cap).enumerate() {
            // SAFETY: `k < waiters_cap` elements are writable (contract).
            unsafe { waiters.add(k).write(queued_waiter(w)) };
        }
        // SAFETY: non-NULL and writable (contract).
        unsafe {
            out.write(volt_inspection {
                total: i.total,
                available: i.available,
                closed: i.closed,
                holders: i.holders.len(),
                waiters: i.waiters.len(),
            })
        };
        Ok(
            if i.holders.len() > holders_cap || i.waiters.len() > waiters_cap {
                VOLT_TRUNCATED
            } else {
                VOLT_OK
            },
        )
    })
}

fn holder(h: &Holder) -> volt_holder {
    volt_holder {
        label: c_text(&h.label),
        host: c_text(&h.host),
        pid: h.pid,
        permits: h.permits,
        held_for_ns: h.held_for.map_or(-1, nanos_i64),
        lease_remaining_ns: h.lease_remaining.map_or(-1, nanos_i64),
        token: h.token.unwrap_or(0),
    }
}

fn queued_waiter(w: &QueuedWaiter) -> volt_queued_waiter {
    volt_queued_waiter {
        label: c_text(&w.label),
        host: c_text(&w.host),
        pid: w.pid,
        permits: w.permits,
        granted: w.granted,
        waiting_for_ns: u64::try_from(w.waiting_for.as_nanos()).unwrap_or(u64::MAX),
        position: w.position,
    }
}

fn nanos_i64(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// `s` as a NUL-terminated C array, cut to `N - 1` bytes (at a UTF-8
/// character boundary) if longer.
fn c_text<const N: usize>(s: &str) -> [c_char; N] {
    let mut end = s.len().min(N - 1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(&s.as_bytes()[..end]) {
        *o = *b as c_char;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::c_text;

    #[test]
    fn c_text_cuts_and_terminates() {
        let t: [std::ffi::c_char; 4] = c_text("abcdef");
        assert_eq!(t.map(|c| c as u8), *b"abc\0");
        let t: [std::ffi::c_char; 4] = c_text("aé"); // 'é' is 2 bytes: fits
        assert_eq!(t.map(|c| c as u8), [b'a', 0xc3, 0xa9, 0]);
        let t: [std::ffi::c_char; 3] = c_text("aé"); // would cut 'é': dropped
        assert_eq!(t.map(|c| c as u8), [b'a', 0, 0]);
    }
}
