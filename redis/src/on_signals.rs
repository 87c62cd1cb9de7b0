//! [`end_sessions_on_signals`]: SIGTERM and SIGINT end this process's
//! Redis sessions before the process ends.
//!
//! Why: a session's permits and queued requests go back when the session
//! ends. A normal exit ends every live session (the `atexit` handler in
//! `session.rs`), but the default action of SIGTERM and SIGINT kills the
//! process without running it, so the permits stay held until the lease
//! expires (10 s by default) - on every deploy, every Ctrl-C.
//!
//! How: the handler only writes the signal number to a pipe (`write` is
//! async-signal-safe; nothing else here is). A thread of ours reads it, ends
//! every live session (network I/O, locks: fine on a plain thread), puts the
//! disposition that was there before back, and raises the signal again. So
//! the process ends by the signal (its exit status says so, as without this
//! call), or, if the application had its own handler, that handler runs and
//! decides. One-shot per signal: after that the previous disposition stays.

use std::io;

/// Makes SIGTERM and SIGINT end every live Redis session of this process
/// (their permits go to the next waiters at once, their queued requests
/// leave the queue) before the signal takes its previous effect: the
/// default one ends the process by the signal; a handler the application
/// installed before this call runs afterwards (the process may go on: the
/// ended sessions' queued requests have then failed with
/// [`Error::Closed`](crate::Error::Closed), their callbacks run on the
/// library's signal thread, and their lease watches fired, as after
/// `disconnect`). A signal ignored when this
/// is called (a background job's SIGINT, say) stays ignored: it ends
/// neither the sessions nor the process. Idempotent. Unix only
/// ([`io::ErrorKind::Unsupported`] elsewhere).
///
/// A process that ends by returning from `main` or calling `exit` needs no
/// call: live sessions end from an `atexit` handler. `SIGKILL` cannot be
/// caught: the lease bounds what a killed process keeps.
pub fn end_sessions_on_signals() -> io::Result<()> {
    imp::install()
}

#[cfg(unix)]
mod imp {
    use std::io;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{Mutex, OnceLock};

    const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

    /// The pipe's write end, for the handler (-1 before `install`).
    static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
    /// The outcome of the one installation.
    static INSTALLED: OnceLock<Result<(), (io::ErrorKind, String)>> = OnceLock::new();
    /// The dispositions replaced, put back before the signal is raised again.
    static PREVIOUS: Mutex<Vec<(libc::c_int, libc::sigaction)>> = Mutex::new(Vec::new());

    extern "C" fn on_signal(sig: libc::c_int) {
        // Async-signal-safe: an atomic load and write(2). errno is saved
        // because the interrupted code may be reading it.
        // SAFETY: __errno_location/__error return this thread's errno slot.
        let errno = unsafe { *errno_slot() };
        let fd = WRITE_FD.load(Ordering::Relaxed);
        let byte = sig as u8;
        // SAFETY: `byte` is a live local; a failed write (full pipe: a
        // signal already pending) loses nothing the thread needs.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
        // SAFETY: as above.
        unsafe { *errno_slot() = errno };
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    unsafe fn errno_slot() -> *mut libc::c_int {
        // SAFETY: always valid for the calling thread.
        unsafe { libc::__errno_location() }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    unsafe fn errno_slot() -> *mut libc::c_int {
        // SAFETY: always valid for the calling thread.
        unsafe { libc::__error() }
    }

    pub(super) fn install() -> io::Result<()> {
        INSTALLED
            .get_or_init(|| try_install().map_err(|e| (e.kind(), e.to_string())))
            .clone()
            .map_err(|(kind, text)| io::Error::new(kind, text))
    }

    fn try_install() -> io::Result<()> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        for fd in fds {
            // Not inherited by exec'd children; the write end never blocks
            // the handler.
            // SAFETY: descriptors this function just made.
            unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        // SAFETY: as above.
        unsafe {
            let flags = libc::fcntl(fds[1], libc::F_GETFL);
            libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        WRITE_FD.store(fds[1], Ordering::Relaxed);
        let read_fd = fds[0];
        std::thread::Builder::new()
            .name("volt-sem-signals".into())
            .spawn(move || serve(read_fd))?;
        let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
        for sig in SIGNALS {
            // A signal ignored now stays ignored (a background job's SIGINT,
            // a nohup'd process): ending the sessions on it would take the
            // permits of a process that goes on running.
            // SAFETY: zeroed is a valid sigaction to read into; a null `act`
            // only reads the disposition.
            let ignored = unsafe {
                let mut now: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut now) != 0 {
                    return Err(io::Error::last_os_error());
                }
                now.sa_sigaction == libc::SIG_IGN
            };
            if ignored {
                continue;
            }
            // SAFETY: zeroed is a valid sigaction; the handler is an
            // `extern "C" fn(c_int)` that never unwinds.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                act.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut act.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &act, &mut old) != 0 {
                    return Err(io::Error::last_os_error());
                }
                previous.push((sig, old));
            }
        }
        Ok(())
    }

    /// The thread: for each signal read, end the sessions, put the previous
    /// disposition back and raise the signal again.
    fn serve(read_fd: libc::c_int) {
        loop {
            let mut byte = 0u8;
            // SAFETY: reads one byte into a live local.
            let r = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if r != 1 {
                return;
            }
            let sig = libc::c_int::from(byte);
            let _ = std::panic::catch_unwind(crate::session::end_all_sessions);
            let previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, old)) = previous.iter().find(|(s, _)| *s == sig) {
                // SAFETY: `old` is the disposition sigaction gave us.
                unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
            }
            drop(previous);
            // SAFETY: raising a signal at our own process.
            unsafe { libc::kill(libc::getpid(), sig) };
        }
    }
}

#[cfg(not(unix))]
mod imp {
    pub(super) fn install() -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "end_sessions_on_signals: Unix signals only",
        ))
    }
}
