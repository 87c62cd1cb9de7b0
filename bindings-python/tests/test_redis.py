"""`Semaphore.connect`: one limit across machines, stored in Redis. Real
`redis-server` instances started here (free loopback ports, temp dirs, no
persistence, stopped by pid), real processes, asyncio tasks on two loops in
two threads plus blocking threads on one semaphore, lease loss by SIGSTOP of
the server, a server restarted empty, and every bad input as a typed
exception that changes nothing (checked with the census: available + held +
partial == total)."""

import asyncio
import gc
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import volt_sem
from conftest import LoopThread, wait_forked_by_a_signal_handler, wait_until

REDIS = shutil.which("redis-server")
# `make test` installs redis-server and sets this: there a missing server fails.
if REDIS is None and os.environ.get("VOLT_SEM_REQUIRE_REDIS"):
    raise RuntimeError("redis-server is not installed (make redis-server)")
pytestmark = [
    pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (make redis-server)"),
    pytest.mark.skipif(sys.platform == "win32", reason="the tests signal redis-server (POSIX)"),
]

WORKER = os.path.join(os.path.dirname(__file__), "scripts", "redis_worker.py")


def _die_with_parent():
    """In the child before exec: SIGKILL it when the test process dies (a
    killed or crashed pytest leaves no redis-server or worker behind)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answering_pid(port, password=None):
    """The pid of the redis-server answering on loopback `port` (INFO
    server's process_id, after AUTH with `password`), or None (nothing there
    yet, a refusal, no answer)."""

    def resp(*args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        return out

    req = (resp("AUTH", password) if password else b"") + resp("INFO", "server")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(req)
            got = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    return None
                got += chunk
                _, found, rest = got.partition(b"\r\nprocess_id:")
                if found and b"\r\n" in rest:
                    return int(rest.split(b"\r\n", 1)[0])
                if not found and (got.startswith(b"-") or b"\r\n-" in got):
                    return None  # a refusal: a password we do not have, loading
    except (OSError, ValueError):
        return None


class RedisServer:
    """One redis-server on a free loopback port in a temp dir, without
    persistence; stopped by pid."""

    def __init__(self, password=None, port=None, extra=()):
        """`port`: one attempt on that port (else up to 5 on free ports);
        `extra`: more redis-server arguments."""
        self.dir = tempfile.mkdtemp(prefix="volt-sem-pytest-redis-")
        self.password = password
        self.extra = list(extra)
        self.proc = None
        for p in [port] if port else (free_port() for _ in range(5)):
            self.port = p
            if self._spawn():
                return
        shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError("could not start redis-server")

    def _spawn(self):
        args = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir]
        if self.password:
            args += ["--requirepass", self.password]
        args += ["--unixsocket", self.socket] + self.extra
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        # Ready when the process answering on the port is ours, not on any
        # PONG: the port can be handed to another test's server too (in this
        # process or another one) before ours binds it; ours then exits, and
        # the other one must not be taken for it.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # the port was taken meanwhile
            if answering_pid(self.port, self.password) == self.proc.pid:
                return True
            time.sleep(0.02)
        self.stop()
        return False

    @property
    def socket(self):
        return os.path.join(self.dir, "redis.sock")

    @property
    def url(self):
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}"

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def restart_empty(self):
        """Stops the server and starts a new, empty one on the same port."""
        self.stop()
        for _ in range(50):
            if self._spawn():
                return
            time.sleep(0.1)
        raise RuntimeError("could not restart redis-server")

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    s = RedisServer()
    yield s
    s.close()


@pytest.fixture
def own_server():
    """A server of this test alone (paused, restarted)."""
    s = RedisServer()
    yield s
    s.close()


@pytest.fixture
def name(request):
    return f"pytest-{os.getpid()}-{request.node.name}"


def connect(url, name, permits, **kw):
    kw.setdefault("connect_timeout", 2.0)
    kw.setdefault("command_timeout", 2.0)
    return volt_sem.Semaphore.connect(url, name, permits, **kw)


def applied(*sems):
    """Returns once the releases and cancels made through `sems` reached
    Redis: they return at once (each handle's door thread applies them, in
    order), and a call that answers, such as a census, runs after them."""
    for s in sems:
        s.census()


def conserved(sem, total):
    c = sem.census()
    assert c["available"] + c["held"] + c["partial"] == c["total"] == total, c
    return c


class Worker:
    """A process running tests/scripts/redis_worker.py."""

    def __init__(self, url, name, total, lease=10.0, label=None):
        env = dict(os.environ, VOLT_SEM_TEST_LABEL=label) if label else None
        self.proc = subprocess.Popen(
            [sys.executable, WORKER, url, name, str(total), str(lease)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=_die_with_parent,
            env=env,
        )
        assert self.read() == "ready"

    def read(self):
        line = self.proc.stdout.readline()
        assert line, f"worker exited with {self.proc.wait()}"
        return line.strip()

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self):
        """Asks the worker to exit (its session ends at exit, without waiting
        for the lease); kills it if it does not."""
        if self.proc.poll() is None:
            try:
                self.send("exit")
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.proc.wait()


# ---------------------------------------------------------------------------
# Basics
# ---------------------------------------------------------------------------


def test_a_server_never_takes_another_one_on_its_port_for_its_own():
    """The test servers: one started on a port another server holds (a free
    port can be handed to two tests at once) does not come up, and is never
    taken for the other one. The readiness check took any PONG (or NOAUTH)
    on the port for its own server's, and the test then used the other."""
    for secret in ("other-secret", None):
        other = RedisServer(password=secret)
        try:
            for password in (None, "other-secret", "mine"):
                with pytest.raises(RuntimeError):
                    RedisServer(password=password, port=other.port)
            assert answering_pid(other.port, secret) == other.proc.pid
        finally:
            other.close()

def test_acquire_release_tokens(server, name):
    sem = connect(server.url, name, 4)
    assert type(sem) is volt_sem.Semaphore  # the one class
    assert (sem.name, sem.prefix, sem.total_permits) == (name, "volt-sem", 4)
    assert sem.last_token is None
    assert sem.try_acquire(2) is True
    t1 = sem.last_token
    assert isinstance(t1, int) and t1 > 0
    assert sem.held_permits == 2
    assert sem.acquire_blocking(2, timeout=5) is True
    t2 = sem.last_token
    assert t2 > t1
    assert sem.try_acquire(1) is False  # none free
    assert sem.acquire_blocking(1, timeout=0.05) is False
    assert sem.last_token == t2
    assert sem.locked() and sem.available_permits == 0
    sem.release(4)
    assert sem.last_token is None  # the caller holds nothing
    with sem.acquire(3) as grant:
        t3 = grant.token
        assert t3 > t2 and sem.held_permits == 3 and grant.held
    assert sem.held_permits == 0 and not grant.held

    async def main():
        assert await sem.acquire(2) is True
        t4 = sem.last_token
        assert t4 > t3
        async with sem.acquire(2) as grant:
            t5 = grant.token
            assert t5 > t4
            assert (await sem.census_async())["held"] == 4
        await sem.release_async(2)
        async with sem:
            t6 = sem.last_token
            assert t6 > t5
        return t6

    asyncio.run(main())
    c = conserved(sem, 4)
    assert c["available"] == 4 and c["last_token"] > t2
    assert "redis://" not in repr(sem) and name in repr(sem)


