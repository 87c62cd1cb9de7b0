//! The two ways a command fails: how it was called (exit code 2), or what
//! it found (exit code 1). Either is printed as one line on stderr,
//! `volt-sem: <message>`.

use std::fmt;

#[derive(Debug, PartialEq)]
pub enum CliError {
    /// A usage error: unknown command or option, missing or extra argument.
    Usage(String),
    /// The command ran and failed (no such semaphore, Redis unreachable...).
    Failed(String),
    /// Whoever read the output went away (`volt-sem ls | head`): stop
    /// quietly, as other tools do.
    StdoutClosed,
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failed(_) => 1,
            CliError::StdoutClosed => 0,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => f.write_str(m),
            CliError::StdoutClosed => f.write_str("standard output closed"),
        }
    }
}

/// Writes `text` to stdout and flushes it (a closed pipe is
/// [`CliError::StdoutClosed`], never a panic as with `print!`).
pub fn out(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => CliError::StdoutClosed,
            _ => CliError::Failed(format!("standard output: {e}")),
        })
}
