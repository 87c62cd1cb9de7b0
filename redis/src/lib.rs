//! One limit across machines: a volt-sem whose state lives in Redis, shared
//! by every process on every host that connects to the same name. Strictly
//! FIFO and weighted across all clients, woken without polling, leased, and
//! fenced.
//!
//! ```no_run
//! use volt_sem_redis::{ConnectOptions, RedisSemaphore};
//! # fn main() -> Result<(), volt_sem_redis::Error> {
//! // Every client that connects to "db-pool" with 50 permits shares the same 50.
//! let sem = RedisSemaphore::connect("redis://127.0.0.1:6379", "db-pool", 50, ConnectOptions::new())?;
//! let permit = sem.acquire_blocking(2)?;
//! // Pass permit.token() to the guarded resource: it rejects smaller tokens.
//! println!("fencing token {}", permit.token());
//! drop(permit); // released
//! # Ok(()) }
//! ```
//!
//! # Client library
//!
//! [redis-rs](https://docs.rs/redis) 1.x, synchronous API only, default
//! features off (`script`, `acl`, `tls-rustls`; not `cluster`, whose
//! connection retries a script after an I/O error and sleeps over a second
//! after a `TRYAGAIN`: the Cluster is followed here, see "Redis Cluster"):
//! no async runtime is forced on users or on
//! the C, Python and Node bindings, which plug their own wakers into the same
//! callback contract as volt-sem ([`RedisSemaphore::acquire_raw`]). fred was
//! the alternative; it is built on tokio and would run a runtime inside every
//! process for what two blocking connections and two threads do. redis-rs's
//! `Script` gives `EVALSHA` with the `NOSCRIPT` fallback to `EVAL`.
//!
//! # Design
//!
//! Every operation is one Lua script (atomic on the server), one round trip:
//! an uncontended acquire + release is two round trips. Every key of one
//! semaphore shares the hash tag `{prefix:name}` (prefix
//! [`ConnectOptions::prefix`], default `volt-sem`), so one semaphore lives in
//! one Redis Cluster slot:
//!
//! ```text
//!   {p:n}:meta      hash   total | avail | closed | token (last fencing token) | inc (incarnation id)
//!                          | seq (last arrival stamp) | reap (at or below every session's lease deadline)
//!                          | debt (a shrink's debt, absent when 0: see *Changing the total*)
//!                          | schema (the keys' schema version, [`SCHEMA_VERSION`]: see *Upgrading*)
//!   {p:n}:queue     zset   request id -> arrival stamp, max(previous + 1, server time in µs)
//!                          (FIFO order = the order Redis ran the scripts)
//!   {p:n}:entries   hash   request id -> "requested:granted so far"
//!   {p:n}:sessions  zset   session id -> lease deadline (server ms)
//!   {p:n}:held      hash   session id -> permits held (0 when none: the field lives as long as
//!                          the session, from connect to its end or reap; see below)
//!   {p:n}:grants    hash   request id -> token of a completed grant not yet collected ("0": closed,
//!                          "T": failed by set_total, above the new total)
//!   {p:n}:own       zset   request id (score 0): a lexicographic index of each session's requests
//!   {p:n}:info      hash   session id -> "pid label host" | <session id>:s -> when its holding
//!                          last rose from 0 (server ms) | <session id>:t -> its latest token
//!                          | <session id>:h -> when its agent's next heartbeat is due (server ms)
//!   {p:n}:note:<session>   list   notifications for that session's agent
//! ```
//!
//! A request id is `<session id>:<counter>`. Permits live in exactly one
//! place: `avail`, a session's `held` (which includes completed grants not yet
//! collected), or the partial grant of a queued request. **Conservation**:
//! `avail + Σ held + Σ partial == total + debt` after every script (`debt`
//! is 0 but after a shrink below what is held, see *Changing the total*);
//! the tests check it after every crash ([`RedisSemaphore::census`]).
//!
//! A session's `held` field is created at 0 by `connect` and kept at 0
//! when its holding comes back to 0 (a release deletes nothing: one call
//! fewer per release), until the session ends or is reaped. Readers treat
//! a field at 0 and a missing one alike (the census sums, `inspect` lists
//! holdings above 0), which earlier versions of this crate did too, and
//! each version only ever deletes its own sessions' fields or those of
//! sessions it ends or reaps: so handles of this version and of the
//! earlier ones (which delete a holding that comes back to 0, and whose
//! sessions have no field until they first hold) can share a semaphore.
//! Checked on 2026-11-28 with processes built from 56f2432 and from this
//! version on the same semaphores of one redis-server 7.0.15 at once
//! (weighted acquires, timeouts, `try_acquire`, hand-offs, `set_total`
//! from both, 193 processes killed by `SIGKILL` and reaped, 1.5 s leases;
//! 20,579 grants in 150 s): all 9,841 censuses and 8,495 inspects of
//! either version conserved, no token twice, never more than the total
//! held, 5 queues behind a holder of either version (4 of them killed)
//! granted in FIFO order; a semaphore created by either version and then
//! used by the other alone ended with every permit available.
//!
//! * **Strict FIFO, weights included, direct hand-off.** An acquire takes
//!   permits at once only if the queue is empty and enough are available;
//!   otherwise it is queued at the tail, and if it is the head it drains
//!   `avail` as a partial grant. So a queued request exists ⇒ `avail == 0`,
//!   and neither a later `acquire(1)` nor `try_acquire` can overtake a queued
//!   `acquire(4)`. A release hands its permits to the head itself: partial
//!   grants accumulate at the head until complete; the hand-off stops at a
//!   head it cannot complete; only the surplus of an emptied queue is banked.
//!   A cancel returns its partial grant through the same hand-off.
//! * **No polling, no thundering herd.** The release script completes the
//!   grants itself and pushes `"<request id> <token>"` to the notification
//!   list of exactly the sessions it completed. Each process's agent thread
//!   waits on its list with `BLPOP` on its own connection. A woken waiter
//!   already holds its permits: no second round trip, and one wake-up
//!   (the agent calls the waiter's callback). A release that
//!   completes requests of its own session (other tasks or threads of the
//!   same process) also gets them in its reply, and the door thread that
//!   ran it wakes them, one hop sooner than through the agent. A list (rather than
//!   pub/sub or RESP3 push) keeps a notification sent while the client is
//!   reconnecting: it is read after the reconnect. Notifications are hints,
//!   the hashes are the truth: every heartbeat asks about each request still
//!   pending locally and completes those whose grant record exists, so a lost
//!   notification delays a wake by at most one heartbeat, and never loses a
//!   grant. Collected grant records are forgotten by the next heartbeat.
//! * **Sessions and leases.** Each connected handle has a session with a
//!   lease ([`ConnectOptions::lease`], default 10 s) renewed by its agent's
//!   heartbeat every lease/3 (and by every script it runs). Lease deadlines
//!   are computed with the server's clock (`TIME` inside the scripts), so
//!   client clock skew cannot break them. Every script first reaps (up to 16)
//!   sessions whose deadline passed (acquire and release skip it on their
//!   fast path when `meta.reap`, kept at or below every lease deadline, shows
//!   none can have passed): their held permits, uncollected grants
//!   and the partial grants of their queued requests go back through the
//!   hand-off, their requests leave the queue. No reaper process is needed:
//!   while a client waits, its agent's heartbeat reaps, every lease/3 and
//!   also as soon as the earliest lease deadline of any session has passed
//!   (the heartbeat's reply says when that is; a queued request that needs
//!   it sooner wakes the agent), so **the permits of a dead client reach a
//!   waiter within its lease** (counted from its last renewal) and a few
//!   milliseconds, whatever the waiter's own lease. The price, when leases
//!   differ: a waiting client heartbeats about once per *shortest* live
//!   lease (at that session's deadline as last seen, found renewed), not
//!   once per third of its own; with equal leases nothing changes. Measured
//!   (scripts per second on the server, one semaphore): 8 waiters with 30 s
//!   leases behind a live 1 s-lease holder, 11.7 in all (2.5 of them the
//!   holder's own); behind a 300 ms-lease holder, 39; behind a 30 s one,
//!   none but each session's own heartbeat every 10 s. A handle dropped
//!   normally ends its session at once; so does the
//!   process's exit (an `atexit` handler) for handles never dropped (a
//!   `static`, a leak, `std::process::exit`).
//! * **Fencing tokens.** Every grant gets `max(previous + 1, server time in
//!   µs)`: strictly increasing per semaphore, and still increasing after a
//!   failover that lost the last stored token (as long as the new primary's
//!   clock is not behind). [`Permit::token`], [`RedisWaiter::token`].
//! * **Lease loss is visible.** A session is lost when a script reports it
//!   expired, or when the handle has not renewed it for a whole lease (a
//!   `SIGSTOP`, a long GC pause, Redis out of reach): then every waiter of the
//!   handle fails with [`Error::LeaseExpired`], each [`Permit`] of it reports
//!   [`Permit::is_lost`] and completes [`Permit::lost`], and releasing those
//!   permits returns [`Error::LeaseExpired`] and releases nothing (they were
//!   already reclaimed; nothing is released twice). The next acquire starts
//!   a new session transparently. **When**: at most one lease after the
//!   start of the last renewal Redis confirmed (the handle counts from when
//!   it sent the renewal, the server from when it ran it, so the handle
//!   always knows first), whatever the agent is blocked in when the network
//!   goes silent: [`Permit::is_lost`] and [`LeaseWatch::is_lost`] read the
//!   handle's clock, and every blocking call of the agent (its `BLPOP`, a
//!   heartbeat, a reconnect, a back-off) is capped by what remains of the
//!   lease, so the agent gives the session up (and wakes [`Permit::lost`],
//!   the watches and the waiters) when the lease ends. A renewal confirmed
//!   after that does not revive it. Measured behind a proxy that
//!   black-holes the connections (`tests/black_hole.rs`): the loss is seen
//!   10.0 s after the cut with the default 10 s lease and 2.0 s after it
//!   with a 2 s lease, where another client can be granted the permit only
//!   after the server's lease ended, later.
//! * **Foreign keys.** Redis does not undo a script's writes when a command
//!   inside it fails, so a key of the semaphore holding another type (some
//!   other program's `SET` on `{p:n}:queue`) would stop a script half way.
//!   Every script meets such a key before its first write: it reads each key
//!   it may write first (a `TYPE` check for those it would only write: six
//!   on the scripts off the latency paths, two on a release that completes
//!   a hand-off), or writes it first, or undoes its one earlier write. The
//!   call fails with [`Error::WrongType`] and changes nothing; a release so
//!   refused gives its session up (as any refused release), and ending it
//!   gives its permits back once the key is gone. A notification list of
//!   another type loses its notifications (hints: the heartbeat repairs
//!   them) and expires.
//! * **Foreign values.** A field of the semaphore's own keys holding a value
//!   volt-sem never writes (an operator's `HSET`, an old tool, a partial
//!   restore): a word, a negative or fractional count, one in exponent form
//!   or beyond 2^53, `avail` above the total, `closed` other than 0 or 1, a
//!   queued request's record that is not `need:got` with `got < need`. The
//!   scripts read every count with its range checked, before the first
//!   write of the part that reads it (a hand-off reads the records and
//!   holdings it will change first; the uncontended fast paths check the
//!   counters they read anyway and undo their one write on a negative
//!   holding): the call fails with [`Error::WrongType`], naming the key and
//!   the field, and changes nothing, as for a key of another type. Such a
//!   value used to fail a script half way (a Lua error reported as
//!   [`Error::Redis`], after writes: permits lost), or be believed (`avail`
//!   above the total granted more than the total). A value in range but
//!   wrong (`avail` 1 where 0 is right) cannot be told from a right one by
//!   a call; [`census`](RedisSemaphore::census) shows it (`conserved()` is
//!   false). Records only [`inspect`] reads (when a holding began, its
//!   token) read as unknown. A request's grant record (`{p:n}:grants`: a
//!   token, `0` or `T`) holding another value fails that request's waiter
//!   with [`Error::WrongType`] when its heartbeat reads the record (to
//!   repair a lost notification; a delivered one completes the waiter, and
//!   the record is forgotten unread), and its cancel before any write;
//!   then the handle gives the session up, as for a refused release:
//!   whether Redis counted the request's permits for the session cannot be
//!   told, and the session's end gives back what it counts. `0` or `T`
//!   written over a token is in range: read as a close or a refusal, the
//!   session keeps the permit until it ends. A token with a leading zero
//!   (`007`) is not what a script writes either: that value.
//! * **Foreign notifications.** A notification list (`{p:n}:note:<session>`,
//!   what the agent's `BLPOP` reads) holding a note volt-sem never writes
//!   (a push by another program: a word, an empty note, a grant record
//!   that is not a token, `0` or `T`, such as a negative, signed,
//!   exponent-form or 2^64 - 1 one, a request id with a sign or a leading
//!   zero, one of another session or never issued, bytes that are no
//!   UTF-8): the agent grants and fails nothing on it (u64::MAX read as
//!   `T` failed the waiter with [`Error::TooManyPermits`]; `+5` granted a
//!   permit Redis had not counted), and runs its heartbeat at once, which
//!   reads the grant records of the session's waiting requests: a waiter
//!   whose notification the note took the place of is served now, not at
//!   the next heartbeat, and one whose record is foreign fails with
//!   [`Error::WrongType`] (above). A note in the exact form the scripts
//!   write (`<session>:<n> <token>`, naming a request that waits) is
//!   believed: telling it from a real one would cost a round trip per
//!   queued grant. A well-formed note for a request that no longer waits
//!   (an old one) is dropped.
//! * **Uncertain outcomes.** If the connection fails while a mutating script
//!   was in flight, the session is given up (ended when Redis is reachable
//!   again, else it expires): a retry can never count a permit twice.
//! * **Giving a session up.** A session the handle gives up after an
//!   answer from Redis (a refused release or cancel, a lease a call finds
//!   lost) is ended at once: the handle pushes a `bye` on that session's
//!   notification list (on the connection that answered; never a new one),
//!   which ends the agent's `BLPOP` there, and the agent ends the session
//!   (what Redis counts for it goes to the next waiters) and moves to the
//!   handle's next session. It used to wait for the agent's next heartbeat,
//!   up to a third of the lease (a queued request of the next session was
//!   served that late too). Where the push fails (no connection, an
//!   uncertain outcome, a list of another type) the heartbeat bound stands.
//! * **Incarnation.** The semaphore's `meta` carries a random incarnation id
//!   chosen by its creator; every script checks it. A Redis restarted empty
//!   (or flushed) has none: the handle fails its holders and waiters with
//!   [`Error::StateLost`] and refuses to go on, rather than re-create the
//!   semaphore with all permits free while old holders still run. A
//!   `connect` that then creates it anew, where the `meta` hash alone went
//!   (evicted, see *Running Redis in production*, or deleted) and the other
//!   keys stayed, carries over the holdings of the old sessions whose lease
//!   still runs (held in the new incarnation until those sessions are
//!   reaped; a debt where they exceed the new total; a session whose
//!   holding is unknown, the `held` hash gone too, counts as holding the
//!   whole total) and drops the rest of the old state: it never grants
//!   their permits again.
//! * `connect` with a total different from the existing semaphore's fails
//!   with [`Error::TotalMismatch`] and changes nothing, unless
//!   [`ConnectOptions::resize`] (see *Changing the total*). `connect` to a
//!   name nobody created creates it, unless [`ConnectOptions::attach_only`]:
//!   then [`Error::NotFound`], checked in the script that would create it,
//!   and nothing is written.
//! * **What stays in Redis.** Once every session ended, only the `:meta`
//!   hash (a few hundred bytes, no TTL); everything else is empty (and so
//!   gone) or expires within a minute. [`delete`] removes the name, refused
//!   ([`Error::InUse`]) while any session is live.
//!
//! ## Cost of each script (n = queue length)
//!
//! | script | cost |
//! | --- | --- |
//! | acquire / try_acquire | O(log n) |
//! | release | O((g + 1) log n), g = waiters it completes (each is woken: inherent) |
//! | cancel | O(log n) + the hand-off of its partial grant |
//! | heartbeat | O((a + q) log n), a grants acked, q requests of this client queried |
//! | reap of one dead session | O((k + 1) log n), k its requests; ≤ 16 sessions per script |
//! | close | O(n log n): it wakes everyone |
//! | set_total | O(n log n): it checks every queued request against the new total |
//! | census, inspect (diagnostics) | O(n + sessions) |
//!
//! ## What is guaranteed, and what is not
//!
//! Guaranteed while leases hold and Redis does not lose acknowledged writes:
//! at most `total` permits are held, grants are strictly FIFO across every
//! client, and the permits of a crashed or partitioned client come back
//! within its lease (and the few milliseconds a reap takes) to the clients
//! waiting for them.
//!
//! Not guaranteed: **a paused holder past its lease** still believes it holds
//! its permits until its agent runs again; meanwhile they were granted to
//! someone else. This is inherent to leases; the fencing token is the
//! defence: a guarded resource that remembers the largest token it saw
//! rejects the paused holder's smaller one. **A failover with asynchronous
//! replication** may lose the last writes (grants, releases): a replica
//! promoted without them may grant permits again.
//! [`ConnectOptions::min_replicas_acked`] (Redis `WAIT`) narrows that
//! window for the grants a client receives, but is not consensus: see
//! [Replicas and `WAIT`](#replicas-and-wait).
//!
//! ## Changing the total
//!
//! [`RedisSemaphore::set_total`] changes the total for every client, in one
//! script (`set_total.lua`); [`ConnectOptions::resize`] does the same in the
//! `connect` script (a rolling deploy from 8 to 10 permits is one option,
//! not a key deletion; without it `connect` still fails with
//! [`Error::TotalMismatch`]); with several, **the last one wins**.
//!
//! * **Growing** hands the new permits on as a release does (the same
//!   hand-off): to the queue head(s) first, FIFO, weights included, the rest
//!   to `avail`.
//! * **Shrinking never revokes held permits.** The cut comes out of `avail`
//!   as far as it goes; the rest is a **debt** (`meta.debt`), and every
//!   permit that comes back pays it first, before any waiter or `avail`:
//!   releases, cancelled partial grants, a closed queue's partial grants and
//!   the permits of sessions reaped at their lease's expiry (all go through
//!   the one hand-off function). `avail` is 0 while a debt exists. So at
//!   most max(new total, total before the shrink) permits are held, and the
//!   new total holds once the debt is paid.
//! * Either way, every **queued request above the new total fails at once**
//!   with [`Error::TooManyPermits`] (the error a request above the total
//!   always got): its grant record says `T` and its session is notified as
//!   a close notifies (the agent, or the heartbeat's repair of a lost
//!   notification, completes the waiter with the error); its partial grant
//!   is handed on, debt first; the other requests keep their place.
//!
//! [`Census::debt`] reports the debt and `conserved()` checks `available +
//! held + partial == total + debt`; [`RedisSemaphore::inspect`] reports the
//! **new** total, with `Σ holders.permits + Σ waiters.granted` above it by
//! the debt (and `available == 0`) until the debt is paid.
//! [`RedisSemaphore::total_permits`] is the total as the handle last heard
//! it (another client's change reaches it with its next census, inspect,
//! `set_total` or new session); Redis alone checks requests against the
//! total. A handle that registers a new session (after its lease was lost)
//! adopts whatever total the semaphore has then.
//! [`RedisSemaphore::reopen`] undoes [`close`](RedisSemaphore::close) for
//! every client (requests the close failed stay failed; acquires always
//! ask Redis whether it is closed, so a handle that saw the close learns of
//! the reopen with its next request).
//!
//! # Inspecting
//!
//! [`RedisSemaphore::inspect`] shows who holds a semaphore's permits and
//! who waits for them, across every host, in one script (one snapshot, in
//! which `available + Σ holders.permits + Σ waiters.granted == total`). It
//! first reclaims every session whose lease ran out, so a client killed
//! with `kill -9` is no longer listed once its lease has passed. Each entry
//! names the **label** of the handle ([`ConnectOptions::label`], default
//! `"<hostname>:<pid>"`), its host and pid, recorded in Redis when the
//! session starts; the label is also the client name of the handle's
//! connections (`CLIENT SETNAME`, best effort), so `CLIENT LIST` shows it.
//!
//! ```no_run
//! use volt_sem_redis::{ConnectOptions, RedisSemaphore};
//! # fn main() -> Result<(), volt_sem_redis::Error> {
//! let opts = ConnectOptions::new().label("billing-worker-3");
//! let sem = RedisSemaphore::connect("redis://127.0.0.1:6379", "db-pool", 50, opts)?;
//! let _permit = sem.acquire_blocking(2)?;
//! let seen = sem.inspect()?;
//! for h in &seen.holders {
//!     println!("{} ({}, pid {}) holds {} for {:?}, lease {:?} left, token {:?}",
//!         h.label, h.host, h.pid, h.permits, h.held_for, h.lease_remaining, h.token);
//! }
//! for w in &seen.waiters {
//!     println!("#{} {} wants {} (has {}) for {:?}", w.position, w.label, w.permits, w.granted, w.waiting_for);
//! }
//! # Ok(()) }
//! ```
//!
//! What the times mean, all by the Redis server's clock (so that the hosts'
//! clocks never need to agree):
//!
//! * **`held_for`**: since the session's holding last rose from zero
//!   permits. Permits are released by count, not by grant, so the backend
//!   cannot tell which grant is the oldest still held; this is the time the
//!   session has held at least one permit without interruption (exactly the
//!   age of the oldest grant while the session holds one grant at a time).
//!   Millisecond resolution.
//! * **`lease_remaining`**: until the session's lease deadline (renewed by
//!   its heartbeat every lease/3; after a crash it counts down to zero, then
//!   the session is reclaimed). Millisecond resolution.
//! * **`token`**: the fencing token of the session's latest grant (not
//!   necessarily of the permits it still holds).
//! * **`waiting_for`**: since the request was queued (its arrival stamp,
//!   the queue's own ordering score, so it costs no memory of its own).
//!   Microsecond resolution; after a failover to a server whose clock is
//!   behind, stamps made before it may read as a shorter wait.
//!
//! One holder per session: the handles of one process that share a session
//! (see *Connections and threads*) appear as one holder, and have the same
//! label (it is one of the options that must be equal to share). Cost: one
//! round trip, O(n + sessions) on the server; it is a diagnostic, not for
//! a hot path. Per session, Redis keeps three small fields more (about 150
//! bytes); per queued request nothing more than before but the width of a
//! microsecond stamp as its score (about 10 bytes in a queue of up to 128
//! requests, none in a longer one; `tests/inspect.rs` prints it). What it
//! costs the scripts that grant: one `HSET` more per grant (the session's
//! latest token, and the time when its holding rises from zero); an
//! uncontended acquire and release measured 1 to 2 µs more per call of
//! server time (`INFO commandstats`, on a loaded machine where a call took
//! 21 to 30 µs).
//!
//! # Metrics
//!
//! [`RedisSemaphore::stats`] answers "how has it gone for this handle",
//! where `inspect` answers "who holds and waits now": counters (`grants`,
//! `permits_granted`, `timeouts`, `cancels`, `lease_losses`,
//! `reclaims_seen`: expired sessions of other clients that this handle's
//! scripts reaped) and a wait histogram, recorded from
//! [`enable_stats`](RedisSemaphore::enable_stats) on (the bindings enable
//! it for every handle), and gauges (`available` as last seen in a reply
//! from Redis, `held`, `queued`). It never makes a round trip: a metrics
//! scrape may call it as often as it likes, and it answers while Redis is
//! out of reach. The counters belong to the handle's session, shared by
//! the handles that share it (see *Connections and threads*).
//!
//! ```no_run
//! use volt_sem_redis::{ConnectOptions, RedisSemaphore};
//! # fn main() -> Result<(), volt_sem_redis::Error> {
//! let sem = RedisSemaphore::connect("redis://127.0.0.1:6379", "db-pool", 50, ConnectOptions::new())?;
//! sem.enable_stats();
//! drop(sem.acquire_blocking(2)?);
//! let s = sem.stats();
//! println!("{} grants, p99 wait {:?}, {} leases lost, {} crashed clients reclaimed",
//!     s.grants, s.wait.p99(), s.lease_losses, s.reclaims_seen);
//! # Ok(()) }
//! ```
//!
//! What it costs: a few bytes in the scripts' replies (the sessions they
//! reaped and the permits left available, noted after the status word, see
//! `lua/tail.lua`), one `HGET` more when a session starts, and a few
//! relaxed atomic increments per call on the client.
//!
//! # Upgrading
//!
//! Clients of different releases (a rolling deploy, services in different
//! languages on different releases) share a semaphore only while its keys
//! have one schema: what each key and field means, which the scripts of a
//! release read and write. The schema has its own version,
//! [`SCHEMA_VERSION`], separate from the release's; the `connect` that
//! creates a semaphore records it in the meta hash (`schema`), and
//! `connect`, [`inspect`] and [`delete`] refuse a semaphore of another
//! schema with [`Error::VersionMismatch`] (`found`: the keys' schema, 0 for
//! a semaphore of a pre-release snapshot, which recorded none; `expected`:
//! this release's) before they write anything. A connected handle's calls
//! are tied to the incarnation it joined: a semaphore deleted and created
//! again by a client of another release is [`Error::StateLost`] for it.
//! The version lives in the meta hash only: if that hash alone is lost
//! (evicted by an `allkeys-*` policy, see *Running Redis in production*, or
//! deleted by hand), the next `connect` creates the semaphore afresh with
//! its own schema and takes over what is left of the other keys as that
//! schema reads them (this release carries the live sessions' holdings over
//! as held), whatever release wrote them.
//! Releases that keep the schema share semaphores freely; a new schema is a
//! breaking change (a minor release while the version is 0.x, noted in
//! `CHANGELOG.md`, as is a new shared-memory layout). To move a semaphore
//! to a release of another schema: stop (or drain) the clients of the old
//! release, [`delete`] the semaphore with the old release (or, once no
//! client of it runs, delete its keys, `{prefix:name}:*`), then start the
//! new one; or give the new release another name or
//! [prefix](ConnectOptions::prefix) and move the clients over. A release
//! from before the schema was recorded does not check it: it must not
//! meet a semaphore of a newer release (a snapshot that predates
//! `set_total` would hand back permits a shrink's `debt` still owes: more
//! holders than the total).
//!
//! # Security
//!
//! * **Passwords and ACL users**: `redis://[user:]password@host[:port][/db]`
//!   (`AUTH` at connect; a refusal is [`Error::Auth`] from `connect`).
//!   `connect` also checks, in one round trip, that the user may run the
//!   commands the backend sends itself (`EVALSHA`, `EVAL`, `BLPOP`,
//!   `RPUSH`; `PUBLISH` and `WAIT` with
//!   [`ConnectOptions::min_replicas_acked`]): an ACL refusal is
//!   [`Error::NoPermission`], naming the command (also when a command inside
//!   a script is refused later). The user needs those, the commands the
//!   scripts run (`@read`, `@write`, `TIME`) on the semaphore's keys
//!   (`{prefix:name}:*`), and `PING`. A server that is a replica is
//!   [`Error::ReadOnly`] (from `connect`, or from a call after a demotion;
//!   through Sentinels the connection is replaced and the master found
//!   again instead). Not checked on a Cluster (keyless commands go to any
//!   node). The
//!   password never appears in an error text or in `Debug` output: texts
//!   from the client library are scrubbed, and handles print only the name,
//!   prefix and total.
//! * **TLS**: `rediss://host[:port]` (and `rediss+sentinel://`), on
//!   redis-rs's rustls backend with the *ring* crypto provider (ring
//!   cross-compiles with a plain C compiler for every target the packages
//!   are built for; aws-lc-rs needs CMake, and NASM for Windows). The server
//!   certificate is always verified, host name or IP address included (no
//!   "insecure" mode). [`ConnectOptions::tls_ca_file`] names the CA
//!   certificates to trust (a private CA, the usual case for Redis);
//!   without it, the Mozilla root set compiled into the library
//!   (webpki-roots) is trusted, the same on every platform. The system's
//!   trust store is never read, on Linux (`/etc/ssl`), macOS (the
//!   keychains) or Windows alike: a CA that the system trusts but Mozilla
//!   does not (a company CA, a self-signed server) is given as a PEM file.
//!   On macOS, export it from the keychain with
//!   `security find-certificate -c "<CA name>" -p > ca.pem` (add
//!   `/Library/Keychains/System.keychain` for one in the system keychain).
//!   Why not the keychain: it would link the Security framework, which the
//!   packages (built on Linux, without Apple's SDK) cannot link against, and
//!   it would make one URL trust different servers on different machines.
//!   [`ConnectOptions::tls_client_cert`] presents a client
//!   certificate to a server with `tls-auth-clients`. An untrusted
//!   certificate, a failed handshake, `rediss://` to a port that does not
//!   speak TLS (the server waits for a line the handshake never sends: it
//!   ends at the connect timeout) and unreadable certificate files are
//!   [`Error::Tls`] from `connect`; `redis://` to a TLS port is
//!   [`Error::Connection`] (the server drops the plain-text client). The
//!   process-wide rustls crypto provider is set to ring only if the program
//!   set none.
//!
//! # Sentinel
//!
//! `redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]`
//! (`rediss+sentinel://` for TLS to the Sentinels and the master, with the
//! same certificate options): the hosts are Sentinels (port 26379 by
//! default), `master` the name they monitor; the credentials and the db are
//! the master's (the Sentinels are asked without credentials). At every
//! connect *and every reconnect* the Sentinels are asked in turn
//! (`SENTINEL get-master-addr-by-name`), and the server named is used only
//! if it answers `ROLE` master; the whole resolution stays within the
//! connect timeout (an unknown master name is an [`Error::Connection`]
//! naming it). After a failover the old master's connections are closed (or
//! answer `READONLY`, which is treated as a dropped connection), so both
//! connections of a handle reconnect to the new master by themselves.
//! The semaphore's state is ordinary replicated data: sessions, queue
//! places and held permits carry over to the promoted replica as far as it
//! had received them, and the fencing token stays increasing (the larger of
//! the last token + 1 and the new master's clock in µs). What a failover
//! that lost the last writes means is in the guarantees above.
//!
//! # Replicas and `WAIT`
//!
//! With [`ConnectOptions::min_replicas_acked`]`(k, timeout)`, every script
//! call of the handle that changes the semaphore is followed by
//! `WAIT k timeout`, and so is every grant learnt from a notification (the
//! agent first makes a write of its own that follows the grant in the
//! replication stream, an empty `PUBLISH`, because `WAIT` only covers the
//! client's own writes and a pop that served a blocked `BLPOP` is not
//! always counted as one; without it the test saw `WAIT` answer at once
//! while the replica was frozen). If fewer than
//! `k` replicas acknowledged in time, the write still stands on the primary
//! (`WAIT` neither fails nor undoes it) but a failover could forget it.
//! Carrying on would hand the caller permits that a promoted replica could
//! grant again, which is what the option exists to prevent, so there is no
//! silent degrade: the outcome is treated like an uncertain one. The call
//! fails with [`Error::NotReplicated`], the session is given up (ended, so
//! what it held and the grant itself go back through the hand-off) and the
//! handle's other holders and waiters learn [`Error::LeaseExpired`]; the
//! next call starts a new session. While replicas lag beyond the timeout,
//! such a client cannot acquire: it trades availability for the durability
//! it asked for (like the server's `min-replicas-to-write`, but per client).
//!
//! What it buys: a grant delivered to such a client had reached `k`
//! replicas, so a failover that promotes one of them keeps it. What it does
//! not: it is not consensus. A failover may promote a replica that did not
//! acknowledge (with more than `k` replicas; Sentinel prefers the most
//! up-to-date one, but that is not a guarantee), the primary applied the
//! write before the `WAIT` (other clients may act on it first), clients
//! without the option are not covered, and replicas without persistence
//! that restart lose what they acknowledged. The lease and fencing caveats
//! above are unchanged.
//!
//! # Network faults
//!
//! * `connect` talks to Redis at once: unreachable, wrong password, a TLS
//!   mismatch or an unknown Sentinel master is an error from `connect`
//!   within [`ConnectOptions::connect_timeout`], a deadline for the whole
//!   connect (TCP, TLS, `AUTH`, the checks and the first script): a server
//!   that accepts and never answers makes it fail at that deadline
//!   ([`Error::Connection`]), not at a multiple of it.
//! * A timed acquire ([`RedisSemaphore::acquire_timeout`], and the
//!   bindings' timeouts) keeps two promises. Permits free at the call are
//!   granted whatever the timeout (1 ns included), as the other backends
//!   try before they wait: a deadline that passes before the first answer
//!   (the acquire script's) leaves the request to that answer. And the call
//!   returns soon after its timeout even on a server that stopped
//!   answering: the answer is waited for only until the request's *grace*
//!   ends, counted from when the script was sent; a request unanswered then
//!   is cancelled ([`Error::TimedOut`]; a grant answered later is given
//!   back). The grace is the larger of 250 ms and four times the median of
//!   the session's last eight round trips (a far-away Redis; the median, so
//!   that one stall, answered once the server runs again, does not raise
//!   it), never more than the command timeout: a healthy server answers
//!   well within it (even on a loaded machine), and a silent one holds a
//!   call at most that long past a timeout shorter than the grace. Once Redis queued the
//!   request, the caller's timeout alone bounds the wait.
//! * **Redis out of reach while clients wait**: queued requests keep their
//!   place in Redis while the session's lease holds; the agent reconnects
//!   with exponential backoff (20 ms, doubling, at most one heartbeat
//!   interval). The back-off applies to every failure of the agent (a
//!   failed connect, a failed or refused `BLPOP` or heartbeat), and only a
//!   call that worked resets it, not a new connection: a server that
//!   accepts connections and refuses the commands (an ACL without `BLPOP`,
//!   a replica answering `READONLY`) sees a few connections, not thousands
//!   a second (`tests/refusals.rs`: none in 2 s, where it was 322 and 1,103). A grant made meanwhile waits in the notification list (or
//!   is found by the first heartbeat) and is delivered after the reconnect.
//!   **The deadline is the lease** ([`ConnectOptions::lease`]): once the
//!   session has not been renewed for a whole lease it is expired in Redis
//!   too, so waiting longer could not help; its waiters then fail with
//!   [`Error::LeaseExpired`] and its holders learn the loss, at the lease's
//!   end even when Redis went silent (a black hole rather than a closed
//!   connection: every read and connect of the agent is capped by what
//!   remains of the lease). A shorter lease fails sooner.
//! * **Connections cut between calls** (a proxy, a load balancer, a
//!   failover, a restart): a connection idle for a second or more is checked
//!   (`PING`) before its next command and replaced if dead, so the script
//!   is sent on the new connection; a cut *during* a call is an uncertain
//!   outcome (above).
//! * **Redis restarted with its data** (persistence): the state is intact;
//!   the scripts are sent again (`NOSCRIPT` → `EVAL`) and everyone carries
//!   on, waiters in place. **Restarted empty**: [`Error::StateLost`] (the
//!   incarnation id, above).
//!
//! # Running Redis in production
//!
//! What the server may do to a semaphore's keys behind the clients' backs,
//! each checked against redis-server 7.0 (`tests/eviction.rs`,
//! `tests/server_admin.rs` and the tests named):
//!
//! * **Memory.** The semaphore's keys carry no TTL; only the notification
//!   lists (`{p:n}:note:<session>`) do, and they are hints. So `noeviction`
//!   (Redis's default) and every `volatile-*` policy never evict them.
//!   When Redis is full, every call that writes fails at once with
//!   [`Error::OutOfMemory`], carrying the server's text (`OOM command not
//!   allowed when used memory > 'maxmemory'`), and changes nothing: Redis
//!   refuses a script at its first write, so none stops half way. It is
//!   transient: retry once memory is freed (C `VOLT_REDIS_OUT_OF_MEMORY`,
//!   Python `RedisOutOfMemoryError`, Node `ERR_VOLT_REDIS_OUT_OF_MEMORY`).
//!   A release refused so gives its session up; a waiter whose heartbeats
//!   are refused for a whole lease fails with [`Error::LeaseExpired`]. Once
//!   memory is freed, every permit is back.
//! * **`allkeys-lru`, `allkeys-lfu`, `allkeys-random` evict the
//!   semaphore's keys**: any key may go, and LRU takes the idle ones first
//!   (a semaphore held for a second while a cache writes is idle). Keep a
//!   semaphore out of a Redis with such a policy and a `maxmemory` it can
//!   reach (policies are per server, not per database). What the clients
//!   see if it happens: when the `meta` hash goes, every handle's next
//!   call, heartbeat or census fails with [`Error::StateLost`]; when the
//!   `held`, `queue`, `entries` or `sessions` key goes while `meta` stays,
//!   the heartbeat of a session it concerns finds the damage (within a
//!   third of a lease) and ends the incarnation for every client (it
//!   deletes `meta`): [`Error::StateLost`] too. A new `connect` then
//!   creates the semaphore anew without granting a surviving holding twice
//!   (*Incarnation*, above); a session whose lease still runs and whose
//!   holding is unknown counts as holding the whole total until its lease
//!   ends (a debt), so nothing is granted while its holder may still
//!   believe it holds. The other keys (`grants`, `own`, `info`, the
//!   notification lists) only delay a wake by a heartbeat, or a reap, or
//!   blank an `inspect` field. Where the `meta`, `held` and `sessions`
//!   keys all went, nothing is known of the old holdings: as after a
//!   restart without data, a new `connect` grants every permit while the
//!   old holders learn of the loss only at their next heartbeat (within a
//!   third of a lease): keep such policies away from semaphores.
//! * **`FLUSHDB`, `FLUSHALL`**: as a restart without data,
//!   [`Error::StateLost`] (`tests/shared_session.rs`). **`SCRIPT FLUSH`**:
//!   nothing shows; the scripts are sent again (`NOSCRIPT`, then `EVAL`;
//!   `tests/api.rs`, `tests/batch.rs`).
//! * **`CLIENT KILL`** of the agent's connection, blocked in `BLPOP`: it
//!   reconnects and the waiter gets its grant. Of the command connection
//!   during a call: an uncertain outcome, above (`tests/api.rs`).
//! * **`CLIENT PAUSE`, `DEBUG SLEEP`, a slow command**: a stop shorter than
//!   the lease is a wait (a call waits up to
//!   [`ConnectOptions::command_timeout`], then fails with
//!   [`Error::Connection`]). Longer than the lease: the holders' permits
//!   are lost ([`Permit::is_lost`], their release [`Error::LeaseExpired`]),
//!   the waiters fail with [`Error::LeaseExpired`], and when the server
//!   answers again the expired sessions are reaped: every permit is back,
//!   none granted twice.
//! * **`timeout`** (the server closes idle connections): a connection idle
//!   for a second or more is checked with `PING` before its next command
//!   and replaced, and the agent's `BLPOP` is never idle in that sense
//!   (Redis does not time out a blocked client); any `timeout` works.
//! * **ACL users**: see *Security*; a user without `EVALSHA`, `EVAL`,
//!   `BLPOP` or `RPUSH` is refused by `connect` with
//!   [`Error::NoPermission`] naming it (`tests/refusals.rs`); a rule
//!   changed after `connect` fails the next call with
//!   [`Error::NoPermission`], also when the command refused is one a
//!   script runs (`tests/server_admin.rs`).
//! * **`rename-command`**: `connect` fails with [`Error::Redis`] naming a
//!   command the backend sends itself that the server does not know
//!   (`BLPOP`, `RPUSH`, `PEXPIRE`, `EVALSHA`, `EVAL`, `PING`); one that only
//!   the scripts run (`HSET`, `TIME`, ...) fails the first script, also in
//!   `connect`, with the server's `Unknown Redis command called from
//!   script`. `SCRIPT`, `CONFIG` and `INFO` are never sent, `CLIENT
//!   SETNAME` only as a best effort; `SCAN` only by [`list`], `ROLE` only
//!   through Sentinels.
//!
//! # Redis Cluster
//!
//! [`ConnectOptions::cluster`]: `connect` then takes one or more seed node
//! URLs separated by commas. All keys of one semaphore share its hash tag,
//! so one semaphore lives on one node (the scripts, and the `BLPOP` on a
//! notification list, go to the node that owns the slot); different
//! semaphores spread over the nodes. The scripts are sent with `EVALSHA`
//! and, on `NOSCRIPT`, with `EVAL` (routed by key), never with a
//! `SCRIPT LOAD` that might reach another node. Each connection follows the
//! slot itself (`cluster.rs`): `MOVED` and `ASK` are followed, `TRYAGAIN`
//! and `CLUSTERDOWN` retried, all within the command timeout, since a
//! script refused with them did not run; an I/O error is never retried
//! (the script may have run). While the slot is being migrated, Redis
//! refuses every script before it runs (a declared fence key that never
//! exists, see `head.lua`): a reshard is a pause of about the migration's
//! length, never a script run half way on a half-moved slot.
//!
//! # Connections and threads
//!
//! **One session per process per semaphore**: `connect` to the same URL,
//! name and options (prefix and label included) while a handle from an earlier
//! `connect` is alive returns a new handle on that handle's session (it
//! still talks to Redis: the total asked for is checked against the one
//! stored, [`Error::TotalMismatch`] or, with [`ConnectOptions::resize`],
//! set, as by a `connect` of its own); a process-wide registry
//! of weak references finds it. So a process opens, per distinct (URL,
//! options, name) in use, **two connections and two threads**, however
//! many handles, clones, threads and waiters use it: the *door* thread and
//! its command connection, which make the round trips the handle's calls
//! need, one at a time, in the order the calls were made (`acquire_raw`,
//! `release` and `finish_raw` never make one on the calling thread: they
//! return at once; a call that waits for Redis anyway, such as
//! `try_acquire`, `census` or a blocking acquire, makes its own and those
//! queued before it on its thread when the door is idle, with signals
//! blocked for the moment, saving two thread wake-ups); and the *agent*
//! thread and its connection (`BLPOP` and the heartbeat). Releases and
//! acquires queued together (an acquire right after a release, many
//! requests of an event loop) are sent in one pipeline: one round trip,
//! Redis running them in their order. Because the door runs a handle's calls in order, a call
//! that answers (`try_acquire`, `census`, [`flush`](RedisSemaphore::flush))
//! sees every release and cancel the handle made before it; another client
//! sees them one round trip later. The session ends when the last handle
//! of every such `connect` is dropped (on the dropping thread; or, if the
//! door thread was running one of the handle's jobs at that moment, on the
//! door thread as soon as that job is done), or at
//! [`disconnect`](RedisSemaphore::disconnect), which returns once both
//! threads have exited and both connections are closed, however long the
//! handles live on. [`ConnectOptions::own_session`] opts
//! out: that handle gets a session (two connections, two threads) of its
//! own, which ends when it is dropped, taking back whatever it still holds.
//! The C, Python and Node bindings use it: each of their objects counts the
//! permits it holds, and a dropped or collected object must give back its
//! own, not leave them to a session that outlives it. A handle whose semaphore's state was
//! lost ([`Error::StateLost`]) is not shared: the next `connect` starts
//! afresh. Neither thread holds a strong reference to the handle, and
//! neither keeps the process alive. Through Sentinels, each (re)connect also
//! opens a short-lived connection to one Sentinel at a time, closed once the
//! master is found. `connect`
//! talks to Redis at once: unreachable, wrong password or a malformed URL is
//! an error from `connect` within [`ConnectOptions::connect_timeout`].
//! Passwords never appear in errors or `Debug` output.

