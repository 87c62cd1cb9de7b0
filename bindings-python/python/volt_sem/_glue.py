"""Python-side glue of volt_sem's wake path (internal).

The native wake callback never runs Python code (see the module docs of
``src/wake.rs``): it queues the woken waiter on a per-loop native channel and
writes a byte to the channel's socket. This module creates those channels,
connects them to their loop, and drains them on the loop's own thread, in
ordinary Python frames. It also parks trio tasks: ``await acquire`` in a trio
task iterates ``_trio_acquire`` (see ``src/awaitable.rs``).

Two wake paths connect a channel to an asyncio loop:

* *reader* (every loop on Linux and macOS, uvloop, Windows'
  ``SelectorEventLoop``): ``loop.add_reader`` on the channel's socket; the loop
  drains the channel when the socket turns readable.
* *thread* (loops without ``add_reader``: Windows' default
  ``ProactorEventLoop``): a daemon helper thread per loop blocks in ``recv`` on
  the socket, in CPython's own socket code with the GIL released, and for each
  signal schedules the drain with ``loop.call_soon_threadsafe``. It holds the
  GIL only for that call; it never finishes a waiter except when the loop is
  closed (``Channel.kill``, which hands the queued grants on and needs no GIL
  from anyone: no wake callback ever takes it). No volt_sem native frame is on
  its stack while it blocks or takes the GIL back, so interpreter exit ends it
  like any daemon thread. It stops when its loop is closed (at the next
  signal) or garbage-collected, and its channel is then killed (the grants
  handed on). Another exception of `call_soon_threadsafe` hands on the grants
  of that one drain (as a drain whose `set_result` raised), goes to
  `threading.excepthook`, and the helper goes on with the loop's later wakes.

trio always uses its own reader (``trio.lowlevel.wait_readable`` in a system
task), which works on sockets on every platform. Setting the environment
variable ``VOLT_SEM_WAKE=thread`` before volt_sem is imported makes every
asyncio loop use the thread path (the test suite runs it that way on Linux
too); ``VOLT_SEM_WAKE=reader`` (or unset) picks per loop as above.
"""

import asyncio
import os
import select
import socket
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
    """Resolves the Futures of the waits granted since the last drain (a
    reader callback, or scheduled by the thread path's helper). An exception
    of `set_result` (the loop's `call_soon`: a KeyboardInterrupt arriving
    there, a loop's own error) does not stop the others: that waiter's grant
    is handed on (its task may never run: `set_result` dropped its wake-up)
    and the first such exception is raised once every other Future is
    resolved, as a release on the loop's own thread does (`refused` in
    src/wake.rs). The loop then reports it as any callback's (an Exception
    to its exception handler; a KeyboardInterrupt or SystemExit out of
    `run_forever`)."""
    error = None
    batch = channel.take()
    for fut in batch:
        try:
            if not fut.done():  # a cancelled task's Future is already done
                fut.set_result(True)
        except BaseException as e:
            error = batch.undelivered(e, error)
    if error is not None:
        raise error


_WAKE_PATH = os.environ.get("VOLT_SEM_WAKE") or "reader"
if _WAKE_PATH not in ("reader", "thread"):
    raise ImportError(f"VOLT_SEM_WAKE must be 'reader' or 'thread', not {_WAKE_PATH!r}")


def asyncio_channel(loop):
    """The wake channel of `loop`, created and connected on first use (called
    on the loop's own thread, while it runs)."""
    channel = _asyncio_channels.get(loop)
    if channel is not None and not channel.dead:
        _connect(loop, channel)  # made by `channel_or_setup`, not connected yet
    else:
        channel = None
        if _WAKE_PATH == "reader":
            channel = Channel(weakref.ref(loop), _probe_kind(loop))
            try:
                loop.add_reader(channel.fileno(), _drain_futures, channel)
            except NotImplementedError:  # ProactorEventLoop: no readiness API
                channel = None
        if channel is None:
            channel = _thread_channel(loop)
        _asyncio_channels[loop] = channel
    return channel


def channel_or_setup(loop):
    """`(channel, connected)` for a wait on `loop` on a thread that may be a
    daemon one (see `asyncio_chan_or_setup` in src/wake.rs): before the
    loop's first wait a new channel, not connected yet. Runs no call that
    drops the GIL: it runs under the extension's frames. The waiting acquire
    queues on the channel, then yields a `ConnectThenWait`, which connects
    it from asyncio's Task."""
    channel = _asyncio_channels.get(loop)
    if channel is not None and not channel.dead:
        return channel, _unconnected.get(loop) is not channel
    if _WAKE_PATH == "reader" and type(loop) not in _no_readiness_api:
        channel = Channel(weakref.ref(loop), _probe_kind(loop))
    else:
        channel = Channel(weakref.ref(loop), _probe_kind(loop), False)
    _asyncio_channels[loop] = channel
    _unconnected[loop] = channel
    return channel, False


