"""Where a client's settings are: the project folder or the user's home, as the door found them."""

import dataclasses
import pathlib

SCOPES = ("project", "user")


@dataclasses.dataclass(frozen=True)
class Places:
    """
    The folders an install writes under.

    :param scope: ``project`` (files in ``folder``, shared with whoever checks the project out) or ``user`` (files in ``home``)
    :param folder: the project folder
    :param home: the user's home folder
    :param codex_home: Codex's own folder (``$CODEX_HOME``, else ``~/.codex``)
    """

    scope: str
    folder: pathlib.Path
    home: pathlib.Path
    codex_home: pathlib.Path

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {self.scope!r}")
