//! `resize` and `reopen`: the two commands that change a semaphore.
//!
//! A named one is attached to without its total, as `inspect` does. A Redis
//! one must exist: a session-less `inspect` reads its total (and says "no
//! such semaphore" for a typo), then the change goes through a connected
//! handle with a session of its own, ended before the command returns. The
//! connect requires the semaphore to exist (`attach_only`, checked in its
//! script): one deleted since the look is not created again.

use volt_sem_redis::RedisSemaphore;

use crate::error::CliError;
use crate::target::{attach, detach, redis_error, shm_error, Target, LOCK_WAIT};

/// What to change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// `set_total(n)`.
    Resize(usize),
    /// `reopen()`.
    Reopen,
}

/// Applies `change` to `target`; returns the line to print.
pub fn run(target: &Target, change: Change) -> Result<String, CliError> {
    match target {
        Target::Named(name) => {
            let sem = attach(name)?;
            let before = sem.total_permits();
            // Both bounded, as every lock wait of a command (`LOCK_WAIT`).
            let result = match change {
                Change::Resize(n) => sem.set_total_timeout(n, LOCK_WAIT),
                Change::Reopen => sem.reopen_timeout(LOCK_WAIT),
            };
            detach(sem);
            result.map_err(|e| shm_error(name, e))?;
            Ok(done(name, change, before))
        }
        Target::Redis { redis, name } => {
            let url = &redis.url;
            let options = redis.options();
            let seen = volt_sem_redis::inspect(url, name, options.clone())
                .map_err(|e| redis_error(redis, name, e))?;
            let (total, options) = match change {
                // `resize` mode: connecting with the new total sets it.
                Change::Resize(n) => (n, options.resize(true)),
                Change::Reopen => (seen.total, options),
            };
            let options = options.own_session(true).attach_only();
            let sem = match RedisSemaphore::connect(url, name, total, options.clone()) {
                // `reopen`: resized by another client since the look. The
                // mismatch names the total now; connecting with it again
                // once is enough unless the total keeps moving (then the
                // error says so). The crate offers no connect without a
                // total (its "adopt" mode is for a session's re-register
                // only), and `resize` mode would undo the other's change.
                Err(volt_sem_redis::Error::TotalMismatch { existing })
                    if change == Change::Reopen =>
                {
                    RedisSemaphore::connect(url, name, existing as usize, options)
                }
                r => r,
            }
            .map_err(|e| redis_error(redis, name, e))?;
            let result = match change {
                Change::Resize(_) => Ok(()),
                Change::Reopen => sem.reopen(),
            };
            sem.disconnect();
            result.map_err(|e| redis_error(redis, name, e))?;
            Ok(done(name, change, seen.total))
        }
    }
}

fn done(name: &str, change: Change, before: usize) -> String {
    let name = crate::render::printable(name);
    match change {
        Change::Resize(n) => format!("{name}: total {before} -> {n}\n"),
        Change::Reopen => format!("{name}: reopened\n"),
    }
}
