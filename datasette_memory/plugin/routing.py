"""Which database a request reaches, decided as Datasette's router decides it.

A guard that compares the path it sees with ``/memory/`` is walked around by
any other spelling Datasette accepts: ``/~6Demory/...`` (the tilde encoding,
either case of hex), ``/prefix/memory/...`` under ``base_url``, a database
served under a route of its own. So the guard asks this module, which reads a
request the way ``DatasetteRouter`` does: the raw path (so ``%2F`` is not
``/``), ``base_url`` removed, the first segment tilde-decoded and looked up by
route. Every route Datasette has that names a database names it first;
``tests/test_request_doors.py`` checks that against Datasette's own route table,
so a release that moves it fails a test rather than opening a door. Nothing
else in the plugin copies Datasette's routing.
"""

import re
from typing import Any

from datasette.utils import tilde_decode

# Datasette's routes spell the database as (?P<database>[^\/\.]+), followed by "/", "." or the end
FIRST_SEGMENT = re.compile(r"/([^/.]+)(?:[/.]|$)")


def routed_path(datasette: Any, scope: dict[str, Any]) -> str:
    "The path Datasette matches its routes against: the raw path, without its query string or ``base_url``."
    raw_path = scope.get("raw_path")
    # Datasette decodes it as ASCII and fails on anything else; latin-1 reads the same bytes without failing
    path = (raw_path.decode("latin-1") if raw_path else scope["path"]).partition("?")[0]
    base_url = datasette.setting("base_url")
    if base_url != "/" and path.startswith(base_url):
        path = "/" + path[len(base_url):]
    return path


def routed_database(datasette: Any, scope: dict[str, Any]) -> str | None:
    """
    The name of the database Datasette will route this request to, or None if
    its path names none that is served.

    :param datasette: the Datasette instance
    :param scope: the request's ASGI scope
    """
    match = FIRST_SEGMENT.match(routed_path(datasette, scope))
    if match is None:
        return None
    try:
        return datasette.get_database(route=tilde_decode(match.group(1))).name
    except KeyError:
        return None
