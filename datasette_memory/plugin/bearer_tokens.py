"""API tokens sent with the ``bearer`` scheme in any case: ``Authorization: bearer <token>`` works as ``Bearer`` does.

HTTP auth schemes are case-insensitive (RFC 9110, section 11.1), but Datasette
reads a token only after the exact prefix ``Bearer ``. This hook reads the
others through Datasette's own token handlers, so a token is checked one way
whatever the case, and a bad one is refused with Datasette's 401.
"""

from typing import Any

from datasette import hookimpl


def bearer_token(authorization: str) -> str | None:
    "The token of an ``Authorization`` header using the bearer scheme in a case Datasette does not read itself."
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or authorization.startswith("Bearer "):
        return None
    return token.strip() or None


@hookimpl(specname="actor_from_request")
def actor_from_bearer_in_any_case(datasette: Any, request: Any) -> Any:
    token = bearer_token(request.headers.get("authorization", ""))
    if token is None:
        return None

    async def inner() -> dict[str, Any] | None:
        return await datasette.verify_token(token)

    return inner
