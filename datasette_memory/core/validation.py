"""Input checks shared by every door: each error names the field and the limit."""

from typing import Any

from .errors import InvalidInput

DEFAULT_PROJECT = "default"  # the project of a caller that names none
MAX_NAME_CHARS = 512
MAX_OBSERVATION_BYTES = 64 * 1024
MAX_ITEMS_PER_CALL = 1000
MAX_PROJECT_CHARS = 128
MAX_SUMMARY_BYTES = 64 * 1024


def check_list(value: Any, field: str, max_items: int = MAX_ITEMS_PER_CALL) -> list[Any]:
    """
    Require a list of at most ``max_items`` items.

    :param value: the input
    :param field: where it came from, for the error, such as ``entities``
    :param max_items: the cap
    """
    if not isinstance(value, list):
        raise InvalidInput(f"{field}: must be a list, got {type_name(value)}")
    if len(value) > max_items:
        raise InvalidInput(
            f"{field}: {len(value)} items is over the limit of {max_items} per call; "
            "split the call into smaller batches"
        )
    return value


def check_name(value: Any, field: str, max_chars: int = MAX_NAME_CHARS, allow_empty: bool = False) -> str:
    """
    Require a non-empty string of at most ``max_chars`` characters, without NUL.

    :param value: the input
    :param field: where it came from, for the error
    :param max_chars: the cap
    :param allow_empty: accept the empty string
    """
    text = check_text(value, field, max_bytes=None)
    if not text and not allow_empty:
        raise InvalidInput(f"{field}: must not be empty")
    if len(text) > max_chars:
        raise InvalidInput(
            f"{field}: {len(text)} characters is over the limit of {max_chars}; use a shorter name"
        )
    return text


def check_text(value: Any, field: str, max_bytes: int | None = MAX_OBSERVATION_BYTES) -> str:
    """
    Require a string without NUL, of at most ``max_bytes`` UTF-8 bytes.

    :param value: the input
    :param field: where it came from, for the error
    :param max_bytes: the cap, or None for none
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: must be a string, got {type_name(value)}")
    if "\x00" in value:
        raise InvalidInput(f"{field}: must not contain NUL characters")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(f"{field}: is not valid Unicode (it has a lone surrogate)")
    if max_bytes is not None and size > max_bytes:
        raise InvalidInput(
            f"{field}: {size} bytes is over the limit of {max_bytes} bytes; "
            "store a summary or split it into several observations"
        )
    return value


def check_object(value: Any, field: str, required: tuple[str, ...]) -> dict[str, Any]:
    """
    Require a mapping with exactly the ``required`` keys.

    :param value: the input
    :param field: where it came from, for the error
    :param required: the key names, all required
    """
    if not isinstance(value, dict):
        raise InvalidInput(f"{field}: must be an object, got {type_name(value)}")
    missing = [key for key in required if key not in value]
    if missing:
        raise InvalidInput(f"{field}: missing required field {', '.join(missing)}")
    unknown = [key for key in value if key not in required]
    if unknown:
        raise InvalidInput(
            f"{field}.{unknown[0]}: unknown field; the fields are {', '.join(required)}"
        )
    return value


def check_project(value: Any) -> str:
    "A project scope: a non-empty name of at most ``MAX_PROJECT_CHARS``."
    return check_name(value, "project", MAX_PROJECT_CHARS)


def check_limit(value: Any, field: str, minimum: int = 0, maximum: int = 10_000) -> int:
    "An integer within ``minimum`` and ``maximum``."
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field}: must be an integer, got {type_name(value)}")
    if not minimum <= value <= maximum:
        raise InvalidInput(f"{field}: must be between {minimum} and {maximum}, got {value}")
    return value


def type_name(value: Any) -> str:
    "A JSON-ish name for a Python value's type, for errors."
    return {
        type(None): "null",
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)
