//! `volt-sem`: look inside volt-sem semaphores from the command line (issue
//! 29). `volt-sem --help` lists the commands; each command's `--help` tells
//! what it shows. Errors are one line on stderr, `volt-sem: <message>`,
//! with exit code 1 (2 for a usage error).

mod args;
mod change;
mod error;
mod ls;
mod render;
mod target;
mod watch;

use args::Command;
use error::{out, CliError};

fn run(argv: Vec<String>) -> Result<(), CliError> {
    // The password of `volt-sem help redis`, kept off the command line.
    let password = std::env::var_os(args::PASSWORD_ENV);
    match args::parse(&argv)?.with_password(password.as_deref())? {
        Command::Help(cmd) => {
            let text = match cmd {
                Some("ls") => args::LS,
                Some("inspect") => args::INSPECT,
                Some("watch") => args::WATCH,
                Some("unlink") => args::UNLINK,
                Some("resize") => args::RESIZE,
                Some("reopen") => args::REOPEN,
                Some("redis") => args::REDIS,
                _ => args::OVERVIEW,
            };
            out(&format!("{text}\n"))
        }
        Command::Ls { redis, json } => out(&ls::run(redis.as_ref(), json)?),
        Command::Inspect { target, json } => {
            let source = target.open()?;
            let seen = source.inspect();
            // Whatever the look gave: the detach must be bounded too.
            source.close();
            let seen = seen?;
            out(&if json {
                format!("{}\n", render::inspection_json(&seen))
            } else {
                render::inspection_table(&target.describe(), &seen)
            })
        }
        Command::Watch {
            target,
            json,
            interval,
            count,
        } => watch::run(&target, json, interval, count),
        Command::Change { target, change } => out(&change::run(&target, change)?),
        Command::Unlink { target } => target.unlink(),
    }
}

fn main() {
    let argv: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string()
                .map_err(|a| CliError::Usage(format!("argument {a:?} is not UTF-8")))
        })
        .collect();
    let code = match argv.and_then(run) {
        Ok(()) => 0,
        Err(CliError::StdoutClosed) => 0,
        Err(e) => {
            // One line, whatever names or server replies it quotes; not
            // `eprintln!`, which panics (exit code 101) when stderr is a
            // pipe whose reader has gone (`2>&1 | head`).
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "volt-sem: {}",
                render::printable(&e.to_string())
            );
            e.exit_code()
        }
    };
    std::process::exit(code);
}
