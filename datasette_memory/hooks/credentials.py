"""Credentials in what a hook stores: every field goes through the core's scanner, as every other write does.

Besides a tool call's fields (:mod:`.capture`), a hook stores the session id on
every event it writes, and at a session's start the source, the working folder
and the rule that chose the project. The scanner
(:func:`~datasette_memory.core.secrets.first_secret`) reads each of them whole,
before anything is cut. A field it finds a credential in is left out (the
event says so, as :data:`LEFT_OUT`; a session id is stored as none) and one line
on stderr names the field and the kind of credential, never the value.

A name the hook writes under cannot be left out: the project and ``--actor``
are on every event. A hook given one that looks like a credential refuses to
run (:class:`CredentialError`), as the core refuses such a project name.
"""

import dataclasses
from typing import Any

from ..core.secrets import first_secret
from .payloads import Payload

LEFT_OUT = "[left out: it looks like a credential]"


class CredentialError(ValueError):
    """A name the hook would write under looks like a credential."""


def credential_kind(value: Any) -> str | None:
    "The kind of the first credential the core's scanner finds in ``value`` (strings, nested), or None."
    found = first_secret(value, "")
    return found[1] if found else None


def left_out(fields: dict[str, str], where: str) -> list[str]:
    """
    Replace each of ``fields`` holding a credential with :data:`LEFT_OUT`; a note for stderr on each.

    :param fields: ``name: value`` fields about to be stored, changed in place
    :param where: what they are stored in, for the notes: ``the activity event``
    """
    notes = []
    for name, value in fields.items():
        if kind := credential_kind(value):
            fields[name] = LEFT_OUT
            notes.append(f"left the {name} out of {where}: it looks like a credential ({kind})")
    return notes


def without_credential_session(payload: Payload) -> tuple[Payload, list[str]]:
    """
    ``payload`` with its session id left out (None, as when the agent sends none) if
    it holds a credential: the ledger stores it on every event the hook writes.

    :param payload: the hook's payload
    :return: the payload, and a note for stderr if the session id was left out
    """
    kind = credential_kind(payload.session_id)
    if kind is None:
        return payload, []
    note = f"left the session_id out of the ledger: it looks like a credential ({kind})"
    return dataclasses.replace(payload, session_id=None), [note]


def refuse_credential_names(project: str, actor: str) -> None:
    """
    Refuse a project or actor that looks like a credential: each is stored on every event.

    :raises CredentialError: naming which, and what to do instead
    """
    if kind := credential_kind(project):
        raise CredentialError(
            f"project: looks like a credential ({kind}); memory does not store credentials, and every event "
            "carries its project: name the project otherwise (--project, or a .datasette-memory file's project)"
        )
    if kind := credential_kind(actor):
        raise CredentialError(f"--actor: looks like a credential ({kind}); memory does not store credentials: give another --actor")
