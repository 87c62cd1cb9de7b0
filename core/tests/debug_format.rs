//! What `{:?}` shows: the semaphore's state word decoded (available, queued,
//! closed), and the state of waiters, futures, locks and guards. Users log
//! these when debugging a stall, so they must be right (mutation testing found
//! every `Debug` impl unchecked).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};

use volt_sem::{Mutex, RwLock, Semaphore, Waiter};

#[test]
fn semaphore_debug_decodes_the_state_word() {
    let sem = Semaphore::new(3);
    assert_eq!(
        format!("{sem:?}"),
        "Semaphore { available: 3, queued: false, closed: false }"
    );
    let mut fut = pin!(sem.acquire(5));
    assert!(fut
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    assert_eq!(
        format!("{sem:?}"),
        "Semaphore { available: 0, queued: true, closed: false }"
    );
    sem.close();
    assert_eq!(
        format!("{sem:?}"),
        "Semaphore { available: 3, queued: false, closed: true }"
    );
}

#[test]
fn cancelling_the_only_waiter_clears_queued() {
    let sem = Semaphore::new(0);
    {
        let mut fut = pin!(sem.acquire(1));
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending());
        assert!(format!("{sem:?}").contains("queued: true"));
    } // dropped: cancelled, nothing granted
    assert_eq!(
        format!("{sem:?}"),
        "Semaphore { available: 0, queued: false, closed: false }"
    );
}

#[test]
fn acquire_and_waiter_debug_show_their_request() {
    let sem = Semaphore::new(0);
    let fut = sem.acquire(2);
    let shown = format!("{fut:?}");
    assert!(
        shown.starts_with("Acquire") && shown.contains("2"),
        "{shown}"
    );
    let w = Waiter::new();
    let shown = format!("{w:?}");
    assert!(
        shown.starts_with("Waiter") && shown.contains("Idle"),
        "{shown}"
    );
}

#[test]
fn lock_and_guard_debug_show_the_value() {
    let m = Mutex::new(41u32);
    assert!(format!("{m:?}").starts_with("Mutex"), "{m:?}");
    let g = m.try_lock().unwrap();
    assert!(format!("{g:?}").contains("41"), "{g:?}");
    drop(g);
    let l = RwLock::new(7u32);
    assert!(format!("{l:?}").starts_with("RwLock"), "{l:?}");
    let r = l.try_read().unwrap();
    assert!(format!("{r:?}").contains('7'), "{r:?}");
}

#[test]
fn guards_display_their_value() {
    let m = Mutex::new(41u32);
    let g = m.try_lock().unwrap();
    assert_eq!(format!("{g}"), "41");
    let mapped = volt_sem::MutexGuard::map(g, |v| v);
    assert_eq!(format!("{mapped}"), "41");
    assert_eq!(format!("{mapped:?}"), "41");
}

/// The permit guards show their count, as the shared-memory and Redis
/// permits do (not the whole semaphore).
#[test]
fn permit_debug_shows_the_count() {
    let sem = std::sync::Arc::new(Semaphore::new(3));
    let permit = sem.try_acquire(2).unwrap();
    assert_eq!(format!("{permit:?}"), "Permit { permits: 2, .. }");
    let owned = sem.clone().try_acquire_owned(1).unwrap();
    assert_eq!(format!("{owned:?}"), "OwnedPermit { permits: 1, .. }");
}
