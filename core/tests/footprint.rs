//! Sizes of the public types (issue 20: per-key locks must be small). Prints
//! them (`cargo test --test footprint -- --nocapture`) and checks the layout
//! the build asked for: unpadded by default, cache-line padded with the
//! `cache-padded` feature.

use std::mem::{align_of, size_of};
use std::sync::Arc;

use volt_sem::{Acquire, AcquireOwned, Mutex, OwnedPermit, Permit, RwLock, Semaphore, Waiter};

#[test]
fn sizes() {
    let sizes = [
        ("Semaphore", size_of::<Semaphore>(), align_of::<Semaphore>()),
        (
            "Mutex<u64>",
            size_of::<Mutex<u64>>(),
            align_of::<Mutex<u64>>(),
        ),
        (
            "RwLock<u64>",
            size_of::<RwLock<u64>>(),
            align_of::<RwLock<u64>>(),
        ),
        ("Waiter", size_of::<Waiter>(), align_of::<Waiter>()),
        (
            "Acquire<'_>",
            size_of::<Acquire<'_>>(),
            align_of::<Acquire<'_>>(),
        ),
        (
            "AcquireOwned",
            size_of::<AcquireOwned>(),
            align_of::<AcquireOwned>(),
        ),
        (
            "Permit<'_>",
            size_of::<Permit<'_>>(),
            align_of::<Permit<'_>>(),
        ),
        (
            "OwnedPermit",
            size_of::<OwnedPermit>(),
            align_of::<OwnedPermit>(),
        ),
        // Peers, for docs/benchmarks.md.
        ("tokio Semaphore", size_of::<tokio::sync::Semaphore>(), 0),
        ("tokio Mutex<u64>", size_of::<tokio::sync::Mutex<u64>>(), 0),
        (
            "tokio RwLock<u64>",
            size_of::<tokio::sync::RwLock<u64>>(),
            0,
        ),
        (
            "async-lock Semaphore",
            size_of::<async_lock::Semaphore>(),
            0,
        ),
        (
            "async-lock Mutex<u64>",
            size_of::<async_lock::Mutex<u64>>(),
            0,
        ),
    ];
    for (name, size, align) in sizes {
        println!("{name:28} {size:4} B  (align {align})");
    }
    let word = size_of::<usize>();
    if cfg!(feature = "cache-padded") {
        assert!(align_of::<Semaphore>() >= 64);
    } else {
        // The atomic word plus the queue lock (a mutex around two pointers).
        assert_eq!(align_of::<Semaphore>(), word);
        assert!(
            size_of::<Semaphore>() <= 8 * word,
            "{}",
            size_of::<Semaphore>()
        );
        assert!(size_of::<Mutex<u64>>() <= size_of::<Semaphore>() + 8);
        assert!(size_of::<RwLock<u64>>() <= size_of::<Semaphore>() + 8);
    }
    // The C ABI reserves VOLT_WAITER_SIZE (256) bytes for a waiter.
    assert!(size_of::<Waiter>() <= 256);
    let tokio_sem = tokio::sync::Semaphore::new(1);
    let tokio_acquire = tokio_sem.acquire();
    println!(
        "{:28} {:4} B",
        "tokio acquire() future",
        std::mem::size_of_val(&tokio_acquire)
    );
    drop(tokio_acquire);
    let sem = Arc::new(Semaphore::new(1));
    assert_eq!(
        std::mem::size_of_val(&sem.clone().acquire_owned(1)),
        size_of::<AcquireOwned>()
    );
}

/// The crate docs, the feature's comment in Cargo.toml and `CachePadded`'s
/// doc state the size of a `Semaphore` with and without `cache-padded` on
/// x86-64: they must state the real one.
#[test]
#[cfg(target_arch = "x86_64")]
fn the_documented_semaphore_sizes_are_the_real_ones() {
    let (padded, unpadded) = if cfg!(feature = "cache-padded") {
        (size_of::<Semaphore>(), None)
    } else {
        (256, Some(size_of::<Semaphore>()))
    };
    for (file, text) in [
        ("core/src/lib.rs", include_str!("../src/lib.rs")),
        ("core/src/semaphore.rs", include_str!("../src/semaphore.rs")),
        ("core/Cargo.toml", include_str!("../Cargo.toml")),
    ] {
        let claim = match unpadded {
            Some(unpadded) => format!("{padded} bytes instead of {unpadded}"),
            None => format!("{padded} bytes instead of"),
        };
        assert!(text.contains(&claim), "{file} does not say \"{claim}\"");
    }
}
