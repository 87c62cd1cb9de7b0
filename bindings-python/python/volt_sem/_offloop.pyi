"""Type stubs of the public classes of volt_sem's Python glue."""

from types import TracebackType
from typing import Any, Callable, Dict, Generator, Generic, Optional, Tuple, Type, TypeVar

from ._volt_sem import Semaphore

_T = TypeVar("_T")

class OffLoop(Generic[_T]):
    """A call that may block for a Redis round trip (``census``,
    ``close_for_everyone``, ``disconnect``, ``connect``), run off the event
    loop once awaited: on the loop's default executor, or in a trio task on a
    trio worker thread. Awaitable once; cancelling the await does not undo
    the call."""

    def __init__(self, fn: Callable[[], _T]) -> None: ...
    def __await__(self) -> Generator[Any, None, _T]: ...

class RedisConnect(OffLoop[Semaphore]):
    """What ``Semaphore.connect_async(...)`` returns: ``await`` it for the
    handle, or ``async with Semaphore.connect_async(...) as sem:``, which
    connects on entry and disconnects the handle (off the loop) on exit. The
    handle's own ``async with sem:`` still takes one permit: the session's
    scope is the connect call's, the permit's the handle's."""

    def __init__(
        self,
        connect: Callable[..., Semaphore],
        args: Tuple[Any, ...],
        kwargs: Optional[Dict[str, Any]],
    ) -> None: ...
    async def __aenter__(self) -> Semaphore: ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