#![warn(missing_docs)]

mod census;
mod cluster;
mod conn;
mod error;
mod inspect;
mod node;
mod on_signals;
mod options;
mod reply;
#[doc(hidden)]
pub mod scripts;
mod session;
mod stats;
mod url;
mod waiter;

use core::ffi::c_void;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The schema version of the semaphore's keys that this release reads and
/// writes: stored in the meta hash (`schema`) by the `connect` that creates a
/// semaphore, and checked by `connect`, [`inspect`] and [`delete`], which
/// refuse a semaphore of another schema with [`Error::VersionMismatch`]
/// (nothing written). Raised whenever a client of one release could misread
/// the keys of another (see *Upgrading* in the crate docs): 1 is the first
/// recorded schema (0.1.0); a semaphore without the field was made by a
/// pre-release snapshot (reported as schema 0).
pub const SCHEMA_VERSION: u32 = 1;

pub use census::Census;
pub use error::Error;
pub use on_signals::end_sessions_on_signals;
pub use options::{validate_name, ConnectOptions, MAX_NAME_LEN, MAX_PERMITS, MAX_PREFIX_LEN};
pub use url::URL_FORM;
pub use volt_sem::inspect::{Holder, Inspection, QueuedWaiter};
pub use volt_sem::raw::RawSemaphore;
pub use volt_sem::{RawAcquire, WakeFn};
pub use waiter::{Expiry, Finish, RedisWaiter, RedisWaiterState};

