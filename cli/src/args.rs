//! The command line, parsed by hand: a command, its positional arguments
//! and a few flags. Anything else is a usage error (exit code 2).

use std::ffi::OsStr;
use std::time::Duration;

use crate::change::Change;
use crate::error::CliError;
use crate::target::Target;

/// What to do.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Print this help (`None`: the overview; `Some(cmd)`: one command's).
    Help(Option<&'static str>),
    /// List the named semaphores of this machine, or the Redis ones.
    Ls { redis: Option<Redis>, json: bool },
    /// Show one semaphore's holders and waiters.
    Inspect { target: Target, json: bool },
    /// Redraw the inspection every `interval`, `count` times (or forever).
    Watch {
        target: Target,
        json: bool,
        interval: Duration,
        count: Option<u64>,
    },
    /// Remove a named semaphore's name, or delete a Redis semaphore.
    Unlink { target: Target },
    /// Change a semaphore's total, or undo its `close`.
    Change { target: Target, change: Change },
}

/// `--redis URL [--prefix P] [--cluster] [--tls-ca FILE] [--tls-cert FILE
/// --tls-key FILE]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Redis {
    pub url: String,
    pub prefix: Option<String>,
    /// `--cluster`: the URL is the seed nodes of a Redis Cluster.
    pub cluster: bool,
    /// `--tls-ca FILE`: trust the CA certificates of this PEM file (not
    /// the Mozilla roots) for a `rediss://` server.
    pub tls_ca: Option<String>,
    /// `--tls-cert FILE --tls-key FILE`: a client certificate (mutual TLS).
    pub tls_cert: Option<(String, String)>,
}

/// The environment variable that gives the Redis password (see
/// [`Command::with_password`]).
pub const PASSWORD_ENV: &str = "VOLT_SEM_REDIS_PASSWORD";

pub const OVERVIEW: &str = "\
volt-sem: look inside volt-sem semaphores (named ones of this machine, Redis)

Usage: volt-sem <command> [options]

Commands:
  ls        list the semaphores with their totals, holders and waiters
  inspect   show who holds a semaphore's permits and who waits for them
  watch     redraw `inspect` every second, with an estimate of grants/s
  resize    change a semaphore's total (growing serves the queue at once)
  reopen    undo `close` on a semaphore
  unlink    remove a named semaphore's name, or delete a Redis semaphore

Options of every command: -h, --help
`volt-sem <command> --help` tells more; `volt-sem help redis`: the options of
a Redis connection (password, TLS). Exit codes: 0 ok, 1 failed, 2 usage.";

pub const LS: &str = "\
Usage: volt-sem ls [--json]
       volt-sem ls --redis URL [--prefix P] [--cluster] [--json]

Lists the named semaphores of this machine (/dev/shm/volt-sem.<name>), or
with --redis those stored on that Redis server under the prefix (default
volt-sem), with TOTAL, AVAILABLE, HOLDERS (processes) and WAITERS (queued
requests). A semaphore that cannot be read is listed with its error.

Options:
  --redis URL   redis://[user[:password]@]host[:port][/db], rediss://,
                unix://, redis+sentinel:// (see `volt-sem help redis`)
  --prefix P    the key prefix the semaphores were connected with
  --cluster     URL is the seed nodes of a Redis Cluster, comma-separated
                (every master is scanned)
  --json        a JSON array: [{name, total, available, closed, holders,
                waiters}] (counts of holders and waiters)
                ({name, error} for one that cannot be read)";

pub const INSPECT: &str = "\
Usage: volt-sem inspect NAME [--json]
       volt-sem inspect --redis URL [--prefix P] NAME [--json]
       volt-sem inspect redis://HOST[:PORT][/DB]/NAME [--prefix P] [--json]

Shows a semaphore's total, available permits and whether it is closed, its
holders (label, pid, host, permits, held for; on Redis also the lease left
and the fencing token of the latest grant) and its waiters in queue order
(position 0 is served next; granted: a partial grant). Looking changes
nothing: the semaphore is never created and its total need not be known.

