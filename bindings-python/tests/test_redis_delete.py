"""`Semaphore.delete_redis` (issue 26, item 6; `RedisSemaphore.delete` before
issue 28, still working through the deprecated alias): deleting a Redis semaphore's
name, so that a service deriving names does not grow Redis without bound.
Refused while anyone holds, waits or is connected (`InUseError`, nothing
deleted); `FileNotFoundError` for a name that does not exist; the name can
be connected again afresh. A real redis-server (test_redis.py's helpers)."""

import asyncio
import gc
import socket

import pytest

import volt_sem
from conftest import wait_until
from test_redis import RedisServer, applied, conserved, connect, pytestmark  # noqa: F401


@pytest.fixture
def server():
    s = RedisServer()
    yield s
    s.close()


def test_delete_refused_while_in_use_then_deletes(server):
    name = "pytest-delete"
    a = connect(server.url, name, 1)
    b = connect(server.url, name, 1)
    a.acquire_blocking(1)
    with pytest.raises(volt_sem.InUseError) as e:
        volt_sem.Semaphore.delete_redis(server.url, name)
    assert e.value.code == "IN_USE"
    a.release(1)
    a.census()  # the release reached Redis (it returns at once)
    del a
    import gc

    gc.collect()
    # b is only connected: still refused (it would find the state lost).
    with pytest.raises(volt_sem.InUseError):
        volt_sem.Semaphore.delete_redis(server.url, name)
    assert conserved(b, 1)["held"] == 0
    del b
    gc.collect()

    def deleted():
        try:
            volt_sem.Semaphore.delete_redis(server.url, name, connect_timeout=2.0)
            return True
        except volt_sem.InUseError:
            return False  # the collected handle's session is still ending

    wait_until(deleted, "deleted once every handle is gone")
    with pytest.raises(FileNotFoundError):
        volt_sem.Semaphore.delete_redis(server.url, name)
    with pytest.raises(volt_sem.InvalidNameError):
        volt_sem.Semaphore.delete_redis(server.url, "a{b")
    with pytest.raises(ValueError):
        volt_sem.Semaphore.delete_redis(server.url, name, prefix="")
    # ':' ends the prefix inside the keys (prefix "a:b" + name "c" would be
    # prefix "a" + name "b:c"): refused, as by connect.
    with pytest.raises(ValueError, match="prefix"):
        volt_sem.Semaphore.delete_redis(server.url, name, prefix="a:b")
    again = connect(server.url, name, 3)
    assert conserved(again, 3)["available"] == 3


def test_deprecated_redis_semaphore_alias_still_works(server):
    """`RedisSemaphore` is a deprecated alias of `Semaphore` (issue 28): it
    warns, a Redis handle is an instance of it, and its static `delete` is
    `Semaphore.delete_redis`."""
    name = "pytest-delete-alias"
    with pytest.warns(DeprecationWarning, match="Semaphore.connect returns a Semaphore"):
        alias = volt_sem.RedisSemaphore
    sem = connect(server.url, name, 1)
    assert isinstance(sem, alias) and alias.__name__ == "RedisSemaphore"
    with pytest.raises(volt_sem.InUseError):
        alias.delete(server.url, name)
    sem.disconnect()
    with pytest.raises(TypeError):
        alias()
    with pytest.warns(DeprecationWarning):
        from volt_sem import RedisSemaphore  # noqa: F401


def first_reply_line(server, *args):
    """Sends one command to the server behind the library's back; the first
    line of its reply (`*0` for an empty KEYS, `:0` for EXISTS of nothing)."""
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    got = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(req)
        while b"\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    return got.split(b"\r\n", 1)[0].decode()


def test_create_false_only_attaches(server):
    """`connect(..., create=False)`, the Redis form of `open(..., create=False)`:
    a name nobody created raises `FileNotFoundError` and writes no key (the
    script that would create it refuses); an existing one is joined (one
    semaphore: its permits are shared); once deleted, `FileNotFoundError`
    again and nothing created. `create=True` (create only) is not offered for
    Redis: `ValueError`, before any connection."""
    name = "pytest-attach-only"
    keys = ("KEYS", "{volt-sem:%s}*" % name)
    with pytest.raises(FileNotFoundError) as e:
        connect(server.url, name, 2, create=False)
    assert "no semaphore has this name" in str(e.value)
    assert first_reply_line(server, *keys) == "*0"

    async def connect_async():
        return await volt_sem.Semaphore.connect_async(server.url, name, 2, create=False)

    with pytest.raises(FileNotFoundError):
        asyncio.run(connect_async())
    with pytest.raises(ValueError, match="create=True"):
        connect(server.url, name, 2, create=True)
    assert first_reply_line(server, *keys) == "*0"

    creator = connect(server.url, name, 2)
    joined = connect(server.url, name, 2, create=False)
    assert joined.try_acquire(2) is True
    assert creator.try_acquire(1) is False  # one semaphore
    joined.release(2)
    applied(joined)
    assert conserved(creator, 2)["available"] == 2
    creator.disconnect()
    joined.disconnect()
    gc.collect()
    volt_sem.Semaphore.delete_redis(server.url, name)
    with pytest.raises(FileNotFoundError):
        connect(server.url, name, 2, create=False)
    assert first_reply_line(server, "EXISTS", "{volt-sem:%s}:meta" % name) == ":0"


def test_a_semaphore_of_another_schema_is_refused(server):
    """Version skew: keys made by a release of another schema (here: its
    recorded version set to 99) are refused by connect and delete_redis with
    VersionMismatchError naming both versions, nothing written."""
    name = "pytest-schema"
    a = connect(server.url, name, 2)
    del a
    gc.collect()
    meta = "{volt-sem:%s}:meta" % name
    assert first_reply_line(server, "HSET", meta, "schema", "99") == ":0"
    for call in (
        lambda: connect(server.url, name, 2),
        lambda: volt_sem.Semaphore.delete_redis(server.url, name),
    ):
        with pytest.raises(volt_sem.VersionMismatchError) as e:
            call()
        assert e.value.args[1] == e.value.found == 99
        assert e.value.expected == 1
        assert "version 99" in str(e.value)
        assert "this release's: 1" in str(e.value)
    assert first_reply_line(server, "HGET", meta, "schema") == "$2"
    assert first_reply_line(server, "EXISTS", meta) == ":1"
