"""Python-side glue of volt_sem's wake path (internal).

The native wake callback never runs Python code (see the module docs of
``src/wake.rs``): it queues the woken waiter on a per-loop native channel and
writes a byte to the channel's socket. This module creates those channels,
registers them with their loop, and drains them on the loop's own thread, in
ordinary Python frames: asyncio and uvloop through ``loop.add_reader``, trio
through a system task of the run. It also parks trio tasks: ``await acquire``
in a trio task iterates ``_trio_acquire`` (see ``src/awaitable.rs``).
"""

import asyncio
import sys
import threading
import types
import weakref

from ._volt_sem import Channel

# ---------------------------------------------------------------------------
# asyncio / uvloop
# ---------------------------------------------------------------------------

_asyncio_channels: "weakref.WeakKeyDictionary[object, Channel]" = weakref.WeakKeyDictionary()

_PROBE_NEVER, _PROBE_CLOSED_ATTR, _PROBE_NATIVE = 0, 1, 2


def _probe_kind(loop):
    """How the native side may learn, without running Python code, that `loop`
    was closed: asyncio's stock `is_closed` reads `_closed`; a native method
    (uvloop) can be called; a Python override is never probed."""
    is_closed = getattr(type(loop), "is_closed", None)
    if is_closed is asyncio.BaseEventLoop.is_closed:
        return _PROBE_CLOSED_ATTR
    if is_closed is not None and not isinstance(is_closed, types.FunctionType):
        return _PROBE_NATIVE
    return _PROBE_NEVER


def _drain_futures(channel):
    for fut in channel.take():
        if not fut.done():  # a cancelled task's Future is already done
            fut.set_result(True)


def asyncio_channel(loop):
    """The wake channel of `loop`, created and registered on first use (called
    on the loop's own thread, while it runs)."""
    channel = _asyncio_channels.get(loop)
    if channel is None or channel.dead:
        channel = Channel(weakref.ref(loop), _probe_kind(loop))
        loop.add_reader(channel.fileno(), _drain_futures, channel)
        _asyncio_channels[loop] = channel
    return channel


# ---------------------------------------------------------------------------
# trio
# ---------------------------------------------------------------------------

_trio_channel_var = None
_trio_channel_var_lock = threading.Lock()


def _trio_channel(trio):
    global _trio_channel_var
    if _trio_channel_var is None:
        with _trio_channel_var_lock:  # one RunVar for every run, on any thread
            if _trio_channel_var is None:
                _trio_channel_var = trio.lowlevel.RunVar("volt_sem_wake_channel")
    try:
        return _trio_channel_var.get()
    except LookupError:
        pass
    channel = Channel(None, _PROBE_NEVER)
    _trio_channel_var.set(channel)
    trio.lowlevel.spawn_system_task(_trio_pump, trio, channel, name="volt_sem wake pump")
    return channel


async def _trio_pump(trio, channel):
    """Reschedules the trio tasks whose grants arrived, for the whole run."""
    try:
        while True:
            await trio.lowlevel.wait_readable(channel.fileno())
            for task in channel.take():
                trio.lowlevel.reschedule(task)
    finally:
        channel.kill()  # the run is over: later grants are handed on at once


async def _trio_acquire(trio, waiter, acquire):
    if not waiter.try_take():
        channel = _trio_channel(trio)
        if not waiter.enqueue(channel, trio.lowlevel.current_task()):

            def abort(_raise_cancel):
                if waiter.abort():
                    return trio.lowlevel.Abort.SUCCEEDED
                return trio.lowlevel.Abort.FAILED

            try:
                await trio.lowlevel.wait_task_rescheduled(abort)
            except BaseException:
                waiter.cancel()  # nothing left if abort ran; releases a grant otherwise
                raise
            waiter.collect()
    return acquire._acquired()


def _in_trio(trio):
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    return True


def trio_wait(waiter, acquire):
    """What `await acquire` iterates in a trio task; None outside trio."""
    trio = sys.modules.get("trio")
    if trio is None or not _in_trio(trio):
        return None
    return _trio_acquire(trio, waiter, acquire).__await__()


def no_loop_error():
    """Raises the error of a wait outside asyncio and trio, naming the library
    in use when sniffio knows it."""
    library = None
    sniffio = sys.modules.get("sniffio")
    if sniffio is not None:
        try:
            library = sniffio.current_async_library()
        except Exception:
            library = None
    supported = "asyncio (including uvloop), trio, and anyio on either"
    if library:
        raise RuntimeError(
            f"volt_sem does not support the async library {library!r}: it supports {supported}"
        )
    raise RuntimeError(
        f"no running event loop: volt_sem waits under {supported}; "
        "from a plain thread use acquire_blocking() or `with sem.acquire():`"
    )
