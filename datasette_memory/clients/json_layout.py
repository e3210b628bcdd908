"""Writing a JSON settings file back in its own layout: what did not change keeps its bytes.

``json.dumps`` would lay the whole file out anew to change one entry of it: a
hand-written ``"allow": ["Bash(npm test)"]`` would be spread over three lines,
and an uninstall could not give the user's file back as it was. So the old text
is read into spans (every value, and the whitespace around every member), and
the new settings are written by copying the old text of each value that did not
change, and of the whitespace around each member that stays. Only members that
are new are laid out, like their neighbours (indent, one line or many).
"""

import dataclasses
import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

DECODER = json.JSONDecoder()


@dataclasses.dataclass
class Member:
    "One member of an object or array: the text before it, its key's text (objects), the text up to its value, its value."
    key: str | None
    before: str
    key_text: str
    between: str
    node: "Node"
    after: str  # between the value and the comma (the last member's is the container's tail)


@dataclasses.dataclass
class Node:
    "A value's place in the text; an object's or array's members, and the whitespace before its closing bracket."
    start: int
    end: int
    value: Any
    members: list[Member]
    tail: str


def skip_whitespace(text: str, position: int) -> int:
    "Where the JSON whitespace at ``position`` ends."
    while position < len(text) and text[position] in " \t\n\r":
        position += 1
    return position


def parse(text: str, start: int) -> Node:
    """
    The value that starts at ``start`` in ``text``, which must be valid JSON (``json.loads`` has read it).

    :param text: the document
    :param start: where the value starts (no whitespace)
    """
    opening = text[start]
    if opening not in "{[":
        value, end = DECODER.raw_decode(text, start)
        return Node(start, end, value, [], "")
    closing, position = "}" if opening == "{" else "]", start + 1
    members: list[Member] = []
    while True:
        found = skip_whitespace(text, position)
        if not members and text[found] == closing:
            return Node(start, found + 1, {} if opening == "{" else [], [], text[position:found])
        key, key_text, value_start = None, "", found
        if opening == "{":
            key, key_end = scanstring(text, found + 1)
            key_text = text[found:key_end]
            value_start = skip_whitespace(text, skip_whitespace(text, key_end) + 1)
        node = parse(text, value_start)
        after_end = skip_whitespace(text, node.end)
        members.append(Member(key, text[position:found], key_text, text[found + len(key_text):value_start], node,
                              text[node.end:after_end]))
        if text[after_end] == ",":
            position = after_end + 1
            continue
        tail, members[-1].after = members[-1].after, ""
        value = {m.key: m.node.value for m in members} if opening == "{" else [m.node.value for m in members]
        return Node(start, after_end + 1, value, members, tail)


def same(a: Any, b: Any) -> bool:
    "Equal as JSON, order of keys and types included (``True == 1`` in Python, not in JSON)."
    return json.dumps(a) == json.dumps(b)


def fresh(value: Any, unit: str | None, line_indent: str) -> str:
    "A new value laid out at a line's indent, on many lines with ``unit``, else on one."
    if unit is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + line_indent)


def render(value: Any, node: Node | None, text: str, unit: str, line_indent: str, one_line: bool) -> str:
    """
    ``value`` as text, reusing the old text of ``node`` (the value it replaces, if any) wherever it is unchanged.

    Whitespace belongs to places, not to members: the n-th member of the new
    value gets the whitespace the old n-th member had, so removing the first
    member does not leave the second's separator at the front.

    :param value: the new value
    :param node: the old value's span, or None
    :param text: the old document
    :param unit: one level of indent in the document
    :param line_indent: the indent of the line the value is on
    :param one_line: whether the value is in a container written on one line
    """
    if node is not None and same(node.value, value):
        return text[node.start:node.end]
    if node is None or type(value) is not type(node.value) or not isinstance(value, (dict, list)):
        return fresh(value, None if one_line else unit, line_indent)
    if node.members:
        one_line = not any("\n" in m.before for m in node.members) and "\n" not in node.tail
    pieces = []
    for place, (key, item, old) in enumerate(pairs(value, node)):
        before = node.members[place].before if place < len(node.members) else new_before(node, place, one_line, line_indent + unit)
        after = node.members[place].after if place < len(node.members) else ""
        key_text = "" if key is None else old.key_text if old else json.dumps(key, ensure_ascii=False)
        between = "" if key is None else old.between if old else next((m.between for m in node.members), ": ")
        indent = before.rsplit("\n", 1)[1] if "\n" in before else line_indent
        pieces.append(before + key_text + between + render(item, old.node if old else None, text, unit, indent, one_line) + after)
    tail = node.tail if node.members else "" if one_line else "\n" + line_indent
    brackets = "{}" if isinstance(value, dict) else "[]"
    return brackets[0] + ",".join(pieces) + (tail if pieces else "") + brackets[1]


def new_before(node: Node, place: int, one_line: bool, member_indent: str) -> str:
    "The whitespace before a member at a place the old value did not have: the last old member's, else a new line or a space."
    if node.members:
        return node.members[-1].before or " "
    return ("" if place == 0 else " ") if one_line else "\n" + member_indent


def pairs(value: dict[str, Any] | list[Any], node: Node) -> list[tuple[str | None, Any, Member | None]]:
    """
    Each new member with the old member it replaces, if any: an object's by key; an
    array's by an equal old item not yet taken, else the old item at the same place
    if that is of the same kind and not taken.
    """
    if isinstance(value, dict):
        old = {m.key: m for m in node.members}
        return [(key, item, old.get(key)) for key, item in value.items()]
    untaken: list[Member] = list(node.members)
    found: list[tuple[str | None, Any, Member | None]] = []
    for index, item in enumerate(value):
        match = next((m for m in untaken if same(m.node.value, item)), None)
        if match is None and index < len(node.members) and node.members[index] in untaken:
            if type(node.members[index].node.value) is type(item):
                match = node.members[index]
        if match is not None:
            untaken.remove(match)
        found.append((None, item, match))
    return found


def indent_unit(text: str) -> str:
    "One level of indent in a document: its first indented line's, else two spaces."
    found = re.search(r"^([ \t]+)\S", text, re.MULTILINE)
    return found.group(1) if found else "  "


def dump_like(data: dict[str, Any], original: str | None) -> str:
    """
    ``data`` as JSON in ``original``'s layout: every unchanged value and the whitespace around it as it was.

    :param data: the new settings
    :param original: the file's text before (valid JSON), or None for a new file, laid out with two spaces
    """
    if original is None or not original.strip():
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    start = skip_whitespace(original, 0)
    node = parse(original, start)
    one_line = "\n" not in original[node.start:node.end]
    return original[:start] + render(data, node, original, indent_unit(original), "", one_line) + original[node.end:]
