"""The last sessions' activity, read back from the events ``hook tool`` recorded, summed up per session.

For each of the newest sessions: how many tool calls, the files touched most, the
commands that failed (a non-zero exit status, or a test run with failures), and
the last call, where the session stopped. Only the newest :data:`MAX_EVENTS`
activity events of the project are read (the timeline's query, newest first,
on its (project, kind, id) index), so the summary costs the same on any ledger.
"""

import collections
import dataclasses
import re
import sqlite3
from typing import Any

from ..core import timeline
from ..core.hook_kinds import ACTIVITY
from .capture import cut

MAX_EVENTS = 300
MAX_SESSIONS = 3
TOP_FILES = 5
TOP_FAILURES = 3
MAX_ERROR_CHARS = 120
FAILED_TESTS = re.compile(r"\b([1-9]\d*) (?:failed|failing|fail|errors?)\b")


@dataclasses.dataclass
class SessionActivity:
    """
    One session's recorded tool calls, newest first.

    :param session: the agent's session id (None when the hook had none)
    :param calls: the calls' fields, newest first
    :param first: when the oldest of them was recorded
    :param last: when the newest was
    """

    session: str | None
    calls: list[dict[str, str]]
    first: str
    last: str


def parse(content: Any) -> dict[str, str]:
    "An activity event's content as its fields (``name: value`` lines)."
    if not isinstance(content, str):
        return {}
    fields = {}
    for line in content.splitlines():
        name, separator, value = line.partition(": ")
        if separator:
            fields[name] = value
    return fields


def recent_sessions(conn: sqlite3.Connection, project: str, sessions: int = MAX_SESSIONS) -> list[SessionActivity]:
    """
    The newest ``sessions`` sessions' activity in ``project``, newest first.

    :param conn: an open connection
    :param project: the project
    :param sessions: most sessions
    """
    page = timeline.events_page(conn, timeline.filters(project, kind=ACTIVITY), limit=MAX_EVENTS)
    found: dict[str | None, SessionActivity] = {}
    for group in page["timeline"]:
        for event in group["events"]:
            session = event["session"]
            if session not in found and len(found) == sessions:
                continue
            activity = found.setdefault(session, SessionActivity(session, [], event["ts"], event["ts"]))
            activity.calls.append(parse(event["new"]))
            activity.first = event["ts"]
    return list(found.values())


def files_touched_most(calls: list[dict[str, str]], top: int = TOP_FILES) -> list[tuple[str, int]]:
    "The files the most calls touched, with how many."
    counts = collections.Counter(
        name for call in calls for name in re.sub(r" \(\+\d+ more\)$", "", call.get("files", "")).split(", ") if name
    )
    return counts.most_common(top)


def failed(call: dict[str, str]) -> bool:
    "Did the call fail: a non-zero exit status, a failure, or a test run with failures?"
    status = call.get("exit", "")
    return (status not in ("", "0")) or bool(FAILED_TESTS.search(call.get("tests", "")))


def failures(calls: list[dict[str, str]], top: int = TOP_FAILURES) -> list[str]:
    "The newest distinct calls that failed, described."
    described = [describe(call) for call in calls if failed(call)]
    return list(dict.fromkeys(described))[:top]


def describe(call: dict[str, str]) -> str:
    "One call in a few words: the tool, its command or files, and how it ended."
    what = f"`{call['command']}`" if call.get("command") else call.get("files", "")
    status = call.get("exit", "")
    ended = "failed" if status == "failed" else f"exit {status}" if status not in ("", "0") else ""
    error = call.get("error", "") if not call.get("tests") and status in ("", "failed") else ""  # a code says enough
    how = "; ".join(part for part in (ended, call.get("tests", ""), cut(error, MAX_ERROR_CHARS)) if part)
    return " ".join(part for part in (call.get("tool", "?"), what) if part) + (f": {how}" if how else "")


def minute(ts: str) -> str:
    "A stored time to the minute, for people: ``2026-01-05 10:02``."
    return ts[:16].replace("T", " ")


def summary_lines(activity: SessionActivity) -> list[str]:
    "One session's summary, as quoted lines (what they quote was stored by the hook from the agent's calls)."
    session = (activity.session or "without an id")[:12]
    lines = [f"> session {session}: {len(activity.calls)} tool calls recorded, {minute(activity.first)} to {minute(activity.last)} UTC"]
    if files := files_touched_most(activity.calls):
        lines.append("> files touched most: " + ", ".join(f"{name} ({count})" for name, count in files))
    if failed_calls := failures(activity.calls):
        lines.append("> failed: " + " | ".join(failed_calls))
    lines.append("> where it stopped: " + describe(activity.calls[0]))
    return lines
