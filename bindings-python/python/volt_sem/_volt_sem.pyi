"""Type stubs for the native part of volt_sem."""

import sys
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Coroutine,
    Dict,
    Generator,
    List,
    Literal,
    Optional,
    Tuple,
    Type,
    Union,
    final,
)

from ._errors import RedisError
from ._offloop import OffLoop, RedisConnect

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
MAX_REDIS_PERMITS: int
"""The largest total of a semaphore stored in Redis (``Semaphore.connect``), 2**40."""

class ClosedError(RuntimeError):
    """The semaphore (or lock) was closed: raised by every later acquire, and by
    the acquires that were waiting when it was closed. ``code``: ``"CLOSED"``."""

    code: str

class DisconnectedError(ClosedError):
    """This handle's session was ended (``disconnect()``, the end of its
    ``with`` / ``async with Semaphore.connect_async(...)`` block, or a signal
    handled by :func:`disconnect_on_signals`): every later call on the handle
    raises it, and so do its Redis acquires that were queued then. The
    semaphore itself stays open for every other handle and process: open or
    connect again for a new session. A :class:`ClosedError` (code
    ``"DISCONNECTED"``)."""

class SharedError(RuntimeError):
    """A failure specific to a semaphore shared across processes
    (``Semaphore.open``); the subclasses name the cause. ``code``: the stable
    name shared with the C and Node bindings (``"TOTAL_MISMATCH"``, ...)."""

    code: str

class InvalidNameError(ValueError):
    """``Semaphore.open``/``unlink``: the name is empty, contains '/' or NUL, or
    is longer than :data:`MAX_NAME_LEN` bytes; ``connect``/``delete_redis``:
    it is empty, contains '{', '}' or NUL, or is longer than 1024 bytes. Any of
    them: it has a lone surrogate (no UTF-8 form). Code ``"INVALID_NAME"``."""

    code: str

class TotalMismatchError(SharedError):
    """``Semaphore.open`` / ``Semaphore.connect``: the name exists with
    another total of permits (:attr:`existing`, also ``args[1]``); nothing was
    changed. ``str()`` says how to change a total (``Semaphore.unlink`` /
    ``Semaphore.delete_redis``, then open or connect with the new one)."""

    @property
    def existing(self) -> int:
        """The total the existing semaphore was created with."""

class VersionMismatchError(SharedError):
    """The semaphore was made by another release of volt-sem, whose format this
    one could misread; nothing was changed. ``Semaphore.open``: a segment of
    another layout version; ``connect`` and ``delete_redis``:
    a Redis semaphore whose keys have another schema version (0: made by a
    pre-release snapshot). The version found is :attr:`found` (also
    ``args[1]``), this release's :attr:`expected` (``args[2]``); ``str()``
    names both. See *Upgrading* in ``docs/versioning.md``."""

    @property
    def found(self) -> int:
        """The semaphore's format version (0: a pre-release Redis snapshot)."""
    @property
    def expected(self) -> int:
        """This release's format version for that backend."""

class LibcMismatchError(SharedError):
    """``Semaphore.open``: the segment's lock is another C library's
    ``pthread_mutex_t``: a glibc build and a musl build of volt-sem (a
    manylinux wheel and a musllinux one, or a static musl C program) cannot
    share a named semaphore. :attr:`found` (also ``args[1]``): the segment's
    C library (1 glibc, 2 musl); :attr:`expected` (``args[2]``): this
    build's; ``str()`` names both. Nothing was changed."""

    @property
    def found(self) -> int:
        """The segment's C library: 1 glibc, 2 musl, 3 uClibc, 65535 another."""
    @property
    def expected(self) -> int:
        """This build's C library, numbered as :attr:`found`."""

class NotASegmentError(SharedError):
    """``Semaphore.open``: the file under the name is not a volt-sem segment."""

class QueueFullError(SharedError):
    """Every waiter slot of the shared semaphore is taken; the request was not queued."""

class ProcessTableFullError(SharedError):
    """Every process record of the shared semaphore is taken."""

