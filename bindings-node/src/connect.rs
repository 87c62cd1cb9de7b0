//! `Semaphore.connect(url, name, permits, options)`: the Redis backend (the
//! seam's `Kind::Redis`) behind the one `Semaphore` class, and the calls that
//! take a round trip (connect, delete, census, close, disconnect, a try),
//! run off the JS thread ([`crate::offloop`]).
//!
//! A connected semaphore is a [`Sem`] like a named one: acquire, release and
//! cancel are the ordinary entry points ([`crate::ops`]) over the seam, whose
//! Redis calls never wait for the network; its grants reach JS through the
//! ordinary wake path, their tokens and failures through the extras
//! ([`crate::lease`]).

use std::time::Duration;

use napi::sys;
use volt_sem_backend::{ConnectOptions, Error, Kind, Semaphore as Core};

use crate::env::EnvCtx;
use crate::handle::sem;
use crate::js_error::throw;
use crate::offloop::{spawn, Done};
use crate::raw::string_arg;
use crate::raw::{args, count, int, null, throw_internal};
use crate::raw::{RawEnv, RawValue};
use crate::semaphore::Sem;

fn ms(env: RawEnv, v: RawValue) -> Duration {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    // Out of range: zero, which the backend refuses with its typed error
    // (index.js checks the ranges first).
    if d.is_finite() && d > 0.0 && d <= 1e12 {
        Duration::from_secs_f64(d / 1000.0)
    } else {
        Duration::ZERO
    }
}

fn flag(env: RawEnv, v: RawValue) -> bool {
    let mut out = false;
    // SAFETY: fails on a non-boolean, leaving false.
    unsafe { sys::napi_get_value_bool(env, v, &mut out) };
    out
}

/// The options of `argv[0..9]`: lease, prefix, connectTimeout,
/// commandTimeout, cluster, tlsCaFile, tlsCert, tlsKey, minReplicas,
/// minReplicasTimeout (null/undefined where not given).
fn options(env: RawEnv, argv: &[RawValue]) -> Option<ConnectOptions> {
    let prefix = string_arg(env, argv[1])?;
    let mut o = ConnectOptions::new()
        .prefix(&prefix)
        .lease(ms(env, argv[0]))
        .connect_timeout(ms(env, argv[2]))
        .command_timeout(ms(env, argv[3]))
        .cluster(flag(env, argv[4]));
    if let Some(ca) = string_arg(env, argv[5]) {
        o = o.tls_ca_file(ca);
    }
    if let (Some(cert), Some(key)) = (string_arg(env, argv[6]), string_arg(env, argv[7])) {
        o = o.tls_client_cert(cert, key);
    }
    let replicas = count(env, argv[8]).unwrap_or(0);
    if replicas > 0 {
        o = o.min_replicas_acked(replicas, ms(env, argv[9]));
    }
    Some(o)
}

fn bad_args(env: RawEnv, what: &str) -> RawValue {
    throw(
        env,
        Error::InvalidName,
        &format!("{what} needs string url, name and prefix"),
    )
}

// connect(url, name, permits, ...options (10), label, resize, attachOnly,
// refd): Promise<External>. index.js checked the types (label: a string, or
// null for the default; resize, attachOnly: booleans); the
// content (URL, name, prefix, label, permits, option ranges) is checked by the
// backend, and rejects the promise.
native!(js_connect, |env, _ctx, argv: [17]| {
    let (Some(url), Some(name), Some(mut opts)) = (
        string_arg(env, argv[0]),
        string_arg(env, argv[1]),
        options(env, &argv[3..13]),
    ) else {
        return bad_args(env, "Semaphore.connect()");
    };
    if let Some(label) = string_arg(env, argv[13]) {
        opts = opts.label(label);
    }
    opts = opts.resize(flag(env, argv[14]));
    if flag(env, argv[15]) {
        opts = opts.attach_only();
    }
    let permits = count(env, argv[2]).unwrap_or(0); // 0: refused by the backend
    spawn(env, flag(env, argv[16]), move || {
        match Core::connect(&url, &name, permits, opts) {
            Ok(core) => Done::Connected(Sem::new(core, Some(name.into()))),
            Err(e) => Done::Failed(e, "volt-sem: Semaphore.connect()"),
        }
    })
});

