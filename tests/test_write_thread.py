"""The write thread keeps an executor's promises: order, one at a time, off the loop, errors raised, cancelled calls skipped."""

import asyncio
import gc
import threading
import time

import pytest

from mcp_bridge.write_thread import WriteThread


def test_calls_run_in_order_one_at_a_time_off_the_event_loop():
    writes = WriteThread("test writes")
    ran: list[tuple[int, str]] = []
    running = []

    def write(n: int) -> int:
        running.append(n)
        assert len(running) == 1, "two writes ran at once"
        time.sleep(0.001)
        ran.append((n, threading.current_thread().name))
        running.remove(n)
        return n * 10

    async def main() -> list[int]:
        return await asyncio.gather(*(writes.run(write, n) for n in range(20)))

    try:
        assert asyncio.run(main()) == [n * 10 for n in range(20)]
    finally:
        writes.shutdown()
    assert [n for n, _ in ran] == list(range(20))
    assert {name for _, name in ran} == {"test writes"}


@pytest.mark.parametrize("error", [ValueError("refused"), KeyboardInterrupt()])
def test_an_error_is_raised_to_the_caller_and_the_thread_goes_on(error):
    writes = WriteThread()

    def fail() -> None:
        raise error

    async def main() -> str:
        with pytest.raises(type(error)):
            await writes.run(fail)
        return await writes.run(str.upper, "after")

    try:
        assert asyncio.run(main()) == "AFTER"
    finally:
        writes.shutdown()


async def held(writes: WriteThread) -> tuple["asyncio.Future[None]", threading.Event]:
    "A first write asked for and running, holding the thread until the event returned is set; its future."
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        started.set()
        release.wait(5)

    blocking = asyncio.ensure_future(writes.run(first))
    await asyncio.to_thread(started.wait, 5)
    return blocking, release


def test_a_call_cancelled_before_it_began_is_not_run():
    writes = WriteThread()
    ran: list[str] = []

    async def main() -> None:
        blocking, release = await held(writes)
        waiting = asyncio.ensure_future(writes.run(ran.append, "cancelled"))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        release.set()
        await blocking
        await writes.run(ran.append, "after")

    try:
        asyncio.run(main())
    finally:
        writes.shutdown()
    assert ran == ["after"]


def test_shutdown_runs_the_calls_asked_for_and_refuses_later_ones():
    writes = WriteThread()
    ran: list[int] = []

    async def main() -> None:
        blocking, release = await held(writes)
        asked = [blocking] + [asyncio.ensure_future(writes.run(ran.append, n)) for n in range(5)]
        await asyncio.sleep(0)  # every call asked for
        stopping = asyncio.ensure_future(asyncio.to_thread(writes.shutdown))
        release.set()
        await asyncio.gather(*asked, stopping)
        with pytest.raises(RuntimeError, match="closed"):
            await writes.run(ran.append, "late")

    asyncio.run(main())
    assert ran == list(range(5))
    assert not writes.thread.is_alive()


def test_a_write_thread_dropped_unclosed_ends_its_thread():
    writes = WriteThread()
    asyncio.run(writes.run(int))
    thread = writes.thread
    del writes
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()
