//! One Redis node: its client and how long an idle connection to it is
//! trusted. Shared by the standalone and Sentinel connection (`conn.rs`) and
//! the cluster's per-node connections (`cluster.rs`), so that neither of
//! those imports the other for it.

use std::time::{Duration, Instant};

use redis::RedisResult;

/// How long a connection may sit idle before it is checked before use.
pub(crate) const IDLE_CHECK: Duration = Duration::from_secs(1);

/// A client of one server. Without redis-rs's `CLIENT SETINFO` at connect
/// (a diagnostic label): redis-rs gives each reply of its connection set-up
/// the whole remaining timeout and ignores a failed `SETINFO`, so against a
/// server that accepts and never answers, its two `SETINFO` replies made a
/// connect last three times the connect timeout. With only `AUTH` (whose
/// failure ends the set-up) the connect timeout is a deadline.
pub(crate) fn single_client(
    url: &str,
    certs: Option<&redis::TlsCertificates>,
) -> RedisResult<redis::Client> {
    use redis::IntoConnectionInfo;
    let info = url.into_connection_info()?;
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    let info = info.set_redis_settings(settings);
    match certs {
        Some(c) => redis::Client::build_with_tls(info, c.clone()),
        None => redis::Client::open(info),
    }
}

/// Names a new connection with `CLIENT SETNAME name` (the handle's label:
/// `CLIENT LIST` shows it), within `deadline`. Best effort: a refusal (an
/// ACL without `CLIENT`, a server or proxy that does not know it, a name
/// it will not take) is ignored; only a failure of the connection itself
/// (a timeout, a reset) is returned, as the connection is then unusable.
pub(crate) fn set_name(
    con: &mut redis::Connection,
    name: &str,
    deadline: Instant,
) -> RedisResult<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no time left to name the connection",
        )
        .into());
    }
    con.set_read_timeout(Some(left))?;
    con.set_write_timeout(Some(left))?;
    match redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query::<redis::Value>(con)
    {
        Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => Err(e),
        _ => Ok(()),
    }
}