// deleteRedis(url, name, ...options (10)): Promise<null>.
native!(js_delete_redis, |env, _ctx, argv: [12]| {
    let (Some(url), Some(name), Some(opts)) = (
        string_arg(env, argv[0]),
        string_arg(env, argv[1]),
        options(env, &argv[2..12]),
    ) else {
        return bad_args(env, "Semaphore.deleteRedis()");
    };
    spawn(env, true, move || match volt_sem_backend::delete_redis(&url, &name, opts) {
        Ok(()) => Done::Unit,
        Err(e) => Done::Failed(e, "volt-sem: Semaphore.deleteRedis()"),
    })
});

/// Runs `f` on the semaphore of `argv[0]` off the JS thread (`argv[1]`: refd).
pub(crate) fn off_loop(
    env: RawEnv,
    argv: &[RawValue],
    f: impl FnOnce(&std::sync::Arc<Sem>) -> Done + Send + 'static,
) -> RawValue {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else {
        return null(env);
    };
    let s = s.clone();
    spawn(env, flag(env, argv[1]), move || f(&s))
}

// census(h, refd): Promise<object>. A Redis semaphore's conservation sums.
native!(js_census, |env, _ctx, argv: [2]| {
    off_loop(env, &argv, |s| match s.core.as_redis().map(|r| r.census()) {
        Some(Ok(c)) => Done::Census(c),
        Some(Err(e)) => Done::Failed(e.into(), "volt-sem: census()"),
        None => Done::Failed(Error::Unsupported, "volt-sem: census()"),
    })
});

// inspect(h, refd): Promise<Inspection>. Off the JS thread on every backend,
// though only Redis waits for the network: one path, and a named semaphore's
// reclaim of dead processes (which `inspect` runs first) takes its segment's
// lock.
native!(js_inspect, |env, _ctx, argv: [2]| {
    off_loop(env, &argv, |s| match s.core.inspect() {
        Ok(i) if s.core.as_local().is_some() => {
            Done::Inspected(crate::inspect::held_as_counted(i, s.held.load(std::sync::atomic::Ordering::Relaxed)))
        }
        Ok(i) => Done::Inspected(i),
        Err(e) => Done::Failed(e, "volt-sem: inspect()"),
    })
});

// closeAsync(h, refd): Promise<null>. close() for everyone, off the JS thread.
native!(js_close_async, |env, _ctx, argv: [2]| {
    off_loop(env, &argv, |s| match s.core.close() {
        Ok(()) => Done::Unit,
        Err(e) => Done::Failed(e, "volt-sem: closeForEveryone()"),
    })
});

// disconnectAsync(h, refd): Promise<null>. Ends a Redis semaphore's session
// (the seam's disconnect; index.js refuses the other backends first).
native!(js_disconnect_async, |env, _ctx, argv: [2]| {
    off_loop(env, &argv, |s| {
        let _ = s.core.disconnect();
        Done::Unit
    })
});

// tryAcquireAsync(h, refd, n): Promise<[token, session] | null>.
native!(js_try_acquire_async, |env, _ctx, argv: [3]| {
    let Some(n) = count(env, argv[2]) else {
        return throw(env, Error::TooManyPermits, "tryAcquirePermit()");
    };
    off_loop(env, &argv, move |s| match s.core.try_acquire(n) {
        Ok(g) => Done::Tried(Some((g, s.clone(), n))),
        Err(Error::NoPermits) => Done::Tried(None),
        Err(e) => Done::Failed(e, "volt-sem: tryAcquirePermit()"),
    })
});

// kind(h): 0 local, 1 named, 2 Redis.
native!(js_kind, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    int(
        env,
        match s.core.kind() {
            Kind::Local => 0,
            Kind::Shared => 1,
            _ => 2,
        },
    )
});
