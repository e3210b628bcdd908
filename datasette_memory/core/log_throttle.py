"""Logging a failure that repeats at most once a minute per kind, so a server on a full disk cannot flood its log.

A server whose disk is full fails every write the same way. Logging each one
(let alone its traceback) grows the log by kilobytes a call, and a client that
does not drain the server's stderr then blocks it. A :class:`LogThrottle` logs
the first failure of a kind, counts those that follow within the interval,
and says how many it left out when it logs that kind again.
"""

import logging
import threading
import time
from collections.abc import Callable

MINUTE = 60.0


class LogThrottle:
    """
    Log each kind of message at most once per ``interval`` seconds.

    :param logger: where messages go
    :param interval: seconds between two messages of one kind
    :param clock: seconds on a clock that only goes forward
    """

    def __init__(self, logger: logging.Logger, interval: float = MINUTE, clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self.lock = threading.Lock()
        self.last: dict[str, float] = {}  # kind: when it was last logged
        self.left_out: dict[str, int] = {}  # kind: how many were not logged since

    def log(self, kind: str, message: str, level: int = logging.ERROR, exc_info: BaseException | None = None) -> bool:
        """
        Log ``message`` unless a message of ``kind`` was logged less than ``interval`` seconds ago.

        :param kind: what the message is about; messages of one kind are throttled together
        :param message: one line
        :param level: the logging level
        :param exc_info: an exception whose traceback to log with it
        :return: whether it was logged
        """
        with self.lock:
            now = self.clock()
            last = self.last.get(kind)
            if last is not None and now - last < self.interval:
                self.left_out[kind] = self.left_out.get(kind, 0) + 1
                return False
            self.last[kind] = now
            left_out = self.left_out.pop(kind, 0)
        if left_out:
            since = int(now - last) if last is not None else 0
            message += f" ({left_out:,} more like this in the {since} s before were not logged)"
        self.logger.log(level, message, exc_info=exc_info)
        return True
