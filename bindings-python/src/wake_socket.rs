//! The socket pair of a wake channel (see `src/wake.rs`): the native wake
//! callback writes one byte to `tx`, and whoever watches `rx` drains the
//! channel's queue on the loop's thread.
//!
//! # Per platform
//!
//! * Unix: a `UnixStream` pair (`socketpair(AF_UNIX)`).
//! * Windows: a connected TCP pair on the loopback interface, made the way
//!   CPython's `socket.socketpair()` makes one there (a listener on
//!   127.0.0.1, port chosen by the system, one connection, the listener
//!   closed). The accepted end is checked to be our own connection: another
//!   local process could connect to the listener first, and its socket is
//!   dropped. Windows' `select()` (asyncio's `SelectorEventLoop`, trio) only
//!   watches sockets, which is why it is a socket and not a pipe.
//!
//! Both ends are non-blocking: a write that finds the buffer full is dropped
//! (a byte is already pending, which is all the reader needs), and the reader
//! empties the socket without ever blocking.
//!
//! # Who reads `rx`
//!
//! With the *reader* wake path (every Unix loop, Windows' `SelectorEventLoop`,
//! trio everywhere) the loop watches `rx` itself and the drain empties it
//! ([`WakeSocket::drain`]) before taking the queue. With the *thread* wake path
//! (loops with no `add_reader`, such as Windows' default `ProactorEventLoop`)
//! a helper Python thread blocks in `recv` on a duplicate of `rx`
//! ([`WakeSocket::reader_handle`]) and the drain must not read it (the helper
//! turned the shared socket blocking; see `volt_sem/_glue.py`).

use std::io::{self, Read, Write};

#[cfg(unix)]
type Stream = std::os::unix::net::UnixStream;
#[cfg(windows)]
type Stream = std::net::TcpStream;

/// A raw socket as Python sees it: a file descriptor on Unix, a `SOCKET`
/// handle on Windows (both ints to `socket.socket(fileno=...)` and
/// `loop.add_reader`).
#[cfg(unix)]
pub(crate) type RawSocket = i32;
#[cfg(windows)]
pub(crate) type RawSocket = u64;

/// The connected pair: `tx` for the wake callback, `rx` for the loop.
pub(crate) struct WakeSocket {
    rx: Stream,
    tx: Stream,
}

impl WakeSocket {
    pub(crate) fn new() -> io::Result<Self> {
        let (rx, tx) = pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(WakeSocket { rx, tx })
    }

    /// One byte for the reader; never blocks, never fails loudly (a full buffer
    /// already holds a pending signal; a closed reader no longer needs one).
    pub(crate) fn signal(&self) {
        let _ = (&self.tx).write(&[1]);
    }

    /// Consumes every pending byte (reader wake path only; never blocks).
    pub(crate) fn drain(&self) {
        let mut buf = [0u8; 256];
        while let Ok(k) = (&self.rx).read(&mut buf) {
            if k == 0 {
                break;
            }
        }
    }

    /// `rx` itself, for the loop to watch.
    pub(crate) fn fileno(&self) -> RawSocket {
        raw(&self.rx)
    }

    /// A new descriptor (handle) of `rx`, owned by the caller from now on (the
    /// thread wake path's helper wraps it in a Python `socket`, which closes it).
    pub(crate) fn reader_handle(&self) -> io::Result<RawSocket> {
        Ok(into_raw(self.rx.try_clone()?))
    }
}

#[cfg(unix)]
fn pair() -> io::Result<(Stream, Stream)> {
    Stream::pair()
}

#[cfg(windows)]
fn pair() -> io::Result<(Stream, Stream)> {
    use std::net::{Ipv4Addr, TcpListener};
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let tx = Stream::connect(listener.local_addr()?)?;
    let ours = tx.local_addr()?;
    loop {
        let (rx, peer) = listener.accept()?;
        if peer == ours {
            // One-byte writes: no Nagle delay for the signal.
            tx.set_nodelay(true)?;
            return Ok((rx, tx));
        }
        // Someone else's connection (dropped): keep waiting for ours, which the
        // backlog holds already.
    }
}

#[cfg(unix)]
fn raw(s: &Stream) -> RawSocket {
    use std::os::unix::io::AsRawFd;
    s.as_raw_fd()
}

#[cfg(windows)]
fn raw(s: &Stream) -> RawSocket {
    use std::os::windows::io::AsRawSocket;
    s.as_raw_socket()
}

#[cfg(unix)]
fn into_raw(s: Stream) -> RawSocket {
    use std::os::unix::io::IntoRawFd;
    s.into_raw_fd()
}

#[cfg(windows)]
fn into_raw(s: Stream) -> RawSocket {
    use std::os::windows::io::IntoRawSocket;
    s.into_raw_socket()
}
