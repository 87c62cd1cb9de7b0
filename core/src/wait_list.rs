//! The FIFO queue of waiters: an intrusive doubly-linked list whose links live
//! inside the waiters themselves, so queueing never allocates.
//!
//! Waiters enter at the tail and are served from the head. Every method requires
//! the semaphore's queue lock, which is expressed by the list being reachable
//! only through that lock's guard.

use core::ptr::NonNull;

use crate::waiter::{Links, Waiter};

pub(crate) struct WaitList {
    head: Option<NonNull<Waiter>>,
    tail: Option<NonNull<Waiter>>,
    /// The `fork` generation of the process that queued the current waiters
    /// (see `crate::fork`).
    generation: usize,
}

// SAFETY: the list is only reachable through the semaphore's `Mutex<WaitList>`;
// the waiters it points to are `Sync` and kept alive by the enqueue contract.
unsafe impl Send for WaitList {}

impl WaitList {
    pub(crate) const fn new() -> Self {
        WaitList {
            head: None,
            tail: None,
            generation: 0,
        }
    }

    /// Calls `f` on each waiter, head first.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Waiter)) {
        let mut cur = self.head;
        while let Some(w) = cur {
            // SAFETY: every linked waiter is valid (push_back contract), and its
            // links are guarded by the lock that owns `self`.
            let w = unsafe { w.as_ref() };
            f(w);
            // SAFETY: as above.
            cur = unsafe { w.links.with(|l| (*l).next) };
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    pub(crate) fn front(&self) -> Option<NonNull<Waiter>> {
        self.head
    }

    /// Whether the waiters were queued by the parent of this forked process.
    pub(crate) fn queued_before_fork(&self) -> bool {
        self.head.is_some() && self.generation != crate::fork::generation()
    }

    /// Records that the waiters are queued in this process (after a purge, or
    /// for a list that was empty).
    pub(crate) fn stamp_generation(&mut self) {
        self.generation = crate::fork::generation();
    }

    /// Links `waiter` at the tail.
    ///
    /// # Safety
    /// `waiter` is not in any list, stays valid and does not move until it is
    /// unlinked, and the caller holds the lock guarding this list.
    pub(crate) unsafe fn push_back(&mut self, waiter: NonNull<Waiter>) {
        // SAFETY: the caller guarantees `waiter` is valid; its links are guarded by
        // the lock the caller holds.
        unsafe {
            waiter.as_ref().links.with_mut(|links| {
                *links = Links {
                    prev: self.tail,
                    next: None,
                };
            });
            match self.tail {
                Some(tail) => tail.as_ref().links.with_mut(|l| (*l).next = Some(waiter)),
                None => self.head = Some(waiter),
            }
        }
        self.tail = Some(waiter);
    }

    /// Unlinks and returns the head.
    pub(crate) fn pop_front(&mut self) -> Option<NonNull<Waiter>> {
        let head = self.head?;
        // SAFETY: every linked waiter is valid (push_back contract), and its links
        // are guarded by the lock that owns `self`.
        unsafe { self.remove(head) };
        Some(head)
    }

    /// Unlinks `waiter`.
    ///
    /// # Safety
    /// `waiter` is linked in *this* list, and the caller holds its lock.
    pub(crate) unsafe fn remove(&mut self, waiter: NonNull<Waiter>) {
        // SAFETY: `waiter` and its neighbours are linked here, hence valid; their
        // links are guarded by the lock the caller holds.
        unsafe {
            let Links { prev, next } = waiter.as_ref().links.with(|l| *l);
            match prev {
                Some(prev) => prev.as_ref().links.with_mut(|l| (*l).next = next),
                None => {
                    debug_assert_eq!(self.head, Some(waiter));
                    self.head = next;
                }
            }
            match next {
                Some(next) => next.as_ref().links.with_mut(|l| (*l).prev = prev),
                None => {
                    debug_assert_eq!(self.tail, Some(waiter));
                    self.tail = prev;
                }
            }
            waiter.as_ref().links.with_mut(|l| {
                *l = Links {
                    prev: None,
                    next: None,
                }
            });
        }
    }
}

#[cfg(all(test, not(volt_loom)))]
mod tests {
    use super::*;
    use core::pin::pin;

    fn ptr(w: &Waiter) -> NonNull<Waiter> {
        NonNull::from(w)
    }

    #[test]
    fn fifo_and_removal_from_every_position() {
        let a = pin!(Waiter::new());
        let b = pin!(Waiter::new());
        let c = pin!(Waiter::new());
        let mut list = WaitList::new();
        assert!(list.is_empty());
        // SAFETY: the pinned waiters outlive the list and are linked once each.
        unsafe {
            list.push_back(ptr(&a));
            list.push_back(ptr(&b));
            list.push_back(ptr(&c));
            list.remove(ptr(&b)); // middle
        }
        assert_eq!(list.pop_front(), Some(ptr(&a)));
        // SAFETY: as above.
        unsafe {
            list.push_back(ptr(&a));
            list.remove(ptr(&a)); // tail
            list.push_back(ptr(&b));
            list.remove(ptr(&c)); // head
        }
        assert_eq!(list.pop_front(), Some(ptr(&b)));
        assert_eq!(list.pop_front(), None);
        assert!(list.is_empty());
    }
}
