//! Which semaphore a command looks at, and how it looks: a named one is
//! attached to without its total and never created
//! (`SharedSemaphore::attach`); a Redis one is inspected without a session
//! (`volt_sem_redis::inspect`: one connection and one script per look).

use volt_sem::inspect::Inspection;
use volt_sem_redis::ConnectOptions;
use volt_sem_shm::{OpenOptions, SharedSemaphore};

use crate::args::Redis;
use crate::error::CliError;

/// A semaphore named on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A named semaphore of this machine (`/dev/shm/volt-sem.<name>`).
    Named(String),
    /// A semaphore stored in Redis.
    Redis { redis: Redis, name: String },
}

/// A target ready to be inspected again and again.
pub enum Source {
    Named(SharedSemaphore, String),
    Redis {
        redis: Redis,
        name: String,
        // Boxed: the options are large, and a `Source` is moved around.
        options: Box<ConnectOptions>,
    },
}

impl Redis {
    /// The options of `--prefix`, `--cluster` and the TLS files.
    pub fn options(&self) -> ConnectOptions {
        let mut options = ConnectOptions::new().cluster(self.cluster);
        if let Some(p) = &self.prefix {
            options = options.prefix(p);
        }
        if let Some(ca) = &self.tls_ca {
            options = options.tls_ca_file(ca);
        }
        if let Some((cert, key)) = &self.tls_cert {
            options = options.tls_client_cert(cert, key);
        }
        options
    }
}

impl Target {
    /// Attaches to a named semaphore (the Redis ones need nothing kept).
    pub fn open(&self) -> Result<Source, CliError> {
        Ok(match self {
            Target::Named(name) => Source::Named(attach(name)?, name.clone()),
            Target::Redis { redis, name } => Source::Redis {
                redis: redis.clone(),
                name: name.clone(),
                options: Box::new(redis.options()),
            },
        })
    }

    /// Removes a named semaphore's name (`volt_sem_shm::unlink`), or
    /// deletes a Redis semaphore (`volt_sem_redis::delete`: refused while a
    /// client is connected to it).
    pub fn unlink(&self) -> Result<(), CliError> {
        match self {
            Target::Named(name) => volt_sem_shm::unlink(name).map_err(|e| shm_error(name, e)),
            Target::Redis { redis, name } => {
                volt_sem_redis::delete(&redis.url, name, redis.options())
                    .map_err(|e| redis_error(redis, name, e))
            }
        }
    }

    /// How the header of a table names it.
    pub fn describe(&self) -> String {
        match self {
            Target::Named(name) => format!("{name} (named, this machine)"),
            Target::Redis { redis, name } => format!(
                "{name} (Redis, prefix {})",
                redis.prefix.as_deref().unwrap_or("volt-sem")
            ),
        }
    }
}

/// How long a command waits for a named semaphore's lock (a look, a
/// change): the bound of `attach` (5 s). No command waits without a bound:
/// a process stopped inside the lock must not hang it (see `shm_text`).
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a command waits, at its end, for a named semaphore's handle to
/// detach (see [`detach`]).
pub const DETACH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Attaches to the named semaphore `name` (see the module docs).
pub fn attach(name: &str) -> Result<SharedSemaphore, CliError> {
    attach_raw(name).map_err(|e| shm_error(name, e))
}

/// [`attach`], with the crate's error.
pub fn attach_raw(name: &str) -> Result<SharedSemaphore, volt_sem_shm::Error> {
    let sem = SharedSemaphore::attach(name, attach_options())?;
    stop_after_attach_for_tests();
    Ok(sem)
}

/// **Tests only**: with `VOLT_SEM_CLI_TEST_STOP_AFTER_ATTACH=1` in its
/// environment, the command stops itself (`SIGSTOP`) once attached, so
/// that a test can stop another process inside the segment's lock before
/// the command takes it again (the window is otherwise microseconds wide).
/// Compiled in, as the shared-memory crate's own hooks are, so that the
/// tests run the binary that ships; a user who sets it gets a stopped
/// command that `kill -CONT` resumes.
fn stop_after_attach_for_tests() {
    #[cfg(unix)]
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    #[cfg(unix)]
    if std::env::var_os("VOLT_SEM_CLI_TEST_STOP_AFTER_ATTACH").is_some_and(|v| v == "1")
        && !DONE.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        // SAFETY: raise has no memory preconditions.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    }
}

/// Drops a named semaphore's handle, waiting at most [`DETACH_WAIT`] for it.
///
/// The drop detaches this process's record, under the segment's lock and
/// without a bound (the crate's `Drop` cannot fail or report a timeout). A
/// process stopped inside the lock would hang the command there, after its
/// work was done or its bounded wait had already failed. So the drop runs
/// on a thread of its own; beyond the bound (the detach takes microseconds
/// otherwise) the command goes on and exits, leaving the detach to the
/// process's exit: the kernel releases the record's liveness lock with the
/// process's files, and the next sweep of any process reclaims the record
/// as a dead process's (it holds no permits and no queued request: no
/// command acquires). A bounded detach in the crate would need its `Drop`
/// (shared by every handle of the process, and by its lane caches) to know
/// a deadline and a way to report missing it, for the sake of a process
/// that is about to exit anyway.
pub fn detach(sem: SharedSemaphore) {
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("volt-sem-detach".into())
        .spawn(move || {
            drop(sem);
            let _ = done.send(());
        });
    // No thread (out of resources): the failed spawn dropped the closure,
    // and the handle with it, detached without a bound as before.
    if spawned.is_ok() {
        let _ = finished.recv_timeout(DETACH_WAIT);
    }
}

