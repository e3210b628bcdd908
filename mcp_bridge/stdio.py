"""MCP over stdio, with every malformed line answered and no line held longer than the cap.

This replaces the MCP SDK's stdio transport (``mcp.server.stdio.stdio_server``),
which hands a line it cannot read to the session as an exception, and the session
answers nothing: a client that sent a non-JSON line, a batch, a lone surrogate or
deep nesting waited for ever. It also read invalid UTF-8 as U+FFFD, and held a
line of any length in memory. Here one thread reads stdin's bytes a line at a
time, never more than the cap on one request (:class:`LineReader`), and hands
each message to the event loop (:class:`MessageFeed`); each line is checked by
:mod:`.wire`; a malformed one is answered here with its JSON-RPC error, and a
good one goes to the server's session. Replies and errors are written whole,
one at a time (:class:`FrameWriter`), so frames never interleave: a short reply
from the event loop itself (a thread's round trip costs more than the write), a
long one from a thread; a graph result is written from its rendered pieces into
its reply's line (:mod:`.splicing`), never copied whole.

As upstream does, while serving fd 0 reads the null device and fd 1 writes to
stderr, so a stray print or a child process cannot read from or write to the
wire; both are restored on exit.

Given a function that builds the server and an :class:`~.opening.Opening`, the
first line is read in a thread of its own (:class:`FirstLine`) while the server
is built, and a plain ``initialize`` request is answered at once: the framework,
whose import is most of a second, is then imported while the client reads the
answer. This module imports the framework (and :mod:`.wire`, which needs it)
only when it serves.
"""

import asyncio
import contextlib
import fcntl
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from .opening import Opening

# how much of a line over the cap is kept, for its id; the rest is read and dropped in chunks
PREFIX_BYTES = 4096
CHUNK_BYTES = 65_536
# a reply line this short is written from the event loop, not a thread: a pipe (64 KiB) takes it at once
# unless the client has left most of a pipe's worth unread
INLINE_BYTES = 16_384


@dataclass(frozen=True)
class Oversized:
    """A line longer than the cap: as much of its start as is kept, for its id."""

    start: bytes


class LineReader:
    """
    Lines from a binary stream, none longer than ``max_bytes`` held in memory:
    a longer line comes back as :class:`Oversized`, and the rest of it is read
    and dropped in chunks before the next line.

    :param stream: where lines come from
    :param max_bytes: the most bytes one line may hold, its newline not counted
    """

    def __init__(self, stream: IO[bytes], max_bytes: int):
        self.stream, self.max_bytes = stream, max_bytes
        self.in_long_line = False

    def read(self) -> bytes | Oversized | None:
        "The next line without its line end, an :class:`Oversized` line, or None at the end of the stream."
        if self.in_long_line:
            self.skip_rest_of_line()
        line = self.stream.readline(self.max_bytes + 1)
        if not line:
            return None
        if len(line) > self.max_bytes and not line.endswith(b"\n"):
            self.in_long_line = True
            return Oversized(line[:PREFIX_BYTES])
        return line.rstrip(b"\r\n")

    def skip_rest_of_line(self) -> None:
        while True:
            chunk = self.stream.readline(CHUNK_BYTES)
            if not chunk or chunk.endswith(b"\n"):
                break
        self.in_long_line = False


class FrameWriter:
    """
    Whole lines to a binary stream, one writer at a time, so two replies never interleave.

    :param stream: where lines go
    """

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.lock = threading.Lock()

    def write(self, line: bytes) -> None:
        "Write ``line`` and a newline, and flush."
        self.write_pieces((line,))

    def write_pieces(self, pieces: Iterable[bytes]) -> None:
        "Write the pieces of one line, then a newline, and flush (a long line is never copied whole)."
        with self.lock:
            for piece in pieces:
                self.stream.write(piece)
            self.stream.write(b"\n")
            self.stream.flush()

    def write_now(self, line: bytes) -> bool:
        """
        Write a short line at once, in the caller's thread, unless it is long
        or another line is being written: then nothing is written and it is False.
        """
        if len(line) > INLINE_BYTES or not self.lock.acquire(blocking=False):
            return False
        try:
            self.stream.write(line + b"\n")
            self.stream.flush()
        finally:
            self.lock.release()
        return True


@dataclass(frozen=True)
class ReadFailed:
    """The wire could not be read: the error, for the event loop to raise."""

    error: BaseException


