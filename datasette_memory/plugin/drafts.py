"""What a person filled in on a form, kept between the POST that sends it and the GET that shows what it will change.

Every form that acts (the review acts, a fact recorded, an entity's
corrections, an acknowledgement) is POST-redirect-GET. Posting it to see what
will change keeps its fields here under a random token and redirects to the
same page with ``?draft=<token>``; that GET works out what the act would change,
afresh, from the fields and memory as it is then. So going Back or reloading
never sends a form again, and a confirmation opened after someone else acted
says so instead of offering to act. Confirming posts the fields once more, and
redirects to what changed.

Drafts live in this process's memory, per Datasette, each for the person who
made it and the page it was made on, the newest :data:`KEPT` of them: a value can
be as long as an observation, too long for a URL, and nothing of it is written
anywhere. A draft that is gone (the server restarted since) sends the person
back to the form, saying so.
"""

import collections
import dataclasses
import secrets
import weakref
from typing import Any
from urllib.parse import parse_qsl, urlencode

KEPT = 500
# per Datasette: the drafts by token, oldest first
_drafts: "weakref.WeakKeyDictionary[Any, collections.OrderedDict[str, Draft]]" = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class Draft:
    """
    A form's fields, as posted.

    :param actor: who posted them: only they can open the draft
    :param path: the page they were posted to: the draft opens there only
    :param fields: the form's fields, as text
    """

    actor: str | None
    path: str
    fields: dict[str, str]


def keep(datasette: Any, request: Any, fields: dict[str, str]) -> str:
    """
    Keep ``fields`` for the person posting ``request``; the token that opens them again.

    :param fields: the form's fields to show again (not its csrftoken or step)
    """
    token = secrets.token_urlsafe(16)
    kept = _drafts.setdefault(datasette, collections.OrderedDict())
    kept[token] = Draft((request.actor or {}).get("id"), request.path, dict(fields))
    while len(kept) > KEPT:
        kept.popitem(last=False)
    return token


def asked(request: Any) -> bool:
    "Whether the request names a draft (``?draft=``)."
    return bool(request.args.get("draft"))


def kept(datasette: Any, request: Any) -> dict[str, str] | None:
    "The fields of the draft ``?draft=`` names, if it is still kept and is this person's, for this page; else None."
    draft = _drafts.get(datasette, {}).get(request.args.get("draft") or "")
    if draft is None or draft.actor != (request.actor or {}).get("id") or draft.path != request.path:
        return None
    return dict(draft.fields)


def draft_url(request: Any, token: str) -> str:
    "This page again, its query string kept, with ``draft`` set to ``token``."
    query = [(name, value) for name, value in parse_qsl(request.query_string, keep_blank_values=True) if name != "draft"]
    return f"{request.path}?{urlencode([*query, ('draft', token)])}"


def form_url(request: Any) -> str:
    "This page's form: the page with its query string, without the draft."
    query = [(name, value) for name, value in parse_qsl(request.query_string, keep_blank_values=True) if name != "draft"]
    return request.path + (f"?{urlencode(query)}" if query else "")