def test_a_release_by_another_task_leaves_no_grant_record_behind(server, name):
    """Permits acquired by one task and released by another (a release
    counted per handle), 200 times: the handle kept each acquiring task's
    record of its grant for good (one more per cycle, without bound, each
    scanned by every later release), and a later task created at the same
    address took it for its own: `last_token` of a task that holds nothing
    gave a released grant's token."""
    sem = connect(server.url, name, 1)

    async def holds_nothing():
        return sem.last_token

    async def main():
        for _ in range(200):
            await asyncio.ensure_future(_await(sem.acquire(1)))
            sem.release(1)  # by this task, not the one granted
        return [await asyncio.ensure_future(holds_nothing()) for _ in range(50)]

    assert asyncio.run(main()) == [None] * 50
    # Still per grant for a task that releases its own.
    async def own():
        await sem.acquire(1)
        token = sem.last_token
        sem.release(1)
        return token, sem.last_token

    token, after = asyncio.run(own())
    assert token is not None and after is None
    c = conserved(sem, 1)
    assert c["available"] == 1 and c["held"] == 0


def test_many_tokens_strictly_increase_across_handles(server, name):
    a = connect(server.url, name, 1)
    b = connect(server.url, name, 1)
    tokens = []
    for i in range(20):
        s = (a, b)[i % 2]
        assert s.acquire_blocking(1, timeout=5)
        tokens.append(s.last_token)
        s.release(1)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)


def test_unix_socket_url_and_typed_server_errors(server, name):
    sem = connect(f"unix://{server.socket}", name, 2)
    assert sem.try_acquire(2) and sem.last_token > 0
    tcp = connect(server.url, name, 2)  # the same semaphore over TCP
    assert tcp.try_acquire(1) is False
    sem.release(2)
    # A cluster connection to a standalone server, a database index out of
    # range: typed errors, never a hang or a crash.
    for url, kw in ((server.url, {"cluster": True}), (server.url + "/99", {})):
        with pytest.raises(volt_sem.RedisError):
            connect(url, name, 2, connect_timeout=1.0, **kw)


def test_connect_async_and_census(server, name):
    async def main():
        sem = await volt_sem.Semaphore.connect_async(server.url, name, 3, connect_timeout=2.0)
        assert isinstance(sem, volt_sem.Semaphore)
        assert await sem.acquire(3) is True
        assert sem.last_token > 0
        c = await sem.census_async()
        assert (c["available"], c["held"]) == (0, 3)
        await sem.release_async(3)
        with pytest.raises(volt_sem.TotalMismatchError):
            await volt_sem.Semaphore.connect_async(server.url, name, 5)
        with pytest.raises(volt_sem.RedisConnectionError):
            await volt_sem.Semaphore.connect_async(
                f"redis://127.0.0.1:{free_port()}", name, 3, connect_timeout=0.5
            )

    asyncio.run(main())


# ---------------------------------------------------------------------------
# FIFO, weights, cancel, timeouts
# ---------------------------------------------------------------------------


def test_fifo_weighted_not_overtaken_across_handles(server, name):
    holder = connect(server.url, name, 4)
    big = connect(server.url, name, 4)
    small = connect(server.url, name, 4)
    assert holder.acquire_blocking(4, timeout=5)
    with LoopThread() as lt:
        f3 = lt.submit(_granted(big.acquire(3)))
        wait_until(lambda: holder.census()["queued"] == 1, "acquire(3) queued")
        f1 = lt.submit(_granted(small.acquire(1)))
        wait_until(lambda: holder.census()["queued"] == 2, "acquire(1) queued")
        holder.release(1)
        wait_until(lambda: holder.census()["partial"] == 1, "partial grant at the head")
        assert not f3.done() and not f1.done()  # the 1 went to the head, not to acquire(1)
        holder.release(2)
        t3 = f3.result(10)
        assert not f1.done()
        holder.release(1)
        t1 = f1.result(10)
        assert t1 > t3
        big.release(3)
        small.release(1)
    applied(big, small)
    c = conserved(holder, 4)
    assert c["available"] == 4


async def _await(aw):
    return await aw


async def _granted(acquire):
    """Awaits `acquire` (held afterwards) and gives the grant's token."""
    assert await acquire is True
    return acquire.token


def test_cancel_and_timeout_hand_partial_grants_on(server, name):
    sem = connect(server.url, name, 4)
    other = connect(server.url, name, 4)
    assert other.acquire_blocking(3, timeout=5)

    async def main():
        # The head collects the one free permit, then times out: it goes on.
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(sem.acquire(4), 0.3)
        task = asyncio.ensure_future(sem.acquire(2))
        while other.census()["queued"] == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    # A cancel may complete after the await it ended: settle.
    wait_until(lambda: sem.census()["queued"] == 0, "cancels done")
    c = conserved(sem, 4)
    assert (c["available"], c["held"], c["partial"]) == (1, 3, 0)
    # A blocking timeout hands its partial grant on to the next in line.
    with LoopThread() as lt:
        results = {}

        def blocking():
            results["t"] = sem.acquire_blocking(4, timeout=0.5)

        th = threading.Thread(target=blocking)
        th.start()
        wait_until(lambda: other.census()["queued"] == 1, "blocking acquire(4) queued")
        f = lt.submit(_granted(other.acquire(1)))
        wait_until(lambda: other.census()["queued"] == 2, "acquire(1) behind it")
        th.join(30)
        assert results["t"] is False
        assert f.result(10) > 0
    other.release(4)
    applied(other)
    c = conserved(sem, 4)
    assert c["available"] == 4 and c["queued"] == 0