use session::Handle;

/// Deletes the semaphore `name` from Redis (its keys under
/// [`ConnectOptions::prefix`]), so that a service deriving names (per
/// tenant, per job) does not leave one behind for each. Refused while the
/// semaphore has a live session (a client that holds permits, waits, or is
/// only connected: deleting under it would make its handle fail with
/// [`Error::StateLost`]): [`Error::InUse`], nothing deleted. Sessions whose
/// lease passed (crashed clients) are reclaimed first and do not count.
/// [`Error::NotFound`] if there is no such semaphore;
/// [`Error::VersionMismatch`] (nothing deleted) if its keys have another
/// schema (made by another release: delete it with that one, see
/// *Upgrading*). A `connect` after it
/// creates the name afresh (a new incarnation, tokens still increasing with
/// the server's clock).
///
/// Like the shared-memory `unlink`, it removes the name; unlike it, it is
/// refused rather than leaving live users on a semaphore nobody else can
/// find (they would each go on with a private copy of nothing: the state
/// lives only in Redis). Opens one connection (within the connect timeout)
/// and runs one script; no session, no agent thread. The options used are
/// the prefix, the timeouts, TLS, `cluster` and the label (the connection's
/// client name).
///
/// What stays in Redis without it, once every session ended: only the
/// `{prefix:name}:meta` hash (8 fields: total, available, closed, last
/// token, incarnation, sequence, reap time, schema version; a few hundred
/// bytes, no TTL);
/// the queue, entries, sessions, holdings, session records and grant
/// records are empty (Redis
/// removes empty keys), and each session's notification list expires within
/// a minute (`PEXPIRE`).
pub fn delete(url: &str, name: &str, options: ConnectOptions) -> Result<(), Error> {
    options.check_delete(name)?;
    let keys = scripts::Keys::new(&options.prefix, name);
    session::delete(url, &keys, &options)
}

