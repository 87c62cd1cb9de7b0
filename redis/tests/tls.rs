//! `rediss://` against a real redis-server with a TLS port, certificates
//! made by the openssl CLI in the test: the CA option, a wrong CA, the
//! default trust store, client certificates, and the scheme/port mismatches
//! (typed errors within the connect timeout, never a hang).

mod support;

use std::thread;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

const PW: &str = "tls-s3cret-pw";

/// A loose bound that only catches a hang (no timing assert): the connect
/// timeout plus a wide margin for a loaded machine.
fn bounded(start: Instant, timeout: Duration) {
    let took = start.elapsed();
    assert!(
        took < timeout + Duration::from_secs(10),
        "connect took {took:?} with a {timeout:?} connect timeout"
    );
}

fn no_secret(e: &Error) {
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(PW), "password in an error: {shown}");
}

#[test]
fn rediss_with_the_ca_file_and_every_mismatch() {
    let certs = Certs::generate();
    let s = Server::start_tls(&certs, Some(PW), false);
    let tls = s.tls_port.unwrap();
    let url = format!("rediss://:{PW}@127.0.0.1:{tls}");
    let o = || opts().tls_ca_file(&certs.ca);

    // With the CA: works, including a wake through the agent's TLS connection.
    let a = RedisSemaphore::connect(&url, "tls", 2, o()).unwrap();
    let b = RedisSemaphore::connect(&url, "tls", 2, o()).unwrap();
    let held = a.acquire_blocking(2).unwrap();
    let bb = b.clone();
    let t = thread::spawn(move || bb.acquire_blocking(1).map(|p| p.token()));
    eventually("queued", Duration::from_secs(10), || {
        a.census().unwrap().queued == 1
    });
    let first = held.token();
    held.release().unwrap();
    assert!(t.join().unwrap().unwrap() > first, "tokens increase");
    let c = assert_conserved(&a);
    assert_eq!((c.available, c.queued), (2, 0));
    let shown = format!("{a:?} {:?}", o());
    assert!(!shown.contains(PW), "{shown}");

    // The host name is checked too: "localhost" is in the certificate.
    let by_name = format!("rediss://:{PW}@localhost:{tls}");
    drop(RedisSemaphore::connect(&by_name, "tls", 2, o()).unwrap());

    // A CA that did not issue the server's certificate: a TLS error.
    let e =
        RedisSemaphore::connect(&url, "tls", 2, opts().tls_ca_file(&certs.other_ca)).unwrap_err();
    assert!(matches!(e, Error::Tls(_)), "{e:?}");
    no_secret(&e);
    // No CA option: the Mozilla root set (webpki-roots), which does not know our CA.
    let e = RedisSemaphore::connect(&url, "tls", 2, opts()).unwrap_err();
    assert!(matches!(e, Error::Tls(_)), "{e:?}");
    no_secret(&e);

    // rediss:// to the plain port: the server does not speak TLS.
    let timeout = Duration::from_secs(2);
    let start = Instant::now();
    let plain_as_tls = format!("rediss://:{PW}@127.0.0.1:{}", s.port);
    let e =
        RedisSemaphore::connect(&plain_as_tls, "tls", 2, o().connect_timeout(timeout)).unwrap_err();
    bounded(start, timeout);
    assert!(matches!(e, Error::Tls(_)), "{e:?}");
    no_secret(&e);

    // redis:// to the TLS port: the server drops the plain-text client.
    let start = Instant::now();
    let tls_as_plain = format!("redis://:{PW}@127.0.0.1:{tls}");
    let e = RedisSemaphore::connect(&tls_as_plain, "tls", 2, opts().connect_timeout(timeout))
        .unwrap_err();
    bounded(start, timeout);
    assert!(matches!(e, Error::Connection(_)), "{e:?}");
    no_secret(&e);

    // Wrong password over TLS.
    let bad = format!("rediss://:wrong-{PW}@127.0.0.1:{tls}");
    let e = RedisSemaphore::connect(&bad, "tls", 2, o()).unwrap_err();
    assert_eq!(e, Error::Auth);
    no_secret(&e);

    // Bad TLS options: clear errors, before any connection.
    let e = RedisSemaphore::connect(
        &url,
        "tls",
        2,
        opts().tls_ca_file(certs.dir.join("none.pem")),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::Tls(m) if m.contains("none.pem")),
        "{e:?}"
    );
    let e =
        RedisSemaphore::connect(&url, "tls", 2, opts().tls_ca_file(&certs.server_key)).unwrap_err();
    assert!(
        matches!(e, Error::Tls(_)),
        "a key is not a CA certificate: {e:?}"
    );
    let e = RedisSemaphore::connect(&s.url(), "tls", 2, o()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidOption(_)),
        "TLS options on redis://: {e:?}"
    );
    assert!(assert_conserved(&a).available == 2);
}

#[test]
fn client_certificates() {
    let certs = Certs::generate();
    let s = Server::start_tls(&certs, None, true);
    let url = format!("rediss://127.0.0.1:{}", s.tls_port.unwrap());
    let o = || opts().tls_ca_file(&certs.ca);
    // The server asks for a client certificate: without one, refused.
    let e = RedisSemaphore::connect(&url, "mtls", 1, o()).unwrap_err();
    assert!(
        matches!(e, Error::Tls(_) | Error::Connection(_)),
        "no client certificate: {e:?}"
    );
    let with = || o().tls_client_cert(&certs.client_cert, &certs.client_key);
    let sem = RedisSemaphore::connect(&url, "mtls", 1, with()).unwrap();
    drop(sem.acquire_blocking(1).unwrap());
    assert_eq!(assert_conserved(&sem).available, 1);
    let e = RedisSemaphore::connect(
        &url,
        "mtls",
        1,
        o().tls_client_cert(&certs.client_cert, certs.dir.join("missing.key")),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::Tls(m) if m.contains("missing.key")),
        "{e:?}"
    );
}

#[test]
fn rediss_through_a_tls_sentinel() {
    let certs = Certs::generate();
    let master = Server::start_tls(&certs, None, false);
    let sentinel = start_sentinel("tls-master", master.tls_port.unwrap(), Some(&certs), None);
    let url = format!(
        "rediss+sentinel://127.0.0.1:{}/tls-master",
        sentinel.tls_port.unwrap()
    );
    let sem =
        RedisSemaphore::connect(&url, "tls-sentinel", 2, opts().tls_ca_file(&certs.ca)).unwrap();
    drop(sem.acquire_blocking(2).unwrap());
    assert_eq!(assert_conserved(&sem).available, 2);
    // The master's keys are where the Sentinel pointed.
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", "tls-sentinel");
    let exists: u64 = redis::cmd("EXISTS")
        .arg(&keys.all()[0])
        .query(&mut master.raw())
        .unwrap();
    assert_eq!(exists, 1);
    // Without the CA: the Sentinel's certificate is not trusted.
    let e = RedisSemaphore::connect(&url, "tls-sentinel", 2, opts()).unwrap_err();
    assert!(matches!(e, Error::Tls(_)), "{e:?}");
}