def test_two_loops_two_threads_and_blocking_threads(server, name):
    total = 4
    sem = connect(server.url, name, total)
    lock = threading.Lock()
    state = {"held": 0, "peak": 0, "grants": 0}

    def enter(n):
        with lock:
            state["held"] += n
            state["peak"] = max(state["peak"], state["held"])
            state["grants"] += 1
            assert state["held"] <= total

    def leave(n):
        with lock:
            state["held"] -= n

    async def task_body(seed):
        rng = random.Random(seed)
        for _ in range(30):
            n = rng.randint(1, total)
            if rng.random() < 0.2:
                try:
                    await asyncio.wait_for(sem.acquire(n), rng.uniform(0.0, 0.05))
                except asyncio.TimeoutError:
                    continue
                enter(n)
                leave(n)
                await sem.release_async(n)
                continue
            async with sem.acquire(n) as grant:
                assert grant.token > 0
                enter(n)
                await asyncio.sleep(rng.uniform(0, 0.003))
                leave(n)

    async def loop_main(base):
        await asyncio.gather(*(task_body(base + i) for i in range(3)))

    def blocking_body(seed):
        rng = random.Random(seed)
        for _ in range(30):
            n = rng.randint(1, total)
            if not sem.acquire_blocking(n, timeout=rng.choice([None, 0.01, 5.0])):
                continue
            enter(n)
            time.sleep(rng.uniform(0, 0.003))
            leave(n)
            sem.release(n)

    with LoopThread("asyncio") as a, LoopThread("uvloop") as b:
        fa = a.submit(loop_main(100))
        fb = b.submit(loop_main(200))
        threads = [threading.Thread(target=blocking_body, args=(300 + i,)) for i in range(2)]
        for t in threads:
            t.start()
        fa.result(90)
        fb.result(90)
        for t in threads:
            t.join(90)
    assert state["held"] == 0 and state["peak"] <= total and state["grants"] > 0
    wait_until(lambda: sem.census()["queued"] == 0, "cancels done")
    c = conserved(sem, total)
    assert c["available"] == total


def test_fifo_across_processes(server, name):
    sem = connect(server.url, name, 4)
    assert sem.acquire_blocking(4, timeout=5)
    a = Worker(server.url, name, 4)
    b = Worker(server.url, name, 4)
    try:
        a.send("acquire 3")
        wait_until(lambda: sem.census()["queued"] == 1, "A's acquire(3) queued")
        b.send("acquire 1")
        wait_until(lambda: sem.census()["queued"] == 2, "B's acquire(1) queued")
        sem.release(2)  # 2 reach A's partial grant; B must not overtake
        wait_until(lambda: sem.census()["partial"] == 2, "A's partial grant")
        sem.release(1)
        ta = int(a.read().split()[1])
        sem.release(1)
        tb = int(b.read().split()[1])
        assert tb > ta
        a.send("release 3")
        assert a.read() == "released"
        b.send("release 1")
        assert b.read() == "released"
        b.send("release 1")
        assert b.read() == "NotHeldError"  # each client returns its own
    finally:
        a.close()
        b.close()
    wait_until(lambda: sem.census()["sessions"] == 1, "worker sessions ended")
    assert conserved(sem, 4)["available"] == 4


def test_close_fails_waiters_everywhere(server, name):
    sem = connect(server.url, name, 2)
    closer = connect(server.url, name, 2)
    assert sem.acquire_blocking(2, timeout=5)
    w = Worker(server.url, name, 2)
    errors = []
    try:
        w.send("acquire 1")
        wait_until(lambda: sem.census()["queued"] == 1, "process waiter queued")

        def blocking():
            try:
                sem.acquire_blocking(1)
            except volt_sem.ClosedError as e:
                errors.append(e)

        th = threading.Thread(target=blocking)
        th.start()
        wait_until(lambda: sem.census()["queued"] == 2, "thread waiter queued")
        with LoopThread() as lt:
            f = lt.submit(_await(sem.acquire(2)))
            wait_until(lambda: sem.census()["queued"] == 3, "task waiter queued")
            closer.close_for_everyone()
            with pytest.raises(volt_sem.ClosedError):
                f.result(10)
        th.join(10)
        assert len(errors) == 1
        assert w.read() == "ClosedError"
        with pytest.raises(volt_sem.ClosedError):
            sem.acquire_blocking(1, timeout=1)
        assert sem.closed
        sem.release(2)  # held permits can still be released
        applied(sem)
    finally:
        w.close()
    c = conserved(closer, 2)
    assert c["closed"] and c["available"] == 2


def test_waiter_of_an_abandoned_loop_hands_its_grant_on(server, name):
    """A task left waiting on a loop closed without cancelling it: the grant
    that reaches it is released when the task is collected, and a queued
    request of a collected task leaves the queue."""
    sem = connect(server.url, name, 1)
    holder = connect(server.url, name, 1)
    assert holder.acquire_blocking(1, timeout=5)
    for grant_first in (True, False):
        loop = asyncio.new_event_loop()
        task = loop.create_task(_await(sem.acquire(1)))
        while holder.census()["queued"] == 0:
            loop.run_until_complete(asyncio.sleep(0.01))
        loop.close()  # the task still waits
        if grant_first:
            holder.release(1)  # to the abandoned task
            wait_until(lambda: holder.census()["queued"] == 0, "granted")
        del task, loop
        gc.collect()
        if grant_first:
            wait_until(lambda: holder.census()["available"] == 1, "the grant handed on")
            assert holder.acquire_blocking(1, timeout=5)
        else:
            wait_until(lambda: holder.census()["queued"] == 0, "the request removed")
    holder.release(1)
    c = conserved(holder, 1)
    assert c["available"] == 1 and c["queued"] == 0


# ---------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------


def test_loop_not_blocked_while_redis_is_down(own_server, name):
    sem = connect(own_server.url, name, 1, command_timeout=1.0, connect_timeout=1.0)
    assert sem.try_acquire(1)
    sem.release(1)

    async def main():
        seen_pending = []
        acquire = asyncio.ensure_future(sem.acquire(1))

        async def ticker():
            for _ in range(5):
                await asyncio.sleep(0.01)
                seen_pending.append(not acquire.done())

        await ticker()
        try:
            await acquire
        except volt_sem.RedisError:
            pass
        return seen_pending

    own_server.pause()
    try:
        seen = asyncio.run(main())
    finally:
        own_server.resume()
    # The loop ran the ticker while the acquire's round trip was in flight.
    assert any(seen)

    async def exit_main():
        async def body():
            async with sem.acquire(1):
                own_server.pause()

        # The exit of `async with` releases without waiting for Redis (the
        # handle's door thread applies the release): it returns, without an
        # error, while Redis is still paused. (Before, the release waited
        # for its round trip and failed at the command timeout.)
        await body()

    try:
        asyncio.run(exit_main())
    finally:
        own_server.resume()


