"""What a search result shows of an entity: its name and type, and the observations that matter.

A match shows the observations that matched, each with the one after it: in a
conversation stored as turns, a question's answer is the next turn (on the
retrieval benchmark's conversations, the answering turn came back 5 to 10% more
often; docs/benchmarks.md, Retrieval).
"""

import json
import sqlite3
from collections.abc import Iterable

OBSERVATIONS_SHOWN = 3


def entity_rows(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    "``id -> (name, entity_type)`` for entity ids."
    rows = conn.execute(
        "SELECT id, name, entity_type FROM entities WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(list(ids))],
    ).fetchall()
    return {id: (name, entity_type) for id, name, entity_type in rows}


def observation_texts(conn: sqlite3.Connection, entity_id: int, observation_ids: Iterable[int]) -> list[str]:
    "The matching observations, each with the entity's next one, oldest first; or its first few if only its name matched."
    wanted = sorted(observation_ids)
    if wanted:
        rows = conn.execute(
            "SELECT content FROM observations WHERE entity_id = ?1 AND id IN (SELECT value FROM json_each(?2) UNION "
            "SELECT (SELECT min(id) FROM observations WHERE entity_id = ?1 AND id > m.value) FROM json_each(?2) m) ORDER BY id",
            [entity_id, json.dumps(wanted)],
        )
    else:
        rows = conn.execute(
            "SELECT content FROM observations WHERE entity_id = ? ORDER BY id LIMIT ?", [entity_id, OBSERVATIONS_SHOWN]
        )
    return [content for (content,) in rows]