class MessageFeed:
    """
    Messages read by a thread of its own and handed to the running event loop
    as they come: one wake-up of the loop per message, where asking a worker
    thread for each line cost two, and the thread pool's bookkeeping. The
    thread reads at most ``ahead`` messages before the loop has taken them, so
    a client that sends faster than the server takes its messages is held
    back by the pipe, and a message held here is never more than a few.

    :param read: the next message, a :class:`~.wire.WireError`, or None at the end of the wire
    :param ahead: how many messages may wait for the loop
    """

    def __init__(self, read: Callable[[], Any], ahead: int = 2):
        self.loop = asyncio.get_running_loop()
        self.waiting: asyncio.Queue[Any] = asyncio.Queue()
        self.room = threading.Semaphore(ahead)
        threading.Thread(target=self.run, args=(read,), name="datasette-memory wire reader", daemon=True).start()

    def run(self, read: Callable[[], Any]) -> None:
        while True:
            self.room.acquire()
            try:
                message = read()
            except BaseException as e:  # raised where the loop takes it, as a worker thread's would be
                message = ReadFailed(e)
            try:
                self.loop.call_soon_threadsafe(self.waiting.put_nowait, message)
            except RuntimeError:
                return  # the loop has closed: serving is over
            if message is None or isinstance(message, ReadFailed):
                return

    async def next(self) -> Any:
        "The next message, a :class:`~.wire.WireError`, or None at the end of the wire."
        message = await self.waiting.get()
        self.room.release()
        if isinstance(message, ReadFailed):
            raise message.error
        return message


def next_message(reader: LineReader) -> Any:
    """
    The next message on ``reader`` as the JSON-RPC message it holds, a :class:`~.wire.WireError`
    to answer it with, or None at the end of the stream; blank lines are skipped.
    """
    return message_in(next_line(reader), reader.max_bytes)


def next_line(reader: LineReader) -> bytes | Oversized | None:
    "The next line on ``reader`` that is not blank, an :class:`Oversized` line, or None at the end of the stream."
    while True:
        line = reader.read()
        if line is None or isinstance(line, Oversized) or line.strip():
            return line


def message_in(line: bytes | Oversized | None, max_bytes: int) -> Any:
    "The JSON-RPC message ``line`` holds, the :class:`~.wire.WireError` to answer it with, or None for no line."
    from .wire import WireError, check_message, too_large

    if isinstance(line, Oversized):
        return too_large(None, max_bytes, line.start)
    if line is None:
        return None
    try:
        return check_message(line)
    except WireError as e:
        return e


class FirstLine:
    """
    The wire's first line, read in a thread of its own as soon as serving starts,
    and answered there if ``opening`` answers it (a plain ``initialize`` request).

    :param reader: where lines come from; nothing else reads it until :meth:`take` returns
    :param writer: where the answer goes
    :param opening: what the server answers first
    """

    def __init__(self, reader: LineReader, writer: FrameWriter, opening: "Opening"):
        self.reader, self.writer, self.opening = reader, writer, opening
        self.line: bytes | Oversized | None = None
        self.answered: tuple[int | str, bytes] | None = None  # the request's id, and the answer sent
        self.read = threading.Event()
        threading.Thread(target=self.answer, name="datasette-memory first line", daemon=True).start()

    def answer(self) -> None:
        try:
            self.line = next_line(self.reader)
            answered = self.opening.answer(self.line) if isinstance(self.line, bytes) else None
            if answered is not None:
                self.writer.write(answered[1])
                self.answered = answered
        except OSError:
            pass  # the wire is gone: serving finds it so too
        finally:
            self.read.set()

    def take(self) -> bytes | Oversized | None:
        "The first line, once read (None if the wire ended first)."
        self.read.wait()
        return self.line


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """
    The wire's stdin and stdout, on private copies of fds 0 and 1, while fd 0
    reads the null device and fd 1 writes to stderr; both restored on exit.
    Where ``sys.stdin`` and ``sys.stdout`` are not fds 0 and 1 (a test's
    streams), or the descriptors cannot be copied, the streams are used in place.
    """
    try:
        if (sys.stdin.fileno(), sys.stdout.fileno()) != (0, 1):
            raise OSError("the standard streams are not fds 0 and 1")
        wire = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
    except (OSError, ValueError, AttributeError):
        yield sys.stdin.buffer, sys.stdout.buffer
        return
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        # closefd=False: the reading thread may still block on the copy after serving ends
        yield os.fdopen(wire[0], "rb", closefd=False), os.fdopen(wire[1], "wb", closefd=False)
    finally:
        sys.stdout.flush()
        os.dup2(wire[0], 0)
        os.dup2(wire[1], 1)


