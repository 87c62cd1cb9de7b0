"""Type stubs for the native part of volt_sem."""

import sys
from types import TracebackType
from typing import Any, Coroutine, Generator, Literal, Optional, Type, Union, final

if sys.version_info >= (3, 11):
    from typing import Self
else:
    from typing_extensions import Self

MAX_PERMITS: int
__version__: str
"""The largest number of permits a semaphore can hold, and the largest request (2**61 - 1)."""
MAX_NAME_LEN: int
"""The longest name ``Semaphore.open`` accepts, in bytes."""
MAX_SHARED_PERMITS: int
"""The largest total of a shared semaphore (``Semaphore.open``), 2**53 - 1."""

class ClosedError(RuntimeError):
    """The semaphore (or lock) was closed: raised by every later acquire, and by
    the acquires that were waiting when it was closed."""

class SharedError(RuntimeError):
    """A failure specific to a semaphore shared across processes
    (``Semaphore.open``); the subclasses name the cause."""

class InvalidNameError(ValueError):
    """``Semaphore.open``/``unlink``: the name is empty, contains '/' or NUL, or
    is longer than :data:`MAX_NAME_LEN` bytes."""

class TotalMismatchError(SharedError):
    """``Semaphore.open``: the name exists with another total of permits
    (``args[1]``); nothing was changed."""

class VersionMismatchError(SharedError):
    """``Semaphore.open``: the segment was made by another layout version
    (``args[1]``)."""

class NotASegmentError(SharedError):
    """``Semaphore.open``: the file under the name is not a volt-sem segment."""

class QueueFullError(SharedError):
    """Every waiter slot of the shared semaphore is taken; the request was not queued."""

class ProcessTableFullError(SharedError):
    """Every process record of the shared semaphore is taken."""

class NotHeldError(SharedError):
    """``release(n)`` of a shared semaphore with ``n`` above what this process
    holds (``args[1]``): each process returns its own permits; nothing was released."""

class ForkedError(SharedError):
    """A shared semaphore opened before ``fork()``, used in the child: open the
    name again there."""

class CorruptError(SharedError):
    """The shared segment's lock is not recoverable."""

@final
class Acquire(Coroutine[Any, Any, Literal[True]]):
    """One acquire of ``n`` permits.

    Awaitable once, in an asyncio (or uvloop) task or a trio task, also through
    anyio (``await sem.acquire(n)`` returns ``True``), an async context
    manager (``async with sem.acquire(n):`` releases the ``n`` permits on exit)
    and, from a plain thread, a blocking context manager (``with sem.acquire(n):``).
    An acquire that is never awaited takes nothing. Cancelling the awaiting task
    (``task.cancel()``, ``asyncio.wait_for``, ``asyncio.timeout``) removes the
    waiter and returns any permits it had been granted.
    """

    @property
    def n(self) -> int:
        """The number of permits this acquire asks for."""
    @property
    def waiting(self) -> bool:
        """Whether this acquire is queued right now, waiting for its grant."""
    @property
    def held(self) -> bool:
        """Whether this object holds permits its ``__aexit__``/``__exit__`` will release."""
    def __await__(self) -> Generator[Any, None, Literal[True]]: ...
    # `__iter__` returns the acquire itself; typed as the generator it behaves
    # like, so that asyncio.wait_for/create_task/gather infer Literal[True].
    def __iter__(self) -> Generator[Any, None, Literal[True]]: ...
    def __next__(self) -> Any: ...
    def send(self, value: Any = None, /) -> Any:
        """Resumes the acquire; the value is ignored (asyncio sends ``None``)."""
    def throw(
        self,
        typ: Union[Type[BaseException], BaseException],
        val: Optional[object] = None,
        tb: Optional[TracebackType] = None,
        /,
    ) -> Any:
        """Cancels a pending wait (handing back whatever it was granted) and raises."""
    def close(self) -> None:
        """Cancels a pending wait, handing back whatever it was granted."""
    async def __aenter__(self) -> Literal[True]: ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def __enter__(self) -> None:
        """Blocks the calling thread (GIL released) until the permits are granted."""
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...

