"""``/-/memory/sign-in``: the link ``serve`` prints signs in the memory file's owner, once per start.

``serve`` makes a random token at each start, prints the link holding it,
and passes only its sha256 (with the owner's actor id) in the plugin's
configuration. Opening the link sets Datasette's actor cookie for the owner,
signed with the memory file's persistent secret, so the sign-in lasts across
restarts; the link itself works once. Datasette's own ``/-/logout`` signs out.
"""

import hashlib
import hmac
import weakref
from typing import Any

from datasette import Response, hookimpl

from ..core.errors import MemoryStoreError
from .connection import PLUGIN_NAME
from .error_pages import handled


class SignInRefused(MemoryStoreError, PermissionError):
    """The sign-in link is not this start's, or was used already."""


_used: "weakref.WeakKeyDictionary[Any, set[str]]" = weakref.WeakKeyDictionary()


async def sign_in(datasette: Any, request: Any) -> Response:
    "Open the printed link: become the owner, then go to the overview."
    settings = (datasette.plugin_config(PLUGIN_NAME) or {}).get("sign_in") or {}
    digest = hashlib.sha256(request.args.get("token", "").encode()).hexdigest()
    used = _used.setdefault(datasette, set())
    if not settings or not hmac.compare_digest(digest, str(settings.get("digest", ""))):
        raise SignInRefused("this sign-in link is not the one datasette-memory serve printed at its last start; use that one")
    if digest in used:
        raise SignInRefused("this sign-in link was used already; restart datasette-memory serve for a new one")
    used.add(digest)
    response = Response.redirect(datasette.urls.path("/-/memory"))
    datasette.set_actor_cookie(response, {"id": settings["actor"]})
    datasette.add_message(request, f"Signed in as {settings['actor']}.", datasette.INFO)
    return response


@hookimpl(specname="register_routes")
def register_sign_in_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [(r"^/-/memory/sign-in$", handled(sign_in))]
