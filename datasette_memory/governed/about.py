"""The claims and facts about one thing: those whose subject is one of its names, compared as values are.

An entity's page shows what the governed tier says about it. A subject
matches a name when their normalized keys do (:func:`.statements.value_key`:
case, spacing and Unicode forms ignored), so ``Auth Gateway`` is about the
entity ``auth gateway``; old names count, so a fact recorded before a rename
stays with the entity.
"""

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from ..core.clock import now
from .claims import CLAIM_COLUMNS
from .facts import FACT_COLUMNS
from .statements import value_key


def subject_keys(names: Iterable[str]) -> list[str]:
    "The normalized keys of ``names``, without blanks, sorted."
    return sorted({value_key(name) for name in names} - {""})


def statements_about(conn: sqlite3.Connection, project: str, names: Iterable[str], at: str | None = None) -> dict[str, Any]:
    """
    The facts and claims of ``project`` whose subject is one of ``names``,
    oldest first: ``{facts, claims}``. Each fact has ``holds_now`` (it holds at
    ``at``); each claim has its ``status``.

    :param names: the entity's name and its old names
    :param at: the time "now" means, in the stored format; default the current time
    """
    at = at or now()
    keys = json.dumps(subject_keys(names))
    facts = conn.execute(
        f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE project = ? "
        "AND subject_key IN (SELECT value FROM json_each(?)) ORDER BY id",
        [project, keys],
    ).fetchall()
    claims = conn.execute(
        f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE project = ? "
        "AND subject_key IN (SELECT value FROM json_each(?)) ORDER BY id",
        [project, keys],
    ).fetchall()
    return {
        "facts": [holding(dict(zip(FACT_COLUMNS, row)), at) for row in facts],
        "claims": [dict(zip(CLAIM_COLUMNS, row)) for row in claims],
    }


def holding(fact: dict[str, Any], at: str) -> dict[str, Any]:
    "``fact`` with ``holds_now``: whether it holds at valid time ``at``."
    return {**fact, "holds_now": fact["valid_from"] <= at and (fact["valid_to"] is None or at < fact["valid_to"])}