def test_lease_loss_by_sigstop(own_server, name):
    lease = 1.5
    sem = connect(own_server.url, name, 3, lease=lease, command_timeout=0.5, connect_timeout=0.5)
    with pytest.raises(RuntimeError):
        sem.lease_lost()  # nothing granted yet
    with LoopThread() as lt:
        release_now = asyncio.Event  # made on the loop below

        async def hold_in_async_with(ev, entered):
            async with sem.acquire(1):
                entered.set_result(None)
                await ev.wait()

        async def hold():
            token = await _granted(sem.acquire(1))
            ev, entered = release_now(), asyncio.get_running_loop().create_future()
            holder = asyncio.ensure_future(hold_in_async_with(ev, entered))
            await entered
            cancelled = asyncio.ensure_future(sem.lease_lost())
            lost = asyncio.ensure_future(sem.lease_lost())
            await asyncio.sleep(0)
            cancelled.cancel()  # leaves the others watching
            waiter = asyncio.ensure_future(sem.acquire(2))
            return token, lost, waiter, holder, ev

        token, lost, waiter, holder, ev = lt.submit(hold()).result(10)
        # Queued in Redis and the answer read by this handle (stats().queued):
        # a Pending answer the pause holds back is an uncertain outcome (a
        # connection error), not a lease loss.
        wait_until(lambda: sem.census()["queued"] == 1 and sem.stats().queued == 1, "waiter queued")
        assert not sem.is_lease_lost()
        own_server.pause()
        try:
            wait_until(lambda: sem.is_lease_lost(), "lease loss seen while Redis is stopped")
            time.sleep(lease)  # past the lease on the server's clock too
        finally:
            own_server.resume()

        async def outcomes():
            exc = await lost
            with pytest.raises(volt_sem.LeaseExpiredError):
                await waiter
            ev.set()  # the `async with` exit reports the loss, releases nothing
            with pytest.raises(volt_sem.LeaseExpiredError):
                await holder
            return exc

        exc = lt.submit(outcomes()).result(10)
        assert isinstance(exc, volt_sem.LeaseExpiredError) and exc.code == "LEASE_EXPIRED"
        # A watch of the lost session started later completes at once, on
        # another loop too.
        assert isinstance(asyncio.run(_await(sem.lease_lost())), volt_sem.LeaseExpiredError)
    with pytest.raises(volt_sem.LeaseExpiredError):
        sem.release(1)  # reported, releases nothing
    with pytest.raises(volt_sem.NotHeldError):
        sem.release(1)  # each lost permit is reported once
    other = connect(own_server.url, name, 3)
    wait_until(lambda: other.census()["available"] == 3, "the lost permits reaped")
    c = conserved(other, 3)
    assert c["held"] == 0
    # The handle goes on with a new session; its tokens are newer.
    assert sem.acquire_blocking(1, timeout=5)
    assert sem.last_token > token
    sem.release(1)


def test_killed_holder_permits_come_back(server, name):
    """kill -9 of a process holding permits: its lease expires and a waiter
    here gets them (within the lease), with a newer token."""
    sem = connect(server.url, name, 2)
    w = Worker(server.url, name, 2, lease=1.0)
    try:
        w.send("acquire 2")
        old = int(w.read().split()[1])
        w.proc.kill()
        w.proc.wait()
        assert sem.acquire_blocking(2, timeout=30)
        assert sem.last_token > old
        sem.release(2)
    finally:
        w.close()
    assert conserved(sem, 2)["available"] == 2


def test_inspect_shows_a_labelled_client_in_another_process(server, name):
    """inspect() lists a client of another process under the label it
    connected with, with its pid, its grant's token and a running lease, and
    this handle queued at position 0 under its default label; once the client
    is killed with SIGKILL and its lease ends, it is no longer listed."""
    sem = connect(server.url, name, 2)
    w = Worker(server.url, name, 2, lease=1.0, label="py-redis-holder")
    try:
        w.send("acquire 2")
        token = int(w.read().split()[1])
        got = []
        t = threading.Thread(target=lambda: got.append(sem.acquire_blocking(1, timeout=60)))
        t.start()
        wait_until(lambda: sem.census()["queued"] == 1, "our request queued")
        i = sem.inspect()
        assert (i.total, i.available, i.closed) == (2, 0, False)
        [h] = i.holders
        assert (h.label, h.pid, h.permits, h.token) == ("py-redis-holder", w.proc.pid, 2, token)
        assert h.lease_remaining is not None and h.lease_remaining > 0
        assert h.held_for is not None and h.held_for >= 0
        [q] = i.waiters
        assert (q.position, q.permits, q.granted, q.pid) == (0, 1, 0, os.getpid())
        assert q.label == f"{q.host}:{os.getpid()}"
        w.proc.kill()
        w.proc.wait()
        t.join(60)  # the lease ends unrenewed: its permits reach our request
        assert got == [True]
        i = sem.inspect()
        assert i.waiters == []
        assert [(h.pid, h.label) for h in i.holders] == [(os.getpid(), q.label)]
        sem.release(1)
    finally:
        w.close()
    assert conserved(sem, 2)["available"] == 2


@pytest.mark.parametrize("label", ["has space", "x" * 200, ""])
def test_invalid_label_is_refused_before_connecting(server, name, label):
    with pytest.raises(volt_sem.InvalidLabelError) as e:
        connect(server.url, name, 1, label=label)
    assert isinstance(e.value, ValueError) and e.value.code == "INVALID_LABEL"
    with pytest.raises(FileNotFoundError):  # nothing was created
        volt_sem.Semaphore.delete_redis(server.url, name)


def test_redis_restarted_empty(own_server, name):
    sem = connect(own_server.url, name, 2, lease=2.0, command_timeout=0.5, connect_timeout=0.5)
    assert sem.acquire_blocking(2, timeout=5)
    with LoopThread() as lt:
        f = lt.submit(_await(sem.acquire(1)))
        # As in the lease test: the answer read by this handle too.
        wait_until(lambda: sem.census()["queued"] == 1 and sem.stats().queued == 1, "waiter queued")
        own_server.restart_empty()
        with pytest.raises(volt_sem.StateLostError):
            f.result(30)
    with pytest.raises(volt_sem.StateLostError):
        sem.release(2)
    with pytest.raises(volt_sem.StateLostError):
        sem.acquire_blocking(1, timeout=1)
    fresh = connect(own_server.url, name, 2)  # starts afresh
    assert fresh.try_acquire(2) and fresh.last_token > 0
    fresh.release(2)
    assert conserved(fresh, 2)["available"] == 2


