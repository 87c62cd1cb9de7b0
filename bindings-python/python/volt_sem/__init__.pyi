from signal import Signals
from typing import Iterable, Union

from ._errors import AuthenticationError as AuthenticationError
from ._errors import InUseError as InUseError
from ._errors import InvalidLabelError as InvalidLabelError
from ._errors import InvalidUrlError as InvalidUrlError
from ._errors import LeaseExpiredError as LeaseExpiredError
from ._errors import NoPermissionError as NoPermissionError
from ._errors import ReadOnlyError as ReadOnlyError
from ._errors import RedisCommandError as RedisCommandError
from ._errors import RedisConnectionError as RedisConnectionError
from ._errors import RedisError as RedisError
from ._errors import RedisOutOfMemoryError as RedisOutOfMemoryError
from ._errors import StateLostError as StateLostError
from ._volt_sem import MAX_NAME_LEN as MAX_NAME_LEN
from ._volt_sem import MAX_PERMITS as MAX_PERMITS
from ._volt_sem import MAX_REDIS_PERMITS as MAX_REDIS_PERMITS
from ._volt_sem import MAX_SHARED_PERMITS as MAX_SHARED_PERMITS
from ._volt_sem import Acquire as Acquire
from ._volt_sem import BoundedSemaphore as BoundedSemaphore
from ._volt_sem import LeaseLost as LeaseLost
from ._volt_sem import Holder as Holder
from ._volt_sem import Inspection as Inspection
from ._volt_sem import QueuedWaiter as QueuedWaiter
from ._volt_sem import Stats as Stats
from ._volt_sem import WaitHistogram as WaitHistogram
from ._offloop import OffLoop as OffLoop
from ._offloop import RedisConnect as RedisConnect
from ._volt_sem import ClosedError as ClosedError
from ._volt_sem import CorruptError as CorruptError
from ._volt_sem import DisconnectedError as DisconnectedError
from ._volt_sem import ForkedError as ForkedError
from ._volt_sem import InvalidNameError as InvalidNameError
from ._volt_sem import LibcMismatchError as LibcMismatchError
from ._volt_sem import Mutex as Mutex
from ._volt_sem import NotASegmentError as NotASegmentError
from ._volt_sem import NotHeldError as NotHeldError
from ._volt_sem import ProcessTableFullError as ProcessTableFullError
from ._volt_sem import QueueFullError as QueueFullError
from ._volt_sem import RwLock as RwLock
from ._volt_sem import Semaphore as Semaphore
from ._volt_sem import SharedError as SharedError
from ._volt_sem import TotalMismatchError as TotalMismatchError
from ._volt_sem import VersionMismatchError as VersionMismatchError
from ._volt_sem import __version__ as __version__

RedisSemaphore = Semaphore
"""Deprecated alias of :class:`Semaphore` (``Semaphore.connect`` returns a
``Semaphore``); accessing it warns. ``RedisSemaphore.delete`` still works at
run time: it is :meth:`Semaphore.delete_redis`."""

def disconnect_on_signals(signals: Iterable[Union[int, Signals]] = ...) -> None:
    """Installs handlers for ``signals`` (default SIGTERM and SIGINT) that end
    the session of every shared handle of the process (``disconnect()`` of
    every live ``Semaphore.open`` / ``Semaphore.connect`` handle), then do
    what the signal did before: the previous Python handler (SIGINT:
    ``KeyboardInterrupt``), nothing if ignored, or the default action (the
    process ends as killed by the signal). Call once, from the main thread."""

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
    "RedisConnect",
    "RedisCommandError",
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
