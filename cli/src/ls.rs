//! `volt-sem ls`: every semaphore of this machine (or of a Redis server,
//! under a prefix) with its counts, one inspection each.

use serde_json::{json, Value};
use volt_sem::inspect::Inspection;

use crate::args::Redis;
use crate::error::CliError;
use crate::render::table;
use crate::target::{attach_raw, detach, redis_text, shm_text, LOCK_WAIT};

/// The listing, as text or JSON.
pub fn run(redis: Option<&Redis>, json: bool) -> Result<String, CliError> {
    // Errors without the name: it is in the row already.
    let rows: Vec<(String, Result<Inspection, String>)> = match redis {
        None => volt_sem_shm::list()
            .map_err(|e| CliError::Failed(format!("cannot list /dev/shm: {e}")))?
            .into_iter()
            .filter_map(|name| {
                // Every wait for the lock bounded, the detach included (a
                // process stopped inside one semaphore's lock must not
                // hang the listing).
                let seen = match attach_raw(&name).and_then(|sem| {
                    let seen = sem.inspect_timeout(LOCK_WAIT);
                    detach(sem);
                    seen
                }) {
                    Ok(seen) => Ok(seen),
                    // Listed, then not found: either unlinked since (gone
                    // from the listing, which is a snapshot), or a file
                    // whose segment is not initialised.
                    Err(volt_sem_shm::Error::NotFound) => {
                        let path = format!("/dev/shm/{}{name}", volt_sem_shm::NAME_PREFIX);
                        if !std::path::Path::new(&path).exists() {
                            return None;
                        }
                        Err(
                            "not initialised (being created, or its creator died first; \
                             the next open with a total initialises it)"
                                .to_owned(),
                        )
                    }
                    Err(e) => Err(shm_text(&name, e)),
                };
                Some((name, seen))
            })
            .collect(),
        Some(r) => {
            let options = r.options();
            volt_sem_redis::list(&r.url, options.clone())
                .map_err(|e| CliError::Failed(format!("cannot list: {}", redis_text(r, e))))?
                .into_iter()
                .filter_map(|name| {
                    let seen = match volt_sem_redis::inspect(&r.url, &name, options.clone()) {
                        Ok(seen) => Ok(seen),
                        // Listed, then not found: deleted since (the
                        // listing is a snapshot), left out as a named one
                        // unlinked meanwhile is. A Redis semaphore has no
                        // half-created state (`connect` writes it in one
                        // script), so there is nothing else to tell.
                        Err(volt_sem_redis::Error::NotFound) => return None,
                        Err(e) => Err(redis_text(r, e)),
                    };
                    Some((name, seen))
                })
                .collect()
        }
    };
    if json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(name, seen)| match seen {
                Ok(i) => json!({
                    "name": name,
                    "total": i.total,
                    "available": i.available,
                    "closed": i.closed,
                    "holders": i.holders.len(),
                    "waiters": i.waiters.len(),
                }),
                Err(e) => json!({ "name": name, "error": e }),
            })
            .collect();
        return Ok(format!("{}\n", Value::Array(list)));
    }
    if rows.is_empty() {
        return Ok("no semaphores\n".into());
    }
    let any_error = rows.iter().any(|(_, r)| r.is_err());
    let mut head = vec!["NAME", "TOTAL", "AVAILABLE", "HOLDERS", "WAITERS"];
    if any_error {
        head.push("ERROR");
    }
    let lines = rows.iter().map(|(name, seen)| match seen {
        Ok(i) => vec![
            name.clone(),
            i.total.to_string(),
            format!("{}{}", i.available, if i.closed { " (closed)" } else { "" }),
            i.holders.len().to_string(),
            i.waiters.len().to_string(),
        ],
        Err(e) => {
            let mut r = vec![name.clone()];
            r.extend(["-", "-", "-", "-"].map(String::from));
            r.push(e.clone());
            r
        }
    });
    Ok(table(&head, lines))
}