def test_blocking_acquire_interrupted_by_ctrl_c(server, name):
    sem = connect(server.url, name, 1)
    assert sem.acquire_blocking(1, timeout=5)
    w = Worker(server.url, name, 1)
    try:
        w.send("acquire 1")
        wait_until(lambda: sem.census()["queued"] == 1, "worker waits")
        w.proc.send_signal(signal.SIGINT)
        assert w.read() == "KeyboardInterrupt"
        wait_until(lambda: sem.census()["queued"] == 0, "its request removed")
        w.send("census")
        assert w.read().startswith("census")  # the process goes on
        sem.release(1)
        # Ctrl-C during round trips (try_acquire, release) interrupts the
        # program, never a round trip: no connection error, no session lost.
        w.send("spin")
        assert w.read() == "spinning"
        for _ in range(8):
            time.sleep(0.05)
            w.proc.send_signal(signal.SIGINT)
            assert w.read() == "KeyboardInterrupt"
            w.send("held")
            if w.read() == "held 1":
                w.send("release 1")
                assert w.read() == "released"
            w.send("spin")
            assert w.read() == "spinning"
        w.proc.send_signal(signal.SIGINT)
        assert w.read() == "KeyboardInterrupt"
        w.send("held")  # the interrupt may land between try_acquire and release
        if w.read() == "held 1":
            w.send("release 1")
            assert w.read() == "released"
        w.send("acquire 1")
        assert w.read().startswith("granted")
        w.send("release 1")
        assert w.read() == "released"
    finally:
        w.close()
    assert conserved(sem, 1)["available"] == 1


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def test_bad_input_typed_errors_nothing_lost(server, name):
    sem = connect(server.url, name, 3)
    assert sem.acquire_blocking(1, timeout=5)
    for url in ["", "nope://127.0.0.1", "redis://127.0.0.1:notaport", "http://x"]:
        with pytest.raises(volt_sem.InvalidUrlError) as e:
            connect(url, name, 3)
        assert isinstance(e.value, ValueError) and e.value.code == "INVALID_URL"
    with pytest.raises(volt_sem.RedisConnectionError) as e:
        connect(f"redis://127.0.0.1:{free_port()}", name, 3, connect_timeout=0.5)
    assert isinstance(e.value, ConnectionError)
    with pytest.raises(volt_sem.InvalidNameError):
        connect(server.url, "", 3)
    with pytest.raises(volt_sem.InvalidNameError):
        connect(server.url, "x" * 1025, 3)
    assert connect(server.url, "y" * 1024, 1).total_permits == 1
    for permits in (0, volt_sem.MAX_REDIS_PERMITS + 1):
        with pytest.raises(ValueError):
            connect(server.url, name, permits)
    with pytest.raises(TypeError):
        connect(server.url, name, "3")
    for kw in ({"lease": 0.1}, {"lease": -1.0}, {"connect_timeout": 0.0},
               {"command_timeout": float("nan")}, {"prefix": ""}, {"prefix": "a{b"}):
        with pytest.raises(ValueError):
            connect(server.url, name, 3, **kw)
    with pytest.raises(volt_sem.TotalMismatchError) as e:
        connect(server.url, name, 4)
    assert e.value.args[1] == 3
    with pytest.raises(ValueError):
        sem.try_acquire(4)  # above the total: could never be granted
    with pytest.raises(ValueError):
        sem.acquire_blocking(1, timeout=-1)

    async def too_many():
        await sem.acquire(4)

    with pytest.raises(ValueError):
        asyncio.run(too_many())
    with pytest.raises(volt_sem.NotHeldError) as e:
        sem.release(2)
    assert e.value.args[1] == 1
    with pytest.raises(RuntimeError, match="asyncio"):
        sem.acquire(1).send(None)  # stepped outside any event loop
    c = conserved(sem, 3)
    assert (c["available"], c["held"]) == (2, 1)
    sem.release(1)


def test_blocking_acquire_on_a_running_loop_is_refused_even_with_free_permits(server, name):
    # Every Redis acquire waits for its round trip (the handle's door thread
    # makes it): on a loop's thread that wait would stall the loop, so it is
    # refused like any other wait there, and nothing is taken.
    sem = connect(server.url, name, 2)

    async def main():
        with pytest.raises(RuntimeError, match="async with"):
            sem.acquire_blocking(1)
        assert await sem.acquire(1) is True  # the way it is meant on a loop
        sem.release(1)

    asyncio.run(main())
    c = conserved(sem, 2)
    assert (c["available"], c["held"], c["queued"]) == (2, 0, 0)


def test_passwords_never_shown():
    secret = "hunter2-s3cret"
    srv = RedisServer(password=secret)
    try:
        sem = connect(srv.url, "pw", 1)
        assert secret not in repr(sem) and secret not in str(sem)
        assert sem.try_acquire(1)
        sem.release(1)
        for url in (f"redis://:wrong-{secret}@127.0.0.1:{srv.port}",
                    f"redis://default:wrong-{secret}@127.0.0.1:{srv.port}"):
            with pytest.raises(volt_sem.AuthenticationError) as e:
                connect(url, "pw", 1)
            assert isinstance(e.value, volt_sem.RedisConnectionError)
            assert e.value.code == "AUTH_FAILED"
            for text in (str(e.value), repr(e.value), repr(e.value.args)):
                assert secret not in text
        with pytest.raises(volt_sem.RedisConnectionError) as e:
            connect(f"redis://:{secret}@127.0.0.1:{free_port()}", "pw", 1, connect_timeout=0.5)
        assert secret not in str(e.value) and secret not in repr(e.value)
        with pytest.raises(volt_sem.InvalidUrlError) as e:
            connect(f"redis://:{secret}@127.0.0.1:bad", "pw", 1)
        assert secret not in str(e.value)
    finally:
        srv.close()


EXITING = """
import asyncio, sys, threading, volt_sem
sem = volt_sem.Semaphore.connect(sys.argv[1], sys.argv[2], 2)
assert sem.acquire_blocking(1, timeout=5)
threading.Thread(target=lambda: sem.acquire_blocking(2), daemon=True).start()

async def wait():
    await sem.acquire(2)

loop = asyncio.new_event_loop()
loop.run_until_complete(asyncio.wait([loop.create_task(wait())], timeout=0.2))
print("exiting", flush=True)
"""