Options:
  --redis URL   the semaphore is in Redis (see `volt-sem help redis`)
  --prefix P    the key prefix the semaphore was connected with
  --cluster     URL is a Redis Cluster's seed nodes, comma-separated
  --json        {total, available, closed, holders: [{label, host, pid,
                permits, held_for, lease_remaining, token}], waiters:
                [{label, host, pid, permits, granted, waiting_for,
                position}]}; times in seconds, null where not measured";

pub const WATCH: &str = "\
Usage: volt-sem watch NAME [--interval SECS] [--count N] [--json]
       volt-sem watch --redis URL [--prefix P] NAME [...]

Redraws `volt-sem inspect` every interval until Ctrl-C, with grants/s: the
grants seen between two refreshes over the time between them. A grant is
seen when a holder appears, its held time starts again (its holding rose
from zero), or on Redis its latest fencing token changes. Grants to a
process that already holds, and holdings that begin and end between two
refreshes, are not seen: it is a lower bound, most exact with few holders.
It fails (exit code 1) once the semaphore is unlinked or deleted, or when a
refresh waits 5 s for a named semaphore's lock (a process stopped in it).

Options:
  --interval SECS  time between refreshes (default 1; 0.05 to 3600)
  --count N        stop after N refreshes
  --json           one JSON object per refresh and line, as `inspect --json`
                   plus grants_per_second (null on the first)";

pub const RESIZE: &str = "\
Usage: volt-sem resize NAME N
       volt-sem resize --redis URL [--prefix P] NAME N