# Loops whose channel `channel_or_setup` made but nobody connected yet.
_unconnected: "weakref.WeakKeyDictionary[object, Channel]" = weakref.WeakKeyDictionary()
# Loop types seen without `add_reader` (ProactorEventLoop): the thread wake path.
_no_readiness_api = set()
_ProactorEventLoop = getattr(asyncio, "ProactorEventLoop", None)
if _ProactorEventLoop is not None:
    _no_readiness_api.add(_ProactorEventLoop)


def _connect(loop, channel):
    """Connects a channel `channel_or_setup` made (once; drops the GIL)."""
    if _unconnected.get(loop) is not channel:
        return
    del _unconnected[loop]
    try:
        if not channel.reader:
            _start_wake_thread(loop, channel)
            return
        try:
            loop.add_reader(channel.fileno(), _drain_futures, channel)
        except NotImplementedError:  # no readiness API (as ProactorEventLoop)
            _no_readiness_api.add(type(loop))
            # The channel drains its socket itself: the helper only waits
            # for it to be readable, leaving it non-blocking.
            _start_wake_thread(loop, channel, blocking=False)
    except BaseException:
        # Its waiters get the error; the next wait on this loop starts afresh.
        if _asyncio_channels.get(loop) is channel:
            del _asyncio_channels[loop]
        channel.kill()
        raise


class ConnectThenWait:
    """What an acquire's first wait on a loop yields on a thread that may be
    a daemon one, in place of its queued waiter's Future: asyncio's Task
    calls `add_done_callback` from its own frame, which connects the loop's
    wake channel (`add_reader` drops the GIL: a daemon thread taking it back
    once the interpreter finalizes is ended by CPython, which Python and C
    frames survive, the extension's `extern "C"` ones not), then waits on the
    Future. The waiter was queued before: its place in the queue is kept. An
    error of the connect is raised into the acquire, which gives its wait up."""

    def __init__(self, loop, channel, fut):
        self._loop = loop
        self._channel = channel
        self._fut = fut
        self._error = None
        self._asyncio_future_blocking = True

    def get_loop(self):
        return self._loop

    def add_done_callback(self, fn, *, context=None):
        try:
            _connect(self._loop, self._channel)
        except BaseException as e:  # raised into the acquire by result()
            self._error = e
            self._loop.call_soon(fn, self, context=context)
            return
        self._fut.add_done_callback(lambda _fut: fn(self), context=context)

    def remove_done_callback(self, fn):
        return 0

    def done(self):
        return self._error is not None or self._fut.done()

    def cancelled(self):
        return self._error is None and self._fut.cancelled()

    def cancel(self, msg=None):
        return self._fut.cancel(msg)

    def result(self):
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._fut.result()

    def exception(self):
        if self._error is not None:
            return self._error
        return self._fut.exception()

    def __await__(self):
        if not self.done():
            yield self
        return self.result()

    __iter__ = __await__


def direct_wakes_safe():
    """Whether the calling thread may resolve its own loop's Futures inside a
    release (see ``waking`` in ``src/wake.rs``): the main thread and
    non-daemon threads, which interpreter exit joins before it finalizes. A
    daemon thread (threads started outside ``threading`` count as daemon)
    keeps the socket: finalization may end it while it runs Python code
    under the extension's frames."""
    return not threading.current_thread().daemon


def wake_path(loop):
    """Which wake path `loop`'s channel uses ("reader" or "thread"), None
    before its first wait (for tests and diagnostics)."""
    channel = _asyncio_channels.get(loop)
    if channel is None:
        return None
    # A reader channel of a loop found without `add_reader` is read by a helper.
    if channel.reader and type(loop) not in _no_readiness_api:
        return "reader"
    return "thread"


def wakes_pending(loop):
    """Whether `loop`'s channel holds wakes not yet drained (tests)."""
    channel = _asyncio_channels.get(loop)
    return channel is not None and channel.queued > 0


def _thread_channel(loop):
    channel = Channel(weakref.ref(loop), _probe_kind(loop), False)
    _start_wake_thread(loop, channel)
    return channel


def _start_wake_thread(loop, channel, blocking=True):
    sock = socket.socket(fileno=channel.reader_handle())
    try:
        if blocking:
            sock.setblocking(True)  # the native side never reads it on this path
        threading.Thread(
            target=_wake_thread,
            args=(weakref.ref(loop), channel, sock),
            name="volt_sem wake",
            daemon=True,
        ).start()
    except BaseException:
        sock.close()
        raise
    # The loop gone, nothing will ever drain: wake the helper so that it ends.
    weakref.finalize(loop, channel.signal).atexit = False


