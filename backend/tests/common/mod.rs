//! What several of the seam's test binaries share.

use volt_sem_backend::{Error, Semaphore};

/// Releases `n` permits through `a` on another thread while this one
/// disconnects `a` (both let go at once): the release's result.
pub fn release_racing_disconnect(a: &Semaphore, n: usize) -> Result<(), Error> {
    let go = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        let t = scope.spawn(|| {
            go.wait();
            a.release(n)
        });
        go.wait();
        a.disconnect().unwrap();
        t.join().unwrap()
    })
}
