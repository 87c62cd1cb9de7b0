//! Which Redis process answers on a loopback port: how a test server knows
//! that it is the one answering, not another test's server handed the same
//! free port. Shared by the Redis crate's test support and (by path) the
//! CLI's and the backend's. std only.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// The pid of the Redis process (server or Sentinel) that answers on
/// loopback `port` (`INFO server`'s `process_id`, after `AUTH` with
/// `password`), or `None` (nothing there yet, a refusal, no answer).
pub fn answering_pid(port: u16, password: Option<&str>) -> Option<u32> {
    use std::io::Read;
    /// One command as a RESP array.
    fn resp(args: &[&str]) -> Vec<u8> {
        let mut v = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            v.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
        }
        v
    }
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    let mut req = Vec::new();
    if let Some(p) = password {
        req.extend(resp(&["AUTH", p]));
    }
    req.extend(resp(&["INFO", "server"]));
    s.write_all(&req).ok()?;
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(rest) = text.split("\r\nprocess_id:").nth(1) {
            if let Some(end) = rest.find("\r\n") {
                return rest[..end].trim().parse().ok();
            }
        } else if text.starts_with('-') || text.contains("\r\n-") {
            // An error (a wrong or missing password, a server still
            // loading): not a server we can tell is ours.
            return None;
        }
    }
}
