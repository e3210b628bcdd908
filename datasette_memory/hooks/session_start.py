"""The context a session starts from (SessionStart: startup, resume, clear and compact alike).

It names the project and the rule that chose it, and the other projects in
the file that hold memory, with how to switch to one (memory written under
another name would otherwise look empty). Then, within the byte budget, in this
order, each part kept to its share so one long part cannot crowd out the rest:
the latest checkpoint's summary; the last
sessions' activity (:mod:`.activity`); the facts that hold now; how many claims
wait for a person's review; the events since the checkpoint (newest kept, the
hooks' own bookkeeping left out). The last line says what the budget left out.

The session's start is recorded in the ledger first, so the events that follow
can be tied to the session (see :mod:`.stop`).
"""

import json
import pathlib
from typing import Any

from ..core import timeline
from ..core.hook_kinds import HOOK_KINDS, SESSION_START
from ..memory import Memory
from . import activity
from .credentials import left_out
from .payloads import SESSION_START as EVENT, SOURCES, Payload
from .project import MARKER, ProjectChoice, nearest
from .shape import SESSION_START_BUDGET, UNTRUSTED, Context, one_line, quoted

DEFAULT_BUDGET = SESSION_START_BUDGET
MAX_EVENTS = 50
RESERVE = 200  # bytes kept for the line saying what was left out
# each part's most share of the budget, in the order the parts are added
SHARES = {"checkpoint": 0.35, "activity": 0.25, "facts": 0.2, "events": 1.0}
MAX_LINE_CHARS = 300
OTHER_PROJECTS_NAMED = 8


def record_start(memory: Memory, payload: Payload, choice: ProjectChoice) -> list[str]:
    """
    Record that the session started, in the session's name, as a ``session_start`` event;
    a field holding a credential (a folder's name can) is left out.

    :param memory: memory, opened with the payload's session id
    :param payload: the SessionStart payload
    :param choice: the project, and the rule that chose it (which may name folders)
    :return: notes for stderr, on each field left out
    """
    fields = {"source": payload.source or "unknown", "cwd": str(payload.cwd or "unknown"), "project": choice.rule}
    notes = left_out(fields, f"the {SESSION_START} event")
    memory.append_event("\n".join(f"{name}: {value}" for name, value in fields.items()), kind=SESSION_START)
    return notes


def session_context(memory: Memory, payload: Payload, choice: ProjectChoice, budget: int = DEFAULT_BUDGET) -> dict[str, Any]:
    """
    The SessionStart output: where to pick up, framed as stored data, within ``budget`` bytes.

    :param memory: memory, scoped to the chosen project
    :param payload: the SessionStart payload
    :param choice: the project, and the rule that chose it
    :param budget: most bytes printed
    """
    context = Context(EVENT, budget, reserve=RESERVE)
    started = f"session {payload.source}" if payload.source in SOURCES else "session start"  # no other text is echoed
    context.add_cut(f"# datasette-memory, {started}: project {json.dumps(choice.project, ensure_ascii=False)}, chosen by {choice.rule}")
    sizes = project_sizes(memory)
    others = [(name, counts) for name, counts in sizes.items() if name != choice.project]
    if others:
        context.add_cut(other_projects_line(choice.project, choice.project in sizes, others, switch_folder(payload.cwd)))
    context.add(UNTRUSTED)
    resume = memory.resume_context(max_events=MAX_EVENTS, budget=200_000, skip_kinds=HOOK_KINDS)
    left_out = {}
    for warning in chain_warnings(resume):
        context.add_cut(warning)
    left_out["of the checkpoint's summary"] = add_part(context, "checkpoint", checkpoint_lines(resume))
    sessions = activity.recent_sessions(memory.conn, memory.project)
    left_out["sessions' activity"] = add_part(context, "activity", activity_lines(sessions), heading_lines=1)
    facts = memory.governed.facts_now()
    left_out["facts"] = add_part(context, "facts", fact_lines(facts), heading_lines=1)
    context.add(claims_line(memory.governed.review_queue(limit=1)["pending"]))
    events = [event_line(event) for event in resume["events"][::-1]]  # newest first: the oldest give way
    left_out["events"] = add_part(context, "events", [events_heading(resume)] + events if events else [], heading_lines=1)
    left_out["events"] += resume["accounting"]["events_since_checkpoint"] - len(resume["events"])
    return context.finish(left_out_line(left_out, budget))


def project_sizes(memory: Memory) -> dict[str, dict[str, int]]:
    "Every project in the file that holds memory, with its counts (``entities``, ``facts``), the largest first."
    from ..overview import projects_holding_memory

    return {project: {"entities": entities, "facts": facts} for project, entities, facts in projects_holding_memory(memory.conn)}


def switch_folder(cwd: pathlib.Path | None) -> pathlib.Path | None:
    "Where a ``.datasette-memory`` file would choose the project for sessions here: the repository's root, else the folder."
    if cwd is None:
        return None
    return nearest(cwd)[1] or cwd


