//! Throwaway TLS certificates for tests against a redis-server with a TLS
//! port, made with the openssl CLI (Debian's `openssl` package). Shared by
//! the Redis crate's test support and (by path) the CLI's. std only.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A test CA, a server certificate for 127.0.0.1 and localhost, a client
/// certificate, and a second, unrelated CA: made with the openssl CLI in a
/// temporary directory (removed on drop).
pub struct Certs {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Certs {
    pub fn generate() -> Certs {
        let dir = std::env::temp_dir().join(format!(
            "volt-sem-redis-certs-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl (Debian's openssl package)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for ca in ["ca", "other-ca"] {
            let (key, crt, subj) = (
                format!("{ca}.key"),
                format!("{ca}.crt"),
                format!("/CN=volt-sem test {ca}"),
            );
            let mut a = vec![
                "req", "-x509", "-days", "2", "-subj", &subj, "-keyout", &key, "-out", &crt,
            ];
            a.extend(ec);
            run(&a);
        }
        for (who, usage) in [("server", "serverAuth"), ("client", "clientAuth")] {
            let (key, csr, crt) = (
                format!("{who}.key"),
                format!("{who}.csr"),
                format!("{who}.crt"),
            );
            let ext = format!("{who}.ext");
            std::fs::write(
                dir.join(&ext),
                format!(
                    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage={usage}\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                ),
            )
            .unwrap();
            let subj = format!("/CN={who}");
            let mut a = vec!["req", "-subj", &subj, "-keyout", &key, "-out", &csr];
            a.extend(ec);
            run(&a);
            run(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ]);
        }
        Certs {
            ca: dir.join("ca.crt"),
            other_ca: dir.join("other-ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
            dir,
        }
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
