//! The calls that wait for another thread, made with the GIL released: a
//! Redis handle's calls that answer (they wait for its door thread, see
//! `redis.rs`) and the round trips of the calls that have no door yet
//! (connect, delete).

use pyo3::prelude::*;

use crate::Core;

/// Runs `f` on `core`, which may wait for a Redis round trip (made by the
/// handle's door thread): directly for a local or named core (they never
/// wait), else with the GIL released.
pub(crate) fn call<T: Send>(py: Python<'_>, core: &Core, f: impl FnOnce(&Core) -> T + Send) -> T {
    if core.as_redis().is_none() {
        return f(core);
    }
    py.detach(|| f(core))
}

/// A round trip on this thread, for the calls without a door (connect,
/// delete): with the GIL released, and on the main thread on a thread of its
/// own (see the module docs).
pub(crate) fn round_trip<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    if !crate::on_main_thread() {
        return py.detach(f);
    }
    py.detach(|| {
        let mut f = Some(f);
        let joined = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("volt_sem round trip".into())
                .spawn_scoped(s, || f.take().map(|f| f()))
                .ok()
                .map(|h| h.join())
        });
        match joined {
            Some(Ok(Some(v))) => v,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            // No thread could be started: run it here after all.
            Some(Ok(None)) | None => (f.take().expect("not run"))(),
        }
    })
}