/// Who holds the semaphore `name`'s permits and who waits, without
/// connecting to it: what [`RedisSemaphore::inspect`] returns (same fields,
/// same snapshot, same reclaim of expired sessions first), for a process
/// that only looks, such as the `volt-sem` command line. It needs no total,
/// starts no session, renews none and creates nothing: [`Error::NotFound`]
/// if there is no such semaphore (under the options' prefix),
/// [`Error::VersionMismatch`] if its keys have another schema (made by
/// another release, whose fields this one could misread). Opens one
/// connection (within the connect timeout) and runs one script, like
/// [`delete`]; the options used are the same (prefix, timeouts, TLS,
/// `cluster`, the label as the connection's client name).
pub fn inspect(url: &str, name: &str, options: ConnectOptions) -> Result<Inspection, Error> {
    options.check_delete(name)?;
    let keys = scripts::Keys::new(&options.prefix, name);
    inspect::from_reply(&session::inspect(url, &keys, &options)?)
}

/// The names of the semaphores stored under the options' prefix on the
/// server of `url`, sorted: a `SCAN` (non-blocking for the server, a few
/// round trips per thousand keys) for their `{prefix:<name>}:meta` hashes,
/// which exist from a semaphore's first `connect` to its [`delete`]. A
/// snapshot; names created or deleted during the scan may be missing or
/// listed. On a Redis Cluster (`cluster`) it scans every master, asked of
/// the first seed that answers (`CLUSTER SLOTS`): one connection each.
/// Options used: prefix, timeouts, TLS, `cluster`, label.
pub fn list(url: &str, options: ConnectOptions) -> Result<Vec<String>, Error> {
    options.check_delete("-")?;
    session::list(url, &options)
}

