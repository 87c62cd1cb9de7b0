#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(target_os = "linux")]
pub mod child;

/// A name unique to this test run (pid) and call; unlinked on drop.
pub struct Name(pub String);

impl Name {
    pub fn new(tag: &str) -> Name {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "t{}-{}-{}",
            std::process::id(),
            tag,
            N.fetch_add(1, Ordering::Relaxed)
        );
        let _ = volt_sem_shm::unlink(&name);
        Name(name)
    }

    pub fn path(&self) -> String {
        format!("/dev/shm/{}{}", volt_sem_shm::NAME_PREFIX, self.0)
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let _ = volt_sem_shm::unlink(&self.0);
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

#[track_caller]
pub fn assert_conserved(sem: &volt_sem_shm::SharedSemaphore) -> volt_sem_shm::Census {
    let c = sem.census().unwrap();
    assert!(c.conserved(), "permits not conserved: {c:?}");
    assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
    c
}

/// Yields the thread 0 to `below - 1` times, drawn from `rng` (xorshift;
/// seed it nonzero): a random short delay that lets another thread's
/// operation land before or after this one's next step.
pub fn yield_randomly(rng: &mut u64, below: u64) {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    for _ in 0..*rng % below {
        std::thread::yield_now();
    }
}
