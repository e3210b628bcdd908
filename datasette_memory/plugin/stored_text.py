"""Stored text as the memory pages show it: isolated from what is around it, its invisible characters made visible.

Agents and people write what memory stores, so a page must not let it read as
something it is not. A RIGHT-TO-LEFT OVERRIDE (U+202E) in a claim's value
shows ``8443`` where ``3448`` is stored, and a zero-width space makes two
different values look alike. Every page shows stored text through the
``stored`` filter (registered in :mod:`.templates`): each invisible or bidi
control character becomes a visible mark, ``⟨U+202E⟩``, titled with its name,
and the whole sits in ``<bdi>``, so even right-to-left letters cannot reorder
the page's own words around it. The characters themselves are left out of
the page: the mark stands for each. SVG labels get the marks as ``<tspan>``
(each ``<text>`` is already a paragraph of its own); attributes and tooltips,
which hold no markup, get the marks as plain text.
"""

import re
import unicodedata
from typing import Literal

from markupsafe import Markup, escape

BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Unicode's format characters (Cf: bidi controls, zero-width spaces and joiners, the soft hyphen, the byte
# order mark, tag characters...), control characters (Cc) but tab and line breaks, and blank fillers that
# render as nothing; written out, since finding them in unicodedata takes half a second (a test checks the list)
HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]"
)
MARK_CLASS = "memory-hidden-char"
Form = Literal["html", "svg", "plain"]


def has_hidden(value: object) -> bool:
    "Whether ``value`` is text holding a character :func:`stored` would mark (the templates' ``hiding_characters`` test)."
    return isinstance(value, str) and HIDDEN.search(value) is not None


def mark_text(character: str) -> str:
    "The visible stand-in for one hidden character: its code point, as ``⟨U+202E⟩``."
    return f"⟨U+{ord(character):04X}⟩"


def explanation(character: str) -> str:
    "What a mark's title says: which character, and why it is shown."
    name = unicodedata.name(character, "a control character")
    effect = "reorders the text around it" if character in BIDI_CONTROLS else "does not show"
    return f"U+{ord(character):04X} {name}, stored in this text: it {effect}, so it is shown as this mark instead"


def mark(character: str, form: Form) -> Markup:
    "The mark standing for ``character``: a titled span in a page; in SVG a tspan (the node's own title names it)."
    if form == "svg":
        return Markup('<tspan class="{}">{}</tspan>').format(MARK_CLASS, mark_text(character))
    return Markup('<span class="{}" title="{}">{}</span>').format(MARK_CLASS, explanation(character), mark_text(character))


def stored(value: object, form: Form = "html") -> Markup | str:
    """
    ``value`` as a page shows stored text (see the module's description).

    :param value: any value; None shows as nothing
    :param form: ``html`` for page text (isolated in ``<bdi>``, marks as
        titled spans), ``svg`` for an SVG ``<text>`` (marks as ``<tspan>``),
        ``plain`` for attributes and tooltips (marks as plain text, escaped by the template)
    """
    text = "" if value is None else str(value)
    if form == "plain":
        return HIDDEN.sub(lambda m: mark_text(m.group()), text)
    parts, end = [], 0
    for match in HIDDEN.finditer(text):
        character = match.group()
        parts.append(escape(text[end:match.start()]))
        parts.append(mark(character, form))
        end = match.end()
    parts.append(escape(text[end:]))
    inner = Markup("").join(parts)
    return Markup("<bdi>{}</bdi>").format(inner) if form == "html" else inner
