//! `volt-sem` usage errors (exit code 2, one line on stderr) and help
//! (every page fits a screen).

mod support;

use support::*;

#[test]
fn usage_errors_exit_2_with_one_line() {
    for args in [
        &[][..],
        &["frobnicate"],
        &["inspect"],
        &["inspect", "a", "b"],
        &["inspect", "a", "--bogus"],
        &["ls", "--prefix", "p"],
        &["watch", "a", "--count", "0"],
        &["watch", "a", "--interval", "soon"],
        &["unlink", "a", "--json"],
        &["inspect", "--redis"],
        // A switch takes no value: `--json=false` is not "no JSON".
        &["inspect", "a", "--json=false"],
        &["ls", "--json=no"],
        &["ls", "--redis", "redis://h", "--cluster=0"],
        &["inspect", "a", "--help=x"],
        // The TLS files: a certificate needs its key, a rediss:// URL, --redis.
        &["ls", "--redis", "rediss://h", "--tls-cert", "c.pem"],
        &["ls", "--redis", "redis://h", "--tls-ca", "ca.pem"],
        &["inspect", "a", "--tls-ca", "ca.pem"],
        // A topic of `help`, not a command.
        &["redis"],
    ] {
        let (code, err) = fails(args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
}

#[test]
fn help_fits_a_screen() {
    for args in [
        &["--help"][..],
        &["help"],
        &["ls", "--help"],
        &["inspect", "-h"],
        &["watch", "--help"],
        &["unlink", "--help"],
        &["help", "redis"],
    ] {
        let text = ok(args);
        assert!(
            text.starts_with("volt-sem") || text.starts_with("Usage"),
            "{text}"
        );
        assert!(text.lines().count() <= 24, "{args:?}:\n{text}");
    }
}

/// `volt-sem help CMD` is `volt-sem CMD --help`, as in git or cargo; a
/// command it does not know is a usage error, not the overview with exit 0.
#[test]
fn help_names_a_command() {
    assert_eq!(ok(&["help", "inspect"]), ok(&["inspect", "--help"]));
    assert_eq!(ok(&["--help", "watch"]), ok(&["watch", "--help"]));
    let (code, err) = fails(&["help", "frobnicate"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("frobnicate"), "{err}");
    let (code, _) = fails(&["help", "ls", "extra"]);
    assert_eq!(code, 2);
}

/// An empty NAME (`volt-sem inspect ""`, an unset shell variable) is a
/// usage error that says so, not "volt-sem: : invalid semaphore name".
#[test]
fn an_empty_name_is_a_usage_error() {
    for args in [
        &["inspect", ""][..],
        &["watch", "", "--count", "1"],
        &["unlink", ""],
        &["resize", "", "3"],
        &["reopen", "--redis", "redis://127.0.0.1:1", ""],
    ] {
        let (code, err) = fails(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.ends_with("NAME is empty"), "{args:?}: {err}");
    }
}

/// The error line written to a stderr nobody reads any more (`2>&1 | head`
/// that has ended): the exit code is still the command's (1 or 2), not a
/// panic's 101.
#[test]
fn a_closed_stderr_keeps_the_exit_code() {
    for (args, code) in [
        (&["inspect", "cli-no-such-name"][..], 1),
        (&["frobnicate"], 2),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_volt-sem"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(writer)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
}

/// A flag that takes a value, given twice (`--redis a --redis b`), is a
/// usage error that names it, not the last one silently.
#[test]
fn a_value_flag_given_twice_is_a_usage_error() {
    let (a, b) = ("redis://127.0.0.1:1", "redis://127.0.0.1:2");
    for (args, flag) in [
        (&["inspect", "--redis", a, "--redis", b, "n"][..], "--redis"),
        (
            &["ls", "--redis", a, "--redis=redis://h", "--json"],
            "--redis",
        ),
        (
            &["ls", "--redis", a, "--prefix", "p", "--prefix=q"],
            "--prefix",
        ),
        (
            &["watch", "cli-no-such-name", "--count", "1", "--count", "2"],
            "--count",
        ),
        (
            &[
                "watch",
                "cli-no-such-name",
                "--interval=1",
                "--interval",
                "2",
            ],
            "--interval",
        ),
    ] {
        let (code, err) = fails(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.ends_with(&format!("{flag} given twice")),
            "{args:?}: {err}"
        );
    }
}
