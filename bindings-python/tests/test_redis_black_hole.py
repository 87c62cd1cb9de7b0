"""Lease loss seen in time from Python when Redis goes silent (issue 26 item
3, issue 32 item 3): a TCP proxy written here black-holes a holder's
connections (sockets stay open, nothing is forwarded: no error, only
silence). `is_lease_lost()` and `await lease_lost()` must report the loss at
most one lease after the cut (the last renewal Redis confirmed started
before it), whatever the handle's agent is blocked in. Real redis-server
(test_redis.py's helpers)."""

import asyncio
import socket
import threading
import time

import pytest

import volt_sem
from test_redis import RedisServer, connect, pytestmark  # noqa: F401

LEASE = 2.0
# Scheduling slack on a loaded machine. The defect waited for the 5 s command
# timeout, so LEASE + SLACK stays under it.
SLACK = 2.0


class BlackHoleProxy:
    """A loopback TCP proxy to `port`; `black_hole()` stops forwarding in both
    directions and keeps every socket open (new ones are accepted, never
    answered)."""

    def __init__(self, port):
        self.port_to = port
        self.hole = threading.Event()
        self.stop = threading.Event()
        self.socks = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            self.socks.append(client)
            if self.hole.is_set():
                continue
            upstream = socket.create_connection(("127.0.0.1", self.port_to))
            self.socks.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if not self.hole.is_set():
                try:
                    dst.sendall(data)
                except OSError:
                    return

    def black_hole(self):
        self.hole.set()

    def close(self):
        self.stop.set()
        for s in self.socks + [self.listener]:
            try:
                s.close()
            except OSError:
                pass


@pytest.fixture
def server():
    s = RedisServer()
    yield s
    s.close()


def test_a_black_holed_holder_sees_its_loss_within_the_lease(server):
    proxy = BlackHoleProxy(server.port)
    try:
        url = f"redis://127.0.0.1:{proxy.port}"
        sem = connect(url, "pytest-hole", 1, lease=LEASE, connect_timeout=3.0, command_timeout=5.0)
        assert sem.acquire_blocking(1) is True

        async def watch():
            exc = await sem.lease_lost()
            return time.monotonic(), exc

        results = {}

        def run_watch():
            results["lost"] = asyncio.run(watch())

        t = threading.Thread(target=run_watch, daemon=True)
        t.start()
        time.sleep(0.2)  # the watch is registered
        cut = time.monotonic()
        proxy.black_hole()
        while not sem.is_lease_lost():
            assert time.monotonic() - cut < LEASE + SLACK, "is_lease_lost() still False past the lease"
            time.sleep(0.005)
        polled = time.monotonic() - cut
        t.join(LEASE * 3 + 20)
        assert "lost" in results, "lease_lost() never completed"
        lost_at, exc = results["lost"]
        assert isinstance(exc, volt_sem.LeaseExpiredError)
        woken = lost_at - cut
        assert woken <= LEASE + SLACK, f"lease_lost() completed {woken:.3f} s after the cut"
        print(f"lease {LEASE} s: is_lease_lost() {polled:.3f} s, lease_lost() {woken:.3f} s after the cut")
    finally:
        proxy.close()
