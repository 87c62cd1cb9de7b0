//! One Redis node: its client and how long an idle connection to it is
//! trusted. Shared by the standalone and Sentinel connection (`conn.rs`) and
//! the cluster's per-node connections (`cluster.rs`), so that neither of
//! those imports the other for it.

use std::time::Duration;

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
