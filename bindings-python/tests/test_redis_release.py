"""A Redis semaphore's `release(n)` counts per grant, not per handle (issue
26, item 7): one handle, two asyncio tasks; task A's permit is lost with an
expired session (redis-server stopped past the lease), task B then acquires
in the handle's next session. A release of the lost permit must fail with
`LeaseExpiredError` and release nothing; a release of the live one must
succeed; in either order. Real redis-server processes (test_redis.py's
helpers), conservation checked with the census."""

import asyncio
import time

import pytest

import volt_sem
from conftest import wait_until
from test_redis import RedisServer, conserved, connect, pytestmark  # noqa: F401


@pytest.fixture
def own_server():
    s = RedisServer()
    yield s
    s.close()


@pytest.fixture
def name(request):
    import os

    return f"pytest-{os.getpid()}-{request.node.name}"


LEASE = 1.5


def lose_the_session(server, sem):
    """Stops redis-server until the handle saw its session lost and the lease
    ended on the server's clock too."""
    server.pause()
    try:
        wait_until(sem.is_lease_lost, "lease loss seen while Redis is stopped")
        time.sleep(LEASE)
    finally:
        server.resume()


async def two_tasks(server, sem, lost_first, release):
    """Task A acquires, loses its session; task B acquires in the next one;
    then both release, A first if `lost_first`. Returns what each release
    gave (None: released)."""
    loop = asyncio.get_running_loop()
    a_holds, b_holds = asyncio.Event(), asyncio.Event()
    go = {"a": asyncio.Event(), "b": asyncio.Event()}
    outcome = {}

    async def holder(key, holds):
        await sem.acquire(1)
        holds.set()
        await go[key].wait()
        try:
            await release(sem)
            outcome[key] = None
        except volt_sem.LeaseExpiredError as e:
            outcome[key] = e

    a = asyncio.ensure_future(holder("a", a_holds))
    await a_holds.wait()
    await loop.run_in_executor(None, lose_the_session, server, sem)
    b = asyncio.ensure_future(holder("b", b_holds))
    await b_holds.wait()
    assert not sem.is_lease_lost(), "B's grant is in a live session"
    first, second = ("a", "b") if lost_first else ("b", "a")
    go[first].set()
    await (a if first == "a" else b)
    go[second].set()
    await asyncio.gather(a, b)
    return outcome


async def plain_release(sem):
    sem.release(1)


async def async_release(sem):
    await sem.release_async(1)


@pytest.mark.parametrize("lost_first", [False, True], ids=["live-first", "lost-first"])
@pytest.mark.parametrize("release", [plain_release, async_release], ids=["release", "release_async"])
def test_release_counts_per_grant_not_per_handle(own_server, name, lost_first, release):
    sem = connect(own_server.url, name, 2, lease=LEASE, command_timeout=0.5, connect_timeout=0.5)
    outcome = asyncio.run(two_tasks(own_server, sem, lost_first, release))
    assert outcome["b"] is None, f"the live permit's release failed: {outcome['b']!r}"
    assert isinstance(outcome["a"], volt_sem.LeaseExpiredError), "the lost permit's release released something"
    assert sem.held_permits == 0
    other = connect(own_server.url, name, 2)
    wait_until(lambda: other.census()["available"] == 2, "every permit back")
    assert conserved(other, 2)["held"] == 0
