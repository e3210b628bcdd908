"""The one thread a backend's writes run in, one after another, each answered on the event loop that asked.

A write leaves the event loop so that a read never waits behind it. An executor
(``loop.run_in_executor``) hands the call over through a concurrent future chained
to an asyncio one, with the pool's bookkeeping at both ends; here the call goes
on a queue to one waiting thread, which sets the asking loop's own future when
it is done. What an executor promises is kept: writes run in the order they
were asked for, one at a time; a write whose caller gave up before it began is
not run; :meth:`WriteThread.shutdown` runs the writes already asked for, and so
does the end of the process.
"""

import asyncio
import atexit
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

STOP = None  # on the queue after the last write: the thread ends


class WriteThread:
    """
    Calls run one at a time, in order, in a thread of their own, started with the first.

    :param name: the thread's name
    """

    def __init__(self, name: str = "datasette-memory writes"):
        self.name = name
        self.calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.stopped = False

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """
        ``function(*args)``, run in the thread after the calls asked for before it.

        :raises RuntimeError: after :meth:`shutdown`
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self.lock:
            if self.stopped:
                raise RuntimeError("cannot run a write after the backend was closed")
            if self.thread is None:
                # the thread holds the queue, not this object: one dropped unclosed ends its thread, as an executor's does
                self.thread = threading.Thread(target=serve, args=(self.calls,), name=self.name, daemon=True)
                self.thread.start()
                weakref.finalize(self, self.calls.put, STOP)
                RUNNING.add(self)
            self.calls.put((loop, future, function, args))
        return await future

    def shutdown(self) -> None:
        "Run the calls asked for, then end the thread; no call may be asked for after."
        with self.lock:
            self.stopped = True
            thread = self.thread
            if thread is not None:
                self.calls.put(STOP)
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        RUNNING.discard(self)


def serve(calls: "queue.SimpleQueue[Any]") -> None:
    "The thread: run each call taken from ``calls`` and answer it on its loop, until :data:`STOP`."
    while (call := calls.get()) is not STOP:
        loop, future, function, args = call
        if future.cancelled():
            continue  # its caller gave up before it began, as an executor's queued call
        try:
            outcome: tuple[Any, BaseException | None] = (function(*args), None)
        except BaseException as e:
            outcome = (None, e)
        try:
            loop.call_soon_threadsafe(settle, future, *outcome)
        except RuntimeError:
            pass  # the loop has closed: nobody waits for the answer; the write stands


def settle(future: "asyncio.Future[Any]", result: Any, error: BaseException | None) -> None:
    "Answer ``future`` in its loop, unless its caller has given up on it."
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


# the threads started and not shut down: the writes asked for still run when the process ends
RUNNING: "weakref.WeakSet[WriteThread]" = weakref.WeakSet()


@atexit.register
def finish_writes() -> None:
    for writes in list(RUNNING):
        writes.shutdown()
