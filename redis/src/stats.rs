//! `RedisSemaphore::stats` (issue 29). INTERIM: nothing recorded yet (a
//! helper's branch replaces this file).

use volt_sem::stats::{Gauges, Stats};

use crate::RedisSemaphore;

impl RedisSemaphore {
    /// Starts recording this handle's [`stats`](Self::stats).
    pub fn enable_stats(&self) {}

    /// This handle's metrics.
    pub fn stats(&self) -> Stats {
        Gauges::default().without_counters()
    }

    /// Records that one of this handle's requests timed out.
    pub fn record_timeout(&self) {}
}