class NotHeldError(SharedError):
    """``release(n)`` of a shared semaphore with ``n`` above what this process
    (named) or handle (Redis) holds (:attr:`held`, also ``args[1]``): each
    returns its own permits; nothing was released."""

    @property
    def held(self) -> int:
        """What this process (named) or handle (Redis) holds."""

class ForkedError(SharedError):
    """A shared semaphore opened (or a Redis one connected) before ``fork()``,
    used in the child: open the name again (``Semaphore.open``) or connect
    again (``Semaphore.connect``) there. Code ``"FORKED"``."""

class CorruptError(SharedError):
    """The shared segment holds a value the library never writes (a process
    with write access scribbled on it), or its lock is not recoverable."""

@final
class Acquire(Coroutine[Any, Any, Literal[True]]):
    """One acquire of ``n`` permits.

    Awaitable once, in an asyncio (or uvloop) task or a trio task, also through
    anyio (``await sem.acquire(n)`` returns ``True``), an async context
    manager (``async with sem.acquire(n) as grant:`` releases the ``n`` permits
    on exit) and, from a plain thread, a blocking context manager (``with
    sem.acquire(n) as grant:``); ``grant`` is this object, whose ``token`` is
    a Redis grant's fencing token.
    An acquire that is never awaited takes nothing, and emits a
    ``RuntimeWarning`` when it is collected (as a coroutine never awaited
    does); ``close()`` it to drop it on purpose. Cancelling the awaiting task
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
    @property
    def token(self) -> Optional[int]:
        """The grant's fencing token (a semaphore stored in Redis): an ``int``
        above 0, strictly increasing with every grant of the semaphore.
        ``None`` before the grant, for ``n=0``, and always on a local or named
        semaphore (they need none)."""
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
    async def __aenter__(self) -> Self:
        """Waits for the permits; gives this object (the grant)."""
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]:
        """Releases the permits. The body decides how the block ends: with
        its own exception if it raised one (whatever the release meets), and
        normally if the handle was disconnected while it ran (the disconnect
        gave the permits back: nothing is left to release). Otherwise a
        release that fails raises: Redis :class:`LeaseExpiredError` if the
        permits were lost with the session while the body ran (nothing is
        released then). ``__exit__`` does the same; so does Node's
        ``runExclusive``."""
    def __enter__(self) -> Self:
        """Blocks the calling thread (GIL released) until the permits are
        granted; gives this object (the grant)."""
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

    :meth:`open` gives one shared by the processes of the machine,
    :meth:`connect` one stored in Redis, shared by every client on every
    host: the same class, the same methods, plus the Redis ones
    (:meth:`census`, :meth:`lease_lost`, :attr:`held_permits`, ...), which
    raise ``TypeError`` on a local or named semaphore. On a Redis semaphore
    these block the calling thread (GIL released) for one round trip, bounded
    by the command timeout: :meth:`try_acquire`, :meth:`close_for_everyone`,
    :meth:`disconnect`, :attr:`available_permits`, :meth:`locked`,
    :meth:`census` (from an event loop: their ``*_async`` forms, run off the
    loop). Permits of a Redis semaphore are held by count per handle; a
    handle is a session (:meth:`disconnect`); a handle nobody references any
    more ends its session when collected.
    """

    MAX_PERMITS: int
    def __init__(self, permits: int = 1) -> None:
        """``ValueError`` if ``permits`` is negative or above ``MAX_PERMITS``."""
    @classmethod
    def open(
        cls,
        name: str,
        permits: int,
        *,
        create: Optional[bool] = None,
        mode: int = 0o600,
        accept_foreign_owner: bool = False,
        label: Optional[str] = None,
        resize: bool = False,
    ) -> "Semaphore":
        """The semaphore named ``name``, shared by every process of this machine
        that opens the same name (Linux), created with ``permits`` permits in
        total if it does not exist. Same methods as a local semaphore, from any
        loop or thread; FIFO across processes; a dead process's permits come
        back. ``create=True`` only creates (``FileExistsError``), ``False`` only
        attaches (``FileNotFoundError``); ``mode`` is the permission bits of a
        new segment (the owner always keeps read and write; the umask does not
        apply). A segment another user owns raises ``PermissionError`` unless
        ``accept_foreign_owner=True`` (its owner can rewrite its state: trust
        only one shared with you on purpose). ``with Semaphore.open(...) as
        sem:`` ends the handle's session on exit (:meth:`disconnect`); its
        :meth:`close` is refused (use :meth:`close_for_everyone`).
        ``label`` names this process's holds and queued requests in
        :meth:`inspect` (in every process): 1 to 128 bytes of printable ASCII
        without spaces, default ``"<hostname>:<pid>"``; one per process and
        name (while the process has the name open, a further ``open`` keeps
        the first label). ``resize=True``: when the name exists with another
        total, change its total to ``permits`` for every process (as
        :meth:`set_total` does) instead of raising :class:`TotalMismatchError`
        (a rolling deploy that changes the total; the last such ``open``
        wins). Raises :class:`InvalidLabelError` (a ``ValueError``:
        an invalid ``label``, nothing opened), :class:`TotalMismatchError`
        (another total without ``resize``),
        :class:`VersionMismatchError`, :class:`LibcMismatchError`, :class:`NotASegmentError`,
        :class:`InvalidNameError`,
        ``PermissionError``, ``ValueError``, ``TimeoutError`` (the segment's
        locks stayed held for 5 s), :class:`CorruptError`, ``OSError`` (e.g.
        ``/dev/shm`` full), ``NotImplementedError`` (not Linux)."""
    @classmethod
    def connect(
        cls,
        url: str,
        name: str,
        permits: int,
        *,
        lease: float = 10.0,
        prefix: str = "volt-sem",
        connect_timeout: float = 5.0,
        command_timeout: float = 5.0,
        cluster: bool = False,
        tls_ca_file: Optional[str] = None,
        tls_client_cert: Optional[Tuple[str, str]] = None,
        min_replicas_acked: Optional[Tuple[int, float]] = None,
        label: Optional[str] = None,
        resize: bool = False,
        create: Optional[Literal[False]] = None,
    ) -> "Semaphore":
        """The semaphore ``name`` stored in the Redis at ``url``
        (``redis://[user:password@]host[:port][/db]``, ``unix:///path``; with
        ``cluster=True`` seed node URLs separated by commas), shared by every
        client on every host, created with ``permits`` in total if it does not
        exist: a :class:`Semaphore` (the fencing token of a grant is
        :attr:`Acquire.token`: ``async with sem.acquire(n) as grant:
        grant.token``). Blocks this thread (GIL released) up to
        ``connect_timeout`` seconds (one deadline for the whole connect, AUTH
        and the first script included, even if the server never answers):
        from an event loop use :meth:`connect_async`.
        ``rediss://`` is TLS (``tls_ca_file``: the CA to trust instead of the
        public roots, Mozilla's set built in: the system store, the macOS
        keychain included, is never read, so a keychain CA is exported to a
        PEM file; ``tls_client_cert``: ``(cert, key)`` PEM files);
        ``redis+sentinel://host:port/master`` finds the master through
        Sentinel; ``min_replicas_acked=(replicas, timeout)`` makes every write
        wait for that many replicas (else ``RedisCommandError``, code
        ``NOT_REPLICATED``, and the session is given up).
        ``with Semaphore.connect(...) as sem:`` disconnects on exit; a handle
        nobody references any more ends its session when collected (what it
        held goes to the next waiter).
        ``label`` names this handle's holds and queued requests in
        :meth:`inspect` (on every host): 1 to 128 bytes of printable ASCII
        without spaces, default ``"<hostname>:<pid>"``. ``resize=True``: when
        the semaphore exists with another total, change its total to
        ``permits`` for every client (as :meth:`set_total` does) instead of
        raising :class:`TotalMismatchError` (the last such connect wins).
        ``create=False`` only attaches, as for :meth:`open`: no semaphore of
        that name (under ``prefix``) raises ``FileNotFoundError`` and nothing
        is written to Redis (``create=True``, create only, is not offered for
        Redis: ``ValueError``).
        Raises :class:`InvalidUrlError` (the message says why, and the forms
        expected), :class:`InvalidLabelError` (a ``ValueError``; both before
        any connection), :class:`InvalidNameError`,
        ``ValueError``, :class:`AuthenticationError`,
        :class:`RedisConnectionError`, :class:`TotalMismatchError`,
        ``FileNotFoundError`` (``create=False``), :class:`VersionMismatchError`
        (the semaphore's keys have another schema: made by another release;
        nothing written)."""
    @classmethod
    def connect_async(
        cls,
        url: str,
        name: str,
        permits: int,
        *,
        lease: float = 10.0,
        prefix: str = "volt-sem",
        connect_timeout: float = 5.0,
        command_timeout: float = 5.0,
        cluster: bool = False,
        tls_ca_file: Optional[str] = None,
        tls_client_cert: Optional[Tuple[str, str]] = None,
        min_replicas_acked: Optional[Tuple[int, float]] = None,
        label: Optional[str] = None,
        resize: bool = False,
        create: Optional[Literal[False]] = None,
    ) -> RedisConnect:
        """:meth:`connect` off the event loop (the loop's executor; trio: a
        worker thread): ``await`` it in a task; the loop runs on meanwhile.
        ``async with Semaphore.connect_async(...) as sem:`` also disconnects
        the handle (off the loop) on exit."""
    @staticmethod
    def delete_redis(
        url: str,
        name: str,
        *,
        prefix: str = "volt-sem",
        connect_timeout: float = 5.0,
        command_timeout: float = 5.0,
        cluster: bool = False,
        tls_ca_file: Optional[str] = None,
        tls_client_cert: Optional[Tuple[str, str]] = None,
    ) -> None:
        """Deletes the Redis semaphore ``name`` (its keys under ``prefix``), so
        that a service deriving names does not leave one in Redis for each.
        :class:`InUseError` (nothing deleted) while it has a live session (a
        client that holds permits, waits, or is only connected: deleting under
        it would make it fail with :class:`StateLostError`); sessions whose
        lease ended (crashed clients) do not count. ``FileNotFoundError`` if
        there is no such semaphore; :class:`VersionMismatchError` (nothing
        deleted) if its keys have another schema (made by another release:
        delete it with that release). Without it, once every session ended, only
        the semaphore's ``:meta`` hash (a few hundred bytes, no TTL) stays in
        Redis; the rest is empty or expires within a minute. Blocks this
        thread (GIL released) up to ``connect_timeout``. (The deprecated
        ``RedisSemaphore.delete`` is this.)"""
    @staticmethod
    def unlink(name: str) -> None:
        """Removes the name of a shared semaphore (attached processes keep it);
        ``FileNotFoundError`` if there is none."""
    @property
    def name(self) -> Optional[str]:
        """The name of a shared or Redis semaphore, ``None`` for a local one."""
    @property
    def prefix(self) -> Optional[str]:
        """The key prefix of a Redis semaphore, ``None`` for the others."""
    @property
    def total_permits(self) -> Optional[int]:
        """The fixed total of a shared or Redis semaphore, ``None`` for a
        local one (no round trip)."""
    @property
    def held_permits(self) -> int:
        """Redis: permits this handle holds in its current session (no round
        trip). ``TypeError`` on a local or named semaphore."""
    @property
    def last_token(self) -> Optional[int]:
        """Redis: the fencing token of the calling task's (or thread's)
        latest grant on this handle that it has not released (the token of a
        :meth:`try_acquire`, :meth:`acquire_blocking` or ``async with sem:``
        grant, which give no grant object). ``None`` if it holds none, and
        always on a local or named semaphore."""
    def acquire(self, n: int = 1) -> Acquire:
        """Waits for ``n`` permits: ``await sem.acquire(n)`` returns ``True``;
        ``async with sem.acquire(n) as grant:`` releases them on exit
        (``grant.token``: a Redis grant's fencing token). Raises
        :class:`ClosedError` if the semaphore is or gets closed while waiting,
        ``ValueError`` if ``n`` is negative or above ``MAX_PERMITS`` (a shared
        or Redis one: its total). Redis: also :class:`LeaseExpiredError`,
        :class:`StateLostError`, :class:`RedisConnectionError`; cancelling the
        awaiting task removes the request, handing any partial grant on."""
    def release(self, n: int = 1) -> None:
        """Returns ``n`` permits, to the oldest waiters first (on any thread or
        loop). ``OverflowError`` if the available permits would exceed
        ``MAX_PERMITS``; nothing is released then. A shared semaphore:
        :class:`NotHeldError` if this process holds fewer than ``n``. Redis:
        :class:`NotHeldError` if this handle holds fewer;
        :class:`LeaseExpiredError` if they were lost with an expired session
        (nothing is released twice); per grant: the caller's own latest
        grants (the calling asyncio or trio task's, else the thread's), so a
        task's lost permit and another task's live one are told apart in any
        order. A waiter of the running loop is woken here, as
        ``asyncio.Semaphore.release()`` does (its Future resolved): an
        exception the loop's ``call_soon`` raises meanwhile (a
        ``KeyboardInterrupt``) propagates from this call once every other
        waiter is woken, and the waiter whose wake failed gives its grant
        back (its task may never run again; if it does, its acquire raises
        ``RuntimeError``). A waiter of another thread or loop is woken by
        its own loop's wake callback, with the same rule: such an exception
        comes out of that callback once every other waiter it wakes is
        woken (asyncio passes an ``Exception`` to the loop's exception
        handler; a ``KeyboardInterrupt`` propagates from ``run_forever()``
        / ``run_until_complete()``)."""
    def release_async(self, n: int = 1) -> Coroutine[Any, Any, None]:
        """:meth:`release` as an awaitable: a release never waits, so it is
        done (or raised) when this returns."""
    def try_acquire(self, n: int = 1) -> bool:
        """Takes ``n`` permits if they are free now and nobody waits; never
        waits. ``n=0`` (here, in :meth:`acquire` and :meth:`acquire_blocking`,
        on every backend) is granted at once unless closed. Redis: one round
        trip (its token: :attr:`last_token`)."""
    def acquire_blocking(self, n: int = 1, timeout: Optional[float] = None) -> bool:
        """Blocks the calling thread, GIL released, until ``n`` permits are granted
        (``True``) or ``timeout`` seconds passed (``False``; a partial grant is
        handed on). ``timeout=0`` is one attempt; ``None``, ``float('inf')``
        and any float too large for the clock wait for ever; negative or NaN
        is a ``ValueError``. Permits free at the call are granted whatever the
        timeout, on every backend: on Redis the answer to the request's first
        round trip is waited for past ``timeout`` and its grant kept (a 1 µs
        timeout included), for a grace counted from when it was sent (250 ms,
        or four times the median recent round trip if longer, at most
        ``command_timeout``); a request still unanswered then (a server that
        stopped answering) returns ``False``, a grant answered later given
        back. So the call returns at the later of ``timeout`` and that grace's
        end, not at ``command_timeout``; a request that had to queue returns
        ``False`` at its deadline.
        Interruptible by Ctrl-C. On the thread of a running event
        loop (asyncio or trio) a wait raises ``RuntimeError`` (it would block that loop for ever);
        a grant that needs no wait is still returned, except on Redis, where
        every acquire waits for its round trip (use ``await sem.acquire(n)``
        there). Redis: its token is :attr:`last_token`."""
    @property
    def available_permits(self) -> int:
        """Permits available right now (0 while anyone waits). Redis: one
        round trip."""
    def locked(self) -> bool:
        """Whether ``acquire()`` of one permit would have to wait
        (asyncio-compatible). Redis: one round trip."""
    def close(self) -> None:
        """Wakes every waiter with :class:`ClosedError` and fails later acquires.
        Held permits may still be released. Idempotent. On a shared or Redis
        semaphore a ``TypeError``: it would close the limit for every
        process; use :meth:`disconnect` to end this handle's session, or
        :meth:`close_for_everyone`."""
    def close_async(self) -> Coroutine[Any, Any, None]:
        """:meth:`close` as an awaitable (``TypeError`` at once on a shared or
        Redis semaphore)."""
    def close_for_everyone(self) -> None:
        """Closes the semaphore for every process (and, Redis, every client
        on every host) that uses it (as :meth:`close` does a local one):
        waiters everywhere raise :class:`ClosedError`, and so does every later
        acquire. A closed named semaphore stays closed until :meth:`reopen`,
        or until :meth:`unlink` removes its name (the next :meth:`open` then
        creates a new one). A closed Redis one, for later deploys too, until
        :meth:`reopen`, or until :meth:`delete_redis` removes its keys (once
        no client is connected)."""
    def close_for_everyone_async(self) -> OffLoop[None]:
        """:meth:`close_for_everyone` off the event loop."""
    def disconnect(self) -> None:
        """Ends this handle's session on a shared or Redis semaphore, leaving
        it open for every other handle and process (as C's
        ``volt_sem_disconnect`` and Node's ``disconnect()``): its queued
        acquires (asyncio and trio tasks, blocking threads) raise
        :class:`DisconnectedError` at once, what it holds goes to the next
        waiters at once, and every later call on the handle raises
        :class:`DisconnectedError`. Named: what this handle holds is what was
        acquired through it and not released through it (also inside an
        ``async with sem.acquire(n):`` still running), as far as the process
        still holds it; another :meth:`open` of the name in this process is
        another handle, which keeps its permits and goes on. Redis: what its
        session holds (one round trip; if Redis is out of reach, at the
        lease's expiry); when it returns, the
        handle's two threads have exited and its two Redis connections are
        closed, even while the handle (or an :class:`Acquire` or
        :meth:`lease_lost` of it) is still referenced (while Redis is out of
        reach, a session thread blocked in a call is waited for only until a
        command timeout has passed since the call began; it exits, closing
        its connection, when that call fails). Idempotent.
        ``TypeError`` on a local semaphore."""
    def disconnect_async(self) -> OffLoop[None]:
        """:meth:`disconnect` off the event loop."""
    def census(self) -> Dict[str, int]:
        """Redis: ``total``, ``available``, ``held`` (every client),
        ``partial``, ``queued``, ``sessions``, ``closed``, ``last_token``,
        ``debt`` (what a shrink by :meth:`set_total` still waits for):
        available + held + partial == total + debt at all times. One round
        trip. ``TypeError`` on a local or named semaphore."""
    def census_async(self) -> OffLoop[Dict[str, int]]:
        """:meth:`census` off the event loop."""
    def set_total(self, n: int) -> None:
        """Changes the total of a named or Redis semaphore to ``n`` permits,
        for every process or client. Growing hands the new permits to the
        waiting acquires at once, in FIFO order (as a release would).
        Shrinking revokes nothing: what is held stays held, and the cut
        takes effect as permits come back (they pay the debt first, before
        any waiter). Either way, every waiting acquire for more than ``n``
        raises ``ValueError`` at once (above the total); the others keep
        their place. Works on a closed semaphore. Redis: one round trip (GIL
        released). ``ValueError`` (``n`` 0 or above the backend's maximum;
        nothing changed); ``TypeError`` on a local semaphore."""
    def set_total_async(self, n: int) -> OffLoop[None]:
        """:meth:`set_total` off the event loop."""
    def reopen(self) -> None:
        """Undoes :meth:`close_for_everyone` of a named or Redis semaphore,
        for every process or client: later acquires work again (acquires the
        close failed stay failed). A no-op on one that is not closed. Redis:
        one round trip (GIL released); a handle that saw the close learns of
        the reopen from its next request. ``TypeError`` on a local semaphore
        (its close is final)."""
    def reopen_async(self) -> OffLoop[None]:
        """:meth:`reopen` off the event loop."""
    def inspect(self) -> "Inspection":
        """Who holds the permits and who waits, in queue order, on every
        backend: one snapshot, in which ``available + sum(h.permits for h in
        holders) + sum(w.granted for w in waiters) == total``. A named
        semaphore first reclaims what dead processes held; a Redis one reaps
        expired sessions (one round trip, GIL released: from an event loop,
        use :meth:`inspect_async`). A local semaphore reports this process
        as its holder (``held_for`` is ``None``)."""
    def inspect_async(self) -> OffLoop["Inspection"]:
        """:meth:`inspect` off the event loop (the loop's executor; trio: a
        worker thread)."""
    def stats(self) -> "Stats":
        """This handle's metrics: counters since the handle was made, gauges
        now, and the wait-time histogram of its grants (seconds). Never blocks
        and never does I/O, on every backend: safe to call from an event
        loop's thread, as often as a metrics scrape likes. A named handle's
        counters are this process's for the name; a Redis handle's are its
        session's."""
    def lease_lost(self) -> "LeaseLost":
        """Redis: an awaitable that completes when the session holding this
        handle's latest grant is lost (its permits were reclaimed: stop using
        the guarded resource). ``RuntimeError`` before any grant;
        ``TypeError`` on a local or named semaphore."""
    def is_lease_lost(self) -> bool:
        """Redis: whether the session of the latest grant was lost (no round
        trip): true at most one lease after the start of the last renewal
        Redis confirmed, even while Redis does not answer (``lease_lost()``
        completes then too). ``TypeError`` on a local or named semaphore."""
    @property
    def closed(self) -> bool:
        """Whether the semaphore was closed (by any process, for a shared one;
        Redis: as far as this handle's requests saw, no round trip)."""
    def __enter__(self) -> Self:
        """``with Semaphore.open(name, n) as sem:`` (or ``connect``) ends the
        session on exit; it does not acquire (``with sem.acquire(n):`` does).
        ``TypeError`` on a local semaphore and when nested."""
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...
    def __aenter__(self) -> Awaitable[None]:
        """``async with sem:`` takes one permit ..."""
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]:
        """... and releases it."""

