//! How long a timed acquire whose deadline passed before its first answer
//! (the acquire script's) still waits for that answer: its *grace*, counted
//! from the moment the script was sent.
//!
//! Two promises pull apart here. Permits free at the call are granted
//! whatever the timeout (1 ns included), as on the other backends, which try
//! before they wait: so the first answer must be waited for past a deadline
//! shorter than a round trip. And a timed acquire returns soon after its
//! timeout even on a server that stopped answering: so that wait must not
//! last the command timeout (5 s by default). The grace is the bound that
//! keeps both: a healthy server answers within it, a silent one is given up
//! at its end (the request is then cancelled as any timed-out one: a grant
//! that comes later is given back by the door).
//!
//! Its size: the larger of
//! * [`FLOOR`], 250 ms: a round trip to a local or same-datacenter Redis
//!   takes well under a millisecond, and stays far below 250 ms when the
//!   client's machine is saturated (measured on a 2-core VM with two busy
//!   loops: a timed acquire with a 1 µs timeout and the permit free was
//!   granted within 3.8 ms, request, answer and wake-ups included); 250 ms
//!   leaves a wide margin for scheduling delays and a busy server, while a
//!   caller on a stopped server is held at most a quarter of a second past
//!   a timeout shorter than that;
//! * [`MULTIPLE`] times the median of the last [`WINDOW`] round trips this
//!   session's scripts took: a far-away Redis (100 ms away, say) gets a
//!   grace of several of its round trips, so that its answers still count.
//!   The median, not the slowest: a server that stalled (stopped, a slow
//!   fork) answers the round trip under way once it runs again, a sample as
//!   long as the stall; the slowest would make the next stall hold callers
//!   four times as long as the last one (measured: a 300 ms timeout then
//!   returned after 1.0 s instead of 0.3 s). Distance shows in every round
//!   trip, a stall in one;
//!
//! and never more than the command timeout, which ends the round trip
//! anyway (a failed call, not an answer).

use std::sync::Mutex;
use std::time::Duration;

/// The grace's least value (see the module's text).
pub(crate) const FLOOR: Duration = Duration::from_millis(250);
/// The grace is at least this many times the slowest recent round trip.
pub(crate) const MULTIPLE: u32 = 4;
/// How many of the latest round trips count as recent.
pub(crate) const WINDOW: usize = 8;

/// The last [`WINDOW`] round trips of a session's scripts (answered ones
/// only: a call that failed or timed out measures nothing).
pub(crate) struct RoundTrips {
    last: Mutex<Window>,
}

struct Window {
    ring: [Duration; WINDOW],
    /// How many of `ring` are samples (at most `WINDOW`).
    len: usize,
    /// Where the next sample goes.
    next: usize,
}

impl RoundTrips {
    pub(crate) fn new() -> Self {
        RoundTrips {
            last: Mutex::new(Window {
                ring: [Duration::ZERO; WINDOW],
                len: 0,
                next: 0,
            }),
        }
    }

    /// Records an answered round trip that took `d`.
    pub(crate) fn note(&self, d: Duration) {
        let mut w = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let i = w.next;
        w.ring[i] = d;
        w.next = (i + 1) % WINDOW;
        w.len = (w.len + 1).min(WINDOW);
    }

    /// The median of the recent round trips (the upper one of an even
    /// count; zero before any).
    pub(crate) fn median(&self) -> Duration {
        let w = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = w.ring;
        let s = &mut s[..w.len];
        s.sort_unstable();
        s.get(s.len() / 2).copied().unwrap_or(Duration::ZERO)
    }

    /// The grace of a first answer under `command_timeout`.
    pub(crate) fn grace(&self, command_timeout: Duration) -> Duration {
        grace(self.median(), command_timeout)
    }
}

/// The grace for a session whose typical (median) round trip took `typical`.
pub(crate) fn grace(typical: Duration, command_timeout: Duration) -> Duration {
    FLOOR
        .max(typical.saturating_mul(MULTIPLE))
        .min(command_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_a_multiple_of_the_median_and_the_command_timeout_cap() {
        let ms = Duration::from_millis;
        let five_s = Duration::from_secs(5);
        assert_eq!(grace(Duration::ZERO, five_s), FLOOR);
        assert_eq!(grace(ms(1), five_s), FLOOR);
        assert_eq!(grace(ms(100), five_s), ms(400));
        assert_eq!(grace(ms(3000), five_s), five_s);
        assert_eq!(grace(ms(1), ms(100)), ms(100));
        let r = RoundTrips::new();
        assert_eq!(r.grace(five_s), FLOOR);
        // A far-away Redis: every round trip 200 ms.
        r.note(ms(200));
        assert_eq!(r.grace(five_s), ms(800));
        // A stall among quick round trips does not count...
        let r = RoundTrips::new();
        r.note(ms(2000));
        for _ in 0..WINDOW - 1 {
            r.note(ms(1));
        }
        assert_eq!(r.grace(five_s), FLOOR);
        // ...while round trips that stay slow do, and leave the window.
        for _ in 0..WINDOW / 2 + 1 {
            r.note(ms(150));
        }
        assert_eq!(r.grace(five_s), ms(600));
        for _ in 0..WINDOW {
            r.note(ms(1));
        }
        assert_eq!(r.grace(five_s), FLOOR);
    }
}