/// A handle on a semaphore stored in Redis. Cheap to clone; clones (and the
/// handles of other `connect` calls to the same URL, options and name in
/// this process) share one session, two connections and two threads.
/// When the last of them is dropped, the session ends and whatever it still
/// holds goes back.
#[derive(Clone)]
pub struct RedisSemaphore {
    inner: Arc<Handle>,
    /// This handle's identity (shared by its clones, not by another
    /// `connect` that shares the session): what [`owns`](Self::owns) tells.
    ident: Arc<u8>,
}

impl core::fmt::Debug for RedisSemaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the URL: it may carry a password.
        f.debug_struct("RedisSemaphore")
            .field("name", &self.inner.name)
            .field("prefix", &self.inner.opts.prefix)
            .field("total", &self.inner.total())
            .finish_non_exhaustive()
    }
}

impl RedisSemaphore {
    /// Connects to the semaphore `name` with `permits` in total, creating it
    /// if it does not exist. `url`: `redis://[user:password@]host[:port][/db]`,
    /// `rediss://...` (TLS), `unix:///path`,
    /// `redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]`
    /// (or `rediss+sentinel://`), or with [`ConnectOptions::cluster`]
    /// comma-separated seed node URLs. Talks to Redis at once.
    ///
    /// Errors: [`Error::InvalidUrl`], [`Error::InvalidName`],
    /// [`Error::InvalidPrefix`], [`Error::InvalidPermits`],
    /// [`Error::InvalidOption`], [`Error::InvalidLabel`], [`Error::Auth`], [`Error::Tls`],
    /// [`Error::Connection`] (within the connect timeout),
    /// [`Error::NoPermission`] (the ACL refuses a command the backend
    /// needs), [`Error::ReadOnly`] (a replica), [`Error::TotalMismatch`],
    /// [`Error::VersionMismatch`] (the semaphore's keys have another schema:
    /// made by another release; nothing written).
    pub fn connect(
        url: &str,
        name: &str,
        permits: usize,
        options: ConnectOptions,
    ) -> Result<Self, Error> {
        options.check_connect(name, permits)?;
        let inner = if options.own_session {
            session::Inner::connect(url, name, permits as u64, options)?
        } else {
            session::connect_shared(url, name, permits as u64, options)?
        };
        Ok(RedisSemaphore {
            inner,
            ident: Arc::new(0),
        })
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The total number of permits, as this handle last heard it from
    /// Redis: at `connect`, and with every [`set_total`](Self::set_total),
    /// [`census`](Self::census), [`inspect`](Self::inspect) and new session
    /// of the handle. Another client's `set_total` reaches it there (Redis
    /// alone decides: an acquire is checked against the total in Redis).
    pub fn total_permits(&self) -> usize {
        self.inner.total() as usize
    }

    /// Changes the total to `n` permits, for every client (see *Changing
    /// the total* in the crate docs). `n` is 1 to [`MAX_PERMITS`], else
    /// [`Error::InvalidPermits`] and nothing changes. One script, through
    /// the handle's door like [`close`](Self::close).
    ///
    /// Growing hands the new permits to the queued requests at once, in
    /// FIFO order (as a release does). Shrinking revokes nothing: what is
    /// held stays held, and the cut takes effect as permits come back (they
    /// pay the *debt* first, before any waiter or `available`; so do the
    /// permits of a session reaped at its lease's expiry). Either way, every
    /// queued request for more than `n` fails at once with
    /// [`Error::TooManyPermits`] (its owner is notified as by `close`; its
    /// partial grant is handed on, the others keep their place). Works on a
    /// closed semaphore too.
    pub fn set_total(&self, n: usize) -> Result<(), Error> {
        if n == 0 || n > MAX_PERMITS {
            return Err(Error::InvalidPermits);
        }
        self.inner.set_total(n as u64)
    }

    /// Undoes [`close`](Self::close), for every client: later acquires work
    /// again (a handle that saw the close learns of the reopen from its next
    /// request: acquires always ask Redis). Requests the close failed stay
    /// failed. A no-op on a semaphore that is not closed.
    pub fn reopen(&self) -> Result<(), Error> {
        self.inner.reopen()
    }

    /// Permits held by this handle's current session, as it counts them.
    pub fn held_permits(&self) -> usize {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .held as usize
    }

    /// Whether this handle saw the semaphore closed (by its last answer
    /// from Redis that said: a reopen by another client shows here after
    /// the handle's next request).
    pub fn is_closed(&self) -> bool {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed
    }

    /// Takes `n` permits if they are available now and nobody is queued.
    /// One round trip, in order with the handle's other calls (this thread
    /// waits for it, or makes it when the handle's door is idle).
    pub fn try_acquire(&self, n: usize) -> Result<Permit, Error> {
        if n == 0 {
            return self.zero_permits().map(|()| self.permit(0, 0, 0));
        }
        let (token, epoch) = self.inner.try_acquire(n as u64)?;
        Ok(self.permit(n, token, epoch))
    }

    fn permit(&self, n: usize, token: u64, epoch: u64) -> Permit {
        Permit {
            sem: self.clone(),
            n,
            token,
            epoch,
        }
    }

    /// Acquires `n` permits, blocking this thread until they are granted in
    /// FIFO order across every client, or the semaphore is closed, or the
    /// session is lost.
    pub fn acquire_blocking(&self, n: usize) -> Result<Permit, Error> {
        self.acquire_deadline(n, None)
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), giving up after
    /// `timeout` with [`Error::TimedOut`]; a partial grant is handed on.
    /// As on the in-process and shared semaphores, the request is always
    /// tried first: the acquire script's answer is waited for and honoured
    /// past the timeout, so permits free at that moment are granted even
    /// with a timeout far shorter than the round trip (1 ns). That wait is
    /// bounded by the request's grace (see the crate's text on network
    /// faults: 250 ms from when the script was sent, more for a far-away
    /// Redis, at most the command timeout): a server that stopped answering
    /// makes the call time out at the later of its timeout and that grace's
    /// end, not at the command timeout (a grant answered later is given
    /// back). A request that had to queue is bound by the timeout: still
    /// queued at the deadline (or answered "queued" after it), it is
    /// cancelled, its partial grant handed on. A zero timeout is one
    /// attempt, [`try_acquire`](Self::try_acquire) (its round trip bounded
    /// by the command timeout), with no permits for it reported as
    /// [`Error::TimedOut`] (nothing queued).
    pub fn acquire_timeout(&self, n: usize, timeout: Duration) -> Result<Permit, Error> {
        if timeout.is_zero() {
            // A deadline already past would time out before any answer
            // could come, whatever the semaphore holds. Still a blocking
            // acquire: refused in a wake callback, as every timeout is.
            if n > 0 && volt_sem::raw::current_backend() == Some(volt_sem::raw::Backend::Redis) {
                return Err(Error::InCallback);
            }
            return self.try_acquire(n).map_err(|e| match e {
                Error::NoPermits => {
                    self.record_timeout();
                    Error::TimedOut
                }
                e => e,
            });
        }
        self.acquire_deadline(n, Instant::now().checked_add(timeout))
    }

    fn acquire_deadline(&self, n: usize, deadline: Option<Instant>) -> Result<Permit, Error> {
        if n == 0 {
            return self.zero_permits().map(|()| self.permit(0, 0, 0));
        }
        if volt_sem::raw::current_backend() == Some(volt_sem::raw::Backend::Redis) {
            return Err(Error::InCallback);
        }
        let park = Arc::new(Parker::default());
        let w = Box::pin(RedisWaiter::new());
        let queue = || {
            // SAFETY: the waiter is boxed (pinned) and `park` lives in this
            // frame until finish_raw returned below.
            unsafe { self.acquire_raw(w.as_ref(), n, unpark, Arc::as_ptr(&park) as *mut c_void) }
        };
        let r = if deadline.is_none() {
            // About to wait anyway, for as long as it takes: the request is
            // sent from this thread if the door is idle (a grant Redis makes
            // at once needs no wake-up then).
            self.inner.queue_and_help(queue)?
        } else {
            // With a deadline, never a round trip on this thread: one
            // lasts up to the command timeout (a stopped server), which the
            // caller's timeout and the grace must bound. The request goes
            // out from the door thread, and this thread waits for its grant
            // until the deadline; then `expire_raw` cancels a request Redis
            // queued, and leaves one not answered yet to its answer until
            // its grace ends (below).
            queue()?
        };
        if r == RawAcquire::Ready {
            return Ok(self.permit(n, w.token(), w.session()));
        }
        let waiting = || w.state() != RedisWaiterState::Waiting;
        park.wait(deadline, waiting);
        // SAFETY: queued on this handle; `park` still alive.
        let finish = match unsafe { self.expire_raw(w.as_ref()) } {
            Expiry::Finished(f) => f,
            Expiry::Deferred { until } => {
                // The deadline passed before the acquire script answered:
                // that answer decides if it comes within the grace (a grant
                // is kept; a queued request is cancelled by the door and
                // completes as such), as the other backends try before they
                // wait. Past the grace (a server that stopped answering),
                // `finish_raw` cancels it: the door gives back a late grant.
                park.wait(Some(until), waiting);
                // SAFETY: as above.
                unsafe { self.finish_raw(w.as_ref()) }
            }
        };
        match finish {
            // The session is known once the request was sent.
            Finish::Granted { token } => Ok(self.permit(n, token, w.session())),
            Finish::Cancelled { .. } => {
                // (finish_raw counted the cancel.)
                self.record_timeout();
                Err(Error::TimedOut)
            }
            Finish::Closed => Err(Error::Closed),
            Finish::Failed(e) => Err(e),
            Finish::Idle => Err(Error::Protocol("waiter idle after wait".into())),
        }
    }

    /// What a caller that times its own wait on a raw request (queued with
    /// [`acquire_raw`](RawSemaphore::acquire_raw)) calls at its deadline,
    /// instead of [`finish_raw`](RawSemaphore::finish_raw): the same cancel
    /// for a request Redis has queued ([`Expiry::Finished`], its outcome),
    /// but a request whose acquire script has not answered yet is left to
    /// that answer for its grace, as the other backends try before they
    /// wait: [`Expiry::Deferred`] with the grace's end `until` (when the
    /// script was sent plus the grace, see the crate's text on network
    /// faults). Its callback comes if the answer is in by then, with
    /// `Granted` if the script granted it, whatever the deadline, else
    /// `Cancelled { returned: 0 }` (the door took it out of Redis, its
    /// partial grant handed on), `Closed` or `Failed`. A request already
    /// completed (its callback run or about to run: a grant that came
    /// before the deadline is kept) is deferred too. The owner waits for the
    /// callback until `until` at most, then calls `finish_raw`, which
    /// collects the outcome, or cancels a request still unanswered (a
    /// server that stopped answering: the door gives back a grant answered
    /// later). A request unanswered for its whole grace already is
    /// cancelled here (`Finished`). This is what
    /// [`acquire_timeout`](Self::acquire_timeout) does, and the bindings'
    /// timeouts through `volt-sem-backend`. Never blocks on the network.
    ///
    /// # Safety
    /// As [`finish_raw`](RawSemaphore::finish_raw): `waiter` is idle or was
    /// queued on this handle, and stays pinned.
    pub unsafe fn expire_raw(&self, waiter: Pin<&RedisWaiter>) -> Expiry {
        if self.inner.forked() {
            // SAFETY: forwarded contract (a fork child's copy: see finish_raw).
            return Expiry::Finished(unsafe { self.finish_raw(waiter) });
        }
        // SAFETY: forwarded contract.
        unsafe { self.inner.expire(waiter) }
    }

    /// Acquires `n` permits asynchronously (any executor). Cancel-safe:
    /// dropping the future before it completes hands any partial grant on.
    pub fn acquire(&self, n: usize) -> Acquire<'_> {
        volt_sem::raw::Wait::new(self, n)
    }