def serve_stdio(
    server: Any, max_request_bytes: int, log_level: str = "WARNING", opening: "Opening | None" = None
) -> None:
    """
    Serve ``server`` over this process's stdin and stdout until stdin ends.

    :param server: the :class:`fastmcp.FastMCP` server, or a function that builds it
        (called once the first line is being read)
    :param max_request_bytes: the most bytes one message (one line) may hold
    :param log_level: fastmcp's log level while serving
    :param opening: what the server answers first, to answer a plain ``initialize`` request
        while ``server`` is built (:mod:`.opening`)
    """
    with claimed_stdio() as (stdin, stdout):
        reader, writer = LineReader(stdin, max_request_bytes), FrameWriter(stdout)
        first = FirstLine(reader, writer, opening) if opening is not None else None
        built = server() if callable(server) else server
        anyio.run(serve_stdio_async, built, reader, writer, log_level, first)


async def serve_stdio_async(
    server: Any, reader: LineReader, writer: FrameWriter, log_level: str = "WARNING", first: FirstLine | None = None
) -> None:
    """
    fastmcp 4.2.3's ``FastMCP.run_stdio_async`` with this module's transport in
    place of mcp 2.3.0's ``stdio_server``. It needs fastmcp's and mcp's internals
    (the transport's name, the server's lifespan, the low-level server's
    ``run`` and mcp's context-carrying streams), which no public API offers for
    a transport of one's own; :mod:`.internals` holds every such name and
    refuses other versions of either package.
    """
    from fastmcp.server.context import reset_transport, set_transport
    from fastmcp.utilities.logging import temporary_log_level

    from .internals import lifespan

    token = set_transport("stdio")
    try:
        with temporary_log_level(log_level):
            async with lifespan(server):
                await serve_lines(server, reader, writer, first)
    finally:
        reset_transport(token)


async def serve_lines(server: Any, reader: LineReader, writer: FrameWriter, first: FirstLine | None = None) -> None:
    """
    Run the server's session on the messages ``reader`` reads, its replies written by ``writer``;
    the first is ``first``'s line, and the session's answer to a request ``first`` answered is not sent again.
    """
    from mcp.shared.message import SessionMessage

    from .internals import create_context_streams, low_level_server
    from .splicing import SPLICES, Splices
    from .wire import WireError

    splices = Splices()
    splicing = SPLICES.set(splices)  # the session's tasks inherit it: graph results are spliced into their replies here
    to_session, session_reads = create_context_streams[SessionMessage | Exception](0)
    session_writes, from_session = create_context_streams[SessionMessage](0)
    writing = anyio.CapacityLimiter(1)

    unread = first  # the first line, until it is taken

    def read_message() -> Any:
        nonlocal unread
        if unread is None:
            return next_message(reader)
        line, unread = unread.take(), None
        return message_in(line, reader.max_bytes)

    async def read_lines() -> None:
        feed = MessageFeed(read_message)
        async with to_session:
            while True:
                message = await feed.next()
                if message is None:
                    break
                if isinstance(message, WireError):
                    await anyio.to_thread.run_sync(writer.write, message.to_bytes(), limiter=writing)
                    continue
                splices.heard(message)
                try:
                    await to_session.send(SessionMessage(message))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break  # the session has ended: as upstream, stop reading

    unanswered = first  # the first line, until the session's own answer to a request it answered goes by

    async def write_replies() -> None:
        nonlocal unanswered
        async with from_session:
            async for reply in from_session:
                line = reply.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                if unanswered is not None and unanswered.answered is not None and answers(reply.message, unanswered.answered[0]):
                    compare_answers(unanswered.answered[1], line)
                    unanswered = None
                    continue
                pieces = splices.pieces(reply.message, line)
                if isinstance(pieces, tuple) and writer.write_now(line):
                    continue  # a short reply: a thread's round trip costs more than the write
                await anyio.to_thread.run_sync(writer.write_pieces, pieces, limiter=writing)

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            tasks.start_soon(write_replies)
            low_level = low_level_server(server)
            await low_level.run(session_reads, session_writes, low_level.create_initialization_options())
    finally:
        splices.clear()
        SPLICES.reset(splicing)


def answers(message: Any, id: int | str) -> bool:
    "Whether ``message`` is the answer (a result or an error) to the request ``id``."
    from mcp_types import JSONRPCError, JSONRPCResponse

    return isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id == id


def compare_answers(sent: bytes, session: bytes) -> None:
    "Say on stderr if the first answer sent differs from the session's (it cannot be taken back): an SDK the opening no longer matches."
    if json.loads(sent) != json.loads(session):
        print(f"datasette-memory: the answer to initialize differed from the MCP SDK's: sent {sent[:300]!r}, "
              f"the SDK's {session[:300]!r}; report it", file=sys.stderr)
