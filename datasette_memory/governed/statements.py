"""Statements (subject, predicate, object): what claims and facts say.

Two statements are the same value when their normalized keys match: Unicode
NFKC, case folded, whitespace collapsed. The keys are how a rejected value is
recognised when it comes back with different casing or spacing, how an
identical pending claim is found, and how contradictions are matched.
"""

import json
import unicodedata
from typing import Any

from ..core.errors import InvalidInput
from ..core.validation import MAX_NAME_CHARS, check_name, check_text

PARTS = ("subject", "predicate", "object")
MAX_OBJECT_BYTES = 16 * 1024


def value_key(text: str) -> str:
    """
    The normalized form two texts share when they say the same thing.

    :param text: a subject, predicate or object
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def check_statement(subject: Any, predicate: Any, object: Any) -> dict[str, Any]:
    """
    A validated statement with its keys: ``{subject, predicate, object,
    subject_key, predicate_key, object_key}``.

    :param subject: what it is about, such as ``auth-service``
    :param predicate: the property, such as ``uses database``
    :param object: the value, such as ``postgres 16``
    """
    statement = {
        "subject": check_name(subject, "subject", MAX_NAME_CHARS),
        "predicate": check_name(predicate, "predicate", MAX_NAME_CHARS),
        "object": check_text(object, "object", MAX_OBJECT_BYTES),
    }
    for part in PARTS:
        statement[f"{part}_key"] = value_key(statement[part])
        if not statement[f"{part}_key"]:
            raise InvalidInput(f"{part}: must not be empty or only whitespace")
    return statement


def check_rationale(value: Any, field: str = "rationale") -> str:
    """
    A person's reason for a governance act: required, never blank.

    :param value: the rationale text
    :param field: what the caller calls it, for the error
    """
    text = check_text(value, field, max_bytes=MAX_OBJECT_BYTES)
    if not text.strip():
        raise InvalidInput(f"{field}: must not be empty; say why, for whoever reads the ledger later")
    return text


def describe(statement: dict) -> str:
    "A statement as one line of JSON-quoted parts, safe to show whatever it holds."
    return " ".join(json.dumps(statement[part], ensure_ascii=False) for part in PARTS)