def test_process_exit_with_waiters_and_holders(server, name):
    """A process that exits holding permits, with a blocking thread and a task
    still waiting, exits cleanly and its session ends (no lease wait)."""
    sem = connect(server.url, name, 2)
    out = subprocess.run(
        [sys.executable, "-c", EXITING, server.url, name],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "exiting"
    wait_until(lambda: sem.census()["available"] == 2, "the exited process's permits back")
    c = conserved(sem, 2)
    assert c["queued"] == 0


def test_fork_child_of_a_used_handle_gets_forked_error(server, name):
    """A handle used before os.fork() (its agent thread running) is refused
    in the child with ForkedError, sync and async (an awaitable never waits
    for the parent's threads, which the child does not have), and dropping
    it there neither hangs nor ends the parent's session."""
    import warnings

    sem = connect(server.url, name, 2)
    assert sem.try_acquire(1)
    held = sem.last_token

    async def use():
        async with sem.acquire(1) as grant:
            return grant.token

    assert asyncio.run(use()) > held  # the handle's threads are started
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads
        pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.close(r)
        codes = []
        try:
            try:
                sem.try_acquire(1)
                codes.append("try: no error")
            except volt_sem.ForkedError:
                codes.append("ok")

            async def child():
                try:
                    await asyncio.wait_for(sem.acquire(1), 10)
                    return "acquire: no error"
                except volt_sem.ForkedError:
                    return "ok"
                except asyncio.TimeoutError:
                    return "acquire: hung"

            codes.append(asyncio.run(child()))
            del sem  # the child's copy dropped: must neither hang nor end anything
            gc.collect()
        except BaseException as e:  # report anything, never run pytest here
            codes.append(f"raised {e!r}")
        os.write(w, ",".join(codes).encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + 30
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.05)
    with os.fdopen(r) as f:
        assert f.read() == "ok,ok"
    c = conserved(sem, 2)
    assert c["held"] == 1 and sem.held_permits == 1
    sem.release(1)
    assert conserved(sem, 2)["available"] == 2


# ---------------------------------------------------------------------------
# trio and anyio
# ---------------------------------------------------------------------------


def test_trio_tasks_and_cancel(server, name):
    trio = pytest.importorskip("trio")
    other = connect(server.url, name, 3)
    assert other.acquire_blocking(2, timeout=5)

    async def main():
        sem = await volt_sem.Semaphore.connect_async(server.url, name, 3)
        assert await sem.acquire(1) is True
        assert sem.last_token > 0
        await sem.release_async(1)
        # The head collects the free permit, then is cancelled: it goes back.
        with trio.move_on_after(0.2) as scope:
            await sem.acquire(3)
        assert scope.cancelled_caught
        grants = []

        async def one(n):
            async with sem.acquire(n) as grant:
                grants.append((n, grant.token))
                await trio.sleep(0.001)

        other.release(2)
        async with trio.open_nursery() as nursery:
            for n in (3, 1, 2, 1):
                nursery.start_soon(one, n)
        assert sorted(n for n, _ in grants) == [1, 1, 2, 3]
        async with sem:
            assert sem.last_token > max(t for _, t in grants)
        return sem, await sem.census_async()

    sem, c = trio.run(main)
    assert (c["available"], c["held"], c["partial"]) == (3, 0, 0)
    wait_until(lambda: sem.census()["queued"] == 0, "cancels done")
    assert conserved(sem, 3)["available"] == 3


def test_anyio_on_trio_and_asyncio(server, name):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("trio")
    sem = connect(server.url, name, 2)

    async def main():
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)

    async def one():
        async with sem.acquire(2) as grant:
            assert grant.token > 0
            await anyio.sleep(0.001)

    for backend in ("trio", "asyncio"):
        anyio.run(main, backend=backend)
    assert conserved(sem, 2)["available"] == 2


def test_trio_lease_lost_on_state_loss(own_server, name):
    trio = pytest.importorskip("trio")
    sem = connect(own_server.url, name, 2, lease=1.0, command_timeout=0.5, connect_timeout=0.5)

    async def main():
        await sem.acquire(1)
        watch = sem.lease_lost()
        own_server.restart_empty()  # the agent's next heartbeat finds the state gone
        exc = await watch
        with pytest.raises(volt_sem.StateLostError):
            await sem.release_async(1)
        return exc

    exc = trio.run(main)
    assert isinstance(exc, volt_sem.StateLostError) and exc.code == "STATE_LOST"


# ---------------------------------------------------------------------------
# TLS and replication options (the TLS handshake itself, Sentinel and WAIT
# with real replicas are tested in the Rust crate: redis/tests/tls.rs,
# sentinel.rs, replicas.rs)
# ---------------------------------------------------------------------------


def test_min_replicas_acked_without_replicas_fails_typed_and_loses_nothing(server, name):
    plain = connect(server.url, name, 2)
    strict = connect(server.url, name, 2, min_replicas_acked=(1, 0.1))
    with pytest.raises(volt_sem.RedisCommandError) as e:
        strict.try_acquire(1)
    assert e.value.code == "NOT_REPLICATED"
    # The grant went back with the session it gave up.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and conserved(plain, 2)["available"] != 2:
        time.sleep(0.05)
    assert conserved(plain, 2)["available"] == 2
    with pytest.raises(ValueError):
        connect(server.url, name, 2, min_replicas_acked=(1, 0.0))


