//! [`Stats::publish`]: a handle's stats through the [`metrics`] crate's
//! facade (the `metrics` cargo feature), so that whatever exporter the
//! program installed (Prometheus, StatsD, OpenTelemetry...) shows them.
//!
//! `Stats` are snapshots of counters the handle keeps itself, so they are
//! published as absolute values (`Counter::absolute`, `Gauge::set`), not as
//! increments: publishing twice, or from two places, never double counts.
//! The facade's histograms take one sample at a time, and a snapshot holds
//! buckets, not samples, so the wait times go out as gauges: p50, p99 and
//! max (a Prometheus *summary*'s shape) and their sum.

use crate::stats::Stats;

impl Stats {
    /// Sets these metrics for the semaphore called `semaphore` (the value of
    /// their `semaphore` label) to this snapshot: `volt_sem_grants_total`,
    /// `volt_sem_permits_granted_total`, `volt_sem_timeouts_total`,
    /// `volt_sem_cancels_total`, `volt_sem_lease_losses_total`,
    /// `volt_sem_reclaims_seen_total` (counters),
    /// `volt_sem_available_permits`, `volt_sem_held_permits`,
    /// `volt_sem_queued_requests`, `volt_sem_wait_seconds` and
    /// `volt_sem_wait_seconds_sum` (gauges),
    /// in the `metrics` recorder installed now (nothing if none is). Call it
    /// where the exporter reads (before a scrape, or on a timer).
    /// `volt_sem_wait_seconds` has a `quantile` label: `0.5`, `0.99` and `1`
    /// (the maximum).
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(2);
    /// sem.enable_stats();
    /// drop(sem.try_acquire(1).unwrap());
    /// sem.stats().publish("db"); // a no-op without an installed recorder
    /// ```
    pub fn publish(&self, semaphore: &str) {
        let label = semaphore.to_owned();
        let counters = [
            ("volt_sem_grants_total", self.grants),
            ("volt_sem_permits_granted_total", self.permits_granted),
            ("volt_sem_timeouts_total", self.timeouts),
            ("volt_sem_cancels_total", self.cancels),
            ("volt_sem_lease_losses_total", self.lease_losses),
            ("volt_sem_reclaims_seen_total", self.reclaims_seen),
        ];
        for (name, value) in counters {
            metrics::counter!(name, "semaphore" => label.clone()).absolute(value);
        }
        let gauges = [
            ("volt_sem_available_permits", self.available),
            ("volt_sem_held_permits", self.held),
            ("volt_sem_queued_requests", self.queued),
        ];
        for (name, value) in gauges {
            metrics::gauge!(name, "semaphore" => label.clone()).set(value as f64);
        }
        let waits = [
            ("0.5", self.wait.p50()),
            ("0.99", self.wait.p99()),
            ("1", self.wait.max()),
        ];
        for (quantile, value) in waits {
            metrics::gauge!("volt_sem_wait_seconds", "semaphore" => label.clone(), "quantile" => quantile)
                .set(value.as_secs_f64());
        }
        metrics::gauge!("volt_sem_wait_seconds_sum", "semaphore" => label)
            .set(self.wait.sum().as_secs_f64());
    }

    /// Registers a description and unit for each metric
    /// [`publish`](Self::publish) sets with the installed recorder (exporters show them as
    /// `# HELP` lines). Once, after installing the recorder.
    pub fn describe_metrics() {
        use metrics::Unit::{Count, Seconds};
        // (name, is a counter, unit, help)
        let described = [
            (
                "volt_sem_grants_total",
                true,
                Count,
                "Requests granted through this handle.",
            ),
            (
                "volt_sem_permits_granted_total",
                true,
                Count,
                "Permits those grants carried.",
            ),
            (
                "volt_sem_timeouts_total",
                true,
                Count,
                "Requests that gave up at their timeout.",
            ),
            (
                "volt_sem_cancels_total",
                true,
                Count,
                "Queued requests that left without their permits (timeouts included).",
            ),
            (
                "volt_sem_lease_losses_total",
                true,
                Count,
                "Redis leases this handle lost.",
            ),
            (
                "volt_sem_reclaims_seen_total",
                true,
                Count,
                "Crashed holders this handle reclaimed.",
            ),
            (
                "volt_sem_available_permits",
                false,
                Count,
                "Permits available now.",
            ),
            (
                "volt_sem_held_permits",
                false,
                Count,
                "Permits held through this handle now.",
            ),
            (
                "volt_sem_queued_requests",
                false,
                Count,
                "This handle's requests waiting now.",
            ),
            (
                "volt_sem_wait_seconds",
                false,
                Seconds,
                "How long granted requests waited (quantile 1 is the maximum).",
            ),
            (
                "volt_sem_wait_seconds_sum",
                false,
                Seconds,
                "The total time granted requests waited.",
            ),
        ];
        for (name, counter, unit, help) in described {
            if counter {
                metrics::describe_counter!(name, unit, help);
            } else {
                metrics::describe_gauge!(name, unit, help);
            }
        }
    }
}
