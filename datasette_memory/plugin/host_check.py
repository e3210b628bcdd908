"""Answer only to this machine's names, so that no web page elsewhere can read memory by DNS rebinding.

A page on ``attacker.example`` can point its own name at 127.0.0.1 once the
visitor has loaded it, then read ``http://attacker.example:8001/`` as its own
origin: the browser connects to this server and sends ``Host:
attacker.example:8001``. A server that answers every Host hands memory to that
page, and on loopback anonymous visitors may read. So a request is answered
only if its Host names

- ``localhost`` or a loopback address: 127.0.0.0/8, ``::1``, and 127.0.0.0/8
  written as IPv6 (``::ffff:127.0.0.1``);
- the address the connection arrived at (this server's own, on whichever
  interface it listens);
- or a name in the plugin setting ``allowed_hosts``, which ``serve`` fills in
  with its ``--host`` and each ``--allow-host`` (``*`` answers any name).

Names compare without regard to case or a trailing dot, and the port is not
compared (a proxy may forward another). Any other Host gets 421 Misdirected
Request, as a page or as JSON, naming the host and the option that allows it.
A request with no Host at all (HTTP/1.0) passes: browsers always send one.

``serve`` always configures ``allowed_hosts``, so every request it answers is
checked. ``datasette`` run by hand without the setting checks the requests
that arrive at a loopback address, where rebinding reaches a server that
nothing else can; what names a public server answers to only its
configuration can say.
"""

import html
import ipaddress
import json
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from datasette import hookimpl

from ..core.errors import InvalidInput
from .connection import PLUGIN_NAME

SETTING = "allowed_hosts"
ANY_HOST = "*"
STATUS = 421
# a DNS name's labels (underscores too, as container and service names have them)
NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*")
# RFC 9110's Host: a bracketed IPv6 address, or a name or IPv4 address, then an optional port
HOST_HEADER = re.compile(r"(?P<host>\[[^\[\]]+\]|[^:\[\]]+)(?::\d*)?")
_allowed: "weakref.WeakKeyDictionary[Any, frozenset[str] | None]" = weakref.WeakKeyDictionary()


def canonical_host(text: str) -> str | None:
    """
    A host name or address as requests are compared on it: lower case, without a
    trailing dot or IPv6 brackets, an address in its standard form (an IPv4
    address written as IPv6 in IPv4's); None if it is neither a name nor an address.
    """
    name = text.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    elif name.endswith("."):
        name = name[:-1]
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name if NAME.fullmatch(name) else None
    return str(getattr(address, "ipv4_mapped", None) or address)


def host_setting(value: str) -> str:
    """
    One entry of ``allowed_hosts`` (or one ``--allow-host``), in canonical form.

    :param value: a host name, an address or ``*``
    :raises InvalidInput: naming the value, if it is neither
    """
    if value == ANY_HOST:
        return value
    host = canonical_host(value) if isinstance(value, str) else None
    if host is None:
        raise InvalidInput(
            f"{value!r} is not a host name or address: give one such as memory.example.com or 192.168.1.20, "
            "without a scheme, port or path (or * for any)"
        )
    return host


def is_loopback(host: str) -> bool:
    "Whether ``host`` (a name or an address, in any case, with or without brackets) is this machine only."
    name = canonical_host(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name or "").is_loopback
    except ValueError:
        return False


def request_host(header: str) -> str | None:
    "The host a Host header names, in canonical form and without its port; None if the header is malformed."
    match = HOST_HEADER.fullmatch(header.strip())
    return canonical_host(match.group("host")) if match else None