def _wake_thread(loop_ref, channel, sock):
    """The helper of one loop on the thread wake path (see the module docs).
    An exception of `call_soon_threadsafe` other than the closed loop's
    hands on the grants it could not deliver (`_undeliverable`), and the
    helper goes on; anything that ends it kills its channel."""
    try:
        with sock:
            while True:
                try:
                    if not sock.getblocking():
                        select.select([sock], [], [])
                    if not sock.recv(256):
                        break  # cannot happen while the channel lives; be safe
                except BlockingIOError:
                    continue  # the loop's own drain read the byte first
                except OSError:
                    break
                event_loop = loop_ref()
                if event_loop is None or channel.dead:
                    break
                try:
                    event_loop.call_soon_threadsafe(_drain_futures, channel)
                except Exception as e:
                    if isinstance(e, RuntimeError) and event_loop.is_closed():
                        break
                    _undeliverable(channel, e)
                del event_loop
    finally:
        # Nobody drains this channel any more: hand its grants on, now and later.
        channel.kill()


def _undeliverable(channel, exc):
    """The drain of `channel` could not be scheduled (`exc`, from the loop's
    `call_soon_threadsafe`): as a drain whose `set_result` raised
    (`_drain_futures`), the grants queued now are handed on (their tasks are
    not woken), and the helper goes on serving the loop's later wakes (its
    other waiters, the next ones these grants reach among them); `exc` goes
    to `threading.excepthook`."""
    errors = [exc]
    batch = channel.take()
    for _fut in batch:
        # Hands its grant on; `exc` is reported once, below, with any other
        # error that came of it.
        e = batch.undelivered(exc)
        if e is not None and e is not exc:
            errors.append(e)
    for e in errors:
        threading.excepthook(
            threading.ExceptHookArgs([type(e), e, e.__traceback__, threading.current_thread()])
        )


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
            # As `_drain_futures`: a task that cannot be rescheduled gives
            # its grant on (it can still abort), the rest are rescheduled.
            error = None
            batch = channel.take()
            for task in batch:
                try:
                    trio.lowlevel.reschedule(task)
                except BaseException as e:
                    error = batch.undelivered(e, error)
            if error is not None:
                raise error
    finally:
        channel.kill()  # the run is over: later grants are handed on at once


async def _trio_acquire(trio, waiter, acquire):
    # A checkpoint first, as trio.Semaphore's acquire: in a cancelled scope
    # it raises Cancelled before anything is taken, and a loop of
    # uncontended acquires lets the other tasks run.
    try:
        await trio.lowlevel.checkpoint()
    except BaseException:
        acquire._trio_failed()
        raise
    if not waiter.try_take():
        channel = _trio_channel(trio)
        task = trio.lowlevel.current_task()
        if not waiter.enqueue(channel, task):
            # Its handle's disconnect() fails the request: the task is
            # rescheduled, and `collect` raises DisconnectedError.

            def abort(_raise_cancel):
                if waiter.abort():
                    return trio.lowlevel.Abort.SUCCEEDED
                return trio.lowlevel.Abort.FAILED

            try:
                await trio.lowlevel.wait_task_rescheduled(abort)
            except BaseException:
                waiter.cancel()  # nothing left if abort ran; releases a grant otherwise
                acquire._trio_failed()
                raise
            waiter.collect()
    return acquire._acquired()


async def _trio_lease(trio, obj):
    """Drives a `lease_lost()` awaitable in a trio task: `_trio_start`
    registers its watch with this task as the target (False: lost already,
    nothing to wait for), the wake pump reschedules the task when the loss
    is delivered, and `_trio_collect` gives `(done, value)`; not done (a
    spurious wake) starts over."""
    while True:
        if obj._trio_start(_trio_channel(trio), trio.lowlevel.current_task()):

            def abort(_raise_cancel):
                if obj._trio_abort(False):
                    return trio.lowlevel.Abort.SUCCEEDED
                return trio.lowlevel.Abort.FAILED

            try:
                await trio.lowlevel.wait_task_rescheduled(abort)
            except BaseException:
                obj._trio_abort(True)  # nothing left if abort ran
                raise
        done, value = obj._trio_collect()
        if done:
            return value


def trio_lease_wait(obj):
    """What `await sem.lease_lost()` iterates in a trio task; None outside trio."""
    trio = sys.modules.get("trio")
    if trio is None or not _in_trio(trio):
        return None
    return _trio_lease(trio, obj).__await__()


def _in_trio(trio):
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    return True


def trio_runs_here():
    """Whether a trio run is running on the calling thread (a blocking wait
    there would park every task of the run, the releasing one included).
    A worker thread of ``trio.to_thread`` is not in the run."""
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    in_trio_run = getattr(trio.lowlevel, "in_trio_run", None)
    if in_trio_run is not None:  # trio >= 0.25: also outside a task (callbacks)
        return in_trio_run()
    return _in_trio(trio)


def trio_task_probe():
    """The function (no arguments) telling whether a trio task runs on the
    calling thread, also on an asyncio loop's thread (trio's guest mode);
    called once trio is imported, the result kept. It is asked on every
    await on an asyncio loop from then on: trio >= 0.25's ``in_trio_task``
    raises nothing, so it costs far less than ``current_task()``'s
    exception."""
    import trio

    in_trio_task = getattr(trio.lowlevel, "in_trio_task", None)
    if in_trio_task is not None:
        return in_trio_task
    return lambda: _in_trio(trio)


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