Sets the total of the semaphore NAME to N permits, online. Growing hands the
new permits to the queued requests at once, in queue order. Shrinking
revokes nothing: it takes what is free now, and the permits held above the
new total are taken as they come back (queued requests larger than N fail
with \"too many permits\"). Every process sees the new total.

Options:
  --redis URL   the semaphore is in Redis (see `volt-sem help redis`)
  --prefix P    the key prefix the semaphore was connected with
  --cluster     URL is a Redis Cluster's seed nodes, comma-separated";

pub const REOPEN: &str = "\
Usage: volt-sem reopen NAME
       volt-sem reopen --redis URL [--prefix P] NAME

Undoes `close` on the semaphore NAME: acquires work again. Requests that
the close failed stay failed.

Options:
  --redis URL   the semaphore is in Redis (see `volt-sem help redis`)
  --prefix P    the key prefix the semaphore was connected with
  --cluster     URL is a Redis Cluster's seed nodes, comma-separated";

pub const REDIS: &str = "\
Usage: volt-sem <command> --redis URL [--prefix P] [--cluster]
                          [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]

How every command connects to Redis (--prefix, --cluster: its own help).

  --redis URL        redis://[user[:password]@]host[:port][/db]; rediss:// for
                     TLS; unix:///path[?db=N]; redis+sentinel://host[:port]
                     [,host[:port]...]/master[/db]; with --cluster, the seed
                     URLs of a Redis Cluster, comma-separated
  --tls-ca FILE      trust the CA certificates of this PEM file (for a server
                     certificate of a private CA) instead of the Mozilla roots
  --tls-cert FILE    a client certificate (PEM), for a server that asks for
  --tls-key FILE     one (tls-auth-clients); both or neither

The password: a URL's is seen by every local user (`ps`). Leave it out and
set VOLT_SEM_REDIS_PASSWORD instead: it is the password of every URL (every
seed, the Sentinel's master) that has none; a user without a password stays
in the URL (redis://USER@host). A URL that has a password keeps its own.";

pub const UNLINK: &str = "\
Usage: volt-sem unlink NAME
       volt-sem unlink --redis URL [--prefix P] NAME

Removes the name of the named semaphore NAME (/dev/shm/volt-sem.NAME).
Processes attached keep using it; the next open of the name creates a new
one. Fails if there is no such name.

With --redis, deletes the semaphore's keys from Redis. Refused while any
client is connected to it (holding, waiting or idle): their state lives
only in Redis. Sessions whose lease ran out (crashed clients) do not count.

Options:
  --redis URL   the semaphore is in Redis (see `volt-sem help redis`)
  --prefix P    the key prefix the semaphore was connected with
  --cluster     URL is a Redis Cluster's seed nodes, comma-separated";

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, CliError> {
    let Some((cmd, rest)) = args.split_first() else {
        return Err(CliError::Usage("no command (try `volt-sem --help`)".into()));
    };
    let command = |word: &str, help: bool| -> Result<&'static str, CliError> {
        Ok(match word {
            "ls" => "ls",
            "inspect" => "inspect",
            "watch" => "watch",
            "unlink" => "unlink",
            "resize" => "resize",
            "reopen" => "reopen",
            // A help topic, not a command: `volt-sem help redis`.
            "redis" if help => "redis",
            other => {
                return Err(CliError::Usage(format!(
                    "unknown command `{other}` (try `volt-sem --help`)"
                )))
            }
        })
    };
    if matches!(cmd.as_str(), "-h" | "--help" | "help") {
        // `volt-sem help inspect` is `volt-sem inspect --help`.
        return match rest {
            [] => Ok(Command::Help(None)),
            [topic] => Ok(Command::Help(Some(command(topic, true)?))),
            [_, extra, ..] => Err(CliError::Usage(format!(
                "help: unexpected argument `{extra}`"
            ))),
        };
    }
    let cmd = command(cmd, false)?;
    let mut f = Flags::parse(cmd, rest)?;
    if f.help {
        return Ok(Command::Help(Some(cmd)));
    }
    // `inspect redis://host:6379/NAME`: the URL and the name in one word.
    if f.redis.is_none() && cmd != "ls" {
        if let Some((url, name)) = f.positional.first().and_then(|w| split_redis_url(w)) {
            f.redis = Some(url);
            f.positional[0] = name;
        }
    }
    let usage = |msg: String| Err(CliError::Usage(format!("{cmd}: {msg}")));
    // Every command takes the Redis options (`volt-sem help redis`).
    let allowed: &[&str] = match cmd {
        "ls" | "inspect" => &["--json"],
        "watch" => &["--json", "--interval", "--count"],
        _ => &[],
    };
    if let Some(bad) = f
        .seen
        .iter()
        .find(|s| !allowed.contains(s) && !REDIS_FLAGS.contains(s))
    {
        return usage(format!("{bad} is not an option of this command"));
    }
    if f.redis.is_none() {
        if let Some(flag) = f.seen.iter().find(|s| REDIS_FLAGS.contains(s)) {
            return usage(format!("{flag} needs --redis"));
        }
    }
    let tls_cert = match (f.tls_cert.clone(), f.tls_key.clone()) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        (Some(_), None) => return usage("--tls-cert needs --tls-key (its private key)".into()),
        (None, Some(_)) => return usage("--tls-key needs --tls-cert".into()),
    };
    // Said here, as a usage error: the library's refusal is a failure.
    if let Some(url) = &f.redis {
        let tls = |u: &str| u.starts_with("rediss://") || u.starts_with("rediss+sentinel://");
        let all_tls = if f.cluster {
            url.split(',').all(|u| tls(u.trim()))
        } else {
            tls(url)
        };
        if (f.tls_ca.is_some() || tls_cert.is_some()) && !all_tls {
            return usage("--tls-ca and --tls-cert need a rediss:// URL".into());
        }
    }
    let redis = f.redis.clone().map(|url| Redis {
        url,
        prefix: f.prefix.clone(),
        cluster: f.cluster,
        tls_ca: f.tls_ca.clone(),
        tls_cert: tls_cert.clone(),
    });
    let one_name = |what: &str| -> Result<String, CliError> {
        match f.positional.as_slice() {
            [name] => Ok(name.clone()),
            [] => Err(CliError::Usage(format!("{cmd}: missing {what}"))),
            [_, extra, ..] => Err(CliError::Usage(format!(
                "{cmd}: unexpected argument `{extra}`"
            ))),
        }
    };
    // An empty NAME (an unset shell variable) is how it was called, and
    // would otherwise read "volt-sem: : invalid semaphore name".
    let named = cmd != "ls";
    if named && f.positional.first().is_some_and(String::is_empty) {
        return usage("NAME is empty".into());
    }
    let target = |name: String| match redis.clone() {
        Some(redis) => Target::Redis { redis, name },
        None => Target::Named(name),
    };
    Ok(match cmd {
        "ls" => {
            if let Some(extra) = f.positional.first() {
                return usage(format!("unexpected argument `{extra}`"));
            }
            Command::Ls {
                redis,
                json: f.json,
            }
        }
        "inspect" => Command::Inspect {
            target: target(one_name("NAME")?),
            json: f.json,
        },
        "watch" => {
            let interval = match f.interval.as_deref() {
                None => Duration::from_secs(1),
                Some(s) => match s.parse::<f64>() {
                    Ok(v) if (0.05..=3600.0).contains(&v) => Duration::from_secs_f64(v),
                    _ => return usage(format!("--interval `{s}`: seconds from 0.05 to 3600")),
                },
            };
            let count = match f.count.as_deref() {
                None => None,
                Some(s) => match s.parse::<u64>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => return usage(format!("--count `{s}`: a number of refreshes, 1 or more")),
                },
            };
            Command::Watch {
                target: target(one_name("NAME")?),
                json: f.json,
                interval,
                count,
            }
        }
        "resize" => match f.positional.as_slice() {
            [name, n] => match n.parse::<usize>() {
                Ok(n) if n > 0 => Command::Change {
                    target: target(name.clone()),
                    change: Change::Resize(n),
                },
                _ => return usage(format!("N `{n}`: a number of permits, 1 or more")),
            },
            [_] | [] => return usage("missing NAME or N".into()),
            [_, _, extra, ..] => return usage(format!("unexpected argument `{extra}`")),
        },
        "reopen" => Command::Change {
            target: target(one_name("NAME")?),
            change: Change::Reopen,
        },
        _ => Command::Unlink {
            target: target(one_name("NAME")?),
        },
    })
}

