//! [`Watch`]: one watched session of a Redis semaphore (see [`crate::lease`]),
//! owned by the semaphore, and its waker, which posts the watch's number to
//! the watching environment like a grant from another thread.

use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};

use volt_sem_backend::LeaseWatch;

use crate::codes::WATCH_BIT;
use crate::remote::EnvShared;

/// One watched session of a Redis semaphore.
pub(crate) struct Watch {
    pub(crate) id: u32,
    /// The environment that watches it (two environments never share a Redis
    /// `Sem`: it is never `share()`d).
    pub(crate) env: Weak<EnvShared>,
    pub(crate) future: LeaseWatch,
    pub(crate) waker: Waker,
}

impl Watch {
    /// Watch number `id` of the environment `env` on `future`: its waker posts
    /// `WATCH_BIT | id` to that environment.
    pub(crate) fn new(id: u32, env: Weak<EnvShared>, future: LeaseWatch) -> Watch {
        let waker = Waker::from(Arc::new(WatchWake {
            env: env.clone(),
            key: WATCH_BIT | u64::from(id),
        }));
        Watch {
            id,
            env,
            future,
            waker,
        }
    }
}

/// Posts a watch's number to its environment (from the agent thread).
struct WatchWake {
    env: Weak<EnvShared>,
    key: u64,
}

impl Wake for WatchWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(env) = self.env.upgrade() {
            env.push_remote(self.key);
        }
    }
}
