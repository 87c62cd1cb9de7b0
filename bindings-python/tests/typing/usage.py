"""Typed usage of volt_sem, checked by `make test` with mypy --strict (targets
3.9 to 3.13) and pyright (issue 19, D3). The README's own code comes first,
unannotated, as a user writes it; `assert_type` then pins what is inferred.
Never run, only type-checked."""

import asyncio
import threading
import weakref
from typing import Any, Dict, List, Literal, Optional, Tuple

from typing_extensions import assert_type

import volt_sem

sem = volt_sem.Semaphore(4)
bounded: volt_sem.Semaphore = volt_sem.BoundedSemaphore(2)


async def job() -> None:
    await sem.acquire(2)
    try:
        pass
    finally:
        sem.release(2)


async def main() -> None:
    async with sem:
        pass
    async with bounded.acquire(2):
        pass
    async with sem.acquire(3):
        pass
    got = await asyncio.wait_for(sem.acquire(2), 1.0)
    assert_type(got, Literal[True])
    sem.release(2)

    task = asyncio.create_task(sem.acquire(1))
    assert_type(task, "asyncio.Task[Literal[True]]")
    sem.release(1)
    both = await asyncio.gather(sem.acquire(1), sem.acquire(1))
    assert_type(both, Tuple[Literal[True], Literal[True]])
    fut = asyncio.ensure_future(sem.acquire(1))
    assert_type(await fut, Literal[True])
    plain = await sem.acquire()
    assert_type(plain, Literal[True])

    m = volt_sem.Mutex()
    async with m:
        pass
    assert_type(await m.acquire(), Literal[True])
    m.release()
    rw = volt_sem.RwLock()
    async with rw.read():
        pass
    async with rw.write():
        pass
    assert_type(await asyncio.wait_for(rw.write(), 1.0), Literal[True])
    rw.release_write()


def thread_side() -> None:
    if sem.acquire_blocking(2, timeout=0.5):
        sem.release(2)
    with sem.acquire(1):
        pass
    ok: bool = sem.try_acquire(1)
    n: int = sem.available_permits
    assert_type(volt_sem.__version__, str)
    st = sem.stats()
    assert_type(st, volt_sem.Stats)
    assert_type(st.grants + st.cancels + st.timeouts + st.held, int)
    assert_type(st.recording, bool)
    wait: volt_sem.WaitHistogram = st.wait
    assert_type(wait.p99, float)
    assert_type(wait.quantile(0.9), float)
    for bound, count in wait.buckets:
        assert_type(bound, float)
        assert_type(count, int)
    del ok, n


registry: "weakref.WeakValueDictionary[str, volt_sem.Mutex]" = weakref.WeakValueDictionary()
lock = registry.setdefault("key", volt_sem.Mutex())
assert_type(lock, volt_sem.Mutex)
threading.Thread(target=thread_side).start()
asyncio.run(main())
results: List[Any] = []


# One limit across processes: the shared semaphore is a Semaphore too.
async def shared_worker() -> None:
    gpu = volt_sem.Semaphore.open("gpu", 4)
    assert_type(gpu, volt_sem.Semaphore)
    async with gpu.acquire(2):
        pass
    assert_type(gpu.total_permits, Optional[int])
    assert_type(gpu.name, Optional[str])
    attach = volt_sem.Semaphore.open("gpu", 4, create=False, mode=0o660, label="gpu-worker-1")
    if attach.acquire_blocking(1, timeout=1.0):
        attach.release(1)
    try:
        volt_sem.Semaphore.open("gpu", 5)
    except volt_sem.TotalMismatchError as e:
        assert_type(e, volt_sem.TotalMismatchError)
        assert_type(e.existing, int)
        shared: volt_sem.SharedError = e
        del shared
    except (volt_sem.NotHeldError, volt_sem.QueueFullError, FileNotFoundError):
        pass
    # A rolling deploy from 4 to 6 permits, and a change of total online.
    grown = volt_sem.Semaphore.open("gpu", 6, resize=True)
    assert_type(grown.set_total(8), None)
    assert_type(await grown.set_total_async(6), None)
    assert_type(grown.reopen(), None)
    assert_type(await grown.reopen_async(), None)
    try:
        volt_sem.Semaphore.open("gpu", 4, label="not valid")
    except volt_sem.InvalidLabelError as e:
        assert_type(e.code, str)
        invalid: ValueError = e
        del invalid
    volt_sem.Semaphore.unlink("gpu")
    assert_type(volt_sem.MAX_NAME_LEN, int)
    with volt_sem.Semaphore.open("gpu", 4) as gpu:
        assert_type(gpu, volt_sem.Semaphore)
        gpu.close_for_everyone()
    gpu.disconnect()