impl Command {
    /// The command with `password` (from [`PASSWORD_ENV`]; `None` or
    /// empty: unset) given to each URL of its Redis connection that has no
    /// password of its own: each seed of a cluster, the master of a
    /// Sentinel URL. A URL's own password wins: it is the one typed for
    /// this command, the variable may be set for a whole session.
    /// A password that is not UTF-8 is a usage error (of a command that
    /// connects to Redis).
    pub fn with_password(mut self, password: Option<&OsStr>) -> Result<Command, CliError> {
        let Some(password) = password.filter(|p| !p.is_empty()) else {
            return Ok(self);
        };
        let redis = match &mut self {
            Command::Ls {
                redis: Some(redis), ..
            } => redis,
            Command::Inspect { target, .. }
            | Command::Watch { target, .. }
            | Command::Unlink { target }
            | Command::Change { target, .. } => match target {
                Target::Redis { redis, .. } => redis,
                Target::Named(_) => return Ok(self),
            },
            Command::Ls { redis: None, .. } | Command::Help(_) => return Ok(self),
        };
        let Some(password) = password.to_str() else {
            return Err(CliError::Usage(format!("{PASSWORD_ENV} is not UTF-8")));
        };
        redis.url = if redis.cluster {
            redis
                .url
                .split(',')
                .map(|seed| add_password(seed, password))
                .collect::<Vec<_>>()
                .join(",")
        } else {
            add_password(&redis.url, password)
        };
        Ok(self)
    }
}

