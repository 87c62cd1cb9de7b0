"""Errors a new user reads (issue 27): `acquire(0)` the same on the local,
the named and the Redis semaphore; an invalid Redis URL says why and shows
the forms expected; `str()` of `NotHeldError` / `TotalMismatchError` is a
sentence (no tuple), with a hint how to change a total; `ForkedError` says
"connect again" for a Redis handle and carries a `code`, like the others."""

import asyncio
import os
import signal
import sys
import warnings

import pytest

import volt_sem
from test_redis import REDIS, RedisServer

BOUND = 10.0
linux = sys.platform.startswith("linux")


@pytest.fixture(scope="module")
def server():
    if REDIS is None:
        pytest.skip("redis-server is not installed")
    s = RedisServer()
    yield s
    s.close()


@pytest.fixture
def name(request):
    n = f"pytest-{os.getpid()}-{request.node.name}"[: volt_sem.MAX_NAME_LEN]
    n = n.replace("[", "-").replace("]", "").replace("/", "-")
    yield n
    if linux:
        try:
            volt_sem.Semaphore.unlink(n)
        except FileNotFoundError:
            pass


def connect(url, name, permits, **kw):
    kw.setdefault("connect_timeout", 2.0)
    kw.setdefault("command_timeout", 2.0)
    return volt_sem.Semaphore.connect(url, name, permits, **kw)


def _kinds(server, name):
    """One semaphore of 1 permit per backend, plus a second handle of the
    shared ones, which holds the permit."""
    local = volt_sem.Semaphore(1)
    assert local.try_acquire(1)
    kinds = [("local", local)]
    if linux:
        named = volt_sem.Semaphore.open(name, 1)
        assert named.try_acquire(1)
        kinds.append(("named", named))
    if server is not None:
        holder = connect(server.url, name, 1)
        assert holder.try_acquire(1)
        kinds.append(("redis", connect(server.url, name, 1)))
        kinds.append(("redis-holder", holder))
    return kinds


def test_acquire_zero_is_granted_at_once_on_every_backend(server, name):
    kinds = [k for k in _kinds(server, name) if k[0] != "redis-holder"]
    assert len(kinds) == (3 if linux else 2)

    async def zero(sem):
        return await asyncio.wait_for(_await(sem.acquire(0)), BOUND)

    for kind, sem in kinds:
        # No permit is free, yet a request of nothing is granted at once.
        # (True on every backend.)
        for got in (asyncio.run(zero(sem)), sem.try_acquire(0),
                    sem.acquire_blocking(0, timeout=0), sem.acquire_blocking(0)):
            assert got is not None and got is not False, (kind, got)
        sem.release(0)  # and a release of nothing releases nothing


def test_acquire_zero_on_a_closed_semaphore_raises_everywhere(server, name):
    kinds = dict(_kinds(server, name))
    kinds["local"].close()
    if linux:
        kinds["named"].close_for_everyone()
    kinds["redis-holder"].close_for_everyone()
    # The Redis handle learns of the close with its next round trip.
    with pytest.raises(volt_sem.ClosedError):
        kinds["redis"].acquire_blocking(1, timeout=1)
    del kinds["redis-holder"]
    for kind, sem in kinds.items():
        with pytest.raises(volt_sem.ClosedError):
            asyncio.run(_await(sem.acquire(0)))
        with pytest.raises(volt_sem.ClosedError):
            sem.try_acquire(0)
        with pytest.raises(volt_sem.ClosedError):
            sem.acquire_blocking(0)


async def _await(aw):
    return await aw


@pytest.mark.parametrize(
    "url, why",
    [
        ("", "empty"),
        ("localhost:6379", "no scheme"),
        ("http://127.0.0.1:6379", "unsupported scheme"),
        ("redis://127.0.0.1:notaport", "the port must be a number"),
        ("redis://127.0.0.1/db1", "the database after the host must be a number"),
    ],
)
def test_invalid_url_says_why_and_the_form(url, why):
    with pytest.raises(volt_sem.InvalidUrlError) as e:
        volt_sem.Semaphore.connect(url, "n", 1, connect_timeout=1.0)
    text = str(e.value)
    assert why in text
    assert "redis://[user:password@]host[:port][/db]" in text and "rediss://" in text
    assert e.value.code == "INVALID_URL" and isinstance(e.value, ValueError)


def test_invalid_url_never_shows_the_password():
    with pytest.raises(volt_sem.InvalidUrlError) as e:
        volt_sem.Semaphore.connect("redis://:hunter2@127.0.0.1:bad", "n", 1)
    assert "hunter2" not in str(e.value)
    with pytest.raises(volt_sem.InvalidUrlError) as e:
        volt_sem.Semaphore.connect("hunter2@127.0.0.1", "n", 1)
    assert "hunter2" not in str(e.value)


def test_redis_total_mismatch_and_not_held_are_sentences(server, name):
    sem = connect(server.url, name, 3)
    with pytest.raises(volt_sem.TotalMismatchError) as e:
        connect(server.url, name, 4)
    text = str(e.value)
    assert not text.startswith("(") and "3" in text and "resize=True" in text
    assert e.value.args[1] == e.value.existing == 3 and e.value.code == "TOTAL_MISMATCH"
    assert sem.try_acquire(1)
    with pytest.raises(volt_sem.NotHeldError) as e:
        sem.release(2)
    assert str(e.value) == e.value.args[0] and "handle" in str(e.value)
    assert e.value.held == 1 and e.value.code == "NOT_HELD"
    sem.release(1)


@pytest.mark.skipif(not linux, reason="named semaphores are Linux-only")
def test_named_total_mismatch_and_not_held_are_sentences(name):
    sem = volt_sem.Semaphore.open(name, 2)
    with pytest.raises(volt_sem.TotalMismatchError) as e:
        volt_sem.Semaphore.open(name, 5)
    text = str(e.value)
    assert not text.startswith("(") and "2" in text and "resize=True" in text
    assert e.value.existing == 2
    with pytest.raises(volt_sem.NotHeldError) as e:
        sem.release(1)
    assert str(e.value) == e.value.args[0] and not str(e.value).startswith("(")
    assert e.value.held == 0


def test_every_error_class_has_a_code():
    for cls in (volt_sem.ClosedError, volt_sem.DisconnectedError, volt_sem.ForkedError,
                volt_sem.NotHeldError, volt_sem.TotalMismatchError, volt_sem.CorruptError,
                volt_sem.QueueFullError, volt_sem.ProcessTableFullError,
                volt_sem.VersionMismatchError, volt_sem.NotASegmentError,
                volt_sem.InvalidNameError):
        assert isinstance(cls.code, str) and cls.code.isupper(), cls
    assert volt_sem.ForkedError.code == "FORKED"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_redis_handle_says_connect_again(server, name):
    sem = connect(server.url, name, 1)
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        signal.alarm(30)
        msg = b"no error"
        try:
            sem.try_acquire(1)
        except volt_sem.ForkedError as e:
            msg = f"{e.code}|{e}".encode()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            msg = repr(e).encode()
        finally:
            os.write(w, msg[:4000])
            os._exit(0)
    os.close(w)
    try:
        got = os.read(r, 4096).decode()
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    code, _, text = got.partition("|")
    assert code == "FORKED", got
    assert "connect again" in text, got
