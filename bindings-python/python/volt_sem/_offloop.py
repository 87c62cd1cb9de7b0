"""Calls that wait for a Redis round trip, run off the event loop (internal;
the classes are public as ``volt_sem.OffLoop`` and ``volt_sem.RedisConnect``).

Imports neither asyncio nor trio: ``import volt_sem`` must not import
asyncio (a plain thread's grant is looked up by task, see ``src/redis.rs``).
"""

import sys


class OffLoop:
    """An awaitable running ``fn()`` (a call that may block for a Redis round
    trip: ``census``, ``close_for_everyone``, ``disconnect``, ``connect``)
    off the event loop once awaited: on the loop's default executor
    (``loop.run_in_executor``), or in a trio task on a trio worker thread
    (``trio.to_thread.run_sync``). Awaitable once; cancelling the await does
    not undo the call (asyncio: it still runs; trio: the cancel waits for
    it)."""

    __slots__ = ("_fn", "_started")

    def __init__(self, fn):
        self._fn = fn
        self._started = False

    def __await__(self):
        if self._started:
            raise RuntimeError("cannot reuse an already awaited call")
        self._started = True
        return self._run().__await__()

    async def _run(self):
        from . import _glue

        trio = sys.modules.get("trio")
        if trio is not None and _glue._in_trio(trio):
            return await trio.to_thread.run_sync(self._fn)
        try:
            loop = _glue.asyncio.get_running_loop()
        except RuntimeError:
            _glue.no_loop_error()
        return await loop.run_in_executor(None, self._fn)


class RedisConnect(OffLoop):
    """What ``Semaphore.connect_async(...)`` returns: awaiting it connects off
    the loop and gives the ``Semaphore``; ``async with
    Semaphore.connect_async(...) as sem:`` connects on entry and disconnects
    (off the loop) on exit. The handle's own ``async with sem:`` still
    acquires one permit: the session scope belongs to the connect call, the
    permit scope to the handle."""

    __slots__ = ("_made",)

    def __init__(self, connect, args, kwargs):
        super().__init__(lambda: connect(*args, **(kwargs or {})))
        self._made = None

    async def _run(self):
        self._made = await super()._run()
        return self._made

    async def __aenter__(self):
        return await self

    async def __aexit__(self, *exc):
        if self._made is not None:
            await self._made.disconnect_async()

