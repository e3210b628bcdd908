"""Which project a hook works on, and which rule chose it.

In order: ``--project``; else the nearest ``.datasette-memory`` file or git
repository at or above the session's working folder (a file in the same folder
as the repository's root wins): the file's ``project`` setting, or the
repository's folder name (a linked worktree counts as its main repository);
else the ``default`` project. The rule that won is said in the session-start
context, so an agent (and a person reading along) knows where memory came from.

A ``.datasette-memory`` file holds ``name = value`` lines (``name: value`` works
too; ``#`` starts a comment): ``project``, and ``tools``, the tools ``hook tool``
records (comma-separated). A file of one bare line is a project name.
"""

import dataclasses
import pathlib

from ..core.errors import InvalidInput
from ..core.validation import DEFAULT_PROJECT, check_project

MARKER = ".datasette-memory"
SETTINGS = ("project", "tools")
MAX_MARKER_BYTES = 64 * 1024


class ProjectFileError(ValueError):
    """A ``.datasette-memory`` file could not be read."""


@dataclasses.dataclass(frozen=True)
class ProjectChoice:
    """
    The project a hook uses.

    :param project: its name
    :param rule: which rule chose it, for people: ``--project``, ``.datasette-memory file at ...``, ...
    :param tools: the tools a ``.datasette-memory`` file says to record; None when it says nothing
    """

    project: str
    rule: str
    tools: tuple[str, ...] | None = None


def choose_project(given: str | None, cwd: pathlib.Path | None) -> ProjectChoice:
    """
    The project for a hook run in ``cwd``.

    :param given: ``--project``, or None
    :param cwd: the session's working folder, or None when unknown
    :raises ProjectFileError: naming a ``.datasette-memory`` file that cannot be used
    :raises InvalidInput: for a project name that is not one
    """
    marker, repository = nearest(cwd) if cwd is not None else (None, None)
    settings = read_marker(marker) if marker is not None else {}
    tools = parse_tools(settings["tools"]) if "tools" in settings else None
    if given is not None:
        return ProjectChoice(check_project(given), "--project", tools)
    if marker is not None and "project" in settings:
        return ProjectChoice(checked(settings["project"], marker), f"{MARKER} file at {marker}", tools)
    if repository is not None:
        return ProjectChoice(checked(repository.name, repository), f"the git repository at {repository}", tools)
    where = f"at or above {cwd}" if cwd is not None else "(the agent sent no working folder)"
    return ProjectChoice(DEFAULT_PROJECT, f"the default project: no --project, {MARKER} file or git repository {where}", tools)


def nearest(cwd: pathlib.Path) -> tuple[pathlib.Path | None, pathlib.Path | None]:
    """
    The nearest ``.datasette-memory`` file at or above ``cwd`` unless a git
    repository's root is nearer (a file beside the repository's ``.git`` is not),
    and the nearest repository's root; each None if there is none.
    """
    marker = None
    for folder in (cwd, *cwd.parents):
        if marker is None and (folder / MARKER).is_file():
            marker = folder / MARKER
        if (folder / ".git").exists():
            return marker, repository_root(folder)
    return marker, None


def repository_root(folder: pathlib.Path) -> pathlib.Path:
    "The repository whose root (holding ``.git``) is ``folder``: a linked worktree's ``.git`` file names its main repository."
    git = folder / ".git"
    if not git.is_file():
        return folder
    try:
        line = git.read_text(errors="replace").strip()
    except OSError:
        return folder
    parts = (folder / line.removeprefix("gitdir:").strip()).parts
    if "worktrees" in parts and parts.index("worktrees") > 0 and parts[parts.index("worktrees") - 1] == ".git":
        return pathlib.Path(*parts[: parts.index("worktrees") - 1])
    return folder


def read_marker(path: pathlib.Path) -> dict[str, str]:
    """
    The settings in a ``.datasette-memory`` file.

    :raises ProjectFileError: for a file that cannot be read, or an unknown setting
    """
    try:
        data = path.read_bytes()[:MAX_MARKER_BYTES].decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProjectFileError(f"{path}: cannot be read ({e})")
    lines = [(n, line.split("#", 1)[0].strip()) for n, line in enumerate(data.splitlines(), 1)]
    lines = [(n, line) for n, line in lines if line]
    if len(lines) == 1 and not any(separator in lines[0][1] for separator in "=:"):
        return {"project": lines[0][1]}
    settings = {}
    for number, line in lines:
        name, separator, value = line.partition("=") if "=" in line else line.partition(":")
        name = name.strip().lower()
        if not separator or name not in SETTINGS:
            raise ProjectFileError(
                f"{path} line {number}: {line!r} is not a setting; write project = NAME or tools = Edit,Write,Bash"
            )
        settings[name] = value.strip().strip("\"'")
    return settings


def parse_tools(value: str) -> tuple[str, ...]:
    "A comma-separated list of tool names."
    return tuple(name.strip() for name in value.split(",") if name.strip())


def checked(name: str, source: pathlib.Path) -> str:
    "``name`` as a project name, or an error naming where it came from."
    try:
        return check_project(name)
    except InvalidInput as e:
        raise ProjectFileError(f"{source}: {e}")