/// `url` with `password` if it has none: `scheme://[user]:PASSWORD@rest`
/// (percent-encoded: redis-rs decodes it), or for a Unix socket URL a
/// `pass=` query (form-encoded, as redis-rs reads it). Any other word is
/// left as it is (the library then says what is wrong with it).
fn add_password(url: &str, password: &str) -> String {
    let encoded: String = password
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    if scheme.ends_with("unix") {
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if query.split('&').any(|kv| kv.starts_with("pass=")) {
            return url.to_owned();
        }
        let sep = if query.is_empty() { "" } else { "&" };
        return format!("{scheme}://{path}?{query}{sep}pass={encoded}");
    }
    // The user info ends at the authority's last '@' (a Sentinel URL's
    // authority is its list of Sentinels).
    let authority = rest.split('/').next().unwrap_or("");
    match authority.rsplit_once('@') {
        Some((userinfo, _)) if userinfo.contains(':') => url.to_owned(),
        Some((user, _)) => {
            let after = &rest[user.len()..];
            format!("{scheme}://{user}:{encoded}{after}")
        }
        None => format!("{scheme}://:{encoded}@{rest}"),
    }
}

/// Splits `redis://[user:password@]host[:port][/db]/NAME` (or `rediss://`)
/// into the URL and NAME: the path's first segment is the database when it
/// is a number followed by more path, and the rest is the name (which may
/// hold `/`). `None` for a word that is not such a URL, or has no name.
fn split_redis_url(word: &str) -> Option<(String, String)> {
    let scheme_end = ["redis://", "rediss://"]
        .iter()
        .find(|s| word.starts_with(*s))?
        .len();
    let (authority, path) = word[scheme_end..].split_once('/')?;
    if authority.is_empty() {
        return None;
    }
    let (url_path, name) = match path.split_once('/') {
        Some((db, name)) if !db.is_empty() && db.bytes().all(|b| b.is_ascii_digit()) => {
            (format!("/{db}"), name)
        }
        _ => (String::new(), path),
    };
    if name.is_empty() {
        return None;
    }
    let scheme = &word[..scheme_end];
    Some((format!("{scheme}{authority}{url_path}"), name.to_owned()))
}

/// The options of a Redis connection, which every command takes with
/// `--redis` (and none without it).
const REDIS_FLAGS: [&str; 6] = [
    "--redis",
    "--prefix",
    "--cluster",
    "--tls-ca",
    "--tls-cert",
    "--tls-key",
];

/// The flags and positional arguments of one command.
#[derive(Default)]
struct Flags {
    help: bool,
    json: bool,
    redis: Option<String>,
    prefix: Option<String>,
    cluster: bool,
    tls_ca: Option<String>,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    interval: Option<String>,
    count: Option<String>,
    positional: Vec<String>,
    /// Every flag given, for the command's check of which it accepts.
    seen: Vec<&'static str>,
}