def test_tls_options_reach_the_connection(server, name, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate\n")
    tls_url = server.url.replace("redis://", "rediss://", 1)
    # A TLS handshake with a plain Redis port: a typed TLS failure, in time.
    t0 = time.monotonic()
    with pytest.raises(volt_sem.RedisConnectionError) as e:
        connect(tls_url, name, 1, tls_ca_file=str(tmp_path / "missing.pem"), connect_timeout=2.0)
    assert e.value.code == "TLS_FAILED" and time.monotonic() - t0 < 10
    with pytest.raises(volt_sem.RedisConnectionError) as e:
        connect(tls_url, name, 1, tls_ca_file=str(ca))
    assert e.value.code == "TLS_FAILED"
    # TLS options on a plain URL: refused, not ignored.
    with pytest.raises(ValueError):
        connect(server.url, name, 1, tls_ca_file=str(ca))
    with pytest.raises(ValueError):
        connect(server.url, name, 1, tls_client_cert=(str(ca), str(ca)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_by_a_signal_handler_leaves_the_parents_redis_wait_alone(server, name):
    """A signal handler run during a blocking wait (between its slices) forks:
    the child's wait must end (ForkedError, as on a named semaphore), not go
    on waiting for a grant that only the parent's threads deliver."""
    sem = connect(server.url, name, 1)
    assert sem.try_acquire(1)
    reported, got = wait_forked_by_a_signal_handler(sem)
    assert reported == [b"x"]  # the child's wait ended with ForkedError
    assert got is True
    c = conserved(sem, 1)
    assert (c["available"], c["held"], c["queued"]) == (0, 1, 0)
    sem.release(1)
    applied(sem)
    assert conserved(sem, 1)["available"] == 1


# A fresh interpreter (this one has asyncio) where another thread is halfway
# through `import asyncio` (paused by an import hook) when a plain thread takes
# a permit: `asyncio` is in sys.modules without `current_task` yet. Gunicorn
# workers hit it: forked while the master's control thread imported asyncio,
# each child kept the half-built module for good.
HALF_IMPORTED_ASYNCIO = """
import importlib.abc, sys, threading, volt_sem
url, name = sys.argv[1], sys.argv[2]
assert "asyncio" not in sys.modules
sem = volt_sem.Semaphore.connect(url, name, 1)
paused, go = threading.Event(), threading.Event()
class PauseAsyncio(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == "asyncio.tasks":
            paused.set()
            go.wait(2)  # long enough for the acquire below; bounded so the test takes seconds
        return None
sys.meta_path.insert(0, PauseAsyncio())
t = threading.Thread(target=__import__, args=("asyncio",))
t.start()
assert paused.wait(10)
try:
    with sem.acquire(1) as grant:
        assert sem.held_permits == 1
    print("token", grant.token)
finally:
    go.set()
    t.join()
sem.disconnect()
"""


def test_blocking_acquire_while_another_thread_imports_asyncio(server, name):
    r = subprocess.run([sys.executable, "-c", HALF_IMPORTED_ASYNCIO, server.url, name],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("token ")
    sem = connect(server.url, name, 1)
    assert conserved(sem, 1)["available"] == 1
    sem.disconnect()


def test_set_total_grows_shrinks_reopens_and_resizes(server, name):
    """set_total on Redis: a growth alone serves an acquire queued by another
    process; a shrink fails the waiting acquire above the new total and
    revokes nothing (the census shows the debt until a release pays it);
    reopen by another client undoes a close; connect with another total is
    refused unless resize=True."""
    sem = connect(server.url, name, 1)
    assert sem.try_acquire(1)
    w = Worker(server.url, name, 1)
    try:
        w.send("acquire 1")
        wait_until(lambda: sem.census()["queued"] == 1, "the worker's acquire queued")
        sem.set_total(2)  # no release: the growth is what serves it
        assert w.read().split()[0] == "granted"
        w.send("release 1")
        assert w.read() == "released"
    finally:
        w.close()
    c = conserved(sem, 2)
    assert c["held"] == 1 and c["debt"] == 0

    async def shrink():
        acq = sem.acquire(2)  # takes the free permit as a partial grant
        task = asyncio.ensure_future(acq)
        while not acq.waiting:
            await asyncio.sleep(0.001)
        await sem.set_total_async(1)
        with pytest.raises(ValueError, match="total"):
            await task

    asyncio.run(shrink())
    c = sem.census()
    assert c["total"] == 1 and c["held"] == 1 and c["available"] == 0 and c["queued"] == 0

    sem.set_total(2)
    assert sem.try_acquire(1)
    sem.set_total(1)
    c = sem.census()
    assert c["debt"] == 1 and c["available"] + c["held"] + c["partial"] == c["total"] + c["debt"]
    sem.release(1)
    c = sem.census()
    assert c["debt"] == 0 and c["available"] == 0
    sem.release(1)
    assert conserved(sem, 1)["available"] == 1
    with pytest.raises(ValueError):
        sem.set_total(0)

    other = connect(server.url, name, 1)
    sem.close_for_everyone()
    with pytest.raises(volt_sem.ClosedError):
        other.try_acquire(1)
    async def reopen():
        await other.reopen_async()

    asyncio.run(reopen())
    assert not sem.census()["closed"]
    assert sem.try_acquire(1)
    sem.release(1)
    other.disconnect()

    with pytest.raises(volt_sem.TotalMismatchError, match="resize=True"):
        connect(server.url, name, 3)
    resized = connect(server.url, name, 3, resize=True)
    assert conserved(sem, 3)["available"] == 3
    resized.disconnect()
    sem.disconnect()


def test_stats_answers_without_a_round_trip(server, name):
    # Counters and gauges from the handle's own records: no round trip.
    sem = connect(server.url, name, 3)
    assert sem.try_acquire(2)
    s = sem.stats()
    assert isinstance(s, volt_sem.Stats) and s.recording is True
    assert (s.grants, s.permits_granted, s.held, s.available) == (1, 2, 2, 1)
    assert (s.queued, s.timeouts, s.cancels) == (0, 0, 0)
    assert s.wait.count == s.grants
    assert len(s.wait.buckets) == 28
    assert sem.acquire_blocking(2, timeout=0.05) is False
    s = sem.stats()
    assert (s.grants, s.timeouts, s.cancels, s.queued) == (1, 1, 1, 0)
    sem.release(2)
    sem.disconnect()


class _Boom(Exception):
    pass


def test_with_blocks_end_with_the_bodys_outcome_after_a_disconnect(server, name):
    """The exit of `async with sem.acquire(n)` (and of `with`) after the
    handle was disconnected in the body: the disconnect gave the permits
    back, so the exit has nothing to release and the block ends as its body
    did, with its own exception if it raised one. Before, the exit raised
    DisconnectedError over both. Node's runExclusive does the same."""
    watcher = connect(server.url, name, 1)

    async def returns():
        sem = connect(server.url, name, 1)
        async with sem.acquire(1):
            await sem.disconnect_async()
        return "done"

    assert asyncio.run(returns()) == "done"

    async def raises():
        sem = connect(server.url, name, 1)
        async with sem.acquire(1):
            await sem.disconnect_async()
            raise _Boom()

    with pytest.raises(_Boom):
        asyncio.run(raises())
    sem = connect(server.url, name, 1)
    with sem.acquire(1):
        sem.disconnect()
    sem = connect(server.url, name, 1)
    with pytest.raises(_Boom):
        with sem.acquire(1):
            sem.disconnect()
            raise _Boom()
    wait_until(lambda: watcher.census()["available"] == 1, "every permit back")
    assert conserved(watcher, 1)["held"] == 0
    watcher.disconnect()


def test_a_lease_lost_in_the_body_leaves_the_bodys_exception(own_server, name):
    """A lease lost while the body ran: its exit raises LeaseExpiredError if
    the body returned (test_lease_loss_by_sigstop), but the body's own
    exception if it raised one (before, LeaseExpiredError replaced it)."""
    sem = connect(own_server.url, name, 1, lease=1.0, command_timeout=0.5, connect_timeout=0.5)

    async def body():
        async with sem.acquire(1):
            own_server.pause()
            try:
                wait_until(lambda: sem.is_lease_lost(), "lease loss seen while Redis is stopped")
            finally:
                own_server.resume()
            raise _Boom()

    with pytest.raises(_Boom):
        asyncio.run(body())
    other = connect(own_server.url, name, 1)
    wait_until(lambda: other.census()["available"] == 1, "the lost permit reaped")
    conserved(other, 1)
    sem.disconnect()
    other.disconnect()


def _threads():
    """The thread ids of this process's Redis session threads (each handle's
    door and agent, named volt-sem-redis...). A set, not a count: threads of
    an earlier test's handles may end during this one (a count then fell
    below its baseline, and never reached baseline + 20, on CI runs), and a
    test looks only at the threads that are not in its baseline set."""
    tids = set()
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                if f.read().startswith("volt-sem-redis"):
                    tids.add(int(t))
        except OSError:
            pass  # ended meanwhile
    return tids


def _clients_named(server, label):
    """How many connections the server has open for clients named `label`."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"CLIENT LIST\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, _, rest = data.partition(b"\r\n")
            if head.startswith(b"$") and len(rest) >= int(head[1:]) + 2:
                break
    return sum(f" name={label} " in line for line in data.decode().splitlines())


def _nothing_left(server, label, base, what):
    """Waits (bounded: 20 s, for the server to read the closed sockets) until
    this process has no session thread beyond the set `base` and the server
    no connection named `label`."""
    deadline = time.monotonic() + 20
    while True:
        left = (len(_threads() - base), _clients_named(server, label))
        if left == (0, 0):
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: {left[0]} session threads started since the baseline and "
                f"{left[1]} connections named {label} still open 20 s after disconnect() returned"
            )
        time.sleep(0.02)


def test_disconnect_leaves_no_thread_and_no_connection(server, name):
    """Once disconnect() has returned, the handle's two threads have exited
    and its two Redis connections are closed, while the handle object is
    still referenced (no collection): before, each disconnected handle kept
    its door thread and a connection until it was collected, so a program
    connecting and disconnecting per request piled them up."""
    label = f"disc-res-{os.getpid()}"
    n = 10
    gc.collect()
    base = _threads()
    sems = [connect(server.url, name, n, label=label) for _ in range(n)]
    # Held through `Acquire` objects, and watched: both refer to the handle's
    # session (what kept it, with its door thread and connection, until
    # they were collected).
    held = [s.acquire(1) for s in sems]
    for a in held:
        assert asyncio.run(_await(a)) is True
    watches = [s.lease_lost() for s in sems]
    # A session thread names itself once it runs: connect() may return
    # before both have (54 of 300 connects on a loaded machine).
    wait_until(lambda: len(_threads() - base) >= 2 * n, "both session threads of each handle named")
    wait_until(lambda: _clients_named(server, label) == 2 * n, "both connections of each handle")
    # Requests queued too (blocking threads), failed by the disconnect.
    outcomes = []

    def wait(s):
        try:
            outcomes.append(s.acquire_blocking(n))
        except volt_sem.DisconnectedError:
            outcomes.append("disconnected")

    waiting = [threading.Thread(target=wait, args=(s,)) for s in sems[:2]]
    for t in waiting:
        t.start()
    wait_until(lambda: sems[-1].census()["queued"] == 2, "two requests queued")
    for s in sems:
        s.disconnect()
    for t in waiting:
        t.join()
    assert outcomes == ["disconnected"] * 2
    _nothing_left(server, label, base, "after disconnect(), the handles kept")
    # The promises of a disconnect hold: what they held went back, queued
    # requests and later calls raise DisconnectedError, it is idempotent.
    other = connect(server.url, name, n)
    assert conserved(other, n)["held"] == 0
    for s in sems:
        with pytest.raises(volt_sem.DisconnectedError):
            s.try_acquire(1)
        s.disconnect()
    other.disconnect()
    _nothing_left(server, label, base, "after calls on the disconnected handles")
    # Still referenced: no collection did it.
    assert len(sems) == len(held) == len(watches) == n


def test_a_tiny_blocking_timeout_with_permits_free_is_granted(server, name):
    """As on the local and named semaphores: a positive timeout far shorter
    than any round trip (1 ns, 1 us) with the permits free is granted, the
    weighted request too. The first attempt's answer decides, whatever the
    deadline; no timing assert. Before: ``False`` on an idle semaphore."""
    sem = connect(server.url, name, 3)
    for i, t in enumerate([1e-9, 1e-6] * 10):
        assert sem.acquire_blocking(1, timeout=t) is True, f"call {i} (timeout {t} s)"
        sem.release(1)
    assert sem.acquire_blocking(1, timeout=1e-9) is True
    assert sem.acquire_blocking(2, timeout=1e-9) is True, "2 of the 2 free"
    sem.release(3)
    applied(sem)
    c = conserved(sem, 3)
    assert (c["available"], c["queued"], c["partial"]) == (3, 0, 0)
    assert sem.stats().timeouts == 0


def test_a_queued_blocking_acquire_with_a_tiny_timeout_times_out_and_conserves(server, name):
    """The other half: a request that has to queue is still bound by its tiny
    deadline (passed before the acquire script answered "queued"): ``False``,
    its partial grant handed back, nothing left queued or held."""
    sem = connect(server.url, name, 3)
    other = connect(server.url, name, 3)
    assert other.acquire_blocking(2, timeout=5)
    for i, t in enumerate([1e-9, 1e-6] * 5):
        assert sem.acquire_blocking(3, timeout=t) is False, f"call {i} (timeout {t} s)"
        applied(sem)
        c = conserved(sem, 3)
        assert (c["available"], c["held"], c["partial"], c["queued"]) == (1, 2, 0, 0), (i, c)
    st = sem.stats()
    assert (st.timeouts, st.cancels, st.grants) == (10, 10, 0)
    other.release(2)
    applied(other)
    c = conserved(sem, 3)
    assert (c["available"], c["queued"]) == (3, 0)


def test_a_short_blocking_timeout_on_a_stopped_server_returns_false_before_the_command_timeout(
    own_server, name
):
    """The other promise: the first answer is waited for past the deadline
    only for its grace (250 ms here, see the Redis crate's docs), so a short
    timeout on a server that stopped answering returns ``False`` long before
    the command timeout (6 s), never ``True``; once the server runs again,
    the permit is back (a grant answered later is given back). Before: the
    wait lasted the whole command timeout and raised ``RedisConnectionError``.
    The bound checked is half the command timeout, far above the grace."""
    command_timeout = 6.0
    sem = connect(own_server.url, name, 1, command_timeout=command_timeout)
    for timeout in (1e-6, 0.3):
        own_server.pause()
        out = {}

        def run():
            started = time.monotonic()
            try:
                out["r"] = sem.acquire_blocking(1, timeout=timeout)
            except Exception as e:  # reported below
                out["r"] = e
            out["took"] = time.monotonic() - started

        t = threading.Thread(target=run)
        t.start()
        t.join(command_timeout / 2)
        early = not t.is_alive()
        own_server.resume()
        t.join(30)
        assert not t.is_alive(), "hung"
        assert early, f"timeout {timeout}: returned after {out['took']:.3f} s: {out['r']!r}"
        assert out["r"] is False, f"timeout {timeout}: {out['r']!r}"
        deadline = time.monotonic() + 20
        while True:
            c = conserved(sem, 1)
            if c["available"] == 1 and c["queued"] == 0:
                break
            assert time.monotonic() < deadline, c
            time.sleep(0.05)
    assert sem.stats().timeouts == 2
    sem.disconnect()
