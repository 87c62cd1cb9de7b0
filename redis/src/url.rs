//! Why a URL was refused, for [`Error::InvalidUrl`](crate::Error::InvalidUrl).
//!
//! The client library only says that it refused a URL; a user needs to know
//! what to fix. This is a plain look at the URL's parts, made after the
//! refusal (so it never refuses a URL the library accepts). Its answers are
//! fixed texts: a URL may carry a password, so none of it is ever quoted.

/// The URL forms [`RedisSemaphore::connect`](crate::RedisSemaphore::connect) takes, as an
/// [`Error::InvalidUrl`](crate::Error::InvalidUrl) message shows them.
pub const URL_FORM: &str = "redis://[user:password@]host[:port][/db], or rediss://… for TLS \
     (redis+sentinel://… for Sentinels, comma-separated seed URLs for a Cluster)";

/// The answer when no part looks wrong: the library refused it for a reason
/// of its own.
pub(crate) const REFUSED: &str = "the Redis client refused it";

const SCHEMES: [&str; 6] = [
    "redis",
    "rediss",
    "redis+unix",
    "unix",
    "redis+sentinel",
    "rediss+sentinel",
];

/// Why `url` (with `cluster`, a comma-separated list of seed URLs) was
/// refused: the first seed with a problem names it.
pub(crate) fn problem(url: &str, cluster: bool) -> &'static str {
    if !cluster {
        return one(url);
    }
    url.split(',')
        .map(|seed| one(seed.trim()))
        .find(|why| *why != REFUSED)
        .unwrap_or(REFUSED)
}

fn one(url: &str) -> &'static str {
    if url.trim().is_empty() {
        return "it is empty";
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return "no scheme: it must start with redis:// or rediss://";
    };
    if !SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
        return "unsupported scheme: use redis://, rediss://, redis+unix://, \
                redis+sentinel:// or rediss+sentinel://";
    }
    if scheme.ends_with("unix") {
        return "the Redis client refused this socket path";
    }
    if url.chars().any(char::is_whitespace) {
        return "it contains a space";
    }
    if scheme.ends_with("sentinel") {
        return sentinel(rest);
    }
    // authority [/db]; the user info ends at the authority's last '@'.
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host_port = authority.rsplit_once('@').map_or(authority, |x| x.1);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, after)) => (h, after.strip_prefix(':')),
            None => return "an IPv6 host must be closed with ']'",
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return "no host";
    }
    if let Some(p) = port {
        if p.parse::<u16>().is_err() {
            return "the port must be a number from 0 to 65535";
        }
    }
    let db = path.split(['?', '#']).next().unwrap_or("");
    if !db.is_empty() && db.parse::<i64>().is_err() {
        return "the database after the host must be a number";
    }
    REFUSED
}

/// `[user:password@]host[:port][,host[:port]...]/master[/db]`.
fn sentinel(rest: &str) -> &'static str {
    let rest = rest.rsplit_once('@').map_or(rest, |x| x.1);
    let Some((hosts, path)) = rest.split_once('/') else {
        return "a Sentinel URL names its master after the Sentinels: \
                redis+sentinel://host[:port][,host[:port]...]/master[/db]";
    };
    let (master, db) = path.split_once('/').unwrap_or((path, ""));
    if master.is_empty() {
        return "a Sentinel URL names its master after the Sentinels: \
                redis+sentinel://host[:port][,host[:port]...]/master[/db]";
    }
    if hosts.split(',').any(|h| h.trim().is_empty()) {
        return "an empty Sentinel address";
    }
    let db = db.trim_end_matches('/');
    if !db.is_empty() && db.parse::<i64>().is_err() {
        return "the database after the master must be a number";
    }
    REFUSED
}

/// `host[:port]` with `port` added when it names none (an IPv6 `[..]`
/// without a port included).
pub(crate) fn with_default_port(host: &str, port: u16) -> String {
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        && !host.ends_with(']');
    if has_port {
        host.to_string()
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_is_named_and_the_url_never_quoted() {
        let cases = [
            ("", "it is empty"),
            (
                "127.0.0.1:6379",
                "no scheme: it must start with redis:// or rediss://",
            ),
            ("http://x", "unsupported scheme"),
            ("redis://", "no host"),
            ("redis://:secret@/0", "no host"),
            ("redis://127.0.0.1:notaport", "the port must be a number"),
            ("redis://h:70000", "the port must be a number"),
            (
                "redis://h:1/zero",
                "the database after the host must be a number",
            ),
            ("redis://[::1", "an IPv6 host must be closed"),
            ("redis://h st", "it contains a space"),
            ("redis://u:p@h:1/2", REFUSED),
            ("redis://[::1]:6379", REFUSED),
            ("redis+sentinel://h:1", "a Sentinel URL names its master"),
            ("redis+sentinel://h:1,/m", "an empty Sentinel address"),
            ("rediss+sentinel://h:1/m/x", "the database after the master"),
            ("redis+sentinel://h:1/m/2", REFUSED),
        ];
        for (url, want) in cases {
            let why = problem(url, false);
            assert!(why.starts_with(want), "{url:?}: {why}");
            assert!(!why.contains("secret"));
        }
        assert_eq!(
            problem("redis://a:1, redis://b:x", true),
            problem("redis://b:x", false)
        );
        assert_eq!(problem("redis://a:1,redis://b:2", true), REFUSED);
    }
}
