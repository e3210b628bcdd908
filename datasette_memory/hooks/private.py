"""Text a person marked private: hidden from a hook's whole payload before any field of it is read.

A person (or the agent, on their behalf) wraps what memory must never keep in
``<private>...</private>``; the tags match in any case. The payload is read as
one text: its strings (values and list items; not object keys, which name the
fields) in the order the agent sent them. So a span may open in one field and
close in another (a command and the error it caused), or cover items of a
command given as a list, and it hides everything in between, whatever field or
type it is in. Each span becomes :data:`MARKER`.

Spans do not nest. An opening tag inside a span, a closing tag outside one, or
an opening tag that is never closed hides everything from there to the end of
the payload: once the tags no longer pair up, what the person meant to hide can
no longer be told apart from the rest, and hiding too much costs a line of
activity where hiding too little would keep what they asked memory to forget.
"""

import re
from typing import Any

TAG = re.compile(r"<(/?)private>", re.IGNORECASE)
MARKER = "[private]"


def without_private(payload: Any) -> Any:
    """
    ``payload`` with every ``<private>...</private>`` span hidden: a span's text
    becomes :data:`MARKER` where it starts and ``""`` after that, and a number,
    boolean or null inside it becomes None.

    :param payload: a decoded JSON value: dicts, lists, strings and scalars, nested
    """
    return Reader().value(payload)


class Reader:
    """
    Reads a payload's strings in order, as one text: whether a span is open
    carries from one string to the next.
    """

    def __init__(self) -> None:
        self.inside = False
        self.to_the_end = False

    def value(self, value: Any) -> Any:
        "``value``, the next part of the payload, with what spans cover hidden."
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}  # in order: a span goes on past a key
        return None if self.inside else value

    def text(self, text: str) -> str:
        "``text``, the next string of the payload, with what spans cover hidden."
        if self.to_the_end:
            return ""
        kept, position = [], 0
        for tag in TAG.finditer(text):
            closing = tag.group(1) == "/"
            if self.inside and closing:
                self.inside, position = False, tag.end()
                continue
            if not self.inside:
                kept += [text[position : tag.start()], MARKER]
            # a tag that does not pair up (an opening one inside a span, a closing one outside): hide the rest
            self.to_the_end = closing or self.inside
            self.inside = True
            if self.to_the_end:
                break
        return "".join(kept) if self.inside else "".join(kept) + text[position:]
