"""One front door (issue 28): `Semaphore.connect` returns the one
`Semaphore` class, with the local results on every backend; the Redis-only
methods raise `TypeError` (naming `Semaphore.connect`) on a local or named
semaphore, and the token of a grant is `None` there. Real redis-server
(test_redis.py's helpers) for the Redis handle."""

import asyncio
import os
import sys

import pytest

import volt_sem
from test_redis import REDIS, RedisServer

linux = sys.platform.startswith("linux")


@pytest.fixture(scope="module")
def server():
    if REDIS is None:
        pytest.skip("redis-server is not installed")
    s = RedisServer()
    yield s
    s.close()


def _local_and_named(name):
    # The process id keeps apart the runs of several Python versions at once
    # (`make test` runs them in parallel on one machine's /dev/shm).
    sems = [volt_sem.Semaphore(2)]
    if linux:
        sems.append(volt_sem.Semaphore.open(f"{name}-{os.getpid()}", 2))
    return sems


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.census(),
        lambda s: s.census_async(),
        lambda s: s.lease_lost(),
        lambda s: s.is_lease_lost(),
        lambda s: s.held_permits,
    ],
    ids=["census", "census_async", "lease_lost", "is_lease_lost", "held_permits"],
)
def test_redis_only_methods_raise_type_error_elsewhere(call, request):
    for sem in _local_and_named(f"pytest-one-door-{request.node.name[-20:]}"):
        with pytest.raises(TypeError, match=r"Semaphore\.connect"):
            call(sem)
        # Nothing was taken or changed.
        assert sem.try_acquire(2)
        sem.release(2)
        if sem.name is not None:
            sem.disconnect()
            volt_sem.Semaphore.unlink(sem.name)


def test_grants_have_no_token_elsewhere():
    for sem in _local_and_named("pytest-one-door-token"):
        assert (sem.prefix, sem.last_token) == (None, None)
        assert sem.try_acquire(1) and sem.last_token is None
        sem.release(1)
        with sem.acquire(1) as grant:
            assert grant.token is None and grant.held

        async def main():
            async with sem.acquire(2) as grant:
                assert isinstance(grant, volt_sem.Acquire)
                assert grant.token is None and grant.held
            await sem.release_async(0)

        asyncio.run(main())
        assert sem.available_permits == 2
        if sem.name is not None:
            sem.disconnect()
            volt_sem.Semaphore.unlink(sem.name)


def test_close_async_and_disconnect_async_keep_the_rules():
    local = volt_sem.Semaphore(1)
    with pytest.raises(TypeError):
        local.disconnect_async()  # a local semaphore has no session

    async def main():
        await local.close_async()

    asyncio.run(main())
    assert local.closed


def test_one_class_same_results_on_redis(server):
    name = "pytest-one-door-redis"
    sem = volt_sem.Semaphore.connect(server.url, name, 2, connect_timeout=2.0)
    assert type(sem) is volt_sem.Semaphore and sem.name == name
    assert sem.try_acquire(0) is True and sem.last_token is None  # a grant of nothing

    async def main():
        got = await sem.acquire(1)
        token = sem.last_token
        async with sem.acquire(1) as grant:
            assert grant.token > token and sem.held_permits == 2
        sem.release(1)
        return got, token

    got, token = asyncio.run(main())
    assert got is True and token > 0
    assert sem.acquire_blocking(2, timeout=5) is True and sem.last_token > token
    sem.release(2)
    assert sem.census()["available"] == 2
    with pytest.raises(TypeError, match="disconnect"):
        sem.close()
    sem.disconnect()
    with pytest.raises(volt_sem.DisconnectedError):
        sem.try_acquire(1)
