//! Ported from a `tokio::sync::Mutex<HashMap>` program: a cache shared by many
//! tasks. The map's lock is held only to look up or insert a per-key entry;
//! each entry has its own `Mutex<Option<V>>`, locked *across* the slow load
//! (an `.await`), so concurrent requests for one key wait for the first load
//! instead of repeating it, while other keys proceed. The per-key guard is an
//! `OwnedMutexGuard`, which moves into a spawned task (the loader).
//!
//! Checks that every key was loaded exactly once and every reader saw its
//! value. `cargo run -p volt-sem --example cache`

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use volt_sem::{MappedMutexGuard, Mutex, MutexGuard, OwnedMutexGuard};

type Entry = Arc<Mutex<Option<String>>>;

#[derive(Default)]
struct Cache {
    entries: Mutex<HashMap<u32, Entry>>,
    loads: AtomicUsize,
}

impl Cache {
    async fn get(self: &Arc<Self>, key: u32) -> String {
        let entry = {
            let mut map = self.entries.lock().await;
            map.entry(key).or_default().clone()
        }; // map unlocked: other keys are not held up by this load
        let slot: OwnedMutexGuard<Option<String>> = entry.lock_owned().await;
        if let Some(v) = slot.as_ref() {
            return v.clone();
        }
        // Load in a separate task; the locked slot travels with it, so every
        // other reader of this key waits for the value instead of loading it.
        let this = self.clone();
        tokio::spawn(async move {
            let mut slot = slot;
            tokio::time::sleep(Duration::from_millis(2)).await; // the slow source
            this.loads.fetch_add(1, SeqCst);
            let v = format!("value-{key}");
            *slot = Some(v.clone());
            v
        })
        .await
        .unwrap()
    }

    /// The entry of `key`, if any, with the map locked: a guard narrowed to one
    /// value of the map (`MutexGuard::try_map`).
    fn peek_blocking(&self, key: u32) -> Option<MappedMutexGuard<'_, Entry>> {
        MutexGuard::try_map(self.entries.lock_blocking(), |m| m.get_mut(&key)).ok()
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let cache = Arc::new(Cache::default());
    let keys = 16u32;
    let readers = 200u32;
    rt.block_on(async {
        let tasks: Vec<_> = (0..readers)
            .map(|i| {
                let cache = cache.clone();
                tokio::spawn(async move {
                    let key = i % keys;
                    assert_eq!(cache.get(key).await, format!("value-{key}"));
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(
        cache.loads.load(SeqCst),
        keys as usize,
        "each key loaded once"
    );
    for key in 0..keys {
        let entry = cache.peek_blocking(key).expect("every key is cached");
        assert_eq!(*entry.try_lock().unwrap(), Some(format!("value-{key}")));
    }
    assert!(cache.peek_blocking(keys).is_none());
    println!(
        "cache: {readers} reads of {keys} keys, {} loads; a per-key Mutex<Option<String>> is {} bytes",
        cache.loads.load(SeqCst),
        std::mem::size_of::<Mutex<Option<String>>>()
    );
}
