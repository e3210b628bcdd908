"""What an entity's vector embeds: its name, type and observations as one passage, and that text's digest."""

import hashlib
import json
import sqlite3
from dataclasses import dataclass

from .embedding import chosen_model


@dataclass
class EntityText:
    """The text one entity's vector embeds, and that text's digest."""

    id: int
    project: str
    name: str
    text: str

    @property
    def digest(self) -> str:
        "A digest of the model and the text: a vector is used only while it matches the entity as stored."
        return hashlib.sha256(f"{chosen_model().model_id}\n{self.text}".encode("utf-8")).hexdigest()


def entity_text(name: str, entity_type: str, observations: list[str]) -> str:
    "An entity as one passage: name, type, then its observations, oldest first."
    return f"{name} ({entity_type}): " + ". ".join(observations)


def entity_texts(conn: sqlite3.Connection, where: str, params: list[object]) -> list[EntityText]:
    """
    :class:`EntityText` for the memory file's entities matching ``where``.

    :param conn: a connection to the memory file
    :param where: an SQL condition on ``entities``
    :param params: its parameters
    """
    rows = conn.execute(f"SELECT id, project, name, entity_type FROM entities WHERE {where} ORDER BY id", params).fetchall()
    observations: dict[int, list[str]] = {id: [] for id, _, _, _ in rows}
    if rows:
        for entity_id, content in conn.execute(
            "SELECT entity_id, content FROM observations WHERE entity_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            [json.dumps(list(observations))],
        ):
            observations[entity_id].append(content)
    return [EntityText(id, project, name, entity_text(name, type, observations[id])) for id, project, name, type in rows]