@final
class Semaphore:
    """A fair, weighted, thread-safe async counting semaphore.

    Waiters are served in strict FIFO order, weights included: a waiting
    ``acquire(3)`` is never overtaken by later ``acquire(1)``; it collects released
    permits until it has all three. One semaphore may be shared by any number of
    threads, each running its own event loop (asyncio or uvloop), and by plain
    threads using :meth:`acquire_blocking`.
    """

    MAX_PERMITS: int
    def __init__(self, permits: int = 1) -> None:
        """``ValueError`` if ``permits`` is negative or above ``MAX_PERMITS``."""
    @classmethod
    def open(
        cls, name: str, permits: int, *, create: Optional[bool] = None, mode: int = 0o600
    ) -> "Semaphore":
        """The semaphore named ``name``, shared by every process of this machine
        that opens the same name (Linux), created with ``permits`` permits in
        total if it does not exist. Same methods as a local semaphore, from any
        loop or thread; FIFO across processes; a dead process's permits come
        back. ``create=True`` only creates (``FileExistsError``), ``False`` only
        attaches (``FileNotFoundError``); ``mode`` is the permission bits of a
        new segment (the owner always keeps read and write).
        Raises :class:`TotalMismatchError`, :class:`VersionMismatchError`,
        :class:`NotASegmentError`, :class:`InvalidNameError`,
        ``PermissionError``, ``ValueError``, ``NotImplementedError`` (not Linux)."""
    @staticmethod
    def unlink(name: str) -> None:
        """Removes the name of a shared semaphore (attached processes keep it);
        ``FileNotFoundError`` if there is none."""
    @property
    def name(self) -> Optional[str]:
        """The name of a shared semaphore, ``None`` for a local one."""
    @property
    def total_permits(self) -> Optional[int]:
        """The fixed total of a shared semaphore, ``None`` for a local one."""
    def acquire(self, n: int = 1) -> Acquire:
        """Waits for ``n`` permits: ``await sem.acquire(n)`` returns ``True``;
        ``async with sem.acquire(n):`` releases them on exit. Raises
        :class:`ClosedError` if the semaphore is or gets closed while waiting,
        ``ValueError`` if ``n`` is negative or above ``MAX_PERMITS``."""
    def release(self, n: int = 1) -> None:
        """Returns ``n`` permits, to the oldest waiters first (on any thread or
        loop). ``OverflowError`` if the available permits would exceed
        ``MAX_PERMITS``; nothing is released then. A shared semaphore:
        :class:`NotHeldError` if this process holds fewer than ``n``."""
    def try_acquire(self, n: int = 1) -> bool:
        """Takes ``n`` permits if they are free now and nobody waits; never waits."""
    def acquire_blocking(self, n: int = 1, timeout: Optional[float] = None) -> bool:
        """Blocks the calling thread, GIL released, until ``n`` permits are granted
        (``True``) or ``timeout`` seconds passed (``False``; a partial grant is
        handed on). Interruptible by Ctrl-C. Never call it on an event loop's thread."""
    @property
    def available_permits(self) -> int:
        """Permits available right now (0 while anyone waits)."""
    def locked(self) -> bool:
        """Whether ``acquire()`` of one permit would have to wait (asyncio-compatible)."""
    def close(self) -> None:
        """Wakes every waiter with :class:`ClosedError` and fails later acquires.
        Held permits may still be released. Idempotent."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
    async def __aenter__(self) -> None:
        """``async with sem:`` takes one permit ..."""
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """... and releases it."""

@final
class Mutex:
    """A fair lock for async tasks and plain threads (a semaphore of one permit)."""

    def __init__(self) -> None: ...
    def acquire(self) -> Acquire:
        """``await m.acquire()`` (returns ``True``), ``async with m.acquire():``,
        or from a thread ``with m.acquire():``."""
    def release(self) -> None:
        """Unlocks; ``RuntimeError`` if the lock is not held."""
    def try_acquire(self) -> bool:
        """Locks if free and nobody waits; never waits."""
    def acquire_blocking(self, timeout: Optional[float] = None) -> bool:
        """Blocks the calling thread (GIL released) until locked; ``False`` on timeout."""
    def locked(self) -> bool:
        """Whether the lock is held."""
    async def __aenter__(self) -> None: ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

@final
class RwLock:
    """A fair reader-writer lock for async tasks and plain threads. A waiting
    writer is not overtaken by readers that arrive after it."""

    def __init__(self) -> None: ...
    def read(self) -> Acquire:
        """Shared access: ``async with rw.read():``, ``with rw.read():`` from a
        thread, or ``await rw.read()`` ... ``rw.release_read()``."""
    def write(self) -> Acquire:
        """Exclusive access: ``async with rw.write():``, ``with rw.write():`` from
        a thread, or ``await rw.write()`` ... ``rw.release_write()``."""
    def release_read(self) -> None:
        """Ends one shared access; ``RuntimeError`` (nothing changes) if no
        reader holds the lock."""
    def release_write(self) -> None:
        """Ends the exclusive access; ``RuntimeError`` (nothing changes) if no
        writer holds the lock."""
    def try_read(self) -> bool: ...
    def try_write(self) -> bool: ...
    def read_blocking(self, timeout: Optional[float] = None) -> bool: ...
    def write_blocking(self, timeout: Optional[float] = None) -> bool: ...
    def locked(self) -> bool:
        """Whether anyone holds or waits for the lock."""

# Internal: the wake path's glue (volt_sem/_glue.py).
@final
class Channel:
    def __init__(self, loop_ref: Optional[Any], probe: int, reader: bool = True) -> None: ...
    def fileno(self) -> int: ...
    def reader_handle(self) -> int: ...
    def signal(self) -> None: ...
    def take(self) -> list[Any]: ...
    def kill(self) -> None: ...
    @property
    def dead(self) -> bool: ...
    @property
    def queued(self) -> int: ...
    @property
    def reader(self) -> bool: ...

@final
class TrioWaiter:
    def try_take(self) -> bool: ...
    def enqueue(self, channel: Channel, task: Any) -> bool: ...
    def abort(self) -> bool: ...
    def cancel(self) -> None: ...
    def collect(self) -> None: ...

def _interpreter_exiting() -> None: ...