def allowed_hosts(datasette: Any) -> frozenset[str] | None:
    """
    The names configured in ``plugins.datasette-memory.allowed_hosts``, in
    canonical form, or None if the setting is not there.

    :raises InvalidInput: naming the setting and the entry, if one is not a host
    """
    if datasette not in _allowed:
        configured = (datasette.plugin_config(PLUGIN_NAME) or {}).get(SETTING)
        if configured is not None and not isinstance(configured, list):
            raise InvalidInput(f"plugins.{PLUGIN_NAME}.{SETTING}: must be a list of host names, got {configured!r}")
        try:
            _allowed[datasette] = None if configured is None else frozenset(host_setting(v) for v in configured)
        except InvalidInput as e:
            raise InvalidInput(f"plugins.{PLUGIN_NAME}.{SETTING}: {e}; fix the Datasette configuration") from None
    return _allowed[datasette]


def answers_to(host: str, allowed: Iterable[str], local_address: str | None) -> bool:
    "Whether a request naming ``host`` (canonical) is for this server."
    return (
        is_loopback(host)
        or host == (canonical_host(local_address) if local_address else None)
        or host in allowed
        or ANY_HOST in allowed
    )


def headers(scope: dict[str, Any], name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key.lower() == name]


def own_url(scope: dict[str, Any]) -> str:
    "The server's URL at the address the request arrived at, which it always answers to."
    address, port = scope.get("server") or ("127.0.0.1", None)
    host = f"[{address}]" if ":" in str(address) else address
    return f"http://{host}" + (f":{port}" if port else "")


def refusal(scope: dict[str, Any], shown: str) -> tuple[str, bytes]:
    "The content type and body of the 421: JSON for a ``.json`` path or a client that asks for JSON, else a page."
    suggested = request_host(shown) or "NAME"
    message = (
        f"This server does not answer to the host {shown!r}: it answers to localhost, the loopback addresses "
        "(127.0.0.0/8, ::1), its own address and the names it was given. A page on another site can reach a "
        "server on this machine under a name of its own (DNS rebinding), so other names are refused. If you "
        "reach this server by that name on purpose (through a proxy, or by this machine's host name), start it "
        f"with: datasette-memory serve --allow-host {suggested} (running datasette yourself: list it under "
        f"plugins: {PLUGIN_NAME}: {SETTING}:); otherwise open it at {own_url(scope)}."
    )
    accept = " ".join(headers(scope, b"accept"))
    if scope.get("path", "").endswith(".json") or ("application/json" in accept and "text/html" not in accept):
        body = {"ok": False, "error": message, "errors": [message], "status": STATUS, "title": "Misdirected Request"}
        return "application/json", json.dumps(body).encode("utf-8")
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Misdirected request</title></head>\n'
        f"<body><h1>421 Misdirected Request</h1>\n<p>{html.escape(message)}</p></body></html>\n"
    )
    return "text/html; charset=utf-8", page.encode("utf-8")


async def refuse(scope: dict[str, Any], send: Any, shown: str) -> None:
    content_type, body = refusal(scope, shown[:200])
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": STATUS, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def misdirected(datasette: Any, scope: dict[str, Any]) -> str | None:
    "The Host header of a request this server must not answer, or None to answer it."
    given = headers(scope, b"host")
    local_address = (scope.get("server") or (None, None))[0]
    allowed = allowed_hosts(datasette)
    if not given or (allowed is None and not (local_address and is_loopback(str(local_address)))):
        return None
    shown = ", ".join(given)  # two Host headers are two answers to one question: refused, as malformed
    host = request_host(shown)
    return None if host is not None and answers_to(host, allowed or (), local_address) else shown


@hookimpl(specname="startup")
def check_allowed_hosts(datasette: Any) -> None:
    allowed_hosts(datasette)  # a mistake in the configuration stops the server here, not on a request


@hookimpl(specname="asgi_wrapper", trylast=True)  # called last, so it wraps the others: nothing runs for a foreign host
def refuse_foreign_hosts(datasette: Any) -> Callable[[Any], Any]:
    def wrap(app: Any) -> Callable[..., Awaitable[None]]:
        async def checked(scope: dict[str, Any], receive: Any, send: Any) -> None:
            shown = misdirected(datasette, scope) if scope["type"] == "http" else None
            if shown is None:
                return await app(scope, receive, send)
            await refuse(scope, send, shown)

        return checked

    return wrap
