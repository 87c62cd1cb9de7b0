"""The exceptions of the Redis backend (``Semaphore.connect``), and
``InvalidLabelError`` (``open`` and ``connect``).

Defined in Python because two of them have two bases (a volt_sem base and the
builtin of the same meaning), which a native exception type cannot have.
Raised by the native module, which imports them from here.
"""

__all__ = [
    "RedisError",
    "RedisConnectionError",
    "AuthenticationError",
    "RedisCommandError",
    "LeaseExpiredError",
    "StateLostError",
    "InvalidUrlError",
    "InvalidLabelError",
    "NoPermissionError",
    "ReadOnlyError",
    "RedisOutOfMemoryError",
    "InUseError",
]


class RedisError(RuntimeError):
    """A failure of a semaphore stored in Redis (``Semaphore.connect``); the
    subclasses name the cause. ``code`` is the stable name shared with the C
    and Node bindings (``"LEASE_EXPIRED"``, ...)."""

    code: str = "REDIS_ERROR"


class RedisConnectionError(RedisError, ConnectionError):
    """Redis could not be reached within the connect timeout, or a connection
    failed (how, without the password). Also a builtin ``ConnectionError``."""

    code = "CONNECTION_FAILED"


class AuthenticationError(RedisConnectionError):
    """Redis refused the credentials of the URL (wrong user or password)."""

    code = "AUTH_FAILED"


class RedisCommandError(RedisError):
    """Redis answered with an error, or with a reply the scripts never produce
    (``code`` ``"REDIS_ERROR"`` or ``"PROTOCOL_ERROR"``), or a key in the
    semaphore's key space holds a value of another type, or a field of one a
    value volt-sem never writes there (a word or a negative count, ``avail``
    above the total), which another program wrote (``code`` ``"WRONG_TYPE"``;
    the call changed nothing in Redis and the message names the key, and the
    field, when known: delete that key, or the semaphore)."""


class NoPermissionError(RedisError, PermissionError):
    """Redis (its ACL) refuses this user a command the backend needs; the
    message names it. ``Semaphore.connect`` checks the commands it sends
    itself (``EVALSHA``, ``EVAL``, ``BLPOP``, ``RPUSH``; ``PUBLISH`` and
    ``WAIT`` with ``min_replicas_acked``); a command refused inside a script
    raises it too. Also a builtin ``PermissionError``."""

    code = "NO_PERMISSION"


class ReadOnlyError(RedisCommandError):
    """Redis is a read-only replica (``READONLY``): the URL names a replica,
    or a failover demoted the server. Through Sentinels the master is found
    again instead."""

    code = "READ_ONLY"


class RedisOutOfMemoryError(RedisCommandError):
    """Redis reached its ``maxmemory`` and refused the call's writes (``OOM``:
    ``noeviction``, Redis's default, or a ``volatile-*`` policy with nothing
    to evict). The call changed nothing (Redis refuses a script at its first
    write): transient, retry once memory is freed. A release so refused gave
    its session up, as any refused release (its permits come back). The
    message has the server's text. A ``RedisCommandError``."""

    code = "REDIS_OUT_OF_MEMORY"


class InUseError(RedisError):
    """``Semaphore.delete_redis``: the semaphore has live sessions (clients
    that hold permits, wait, or are connected); nothing was deleted."""

    code = "IN_USE"


class LeaseExpiredError(RedisError):
    """This client's session lease expired (a pause, a partition, Redis out of
    reach for longer than the lease): the permits it held went back to the
    pool and its queued acquires were removed. Raised by those acquires and by
    the release of those permits, which releases nothing."""

    code = "LEASE_EXPIRED"


class StateLostError(RedisError):
    """Redis lost the semaphore's state (restarted empty, flushed, keys
    deleted): the handle refuses to go on rather than over-grant. Connect
    again to start afresh."""

    code = "STATE_LOST"


class InvalidUrlError(ValueError):
    """``Semaphore.connect``: the URL is malformed or of an unsupported scheme
    (the message never repeats it: it may hold a password)."""

    code = "INVALID_URL"


class InvalidLabelError(ValueError):
    """``Semaphore.open`` / ``Semaphore.connect``: the ``label`` is not 1 to
    128 bytes of printable ASCII without spaces (nothing was opened, created
    or connected)."""

    code = "INVALID_LABEL"


for _cls in (
    RedisError,
    RedisConnectionError,
    AuthenticationError,
    RedisCommandError,
    LeaseExpiredError,
    StateLostError,
    InvalidUrlError,
    InvalidLabelError,
    NoPermissionError,
    ReadOnlyError,
    RedisOutOfMemoryError,
    InUseError,
):
    _cls.__module__ = "volt_sem"
del _cls