    /// Gives back `n` permits this handle holds, outside of a [`Permit`]
    /// (after [`Permit::forget`]). [`Error::NotHeld`] if it holds fewer
    /// (nothing released); [`Error::LeaseExpired`] if permits were lost with
    /// a session and not yet reported (those are counted first).
    ///
    /// Never blocks: the handle's count is checked and lowered here, and the
    /// release reaches Redis right after, from the door thread, before any
    /// later call of this handle (another client sees it one round trip
    /// later: [`flush`](Self::flush) waits for it). Should Redis refuse it
    /// (a session it expired behind the handle's back) or be out of reach,
    /// the session is given up: its holders learn [`Error::LeaseExpired`]
    /// (the lease watches, [`Permit::is_lost`]), and ending it gives back
    /// what Redis still counted.
    pub fn release(&self, n: usize) -> Result<(), Error> {
        self.inner.release(n as u64, None)
    }

    /// Gives back `n` permits granted in `session` (a number from
    /// [`RedisWaiter::session`] or [`Permit::session`]), outside of a
    /// [`Permit`]: per grant, where [`release`](Self::release) counts per
    /// handle. [`Error::LeaseExpired`] if that session was lost (nothing is
    /// released: they were reclaimed, and are reported lost once);
    /// [`Error::NotHeld`] if the live session holds fewer. So when one
    /// handle serves several tasks, a task whose grant was lost with a
    /// session and a task granted in the next one each release their own,
    /// in any order.
    pub fn release_session(&self, n: usize, session: u64) -> Result<(), Error> {
        self.inner.release(n as u64, Some(session))
    }

