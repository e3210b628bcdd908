"""Continuous replication: Litestream streaming the memory file to its replica, supervised, with its lag in ledger events.

Litestream runs as a child process with the private configuration of
:mod:`.litestream` and a control socket in the same private folder. A thread
watches it: once a second it reads the ledger's head, then asks Litestream
(``POST /sync`` on the socket) to take in the write-ahead log as it is, which
answers with the transaction that now holds everything committed (that head
included) and the transaction the replica holds. So the replica holds event
H as soon as it holds the transaction seen right after H was read: its lag is
the events since then, and the time since the oldest of them was seen. If
Litestream stops, it is started again (after 1, 2, 4... up to 60 seconds).

Stopping asks for a last upload and waits for it (at most 30 s), then ends
Litestream with SIGTERM, which uploads once more before it exits. Litestream
runs in a session of its own, so a Ctrl-C meant for the door reaches it only
through the door, once; on Linux it is also ended if the door is killed
(``PR_SET_PDEATHSIG``), and the lock it inherits (``memory.db.replication.lock``)
keeps a second replication of the file from starting while it runs.
"""

import collections
import contextlib
import ctypes
import fcntl
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from ..core.replication_lock import lock_path
from .litestream import CONFIG_NAME, Litestream, write_config
from .replica_target import ReplicaTarget, ReplicationError

POLL_SECONDS = 1.0
START_SECONDS = 30.0
FINAL_SYNC_SECONDS = 30
MAX_RESTART_DELAY = 60.0
KEPT_OUTPUT_LINES = 20
PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _prctl = None