def other_projects_line(chosen: str, chosen_holds: bool, others: list[tuple[str, dict[str, int]]], folder: pathlib.Path | None) -> str:
    """
    The projects other than ``chosen`` that hold memory, and how to work in one of them here.

    :param chosen_holds: whether the chosen project holds memory itself
    :param others: ``(project, counts)``, the largest first
    :param folder: where a ``.datasette-memory`` file would go, if known
    """
    def named(project: str, counts: dict[str, int]) -> str:
        parts = [f"{counts[key]} {one if counts[key] == 1 else key}" for key, one in (("entities", "entity"), ("facts", "fact")) if counts[key]]
        return f"{json.dumps(project, ensure_ascii=False)} ({', '.join(parts)})"

    listed = ", ".join(named(project, counts) for project, counts in others[:OTHER_PROJECTS_NAMED])
    more = f", and {len(others) - OTHER_PROJECTS_NAMED} more" if len(others) > OTHER_PROJECTS_NAMED else ""
    example = json.dumps(others[0][0], ensure_ascii=False)
    marker = folder / MARKER if folder is not None else MARKER
    empty = f"Project {json.dumps(chosen, ensure_ascii=False)} holds no memory yet. " if not chosen_holds else ""
    return (
        f"## {empty}Other projects holding memory: {listed}{more}. To work in one here, write project = {example} "
        f"in {marker}, or run datasette-memory install again with --project {example}; the next session starts in it."
    )


def add_part(context: Context, part: str, lines: list[str], heading_lines: int = 0) -> int:
    """
    Add ``lines`` while they fit in the part's share of the budget; how many of them (headings not counted) did not.

    :param context: the context being built
    :param part: which part, for its share (:data:`SHARES`)
    :param lines: the part's lines, its heading first
    :param heading_lines: how many of the first lines are headings
    """
    kept_back = context.reserve
    context.reserve = max(kept_back, context.budget - context.size - int(SHARES[part] * context.budget))
    added = 0
    for line in lines:
        if not context.add_cut(line):
            break
        added += 1
    context.reserve = kept_back
    return len(lines) - max(added, heading_lines) if lines else 0


def chain_warnings(resume: dict[str, Any]) -> list[str]:
    "A line for a broken chain and for each way the checkpoints table disagrees with the ledger."
    warnings = [f"## Warning: {resume['chain']['summary']}"] if not resume["chain"]["ok"] else []
    return warnings + [f"## Warning: {one_line(w)}" for w in resume["warnings"]]


def checkpoint_lines(resume: dict[str, Any]) -> list[str]:
    "The latest checkpoint: a heading, then its summary quoted."
    checkpoint = resume["checkpoint"]
    if checkpoint is None:
        return ["## No checkpoint recorded yet in this project"]
    by = f", by {checkpoint['actor']}" + (f" (session {checkpoint['session'][:12]})" if checkpoint["session"] else "")
    summary = checkpoint["summary"] if checkpoint["summary"] is not None else "(its summary was redacted)"
    return [f"## Latest checkpoint, {activity.minute(checkpoint['ts'])} UTC{by}", *quoted(summary)]


def activity_lines(sessions: list[activity.SessionActivity]) -> list[str]:
    "The last sessions' activity: a heading, then each session's summary."
    if not sessions:
        return []
    heading = f"## The last {len(sessions)} sessions' activity, as hook tool recorded it" if len(sessions) > 1 else (
        "## The last session's activity, as hook tool recorded it")
    return [heading] + [line for session in sessions for line in activity.summary_lines(session)]


def fact_lines(facts: list[dict[str, Any]]) -> list[str]:
    "The facts that hold now: a heading, then one quoted line each."
    if not facts:
        return []
    return [f"## Facts that hold now ({len(facts)}; a person approved each)"] + [
        f"> fact #{f['id']}: {statement(f)} (holds since {f['valid_from'][:10]})" for f in facts
    ]


def statement(fact: dict[str, Any]) -> str:
    "A fact's subject, predicate and object, each quoted as JSON, so none can break its line."
    return " · ".join(json.dumps(fact[part], ensure_ascii=False) for part in ("subject", "predicate", "object"))


def claims_line(pending: int) -> str:
    "How many claims wait for review."
    if not pending:
        return "## Claims waiting for review: none"
    return f"## Claims waiting for a person's review: {pending} (proposals, not facts; list_claims shows them)"


def events_heading(resume: dict[str, Any]) -> str:
    total = resume["accounting"]["events_since_checkpoint"]
    since = "since the checkpoint" if resume["checkpoint"] else "so far"
    return f"## Events {since}: {total:,} (newest first; the hooks' own activity is summed up above)"


def event_line(event: dict[str, Any]) -> str:
    "One event, on one quoted line: when, what, by whom, about what, and what it said or changed."
    described = timeline.describe(event)
    about = "".join(part.get("name") or part.get("text") or f"{part['type']} #{part.get('id')}" for part in described["about"])
    said = described["text"] or diff_text(described["diff"]) or changes_text(described["changes"])
    line = f"> {activity.minute(event['ts'])} {event['kind']} by {event['actor']}" + (f" {about}" if about else "") + (f": {said}" if said else "")
    return one_line(line)[:MAX_LINE_CHARS]


def diff_text(diff: list[tuple[str, str]] | None) -> str:
    "A text change as its new text, or what was removed when nothing was added."
    if not diff:
        return ""
    if any(op == "insert" for op, _ in diff):
        return "".join(text for op, text in diff if op != "delete")
    return "removed " + "".join(text for op, text in diff if op == "delete")


def changes_text(changes: list[dict[str, Any]]) -> str:
    "Changed fields as ``field: old → new``."
    return "; ".join(f"{c['field'] + ': ' if c['field'] else ''}{c['old'] or ''} → {c['new'] or ''}" for c in changes)


def left_out_line(left_out: dict[str, int], budget: int) -> str | None:
    "The last line: what the budget left out, or None if nothing was."
    counts = [f"{count:,} {what}" if what != "of the checkpoint's summary" else "part of the checkpoint's summary"
              for what, count in left_out.items() if count > 0]
    return f"[Left out to fit the {budget:,}-byte budget: {', '.join(counts)}.]" if counts else None