    /// [`release`](Self::release), then [`flush`](Self::flush): returns
    /// once Redis has applied the release. For a thread that may block (it
    /// waits for a round trip; not for async code): when no other thread is
    /// sending this handle's calls, the release goes out from this thread,
    /// which saves waking the door thread, so that the next waiter, on any
    /// host, gets the permits sooner. `Ok` only if Redis applied it: a
    /// release whose round trip failed (a connection cut during it: its
    /// outcome is unknown) or that Redis refused gives the session up and
    /// returns [`Error::LeaseExpired`] ([`Error::StateLost`] if Redis lost
    /// the semaphore); the permits then go back when the session is ended.
    pub fn release_blocking(&self, n: usize) -> Result<(), Error> {
        self.inner.release_blocking(n as u64, None)
    }

    /// Waits until every call this handle made before has been applied in
    /// Redis (and those of the handles sharing its session): the releases
    /// and cancels, which return at once, and the requests
    /// [`acquire_raw`](Self::acquire_raw) queued. This handle's own later
    /// calls come after them anyway (they run in order, on its door
    /// thread); `flush` is for ordering a release with something else: a
    /// message to another process that then expects the permits free, a
    /// census from another handle. `Ok` only if every release made since
    /// the previous `flush` was applied: one that was not (its connection
    /// cut during the round trip, or its session already lost) gave its
    /// session up, and this returns [`Error::LeaseExpired`]
    /// ([`Error::StateLost`] if Redis lost the semaphore), once; the
    /// permits then go back when the session is ended.
    /// [`Error::Forked`] in a `fork()` child.
    pub fn flush(&self) -> Result<(), Error> {
        self.inner.flush()
    }

    /// Closes the semaphore for every client: every queued request, on every
    /// host, fails with [`Error::Closed`] (partial grants go back), and every
    /// later acquire fails. Held permits can still be released.
    pub fn close(&self) -> Result<(), Error> {
        self.inner.close()
    }

    /// An acquire of 0 permits, as on every backend: granted at once (ahead
    /// of the queue: it takes nothing from anyone, and gets token 0), unless
    /// the semaphore is closed. Closed is Redis's knowledge, not only this
    /// handle's: one round trip (the census) when the handle has not seen it.
    fn zero_permits(&self) -> Result<(), Error> {
        // What the handle knows itself first, as for any request (after
        // `disconnect`: Closed; the census alone needs no session).
        self.inner.usable()?;
        // Always asked (another client may have reopened it).
        let closed = self.census()?.closed;
        self.inner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed = closed;
        if closed {
            return Err(Error::Closed);
        }
        self.granted_at_once(0);
        Ok(())
    }

    /// Records a grant made without queueing (when recording).
    fn granted_at_once(&self, n: usize) {
        if let Some(r) = self.inner.stats.recorder() {
            r.granted(n);
        }
    }

    /// Ends this handle's session now, leaving the semaphore open for every
    /// other client (what [`close`](Self::close) would not): its queued
    /// requests fail with [`Error::Closed`], the session is ended in Redis
    /// (what it held goes to the next waiters at once, not at the lease's
    /// expiry; if Redis is out of reach, at the expiry), and every later
    /// request of this handle (and of its clones, and of every `connect`
    /// sharing its session, see [`ConnectOptions::own_session`]) fails with
    /// [`Error::Closed`]. Idempotent; one round trip (bounded by the command
    /// timeout). Dropping the last handle does the same.
    ///
    /// When it returns, the session's two threads have exited (joined) and
    /// its two connections are closed, though the handle and its clones
    /// may live on: a disconnected handle keeps no thread and no connection
    /// (before, its door thread and command connection stayed until the
    /// last handle was dropped: 50 handles kept after `disconnect`, 50
    /// threads and 50 connections). A [`census`](Self::census) or
    /// [`inspect`](Self::inspect) of a disconnected handle opens a
    /// connection for that call and closes it when it returns. Called from
    /// a callback running on one of those threads (a wake, a lease watch),
    /// it does not wait for that thread, which exits as soon as the
    /// callback returns. While Redis is out of reach, the agent thread
    /// may be blocked in a call (a `BLPOP` or a heartbeat) until that
    /// call's own timeout: it is waited for only until a command timeout
    /// has passed since `disconnect` began (at least 100 ms), then left to
    /// exit, closing its connection, when that call fails (measured in a
    /// black hole, 2 s command timeout, 10 s or 3 s lease: 2.13 s in all;
    /// waiting for the agent's call took 5.1 s with the 10 s lease). A
    /// second call made while the first is still running, on another
    /// thread, returns once the first one has (the session's permits are
    /// back then); made from a callback the first one runs, on the
    /// session's own threads, or on the thread of a call that is running
    /// the handle's queued jobs itself (a callback it delivers: the first
    /// one waits for all of these), it returns at once. Never blocks on
    /// the handle's state lock, nor does
    /// [`is_disconnected`](Self::is_disconnected) (safe in a `fork()`
    /// child, whatever the parent's threads held at the fork).
    pub fn disconnect(&self) {
        self.inner.disconnect()
    }

    /// Whether [`disconnect`](Self::disconnect) ended this handle's session.
    pub fn is_disconnected(&self) -> bool {
        self.inner.is_disconnected()
    }

    /// The conservation sums, read in one script after a reap.
    pub fn census(&self) -> Result<Census, Error> {
        let c = Census::from_reply(&self.inner.census()?)?;
        self.inner
            .total
            .store(c.total, std::sync::atomic::Ordering::Relaxed);
        self.inner.stats.saw_available(c.available);
        Ok(c)
    }

    /// Who holds the semaphore's permits and who waits for them, on every
    /// host, in one script (see [Inspecting](crate#inspecting) for what
    /// each field means): every session whose lease ran out is reclaimed
    /// first, then `total`, `available`, `closed`, one [`Holder`] per live
    /// session holding permits (label, host, pid, permits, `held_for`,
    /// `lease_remaining`, `token`) and the queued requests in FIFO order
    /// (`waiters[0]` is served next), each with the label, host and pid of
    /// the session that queued it, the permits requested, those granted so
    /// far and `waiting_for`. One snapshot: `available + held() +
    /// granted_to_waiters() == total`. Runs on the handle's door like
    /// [`census`](Self::census), after the calls the handle made before it
    /// (so it sees their effect); it needs no live session, and renews
    /// none. [`Error::StateLost`] if Redis lost the semaphore, a connection
    /// error if Redis is out of reach, [`Error::Forked`] in a `fork()` child.
    pub fn inspect(&self) -> Result<Inspection, Error> {
        let i = inspect::from_reply(&self.inner.inspect()?)?;
        self.inner
            .total
            .store(i.total as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.stats.saw_available(i.available as u64);
        Ok(i)
    }

    /// A watch on `session` (a number from [`RedisWaiter::session`] or
    /// [`Permit::session`]): it completes when that session is lost. A
    /// session that is not this handle's current one counts as lost.
    pub fn lease_watch(&self, session: u64) -> LeaseWatch {
        LeaseWatch {
            sem: self.clone(),
            epoch: session,
        }
    }
}

/// The raw waiter API ([`RawSemaphore`]'s contract), with what is Redis's
/// own: `acquire_raw` answers `Pending` for every request, `n == 0`
/// included (whether the semaphore is closed is Redis's knowledge) and
/// never blocks: the round trip runs on the handle's door thread, in order
/// with its other calls (or on a thread waiting in a call of the handle,
/// when the door is idle). The callback runs on that thread, on the agent
/// thread (a notification, a heartbeat) or on a thread that found the
/// session lost. Errors at once are those the handle knows without Redis:
/// [`Error::Closed`] (disconnected), [`Error::StateLost`],
/// [`Error::Forked`]; a request above the total or on a closed semaphore
/// completes with [`Error::TooManyPermits`] / `Closed` from Redis (which
/// alone knows the total and whether it is closed now, see `set_total`,
/// `reopen`), as does a queued request failed by a shrink of the total. [`Finish`] has
/// the outcome (`Granted { token }`, `Failed`); [`RedisWaiter::token`] and
/// [`RedisWaiter::session`] the grant's. A cancel by `finish_raw` answers
/// `Cancelled { returned: 0 }`: the door thread then takes the request out
/// of Redis, handing its partial grant on, and gives back a grant that beat
/// the cancel.
// SAFETY: the session completes a queued waiter once (door, agent or a
// thread that lost the session), through the `raw` trampoline; `finish_raw`
// is the session's `finish`, which waits for a running callback.
unsafe impl RawSemaphore for RedisSemaphore {
    type Waiter = RedisWaiter;
    type Error = Error;
    type Finish = Finish;

