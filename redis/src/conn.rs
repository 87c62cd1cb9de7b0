//! A connection to a standalone Redis or to a Redis Cluster, behind one
//! type. Every key of one semaphore shares one hash tag, so on a cluster
//! every script, and the `BLPOP` on a notification list, goes to the one
//! node that owns the semaphore's slot (redis-rs routes by the first key and
//! follows `MOVED` after a resharding).

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Cmd, ConnectionLike, RedisResult, Value};

use crate::ConnectOptions;

/// Where to connect.
#[derive(Clone)]
pub(crate) enum Client {
    Single(redis::Client),
    Cluster(ClusterClient),
}

/// One open connection.
pub(crate) enum Conn {
    Single(redis::Connection),
    Cluster(Box<ClusterConnection>),
}

impl Client {
    /// `url`, or with `cluster`, comma-separated seed node URLs.
    pub(crate) fn open(url: &str, opts: &ConnectOptions) -> RedisResult<Client> {
        if opts.cluster {
            let seeds: Vec<&str> = url.split(',').map(str::trim).collect();
            ClusterClient::builder(seeds)
                .connection_timeout(opts.connect_timeout)
                .response_timeout(opts.command_timeout)
                .build()
                .map(Client::Cluster)
        } else {
            redis::Client::open(url).map(Client::Single)
        }
    }

    pub(crate) fn connect(&self, timeout: Duration) -> RedisResult<Conn> {
        match self {
            Client::Single(c) => c.get_connection_with_timeout(timeout).map(Conn::Single),
            Client::Cluster(c) => c.get_connection().map(|c| Conn::Cluster(Box::new(c))),
        }
    }
}

impl Conn {
    pub(crate) fn set_timeouts(&self, read: Duration, write: Duration) -> RedisResult<()> {
        match self {
            Conn::Single(c) => {
                c.set_read_timeout(Some(read))?;
                c.set_write_timeout(Some(write))
            }
            Conn::Cluster(c) => {
                c.set_read_timeout(Some(read))?;
                c.set_write_timeout(Some(write))
            }
        }
    }

    pub(crate) fn set_read_timeout(&self, d: Duration) -> RedisResult<()> {
        match self {
            Conn::Single(c) => c.set_read_timeout(Some(d)),
            Conn::Cluster(c) => c.set_read_timeout(Some(d)),
        }
    }

    fn inner(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Conn::Single(c) => c,
            Conn::Cluster(c) => &mut **c,
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.inner().req_packed_command(cmd)
    }
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.inner().req_packed_commands(cmd, offset, count)
    }
    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.inner().req_command(cmd)
    }
    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
    fn supports_pipelining(&self) -> bool {
        match self {
            Conn::Single(c) => c.supports_pipelining(),
            Conn::Cluster(c) => c.supports_pipelining(),
        }
    }
    fn check_connection(&mut self) -> bool {
        self.inner().check_connection()
    }
    fn is_open(&self) -> bool {
        match self {
            Conn::Single(c) => c.is_open(),
            Conn::Cluster(c) => c.is_open(),
        }
    }
}
