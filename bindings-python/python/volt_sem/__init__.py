"""volt_sem: a fair, weighted, thread-safe async semaphore for asyncio, trio
and anyio.

One :class:`Semaphore` can be shared by every thread of a process, each running
its own event loop (asyncio, uvloop or trio; anyio on either), and by plain
threads, FIFO across all of them::

    sem = volt_sem.Semaphore(4)

    async def job():
        await sem.acquire(2)          # weighted, strict FIFO
        try:
            ...
        finally:
            sem.release(2)

    async with sem:                   # one permit
        ...
    async with sem.acquire(3):        # three permits, released on exit
        ...

    sem.acquire_blocking(2, timeout=1.0)   # from a plain thread, GIL released

:class:`Mutex` and :class:`RwLock` are built on the same semaphore core and are
just as fair. Errors: :class:`ClosedError` once the semaphore is closed,
``ValueError`` for a request below 0 or above :data:`MAX_PERMITS`,
``OverflowError`` for a release past :data:`MAX_PERMITS`.

One limit for every process of the machine (Linux): ``Semaphore.open(name,
permits)`` returns a :class:`Semaphore` shared by every process that opens the
same name, with the same methods, FIFO across processes; the permits of a
process that dies (even by ``kill -9``) come back. ``Semaphore.unlink(name)``
removes the name. Each handle is a session: ``sem.disconnect()`` (or ``with
Semaphore.open(name, n) as sem:``) ends it, ``sem.close_for_everyone()``
closes the semaphore for every process (its ``close()`` is a ``TypeError``).
Its own errors are subclasses of :class:`SharedError`
(:class:`TotalMismatchError`, :class:`NotHeldError`, ...), or Python's
``FileNotFoundError``, ``FileExistsError``, ``PermissionError``.

One limit across machines: ``Semaphore.connect(url, name, permits)`` returns a
:class:`Semaphore` stored in Redis, shared by every client on every host,
FIFO and weighted across all of them, leased and fenced: ``async with
sem.acquire(n) as grant:`` gives the grant's fencing token (``grant.token``).
Each handle is a session:
``sem.disconnect()`` / ``await sem.disconnect_async()``, ``with
Semaphore.connect(...) as sem:`` and ``async with
Semaphore.connect_async(...) as sem:`` end it (what it holds goes to the next
waiter; a handle nobody references ends its session when collected);
``close_for_everyone()`` closes the semaphore for every client (its
``close()`` is a ``TypeError``). Its own errors are subclasses of
:class:`RedisError` (:class:`LeaseExpiredError`, :class:`StateLostError`,
:class:`RedisConnectionError`, ...), or :class:`InvalidUrlError` (a
``ValueError``). A call on a handle whose session ended raises
:class:`DisconnectedError` (a :class:`ClosedError`).

Shutdown: ``volt_sem.disconnect_on_signals()`` makes SIGTERM and SIGINT end
every shared session of the process first, then act as before.
"""

import atexit as _atexit
import os as _os

from ._errors import (
    AuthenticationError,
    InUseError,
    InvalidLabelError,
    InvalidUrlError,
    LeaseExpiredError,
    NoPermissionError,
    ReadOnlyError,
    RedisCommandError,
    RedisConnectionError,
    RedisError,
    RedisOutOfMemoryError,
    StateLostError,
)
from ._volt_sem import (
    MAX_NAME_LEN,
    MAX_PERMITS,
    MAX_REDIS_PERMITS,
    MAX_SHARED_PERMITS,
    Acquire,
    BoundedSemaphore,
    Holder,
    Inspection,
    LeaseLost,
    QueuedWaiter,
    Stats,
    WaitHistogram,
    ClosedError,
    CorruptError,
    DisconnectedError,
    ForkedError,
    InvalidNameError,
    LibcMismatchError,
    Mutex,
    NotASegmentError,
    NotHeldError,
    ProcessTableFullError,
    QueueFullError,
    RwLock,
    Semaphore,
    SharedError,
    TotalMismatchError,
    VersionMismatchError,
    __version__,
)
from ._volt_sem import _forked_child, _interpreter_exiting
from ._offloop import OffLoop, RedisConnect
from ._shutdown import disconnect_on_signals


class _RedisSemaphoreAlias(type):
    # `isinstance(sem, RedisSemaphore)` stays true for a Redis handle (and,
    # the class being an alias, for any Semaphore).
    def __instancecheck__(cls, obj):
        return isinstance(obj, Semaphore)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, Semaphore)


class _RedisSemaphore(metaclass=_RedisSemaphoreAlias):
    """Deprecated alias of :class:`Semaphore` (``Semaphore.connect`` returns a
    ``Semaphore``); ``RedisSemaphore.delete`` is ``Semaphore.delete_redis``."""

    delete = staticmethod(Semaphore.delete_redis)
    connect = Semaphore.connect
    connect_async = Semaphore.connect_async

    def __new__(cls, *args, **kwargs):
        raise TypeError("RedisSemaphore cannot be instantiated: use Semaphore.connect(...)")