/// How the command line attaches: whatever user owns the segment, as far
/// as the file's mode lets this process open it. A program that *uses* a
/// semaphore refuses another user's by default (that user could fake its
/// permits); this one looks at it, for whoever may read it (a service's
/// semaphore looked at by root, one shared with a group on purpose), and
/// what a writer could do to it is bounded (typed errors, Ctrl-C ends a
/// `watch` whatever a refresh waits for).
pub fn attach_options() -> OpenOptions {
    OpenOptions::new().accept_foreign_owner(true)
}

pub fn shm_error(name: &str, e: volt_sem_shm::Error) -> CliError {
    match e {
        volt_sem_shm::Error::NotFound => CliError::Failed(format!("no such semaphore: {name}")),
        e => CliError::Failed(format!("{name}: {}", shm_text(name, e))),
    }
}

/// The text of a named semaphore's error, in the command line's terms.
pub fn shm_text(name: &str, e: volt_sem_shm::Error) -> String {
    match e {
        volt_sem_shm::Error::PermissionDenied => permission_text(name),
        // No command waits for permits: what timed out is the wait for the
        // segment's lock (`attach`'s bound, and `LOCK_WAIT`), which a process holds for
        // microseconds unless it is stopped (SIGSTOP, a debugger) or stuck
        // inside an operation. The crate's text, "timed out waiting for
        // permits", would send the user looking at the wrong thing.
        volt_sem_shm::Error::TimedOut => "timed out waiting for the semaphore's lock \
            (a process is stopped or stuck inside an operation on it)"
            .into(),
        e => e.to_string(),
    }
}

/// "permission denied", with the file's owner and mode, so that the user
/// knows whom to ask (or to run as).
pub fn permission_text(name: &str) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let path = format!("/dev/shm/{}{name}", volt_sem_shm::NAME_PREFIX);
        if let Ok(m) = std::fs::metadata(&path) {
            return format!(
                "permission denied ({path}: owner uid {}, mode {:o})",
                m.uid(),
                m.mode() & 0o777
            );
        }
    }
    let _ = name;
    "permission denied".into()
}

pub fn redis_error(redis: &Redis, name: &str, e: volt_sem_redis::Error) -> CliError {
    match e {
        volt_sem_redis::Error::NotFound => {
            CliError::Failed(format!("no such semaphore: {name} (in Redis)"))
        }
        e => CliError::Failed(format!("{name}: {}", redis_text(redis, e))),
    }
}

/// The text of a Redis error (the crate never puts a password in it). A
/// refusal of a URL without credentials (none in it, none from
/// `VOLT_SEM_REDIS_PASSWORD`, which the URL has by now) says what is
/// missing: the crate's "refused the credentials" would be about
/// credentials never given. A server certificate of an unknown issuer,
/// without `--tls-ca`, says that option's name.
pub fn redis_text(redis: &Redis, e: volt_sem_redis::Error) -> String {
    match e {
        volt_sem_redis::Error::Auth if !has_credentials(&redis.url) => {
            "Redis needs a password: set VOLT_SEM_REDIS_PASSWORD \
             (or give it in the URL, redis://:PASSWORD@HOST:PORT)"
                .into()
        }
        volt_sem_redis::Error::Tls(why)
            if redis.tls_ca.is_none() && why.contains("UnknownIssuer") =>
        {
            format!(
                "{} (a server certificate of a private CA needs --tls-ca FILE)",
                volt_sem_redis::Error::Tls(why)
            )
        }
        e => e.to_string(),
    }
}

/// Whether a Redis URL (or one of a cluster's comma-separated seed URLs)
/// has a `user:password@` part, or a `pass=` query (the Unix socket form).
fn has_credentials(url: &str) -> bool {
    url.split(',').any(|u| {
        u.contains("pass=")
            || u.split_once("://")
                .is_some_and(|(_, rest)| rest.split('/').next().unwrap_or("").contains('@'))
    })
}

impl Source {
    /// For a look that goes on (`watch`): fails once a named semaphore's
    /// name was removed since it was attached to, as a Redis semaphore's
    /// look fails once it was deleted. The attachment would otherwise go on
    /// showing the orphan, alive only through the processes still attached,
    /// while the name may already be another semaphore's.
    pub fn still_named(&self) -> Result<(), CliError> {
        match self {
            Source::Named(sem, name) => match sem.is_unlinked() {
                Ok(false) => Ok(()),
                Ok(true) => Err(CliError::Failed(format!(
                    "{name}: unlinked while watched (no such semaphore now)"
                ))),
                Err(e) => Err(shm_error(name, e)),
            },
            Source::Redis { .. } => Ok(()),
        }
    }

    /// Ends the look: a named semaphore's handle detached with a bound
    /// ([`detach`]).
    pub fn close(self) {
        if let Source::Named(sem, _) = self {
            detach(sem);
        }
    }

    /// One snapshot.
    pub fn inspect(&self) -> Result<Inspection, CliError> {
        match self {
            // Bounded as `attach` is: a process stopped inside the lock
            // must not freeze a `watch` (see `shm_text`).
            Source::Named(sem, name) => sem
                .inspect_timeout(LOCK_WAIT)
                .map_err(|e| shm_error(name, e)),
            Source::Redis {
                redis,
                name,
                options,
            } => volt_sem_redis::inspect(&redis.url, name, (**options).clone())
                .map_err(|e| redis_error(redis, name, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_url() {
        assert!(has_credentials("redis://:pw@h:6379/2"));
        assert!(has_credentials("rediss://user:pw@h"));
        assert!(has_credentials("redis://h:7000,redis://:pw@h:7001"));
        assert!(!has_credentials("redis://h:6379/0"));
        assert!(!has_credentials("redis://h/a@b"));
        assert!(!has_credentials("unix:///run/redis.sock"));
        assert!(has_credentials("redis+unix:///run/redis.sock?pass=pw"));
    }
}
