"""Checking the official tools' input: entities, relations and observations, each error naming its field."""

import json
from typing import Any

from ..core.validation import check_list, check_name, check_object, check_text

ENTITY_FIELDS = ("name", "entityType", "observations")
RELATION_FIELDS = ("from", "to", "relationType")


def parse_entities(entities: Any) -> list[dict[str, Any]]:
    "Validated entities, first of each name kept, observations deduplicated."
    parsed: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, entity in enumerate(check_list(entities, "entities")):
        field = f"entities[{i}]"
        check_object(entity, field, ENTITY_FIELDS)
        name = check_name(entity["name"], f"{field}.name")
        entity_type = check_name(entity["entityType"], f"{field}.entityType", allow_empty=True)
        observations = parse_contents(entity["observations"], f"{field}.observations")
        if name not in seen:
            seen.add(name)
            parsed.append({"name": name, "entityType": entity_type, "observations": observations})
    return parsed


def parse_contents(contents: Any, field: str) -> list[str]:
    "Validated observation strings, duplicates dropped, order kept."
    check_list(contents, field)
    return list(dict.fromkeys(check_text(c, f"{field}[{i}]") for i, c in enumerate(contents)))


def parse_relations(relations: Any) -> list[dict[str, str]]:
    "Validated relations, duplicates within the call dropped."
    parsed: dict[tuple[str, ...], dict[str, str]] = {}
    for i, relation in enumerate(check_list(relations, "relations")):
        field = f"relations[{i}]"
        check_object(relation, field, RELATION_FIELDS)
        key = tuple(check_name(relation[k], f"{field}.{k}") for k in RELATION_FIELDS)
        parsed.setdefault(key, dict(zip(RELATION_FIELDS, key)))
    return list(parsed.values())


def parse_names(names: Any, field: str) -> list[str]:
    "Validated entity names, duplicates dropped."
    check_list(names, field)
    return list(dict.fromkeys(check_name(n, f"{field}[{i}]") for i, n in enumerate(names)))


def parse_observation_items(items: Any, key: str, field: str) -> list[tuple[str, list[str]]]:
    "Validated ``[{entityName, <key>}]`` items as ``(name, [contents])``."
    parsed = []
    for i, item in enumerate(check_list(items, field)):
        check_object(item, f"{field}[{i}]", ("entityName", key))
        name = check_name(item["entityName"], f"{field}[{i}].entityName")
        parsed.append((name, parse_contents(item[key], f"{field}[{i}].{key}")))
    return parsed


def relation_target(relation: dict[str, str]) -> str:
    "A ledger target naming a relation unambiguously."
    return json.dumps([relation["from"], relation["relationType"], relation["to"]], ensure_ascii=False)
