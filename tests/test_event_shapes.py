"""verify on a ledger whose event values a forger rewrote into other shapes: each is reported, none crashes the check."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from datasette_memory import Memory
from datasette_memory.history import compare
from datasette_memory.history.replay import Replay, events, exact_times_from

from .governance import issue_reviewer
from .tampering import LEXICAL, raw, rehash_from
from .test_verify import build_rich, copy_memory, run_cli

OTHER_SHAPES: tuple[Any, ...] = ([], {}, 7, 2.5, True, None, "text", [["nested"]], {"x": {"y": []}})


def reshaped(value: Any) -> Iterator[Any]:
    "``value`` in other shapes: the whole of it, and each part of it in turn (replaced, wrapped in a list, or dropped)."
    for other in OTHER_SHAPES:
        if other != value or type(other) is not type(value):
            yield other
    if isinstance(value, dict):
        for key, part in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for changed in reshaped(part):
                yield {**value, key: changed}
    elif isinstance(value, list):
        for i, part in enumerate(value):
            for changed in reshaped(part):
                yield [*value[:i], changed, *value[i + 1:]]
    elif isinstance(value, str):
        yield [value]


@pytest.fixture(scope="module")
def rich_template(tmp_path_factory):
    "A file with a history of every kind of event (tests/test_verify.py's)."
    path = tmp_path_factory.mktemp("rich") / "memory.db"
    build_rich(path, issue_reviewer())
    return path


def edits(ledger: list[dict[str, Any]]) -> Iterator[tuple[int, str, str, str]]:
    "(event id, kind, column, its new JSON text) for every value of every event, reshaped every way, and not JSON."
    for event in ledger:
        for column in ("old", "new"):
            if event[column] is not None:
                for other in reshaped(json.loads(event[column])):
                    yield event["id"], event["kind"], column, json.dumps(other)
                yield event["id"], event["kind"], column, "not JSON {"


def test_no_reshaped_event_value_crashes_replay_or_the_comparison(rich_template):
    """
    Replay and its comparison with the tables, as verify runs them, on the ledger
    with one value rewritten, for each of some 2,200 rewrites of the 28 events: none raises. (A
    value once given as a list, say an observation, crashed verify with a TypeError.)
    """
    conn = raw(rich_template)
    ledger, exact_from = list(events(conn)), exact_times_from(conn)
    found, ids = compare.live(conn)
    conn.close()
    crashed, shapes = [], 0
    for id, kind, column, text in edits(ledger):
        state = Replay(exact_from=exact_from)
        try:
            for event in ledger:
                state.apply({**event, column: text} if event["id"] == id else event)
            compare.anomalies(state.anomalies) + compare.differences(state, found, ids)
        except Exception as e:  # noqa: BLE001 - every crash is collected and reported at the end
            crashed.append((id, kind, column, text, f"{type(e).__name__}: {e}"))
        shapes += any(a["event"] == id and ("shape" in a["problem"] or "not JSON" in a["problem"]) for a in state.anomalies)
    assert crashed == []
    assert shapes > 500  # the rewrites replay reads are named as their event's shape


@pytest.mark.parametrize(
    "kind,column,value,problem",
    [
        ("add_observation", "new", ["has a login page"], "the observation is list, not a string"),
        ("create_entity", "new", {"name": "db", "entityType": "database", "observations": [{"x": 1}]},
         "an observation is dict, not a string"),
        ("create_relation", "new", {"from": "auth", "to": ["db"], "relationType": "uses"}, "to is list, not a string"),
        ("merge_entity", "new", {"into": "payments", "observations": [], "relations": "none"},
         "relations is str, not a list"),
        ("update_observation", "new", "not JSON {", "its value is not JSON"),
    ],
)
def test_a_consistent_rewrite_into_another_shape_is_reported_by_verify(rich_template, tmp_path, kind, column, value, problem):
    """
    The chain rehashed after the rewrite, as a careful forger would, then ordinary writes: verify
    still names the event and what is wrong with it.
    """
    path = copy_memory(rich_template, tmp_path / "memory.db")
    conn = raw(path)
    id = conn.execute("SELECT min(id) FROM events WHERE kind = ?", [kind]).fetchone()[0]
    rehash_from(conn, id, **{column: value if isinstance(value, str) and kind == "update_observation" else json.dumps(value)})
    conn.close()
    memory = Memory.open(path, project="p", actor="claude", config=LEXICAL)  # ordinary writes after it
    memory.create_entities([{"name": "later", "entityType": "service", "observations": ["written after the rewrite"]}])
    memory.add_observations([{"entityName": "later", "contents": ["and another"]}])
    memory.close()
    result = run_cli("--db", str(path))
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"{path}: PROBLEMS FOUND (full check, ")
    assert any(line.strip().startswith(f"events row {id}: expected a {kind} event that applies") and problem in line
               for line in result.output.splitlines()), result.output