    unsafe fn acquire_raw(
        &self,
        waiter: Pin<&RedisWaiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, Error> {
        debug_assert!(!waiter.is_busy(), "acquire_raw on a busy waiter");
        waiter.sem.store(
            Arc::as_ptr(&self.ident) as *mut (),
            core::sync::atomic::Ordering::Relaxed,
        );
        // SAFETY: forwarded contract.
        unsafe { self.inner.acquire_raw(waiter, n as u64, wake, ctx) }
    }

    unsafe fn finish_raw(&self, waiter: Pin<&RedisWaiter>) -> Finish {
        if self.inner.forked() {
            // A fork child's copy of a waiter the parent queued: the request
            // is the parent's session's, its completion runs on the parent's
            // threads, which this process does not have, and its state lock
            // may have been held by one of them at the fork. Nothing to
            // cancel here (a cancel would end the parent's request): the
            // copy is left idle, never granted.
            return if volt_sem::raw::reset_forked_copy(&waiter.node) {
                Finish::Idle
            } else {
                Finish::Closed
            };
        }
        // SAFETY: forwarded contract.
        unsafe { self.inner.finish(waiter) }
    }

    fn owns(&self, waiter: &RedisWaiter) -> bool {
        core::ptr::eq(
            waiter.sem.load(core::sync::atomic::Ordering::Relaxed),
            Arc::as_ptr(&self.ident) as *mut (),
        )
    }
}

/// Blocking acquires park on this; the wake callback unparks.
#[derive(Default)]
struct Parker {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Parker {
    fn wait(&self, deadline: Option<Instant>, done: impl Fn() -> bool) {
        let mut g = self.woken.lock().unwrap_or_else(|e| e.into_inner());
        while !*g && !done() {
            match deadline {
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return;
                    }
                    g = self
                        .cv
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

unsafe extern "C" fn unpark(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `Parker` kept alive by the blocked thread until
    // finish_raw returned.
    let p = unsafe { &*(ctx as *const Parker) };
    *p.woken.lock().unwrap_or_else(|e| e.into_inner()) = true;
    p.cv.notify_all();
}

/// Permits held through a [`RedisSemaphore`]; released on drop.
#[must_use = "dropping a Permit releases it at once"]
pub struct Permit {
    sem: RedisSemaphore,
    n: usize,
    token: u64,
    epoch: u64,
}

volt_sem::permit_debug!(Permit, n, token);

impl Permit {
    /// How many permits this holds.
    pub fn permits(&self) -> usize {
        self.n
    }
    /// The handle these permits were acquired through.
    pub fn semaphore(&self) -> &RedisSemaphore {
        &self.sem
    }
    /// The grant's fencing token (strictly increasing per grant of the
    /// semaphore; 0 for a permit of 0).
    pub fn token(&self) -> u64 {
        self.token
    }
    /// Whether the session that holds these permits was lost (they were
    /// reclaimed, or may be: not renewed for a whole lease; the holder must
    /// stop using the resource). No round trip: it reads the handle's state
    /// and clock, so it turns true at the lease's end even while Redis does
    /// not answer.
    pub fn is_lost(&self) -> bool {
        self.n > 0 && self.sem.inner.is_lost(self.epoch)
    }
    /// The session that holds these permits (for [`RedisSemaphore::lease_watch`]).
    pub fn session(&self) -> u64 {
        self.epoch
    }
    /// Completes when the session that holds these permits is lost.
    pub fn lost(&self) -> LeaseLost<'_> {
        LeaseLost { permit: self }
    }
    /// Releases now (without blocking, as [`RedisSemaphore::release`]):
    /// [`Error::LeaseExpired`] if the session was lost (nothing is released
    /// twice).
    pub fn release(mut self) -> Result<(), Error> {
        let n = std::mem::take(&mut self.n);
        self.sem.inner.release(n as u64, Some(self.epoch))
    }
    /// Releases as [`RedisSemaphore::release_blocking`] does: returns once
    /// Redis has applied it, sent from this thread when the handle's door is
    /// idle. [`Error::LeaseExpired`] if the session was lost, before or by
    /// this release (one that Redis did not apply).
    pub fn release_blocking(mut self) -> Result<(), Error> {
        let n = std::mem::take(&mut self.n);
        self.sem.inner.release_blocking(n as u64, Some(self.epoch))
    }
    /// Consumes the guard without releasing: the permits stay held by the
    /// handle's session until [`RedisSemaphore::release`] (or
    /// [`release_session`](RedisSemaphore::release_session)) gives them back
    /// by count, or the session ends.
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.n > 0 {
            let _ = self.sem.inner.release(self.n as u64, Some(self.epoch));
        }
    }
}

/// The future of [`Permit::lost`].
#[must_use = "futures do nothing unless polled"]
pub struct LeaseLost<'a> {
    permit: &'a Permit,
}

impl Future for LeaseLost<'_> {
    type Output = Error;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Error> {
        let p = self.permit;
        if p.n == 0 {
            return Poll::Pending;
        }
        poll_lost(&p.sem, p.epoch, cx)
    }
}

/// Registers `cx`'s waker for the loss of session `epoch`; `Ready` with the
/// reason once it is lost.
fn poll_lost(sem: &RedisSemaphore, epoch: u64, cx: &mut Context<'_>) -> Poll<Error> {
    if sem.inner.register_lost_waker(epoch, cx.waker()) {
        let failed = sem
            .inner
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failed;
        Poll::Ready(if failed {
            Error::StateLost
        } else {
            Error::LeaseExpired
        })
    } else {
        Poll::Pending
    }
}

/// Watches one session of a handle: completes with [`Error::LeaseExpired`]
/// (or [`Error::StateLost`]) when that session is lost, and never otherwise.
/// The owned form of [`Permit::lost`], for code that holds permits by count
/// rather than as a [`Permit`] (the raw waiter API, the bindings): take the
/// session of a grant from [`RedisWaiter::session`] or [`Permit::session`].
///
/// It holds a clone of the handle (the session stays up while it is
/// watched). A poll registers its waker, woken once when the session is
/// lost; a waker that would wake the same task is registered once, however
/// often it polls. A registration outlives the watch (it ends with the
/// session or the handle): code that watches many grants of one session
/// registers one waker for the session and fans out itself (as the C
/// library's lease hub does), rather than a new waker per grant.
#[must_use = "futures do nothing unless polled"]
#[derive(Clone)]
pub struct LeaseWatch {
    sem: RedisSemaphore,
    epoch: u64,
}

impl core::fmt::Debug for LeaseWatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LeaseWatch")
            .field("session", &self.epoch)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl LeaseWatch {
    /// Whether the watched session was lost.
    pub fn is_lost(&self) -> bool {
        self.sem.inner.is_lost(self.epoch)
    }
}

impl Future for LeaseWatch {
    type Output = Error;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Error> {
        poll_lost(&self.sem, self.epoch, cx)
    }
}

/// The future of [`RedisSemaphore::acquire`]: the waiter lives inside it
/// (`volt_sem::raw::Wait`), so waiting allocates nothing per wait.
pub type Acquire<'a> = volt_sem::raw::Wait<'a, RedisSemaphore>;

// SAFETY: `node` is the waiter's own node, the one `acquire_raw` queues and
// the door, the agent or a releasing thread completes through the `raw`
// trampoline.
unsafe impl volt_sem::raw::RawWait for RedisSemaphore {
    type Output<'a> = Result<Permit, Error>;

    fn new_waiter() -> RedisWaiter {
        RedisWaiter::new()
    }

    fn node(waiter: &RedisWaiter) -> &volt_sem::raw::Node {
        &waiter.node
    }

    fn immediate(&self, _n: usize) -> Option<Self::Output<'_>> {
        // Not even for 0 permits: whether the semaphore is closed is
        // Redis's knowledge (another client may have closed or reopened
        // it), so `acquire(0)` asks, as `acquire_raw` and the blocking and
        // `try_` forms do (`Job::Zero` on the door).
        None
    }

    fn answered(&self, waiter: &RedisWaiter, n: usize, r: Result<(), Error>) -> Self::Output<'_> {
        r.map(|()| self.permit(n, waiter.token(), waiter.session()))
    }

    fn finished(&self, waiter: &RedisWaiter, n: usize, finish: Finish) -> Self::Output<'_> {
        match finish {
            Finish::Granted { token } => Ok(self.permit(n, token, waiter.session())),
            Finish::Closed => Err(Error::Closed),
            Finish::Failed(e) => Err(e),
            Finish::Cancelled { .. } | Finish::Idle => {
                Err(Error::Protocol("request vanished".into()))
            }
        }
    }

    fn abandoned(&self, waiter: &RedisWaiter, n: usize, finish: Finish) {
        if let Finish::Granted { .. } = finish {
            // Granted after the last poll: the caller never saw it.
            let _ = self.inner.release(n as u64, Some(waiter.session()));
        }
    }

    fn stranded(&self) -> Option<Self::Output<'_>> {
        // A fork child's copy: the grant would come from the parent's agent
        // thread (and `finish_raw` there returns at once).
        self.inner.forked().then_some(Err(Error::Forked))
    }
}
