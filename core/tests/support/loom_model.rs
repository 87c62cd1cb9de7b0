//! The loom model runner shared by the loom test files: explores every
//! interleaving up to `LOOM_MAX_PREEMPTIONS` (2 if unset) and reports how many
//! it took and how long, for `docs/testing.md` (`--nocapture` shows it).

pub fn model(f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Arc;
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    // A plain std counter: loom does not track it, it only counts executions.
    let iterations = Arc::new(AtomicUsize::new(0));
    let counter = iterations.clone();
    let start = std::time::Instant::now();
    builder.check(move || {
        counter.fetch_add(1, Relaxed);
        f()
    });
    let name = std::thread::current().name().unwrap_or("?").to_owned();
    eprintln!(
        "loom-model {name}: {} iterations, {:.2} s",
        iterations.load(Relaxed),
        start.elapsed().as_secs_f64()
    );
}