def end_with_parent() -> None:
    "In the child, before Litestream runs: be sent SIGTERM when the door that started it dies (Linux only)."
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Replication:
    """
    Litestream replicating one memory file to one replica, watched by a thread.

    :param litestream: the binary and its environment
    :param target: the replica
    :param memory_path: the memory file
    :param say: where its lines go (one line each, for people)
    :param report_every: seconds between lines about the lag (a line only when it changed)
    """

    def __init__(self, litestream: Litestream, target: ReplicaTarget, memory_path: pathlib.Path,
                 say: Callable[[str], None], report_every: float = 60.0):
        self.litestream, self.target, self.path, self.say = litestream, target, pathlib.Path(memory_path), say
        self.report_every = report_every
        self.folder: pathlib.Path | None = None
        self.socket = pathlib.Path()
        self.process: subprocess.Popen[str] | None = None
        self.lock_file: int | None = None
        self.output: collections.deque[str] = collections.deque(maxlen=KEPT_OUTPUT_LINES)
        self.samples: collections.deque[tuple[int, int, float]] = collections.deque()  # (ledger head, txid, seen at)
        self.state: dict[str, Any] = {"ledger_head": 0, "replica_event": 0, "events_behind": 0, "seconds_behind": 0.0, "replica_txid": 0}
        self.stopping = threading.Event()
        self.watcher: threading.Thread | None = None
        self.restarts = 0
        self.reported: tuple[int, int] | None = None

    # starting and stopping

    def start(self) -> None:
        """
        Start Litestream and the thread that watches it; returns once its control socket answers.

        :raises ReplicationError: if the file is replicated already, or Litestream does not start
        """
        self.lock_file = take_lock(self.path)
        remove_leftovers(self.path)
        self.folder = pathlib.Path(tempfile_folder())
        self.socket = self.folder / "litestream.sock"
        config = write_config(self.folder, str(self.path), self.target, socket=self.socket)
        try:
            self.launch(config)
        except BaseException:
            self.release()
            raise
        self.say(f"Replicating {self.path} to {self.target.describe()} with Litestream {self.litestream.version}")
        self.watcher = threading.Thread(target=self.watch, args=(config,), name="datasette-memory replication", daemon=True)
        self.watcher.start()

    def launch(self, config: pathlib.Path) -> None:
        "Start Litestream on ``config`` and wait for its control socket; an error with its reason if it ends first."
        self.process = subprocess.Popen(
            [self.litestream.binary, "replicate", "-config", str(config), "-no-expand-env"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.litestream.environment, start_new_session=True, pass_fds=(self.lock_file,) if self.lock_file else (),
            preexec_fn=end_with_parent,
        )
        write_holders(self.lock_file, self.process.pid)
        threading.Thread(target=self.relay, args=(self.process,), name="datasette-memory litestream output", daemon=True).start()
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                time.sleep(0.1)  # let the relay read its last words
                raise ReplicationError(f"Litestream stopped as it started (exit {self.process.returncode}): "
                                       f"{self.last_words()}")
            with contextlib.suppress(OSError, ValueError, http.client.HTTPException):
                self.request("GET", "/list", timeout=2)
                return
            time.sleep(0.05)
        self.end_process()
        raise ReplicationError(f"Litestream did not start within {START_SECONDS:.0f} s: {self.last_words()}")

    def stop(self) -> dict[str, Any]:
        """
        Upload what is left and wait for it (at most 30 s), end Litestream, and say where the replica stands.

        :return: the last state (see :meth:`status`)
        """
        self.stopping.set()
        if self.watcher is not None:
            self.watcher.join(timeout=10)
        state = dict(self.state)
        with contextlib.suppress(ReplicationError):
            state = self.sync(timeout=FINAL_SYNC_SECONDS)
        self.end_process()
        self.release()
        behind = state["events_behind"]
        self.say(f"Replication stopped: the replica holds event {state['replica_event']} of {state['ledger_head']}"
                 + (" (up to date)" if not behind else f"; {behind} events were not uploaded"))
        return state

    def end_process(self) -> None:
        "End Litestream with SIGTERM (it uploads once more), or SIGKILL if it has not ended within a minute."
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def release(self) -> None:
        "Remove the private folder and let go of the lock."
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        if self.lock_file is not None:
            os.close(self.lock_file)
            self.lock_file = None

    # watching

    def watch(self, config: pathlib.Path) -> None:
        "The watcher thread: sample the lag once a second, report it, start Litestream again if it stopped."
        last_report = time.monotonic()
        delay = 1.0
        while not self.stopping.wait(POLL_SECONDS):
            if self.process is not None and self.process.poll() is not None:
                self.say(f"Litestream stopped (exit {self.process.returncode}): {self.last_words()}; "
                         f"starting it again in {delay:.0f} s")
                if self.stopping.wait(delay):
                    return
                delay = min(delay * 2, MAX_RESTART_DELAY)
                self.restart(config)
                continue
            with contextlib.suppress(OSError, ValueError, http.client.HTTPException, sqlite3.Error):
                self.sample()
                delay = 1.0
            if time.monotonic() - last_report >= self.report_every or self.first_time_current():
                self.report()
                last_report = time.monotonic()

    def restart(self, config: pathlib.Path) -> None:
        "Start Litestream again after it stopped."
        self.restarts += 1
        try:
            self.launch(config)
            self.say("Litestream started again")
        except ReplicationError as e:
            self.say(f"Litestream would not start again: {e}")

    def relay(self, process: "subprocess.Popen[str]") -> None:
        "Pass on what Litestream says (warnings and errors: its configuration logs nothing else), and keep the last lines."
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip()
            if line:
                self.output.append(line)
                if not self.stopping.is_set():
                    self.say(f"Litestream: {line}")

    def last_words(self) -> str:
        "What Litestream said last, for an error."
        return " / ".join(list(self.output)[-3:]) or "it said nothing"

    # the lag

    def sample(self, wait: bool = False, timeout: int = 10) -> dict[str, Any]:
        """
        Read the ledger's head, have Litestream take in the write-ahead log (and, with ``wait``,
        upload it), and work out what the replica holds.

        :return: the state: ``{ledger_head, replica_event, events_behind, seconds_behind, replica_txid}``
        """
        head = ledger_head(self.path)
        body = {"path": str(self.path), "wait": wait, **({"timeout": timeout} if wait else {})}
        answer = self.request("POST", "/sync", body, timeout=timeout + 5)
        seen_at = time.monotonic()
        self.samples.append((head, int(answer.get("txid") or 0), seen_at))
        return self.settle(int(answer.get("replicated_txid") or 0), head, seen_at)

    def settle(self, replicated: int, head: int, now: float) -> dict[str, Any]:
        "The state once the replica holds transaction ``replicated``: samples it covers are dropped but the newest."
        covered = [s for s in self.samples if s[1] <= replicated]
        replica_event = max((s[0] for s in covered), default=self.state["replica_event"])
        while len(self.samples) > 1 and self.samples[1][1] <= replicated:
            self.samples.popleft()
        waiting = [s for s in self.samples if s[0] > replica_event]
        self.state = {"ledger_head": head, "replica_event": replica_event, "events_behind": max(0, head - replica_event),
                      "seconds_behind": round(now - waiting[0][2], 1) if waiting else 0.0, "replica_txid": replicated}
        return dict(self.state)

    def status(self) -> dict[str, Any]:
        "Where the replica stands, as last measured (once a second)."
        return dict(self.state)

    def sync(self, timeout: int = 30) -> dict[str, Any]:
        """
        Upload everything committed so far and wait for it (at most ``timeout`` seconds).

        :raises ReplicationError: if Litestream does not answer
        """
        try:
            return self.sample(wait=True, timeout=timeout)
        except (OSError, ValueError, http.client.HTTPException, sqlite3.Error) as e:
            raise ReplicationError(f"Litestream did not upload within {timeout} s ({e}): {self.last_words()}")

    def first_time_current(self) -> bool:
        "Whether the replica has just caught up for the first time (said at once, not at the next report)."
        return self.reported is None and self.state["ledger_head"] > 0 and not self.state["events_behind"]

    def report(self) -> None:
        "Say where the replica stands, if that changed since the last time."
        state = self.state
        now = (state["ledger_head"], state["replica_event"])
        if now == self.reported:
            return
        self.reported = now
        if not state["events_behind"]:
            self.say(f"Replica: up to date, it holds every event ({state['replica_event']})")
        else:
            self.say(f"Replica: holds event {state['replica_event']} of {state['ledger_head']}, "
                     f"{state['events_behind']} events and {state['seconds_behind']:.1f} s behind")

    def request(self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 10) -> dict[str, Any]:
        "Ask Litestream's control socket; its JSON answer."
        connection = UnixHTTPConnection(str(self.socket), timeout)
        try:
            connection.request(method, path, body=json.dumps(body) if body is not None else None,
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = json.loads(response.read() or b"{}")
            if response.status != 200:
                raise ValueError(f"Litestream answered {response.status}: {answer.get('error', answer)}")
            return answer if isinstance(answer, dict) else {}
        finally:
            connection.close()


class UnixHTTPConnection(http.client.HTTPConnection):
    "HTTP over a Unix socket, as Litestream's control socket speaks it."

    def __init__(self, socket_path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


def ledger_head(path: pathlib.Path) -> int:
    "The newest event's id in the memory file at ``path`` (read-only, no transaction kept open)."
    conn = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True, isolation_level=None)
    try:
        return int(conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0])
    finally:
        conn.close()


FOLDER_PREFIXES = ("datasette-memory-replicate-", "dm-replicate-")


def tempfile_folder() -> str:
    "A private folder (0700) whose socket path fits a Unix socket's 108 bytes."
    folder = tempfile.mkdtemp(prefix=FOLDER_PREFIXES[0])
    if len(folder) > 80:
        shutil.rmtree(folder, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix=FOLDER_PREFIXES[1], dir="/tmp")
    return folder


def remove_leftovers(memory_path: pathlib.Path) -> list[str]:
    """
    Remove the private folders a replication of ``memory_path`` left when it was killed
    (its configuration and a dead socket): the replication lock is held, so none is in use.

    :return: the folders removed
    """
    removed = []
    for parent in {pathlib.Path(tempfile.gettempdir()), pathlib.Path("/tmp")}:
        for folder in (f for prefix in FOLDER_PREFIXES for f in parent.glob(f"{prefix}*")):
            with contextlib.suppress(OSError, ValueError, KeyError, IndexError, TypeError):
                config = json.loads((folder / CONFIG_NAME).read_text())
                if config["dbs"][0]["path"] == str(memory_path) and folder.stat().st_uid == os.getuid():
                    shutil.rmtree(folder)
                    removed.append(str(folder))
    return removed


def take_lock(memory_path: pathlib.Path) -> int:
    """
    Take the replication lock of ``memory_path``.

    :return: its file descriptor (inheritable, so that Litestream holds it too)
    :raises ReplicationError: naming the processes holding it, if another replication runs
    """
    path = lock_path(memory_path)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holders = os.pread(descriptor, 200, 0).decode(errors="replace").strip() or "unknown processes"
        os.close(descriptor)
        raise ReplicationError(f"{memory_path} is being replicated already ({holders}); stop that replication first "
                               f"(a Litestream left running by a killed server holds {path.name} too)")
    os.set_inheritable(descriptor, True)
    return descriptor


def write_holders(descriptor: int | None, litestream_pid: int) -> None:
    "Note in the lock file who holds it, for the error a second replication gets."
    if descriptor is None:
        return
    text = f"process {os.getpid()}, Litestream process {litestream_pid}".encode()
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, text, 0)
