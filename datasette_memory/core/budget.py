"""Byte budgets: what an agent receives is bounded in bytes of JSON, counted one way everywhere."""

import json
from typing import Any, TypeVar

T = TypeVar("T")


def json_bytes(value: Any) -> int:
    "Bytes of ``value``'s JSON, in UTF-8: what a budget counts."
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def leading_within(items: list[T], budget: int, separator: int = 0) -> tuple[list[T], int]:
    """
    The leading ``items`` whose JSON fits in ``budget`` bytes, and the bytes they use.

    :param separator: bytes counted with each item for what joins it to the next
    """
    used = 0
    for i, item in enumerate(items):
        size = json_bytes(item) + separator
        if used + size > budget:
            return items[:i], used
        used += size
    return items, used
