"""Refusing likely credentials: agents leak them into memory, and memory must not keep them."""

import re
from typing import Any

from .errors import InvalidInput

# (kind, pattern): well-known formats only, so ordinary text is never refused
SECRET_PATTERNS = [
    ("private key block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("Stripe secret key", r"\b[rs]k_live_[A-Za-z0-9]{16,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("PyPI token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("Datasette API token", r"\bdstok_[A-Za-z0-9_\-.]{20,}"),
]
COMPILED = [(kind, re.compile(pattern)) for kind, pattern in SECRET_PATTERNS]


def secret_kind(text: str) -> str | None:
    """
    The kind of the first likely secret in ``text``, or None.

    :param text: any stored text
    """
    for kind, pattern in COMPILED:
        if pattern.search(text):
            return kind
    return None


def refuse_secrets(value: Any, field: str) -> None:
    """
    Raise :class:`InvalidInput` if any string inside ``value`` holds a likely secret.

    :param value: a call's argument: strings, lists and dicts, nested
    :param field: the argument's name, for the error
    """
    if isinstance(value, str):
        kind = secret_kind(value)
        if kind:
            raise InvalidInput(
                f"{field}: looks like a credential ({kind}); memory does not store credentials. "
                "Remove it, or start the server with --allow-secrets if it is not a real secret"
            )
    elif isinstance(value, list):
        for i, item in enumerate(value):
            refuse_secrets(item, f"{field}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_secrets(item, f"{field}.{key}")
