//! [`Handle`]: what the public handles hold (every clone of a
//! `RedisSemaphore`, its permits and its futures), as opposed to the
//! [`Inner`] that the door and agent threads reach through a `Weak`.
//!
//! Why two owners: the threads upgrade their `Weak` for each turn of their
//! loops, so the last `Arc<Inner>` may be theirs for a moment. Had the end
//! of the session hung on the `Inner`'s drop, a handle dropped in that
//! moment would have ended its session a moment later, on that thread:
//! another client counting right after the drop still saw the session and
//! what it held. The session's end hangs on the last `Handle` instead, and
//! runs on the thread that drops it.

use std::ops::Deref;
use std::sync::Arc;

use super::Inner;

/// The public handles' share of a connected [`Inner`]; the last one
/// dropped ends the session then and there.
pub(crate) struct Handle(Arc<Inner>);

impl Handle {
    pub(super) fn new(inner: Arc<Inner>) -> Arc<Handle> {
        Arc::new(Handle(inner))
    }
}

impl Deref for Handle {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}