impl Flags {
    fn parse(cmd: &str, args: &[String]) -> Result<Flags, CliError> {
        let mut f = Flags::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            // `--flag=value` as well as `--flag value`.
            let (flag, inline) = match a.split_once('=') {
                Some((fl, v)) if a.starts_with("--") => (fl, Some(v.to_owned())),
                _ => (a.as_str(), None),
            };
            let mut value = |name: &'static str| -> Result<String, CliError> {
                // Twice would otherwise mean the last one, silently (which
                // server, which prefix?).
                if f.seen.contains(&name) {
                    return Err(CliError::Usage(format!("{cmd}: {name} given twice")));
                }
                f.seen.push(name);
                match inline.clone().or_else(|| it.next().cloned()) {
                    Some(v) => Ok(v),
                    None => Err(CliError::Usage(format!("{cmd}: {name} needs a value"))),
                }
            };
            // A switch takes no value: `--json=false` is not "no JSON".
            if matches!(flag, "--help" | "--json" | "--cluster") && inline.is_some() {
                return Err(CliError::Usage(format!(
                    "{cmd}: {flag} takes no value (`{a}`)"
                )));
            }
            match flag {
                "-h" | "--help" => f.help = true,
                "--json" => {
                    f.seen.push("--json");
                    f.json = true;
                }
                "--redis" => f.redis = Some(value("--redis")?),
                "--cluster" => {
                    f.seen.push("--cluster");
                    f.cluster = true;
                }
                "--prefix" => f.prefix = Some(value("--prefix")?),
                "--tls-ca" => f.tls_ca = Some(value("--tls-ca")?),
                "--tls-cert" => f.tls_cert = Some(value("--tls-cert")?),
                "--tls-key" => f.tls_key = Some(value("--tls-key")?),
                "--interval" => f.interval = Some(value("--interval")?),
                "--count" => f.count = Some(value("--count")?),
                "--" => f.positional.extend(it.by_ref().cloned()),
                s if s.starts_with('-') && s.len() > 1 => {
                    return Err(CliError::Usage(format!("{cmd}: unknown option `{s}`")))
                }
                _ => f.positional.push(a.clone()),
            }
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Command, CliError> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn commands() {
        assert_eq!(
            p("inspect gpu --json").unwrap(),
            Command::Inspect {
                target: Target::Named("gpu".into()),
                json: true
            }
        );
        assert_eq!(
            p("watch --redis=redis://h/0 --prefix p db --count 2 --interval 0.5").unwrap(),
            Command::Watch {
                target: Target::Redis {
                    redis: Redis {
                        url: "redis://h/0".into(),
                        prefix: Some("p".into()),
                        cluster: false,
                        ..Redis::default()
                    },
                    name: "db".into()
                },
                json: false,
                interval: Duration::from_millis(500),
                count: Some(2)
            }
        );
        assert_eq!(p("ls --help").unwrap(), Command::Help(Some("ls")));
        assert_eq!(p("help watch").unwrap(), Command::Help(Some("watch")));
        assert_eq!(p("help").unwrap(), Command::Help(None));
        assert_eq!(
            p("unlink -- -odd").unwrap(),
            Command::Unlink {
                target: Target::Named("-odd".into())
            }
        );
        assert_eq!(
            p("ls --redis redis://h:7000,redis://h:7001 --cluster").unwrap(),
            Command::Ls {
                redis: Some(Redis {
                    url: "redis://h:7000,redis://h:7001".into(),
                    prefix: None,
                    cluster: true,
                    ..Redis::default()
                }),
                json: false
            }
        );
        assert_eq!(
            p("unlink --redis redis://h db").unwrap(),
            Command::Unlink {
                target: Target::Redis {
                    redis: Redis {
                        url: "redis://h".into(),
                        prefix: None,
                        cluster: false,
                        ..Redis::default()
                    },
                    name: "db".into()
                }
            }
        );
    }

    #[test]
    fn a_redis_url_may_carry_the_name() {
        let split = |w: &str| split_redis_url(w);
        assert_eq!(
            split("redis://h:6379/db"),
            Some(("redis://h:6379".into(), "db".into()))
        );
        assert_eq!(
            split("rediss://u:p@h/2/jobs/gpu"),
            Some(("rediss://u:p@h/2".into(), "jobs/gpu".into()))
        );
        assert_eq!(
            split("redis://h/a/b"),
            Some(("redis://h".into(), "a/b".into()))
        );
        assert_eq!(split("redis://h/3"), Some(("redis://h".into(), "3".into())));
        for not in [
            "redis://h",
            "redis://h/",
            "redis://h/0/",
            "redis:///x",
            "gpu",
            "unix:///s/x",
        ] {
            assert_eq!(split(not), None, "{not}");
        }
        assert_eq!(
            p("inspect redis://h:6379/1/pool --json").unwrap(),
            Command::Inspect {
                target: Target::Redis {
                    redis: Redis {
                        url: "redis://h:6379/1".into(),
                        prefix: None,
                        cluster: false,
                        ..Redis::default()
                    },
                    name: "pool".into()
                },
                json: true
            }
        );
    }