_RedisSemaphore.__name__ = _RedisSemaphore.__qualname__ = "RedisSemaphore"


def __getattr__(name):
    if name == "RedisSemaphore":
        import warnings

        warnings.warn(
            "volt_sem.RedisSemaphore is deprecated: Semaphore.connect returns a Semaphore "
            "(RedisSemaphore.delete is Semaphore.delete_redis)",
            DeprecationWarning,
            stacklevel=2,
        )
        return _RedisSemaphore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

def _constructor_signatures():
    # pyo3 cannot give a class a text signature in an abi3-py39 build (3.9 shows
    # none, 3.10+ shows `permits=...`): state them here.
    import inspect

    P = inspect.Parameter
    Semaphore.__signature__ = inspect.Signature(
        [P("permits", P.POSITIONAL_OR_KEYWORD, default=1, annotation=int)]
    )
    BoundedSemaphore.__signature__ = Semaphore.__signature__
    Mutex.__signature__ = inspect.Signature([])
    RwLock.__signature__ = inspect.Signature([])


_constructor_signatures()
del _constructor_signatures


def _error_codes():
    # The stable names shared with the C and Node bindings (the Redis errors
    # of _errors.py carry theirs already).
    for cls, code in (
        (ClosedError, "CLOSED"),
        (DisconnectedError, "DISCONNECTED"),
        (SharedError, "SHARED_ERROR"),
        (InvalidNameError, "INVALID_NAME"),
        (TotalMismatchError, "TOTAL_MISMATCH"),
        (VersionMismatchError, "VERSION_MISMATCH"),
        (LibcMismatchError, "LIBC_MISMATCH"),
        (NotASegmentError, "NOT_A_SEGMENT"),
        (QueueFullError, "QUEUE_FULL"),
        (ProcessTableFullError, "PROCESS_TABLE_FULL"),
        (NotHeldError, "NOT_HELD"),
        (ForkedError, "FORKED"),
        (CorruptError, "CORRUPT"),
    ):
        cls.code = code

    # `args` stays `(message, number)`; `str()` is the sentence alone.
    def _message(self):
        return str(self.args[0]) if self.args else ""

    TotalMismatchError.__str__ = _message
    TotalMismatchError.existing = property(
        lambda self: self.args[1] if len(self.args) > 1 else None,
        doc="The total the existing semaphore was created with.",
    )
    for cls, what in (
        (VersionMismatchError, "format version"),
        (LibcMismatchError, "C library (1 glibc, 2 musl)"),
    ):
        cls.__str__ = _message
        cls.found = property(
            lambda self: self.args[1] if len(self.args) > 1 else None,
            doc=f"The semaphore's {what}.",
        )
        cls.expected = property(
            lambda self: self.args[2] if len(self.args) > 2 else None,
            doc=f"This release's {what}.",
        )
    NotHeldError.__str__ = _message
    NotHeldError.held = property(
        lambda self: self.args[1] if len(self.args) > 1 else None,
        doc="What this process (named) or handle (Redis) holds.",
    )


_error_codes()
del _error_codes

# Blocking waits of daemon threads never take the GIL back once the interpreter
# exits (see src/blocking.rs); the hook waits for the threads inside the
# awaitables' steps to leave them, and later steps park (the exit gate, see
# src/interpreter.rs).
_atexit.register(_interpreter_exiting)
# A forked child has none of the parent's other threads inside those steps.
if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_forked_child)
del _interpreter_exiting, _forked_child

__all__ = [
    "MAX_NAME_LEN",
    "MAX_PERMITS",
    "MAX_REDIS_PERMITS",
    "MAX_SHARED_PERMITS",
    "Acquire",
    "AuthenticationError",
    "BoundedSemaphore",
    "Holder",
    "Inspection",
    "QueuedWaiter",
    "Stats",
    "WaitHistogram",
    "InUseError",
    "InvalidLabelError",
    "InvalidUrlError",
    "LeaseExpiredError",
    "LeaseLost",
    "NoPermissionError",
    "OffLoop",
    "ReadOnlyError",
    "RedisCommandError",
    "RedisConnect",
    "RedisConnectionError",
    "RedisError",
    "RedisOutOfMemoryError",
    "StateLostError",
    "ClosedError",
    "CorruptError",
    "DisconnectedError",
    "ForkedError",
    "InvalidNameError",
    "LibcMismatchError",
    "Mutex",
    "NotASegmentError",
    "NotHeldError",
    "ProcessTableFullError",
    "QueueFullError",
    "RwLock",
    "Semaphore",
    "SharedError",
    "TotalMismatchError",
    "VersionMismatchError",
    "__version__",
    "disconnect_on_signals",
]