@final
class BoundedSemaphore(Semaphore):
    """A :class:`Semaphore` whose releases cannot outnumber its acquires, as
    ``asyncio.BoundedSemaphore``: ``release(n)`` raises ``ValueError``
    ("BoundedSemaphore released too many times") and releases nothing when
    fewer than ``n`` of the permits taken through it are held, so a stray
    release cannot raise the count above ``permits``. Local only."""

    def __init__(self, permits: int = 1) -> None: ...

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
    def __aenter__(self) -> Awaitable[None]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]: ...

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

@final
class Inspection:
    """What :meth:`Semaphore.inspect` saw."""

    @property
    def total(self) -> int:
        """The permits the semaphore has (a local one: its nominal size,
        the permits it was created with; a release beyond what was acquired
        raises it)."""
    @property
    def available(self) -> int:
        """Permits free now."""
    @property
    def closed(self) -> bool: ...
    @property
    def holders(self) -> List["Holder"]:
        """Who holds permits: one entry per process (per Redis session)."""
    @property
    def waiters(self) -> List["QueuedWaiter"]:
        """Who waits, in queue order: ``waiters[0]`` is the next served."""

@final
class Holder:
    """A process (or Redis session) holding permits."""

    @property
    def label(self) -> str:
        """The label of its handle (``label=``; default
        ``"<hostname>:<pid>"``)."""
    @property
    def host(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def permits(self) -> int: ...
    @property
    def held_for(self) -> Optional[float]:
        """Seconds since its oldest grant still held; ``None`` on a local
        semaphore."""
    @property
    def lease_remaining(self) -> Optional[float]:
        """Redis: seconds left of its lease (server clock); ``None`` on the
        others."""
    @property
    def token(self) -> Optional[int]:
        """Redis: the fencing token of its latest grant; ``None`` on the
        others."""

@final
class QueuedWaiter:
    """A queued request."""

    @property
    def label(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def permits(self) -> int:
        """Permits requested."""
    @property
    def granted(self) -> int:
        """Permits granted to it so far (a partial grant)."""
    @property
    def waiting_for(self) -> float:
        """Seconds since it was queued."""
    @property
    def position(self) -> int:
        """Its place in the queue: 0 is the next served."""

@final
class Stats:
    """What :meth:`Semaphore.stats` saw: this handle's counters since it
    was made, and gauges read at the call."""

    @property
    def grants(self) -> int:
        """Requests granted (each acquire of ``n`` that got its permits
        counts 1, ``n == 0`` too)."""
    @property
    def permits_granted(self) -> int:
        """Permits those grants carried (the sum of their ``n``)."""
    @property
    def timeouts(self) -> int:
        """Requests that gave up at their timeout (also in :attr:`cancels`
        when they were queued)."""
    @property
    def cancels(self) -> int:
        """Queued requests that left without their permits: cancelled
        (``task.cancel()``, ``asyncio.wait_for``), dropped, timed out. A
        close that fails queued requests is not a cancel."""
    @property
    def lease_losses(self) -> int:
        """Redis: how often the server expired this handle's session while
        it held or waited; 0 on the other backends."""
    @property
    def reclaims_seen(self) -> int:
        """Crashed holders this handle reclaimed (dead processes of a named
        semaphore, expired Redis sessions); 0 for a local one."""
    @property
    def available(self) -> int:
        """Gauge: permits available now (Redis: as last seen in a reply)."""
    @property
    def held(self) -> int:
        """Gauge: permits held through this handle now."""
    @property
    def queued(self) -> int:
        """Gauge: this handle's requests waiting now (a partial grant is
        neither held nor available)."""
    @property
    def recording(self) -> bool:
        """Whether this handle records: ``False`` means the counters are 0
        because nothing was recorded, not because nothing happened."""
    @property
    def wait(self) -> "WaitHistogram":
        """How long this handle's granted requests waited."""

@final
class WaitHistogram:
    """How long granted requests waited, in fixed logarithmic buckets (1 µs,
    2 µs, 4 µs, ... 2**26 µs, then unbounded), with the exact sum and
    maximum. Seconds, as floats. Grants taken at once are in the first
    bucket."""

    @property
    def count(self) -> int:
        """How many waits were recorded (every grant)."""
    @property
    def sum(self) -> float:
        """Total seconds the recorded grants waited."""
    @property
    def max(self) -> float:
        """The longest wait, in seconds."""
    @property
    def p50(self) -> float:
        """The median wait (``quantile(0.5)``)."""
    @property
    def p99(self) -> float:
        """The 99th percentile wait (``quantile(0.99)``)."""
    def quantile(self, q: float) -> float:
        """The ``q`` quantile (``0 <= q <= 1``) in seconds: the upper bound
        of its bucket, capped at :attr:`max` (an over-estimate by at most a
        factor of 2); 0.0 when nothing was recorded. ``ValueError`` for a
        ``q`` outside ``[0, 1]``."""
    @property
    def buckets(self) -> Tuple[Tuple[float, int], ...]:
        """``(upper_bound_seconds, count)`` per bucket, the last bound
        ``math.inf``; counts are per bucket, not cumulative."""

@final
class LeaseLost(Coroutine[Any, Any, RedisError]):
    """``await sem.lease_lost()``: completes when the session holding the
    handle's latest grant is lost, giving (not raising) the
    :class:`LeaseExpiredError` or :class:`StateLostError`."""

    def __await__(self) -> Generator[Any, None, RedisError]: ...
    def __iter__(self) -> Generator[Any, None, RedisError]: ...
    def __next__(self) -> Any: ...
    def send(self, value: Any = None, /) -> Any: ...
    def throw(
        self,
        typ: Union[Type[BaseException], BaseException],
        val: Optional[object] = None,
        tb: Optional[TracebackType] = None,
        /,
    ) -> Any: ...
    def close(self) -> None: ...

# Internal: the wake path's glue (volt_sem/_glue.py).
@final
class Channel:
    def __init__(self, loop_ref: Optional[Any], probe: int, reader: bool = True) -> None: ...
    def fileno(self) -> int: ...
    def reader_handle(self) -> int: ...
    def signal(self) -> None: ...
    def take(self) -> "Batch": ...
    def kill(self) -> None: ...
    @property
    def dead(self) -> bool: ...
    @property
    def queued(self) -> int: ...
    @property
    def reader(self) -> bool: ...

@final
class Batch:
    def __iter__(self) -> "Batch": ...
    def __next__(self) -> Any: ...
    def undelivered(
        self, exc: BaseException, first: Optional[BaseException] = None
    ) -> Optional[BaseException]: ...

@final
class TrioWaiter:
    def try_take(self) -> bool: ...
    def enqueue(self, channel: Channel, task: Any) -> bool: ...
    def abort(self) -> bool: ...
    def cancel(self) -> None: ...
    def collect(self) -> None: ...

def _interpreter_exiting() -> None: ...
def _exit_gate_threads_inside() -> int: ...
def _forked_child() -> None: ...
