"""The finished awaitable of volt_sem (internal).

``FINISHED`` is what ``__aexit__`` and an ``__aenter__`` that found a free
permit return (``async with`` only awaits them): ``await`` on it gives
``None`` at once. It is a generator-based coroutine (``types.coroutine``)
already run to its end: an exhausted generator's ``send(None)`` ends with
``StopIteration`` (the language's rule for a finished generator), so the
interpreter completes the ``await`` by itself, without calling into the
extension (a native awaitable cost two calls through it per ``await``, its
``__await__`` and its ``__next__``: issue 30). Awaiting it again and again,
from any task, loop or thread, is the same: a finished generator keeps no
state to change. ``throw`` raises what it is given and ``close`` does
nothing, as for any finished generator.

It is no ``collections.abc.Coroutine`` (a generator has no ``__await__``), so
``asyncio.create_task`` (3.12 and later), ``asyncio.run`` and trio's
``start_soon`` refuse it: ``release_async()`` and ``close_async()``, which
callers start as tasks, return the extension's finished coroutine
(``Ready``) instead.
"""

import types


@types.coroutine
def _finished():
    return
    yield  # a generator function: the yield is never reached


FINISHED = _finished()
next(FINISHED, None)  # runs it to its end: it yields nothing