    #[test]
    fn a_password_from_the_environment_goes_where_the_url_has_none() {
        let with = |line: &str, pw: &str| match p(line)
            .unwrap()
            .with_password(Some(OsStr::new(pw)))
            .unwrap()
        {
            Command::Ls { redis: Some(r), .. } => r.url,
            Command::Inspect {
                target: Target::Redis { redis, .. },
                ..
            } => redis.url,
            other => panic!("{other:?}"),
        };
        assert_eq!(with("ls --redis redis://h:1/2", "pw"), "redis://:pw@h:1/2");
        assert_eq!(with("ls --redis rediss://u@h", "pw"), "rediss://u:pw@h");
        assert_eq!(
            with("ls --redis redis://u:mine@h", "pw"),
            "redis://u:mine@h"
        );
        assert_eq!(with("ls --redis redis://:@h", "pw"), "redis://:@h");
        assert_eq!(
            add_password("redis://h", "a:b/@c%+ ü"),
            "redis://:a%3Ab%2F%40c%25%2B%20%C3%BC@h"
        );
        assert_eq!(
            with("ls --redis redis://h:1,redis://:x@h:2 --cluster", "pw"),
            "redis://:pw@h:1,redis://:x@h:2"
        );
        assert_eq!(
            with("ls --redis redis+sentinel://h:1,h:2/m/3", "pw"),
            "redis+sentinel://:pw@h:1,h:2/m/3"
        );
        assert_eq!(
            with("ls --redis unix:///run/r.sock", "p w"),
            "unix:///run/r.sock?pass=p%20w"
        );
        assert_eq!(
            with("ls --redis redis+unix:///s?db=1", "pw"),
            "redis+unix:///s?db=1&pass=pw"
        );
        assert_eq!(
            with("ls --redis unix:///s?pass=x", "pw"),
            "unix:///s?pass=x"
        );
        assert_eq!(
            with("inspect redis://h:6379/3/name", "pw"),
            "redis://:pw@h:6379/3"
        );
        assert_eq!(with("ls --redis not-a-url", "pw"), "not-a-url");
        // Unset or empty: nothing changes; named semaphores: nothing to do.
        assert_eq!(
            p("ls --redis redis://h")
                .unwrap()
                .with_password(Some(OsStr::new(""))),
            p("ls --redis redis://h")
        );
        assert_eq!(
            p("inspect gpu")
                .unwrap()
                .with_password(Some(OsStr::new("pw"))),
            p("inspect gpu")
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let not_utf8 = OsStr::from_bytes(b"\xff");
            assert!(p("ls").unwrap().with_password(Some(not_utf8)).is_ok());
            assert!(matches!(
                p("ls --redis redis://h")
                    .unwrap()
                    .with_password(Some(not_utf8)),
                Err(CliError::Usage(_))
            ));
        }
    }

    #[test]
    fn usage_errors() {
        for bad in [
            "",
            "frobnicate",
            "inspect",
            "inspect a b",
            "inspect a --bogus",
            "inspect a --interval 1",
            "ls --prefix p",
            "ls extra",
            "watch a --count 0",
            "watch a --interval x",
            "watch a --interval 0",
            "unlink a --json",
            "unlink a --prefix p",
            "ls --cluster",
            "inspect a --cluster",
            "ls --redis",
            "inspect a --json=false",
            "ls --redis redis://h --cluster=0",
            "ls --help=1",
            "help frobnicate",
            "help ls extra",
            "redis",
            "inspect a --tls-ca f",
            "ls --redis rediss://h --tls-cert c",
            "ls --redis rediss://h --tls-key k",
            "ls --redis rediss://h --tls-ca f --tls-ca g",
            "ls --redis redis://h --tls-ca f",
            "ls --redis rediss://h:1,redis://h:2 --cluster --tls-ca f",
            "inspect redis://h/x --tls-cert c --tls-key k",
        ] {
            assert!(matches!(p(bad), Err(CliError::Usage(_))), "{bad:?}");
        }
    }

    #[test]
    fn every_help_fits_a_screen() {
        for h in [OVERVIEW, LS, INSPECT, WATCH, UNLINK, RESIZE, REOPEN, REDIS] {
            assert!(h.lines().count() <= 22, "{h}");
            assert!(h.lines().all(|l| l.len() <= 80), "{h}");
        }
    }
}