# One limit across machines: the README's Redis example, then the types.
async def redis_worker() -> None:
    db = await volt_sem.Semaphore.connect_async("redis://127.0.0.1:6379", "db-pool", 50)
    labelled = volt_sem.Semaphore.connect("redis://127.0.0.1:6379", "db-pool", 50, label="api-7")
    labelled.disconnect()
    async with db.acquire(2) as grant:
        print("fencing token", grant.token)
    assert_type(db, volt_sem.Semaphore)
    assert_type(grant, volt_sem.Acquire)
    assert_type(grant.token, Optional[int])
    got = await db.acquire(1)
    assert_type(got, Literal[True])
    task = asyncio.create_task(db.acquire(1))
    assert_type(task, "asyncio.Task[Literal[True]]")
    assert_type(await asyncio.wait_for(db.acquire(1), 1.0), Literal[True])
    assert_type(db.last_token, Optional[int])
    lost = asyncio.ensure_future(db.lease_lost())
    assert_type(await lost, volt_sem.RedisError)
    await db.release_async(3)
    released = asyncio.create_task(db.release_async(1))
    assert_type(released, "asyncio.Task[None]")
    assert_type(await db.census_async(), Dict[str, int])
    await db.set_total_async(60)
    await db.reopen_async()
    resized = await volt_sem.Semaphore.connect_async(
        "redis://127.0.0.1:6379", "db-pool", 60, resize=True
    )
    resized.set_total(50)
    resized.reopen()
    joined = volt_sem.Semaphore.connect("redis://127.0.0.1:6379", "db-pool", 50, create=False)
    joined.disconnect()
    await (await volt_sem.Semaphore.connect_async("redis://127.0.0.1:6379", "db-pool", 50, create=False)).disconnect_async()
    async with db as one:
        assert_type(one, None)
    await db.close_for_everyone_async()
    await db.disconnect_async()
    old: volt_sem.RedisSemaphore = db  # the deprecated alias
    del old


# The README's session example: connect, work, disconnect on exit.
async def redis_session() -> None:
    volt_sem.disconnect_on_signals()
    connecting = volt_sem.Semaphore.connect_async("redis://127.0.0.1:6379", "db-pool", 50)
    assert_type(connecting, volt_sem.RedisConnect)
    async with connecting as db:
        assert_type(db, volt_sem.Semaphore)
        async with db.acquire(1) as grant:
            assert_type(grant.token, Optional[int])
    try:
        await db.acquire(1)
    except volt_sem.DisconnectedError as e:
        closed: volt_sem.ClosedError = e
        del closed


def redis_thread_side() -> None:
    db = volt_sem.Semaphore.connect(
        "redis://127.0.0.1:6379",
        "db-pool",
        50,
        lease=5.0,
        prefix="tenant-a",
        connect_timeout=1.0,
        command_timeout=1.0,
        cluster=False,
    )
    if db.acquire_blocking(2, timeout=1.0):
        assert_type(db.last_token, Optional[int])
        db.release(2)
    with db.acquire(1) as t:
        assert_type(t, volt_sem.Acquire)
        assert_type(t.token, Optional[int])
    with volt_sem.Semaphore.connect("redis://127.0.0.1:6379", "db-pool", 50) as scoped:
        assert_type(scoped, volt_sem.Semaphore)
        scoped.close_for_everyone()
    scoped.disconnect()
    assert_type(db.try_acquire(1), bool)
    assert_type(db.available_permits, int)
    assert_type(db.total_permits, Optional[int])
    assert_type(db.held_permits, int)
    assert_type(db.prefix, Optional[str])
    volt_sem.Semaphore.delete_redis("redis://127.0.0.1:6379", "db-pool", prefix="tenant-a")
    assert_type(db.census(), Dict[str, int])
    assert_type(db.is_lease_lost(), bool)
    try:
        db.release(1)
    except volt_sem.LeaseExpiredError as e:
        assert_type(e.code, str)
        base: volt_sem.RedisError = e
        del base
    except volt_sem.NotHeldError:
        pass
    try:
        volt_sem.Semaphore.connect("redis://x", "n", 1)
    except volt_sem.InvalidUrlError as e:
        as_value: ValueError = e
        del as_value
    except volt_sem.AuthenticationError as e:
        conn: volt_sem.RedisConnectionError = e
        builtin: ConnectionError = e
        del conn, builtin
    except (volt_sem.StateLostError, volt_sem.RedisCommandError, volt_sem.TotalMismatchError):
        pass
