"""What a production Redis does behind the semaphore's back (the Rust
crate's docs, *Running Redis in production*; redis/tests/eviction.rs and
server_admin.rs), seen from Python: the same typed errors as in Rust, and
no permit granted twice."""

import socket

import pytest

import volt_sem
from test_redis import RedisServer, conserved, connect, pytestmark  # noqa: F401


def command(port, *args):
    """Sends one command to the server on `port`; returns its reply's first
    line (with its type byte), or a bulk string's text."""
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(req)
        got = b""
        while b"\r\n" not in got:
            got += s.recv(65536)
        line, _, rest = got.partition(b"\r\n")
        if not line.startswith(b"$") or line == b"$-1":
            return line.decode()
        size = int(line[1:])
        while len(rest) < size + 2:
            rest += s.recv(65536)
        return rest[:size].decode()


@pytest.fixture
def name(request):
    return f"pytest-production-{request.node.name}"


def test_a_full_redis_refuses_with_a_typed_oom_error(name):
    s = RedisServer(extra=["--maxmemory-policy", "noeviction"])
    try:
        sem = connect(s.url, name, 2, lease=1.5)
        assert sem.acquire_blocking(1, timeout=5)
        for i in range(200):
            command(s.port, "SET", f"filler:{i}", "x" * 10_000)
        used = int(command(s.port, "INFO", "memory").split("used_memory:")[1].split("\r\n")[0])
        command(s.port, "CONFIG", "SET", "maxmemory", used - 1_000_000)
        for call in (lambda: sem.try_acquire(1), lambda: connect(s.url, name + "-other", 2)):
            with pytest.raises(volt_sem.RedisCommandError) as e:
                call()
            assert e.value.code == "REDIS_OUT_OF_MEMORY" and "OOM" in str(e.value), (e.value.code, e.value)
            assert isinstance(e.value, volt_sem.RedisOutOfMemoryError), type(e.value)
        for i in range(200):
            command(s.port, "DEL", f"filler:{i}")
        sem.disconnect()
        fresh = connect(s.url, name, 2)
        assert fresh.acquire_blocking(2, timeout=10)
        conserved(fresh, 2)
        assert command(s.port, "EXISTS", f"{{volt-sem:{name}-other}}:meta") == ":0"
    finally:
        s.close()


def test_the_meta_hash_evicted_alone_never_grants_twice(name):
    s = RedisServer()
    try:
        old = connect(s.url, name, 2, lease=1.5)
        assert old.acquire_blocking(2, timeout=5)
        command(s.port, "DEL", f"{{volt-sem:{name}}}:meta")  # what an allkeys-* eviction does
        new = connect(s.url, name, 2, lease=1.5)
        assert not new.try_acquire(1)  # the old holding is carried over
        conserved(new, 2)
        with pytest.raises(volt_sem.StateLostError) as e:
            old.census()
        assert e.value.code == "STATE_LOST"
        with pytest.raises(volt_sem.StateLostError):
            old.release(2)
    finally:
        s.close()


def test_a_command_renamed_away_fails_connect_typed(name):
    s = RedisServer(extra=["--rename-command", "BLPOP", ""])
    try:
        with pytest.raises(volt_sem.RedisCommandError) as e:
            connect(s.url, name, 1)
        assert e.value.code == "REDIS_ERROR" and "BLPOP" in str(e.value), e.value
    finally:
        s.close()
