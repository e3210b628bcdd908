"""What install keeps outside the user's repository: the backups of the files it changes, and the folders it made.

A project-scope install writes into the user's repository, which should hold
nothing of ours but the settings themselves. So the backup of each file it
changes goes under the user's state folder (``$XDG_STATE_HOME/datasette-memory``,
else ``~/.local/state/datasette-memory``), at ``backups/<timestamp>/`` followed by
the file's own absolute path; and each folder it has to make (``.claude/``,
``.codex/``) is remembered there, in ``created-folders.json``, so uninstall
removes it again once nothing else is in it, and leaves alone a folder the user had.
"""

import datetime
import json
import pathlib
import shutil

from ..core.atomic_files import write_atomically

BACKUPS = "backups"
CREATED_FOLDERS = "created-folders.json"


class InstallState:
    """
    The state folder of install and uninstall.

    :param folder: where (the CLI reads ``$XDG_STATE_HOME`` and passes it in)
    """

    def __init__(self, folder: pathlib.Path):
        self.folder = folder

    def back_up(self, path: pathlib.Path, now: datetime.datetime) -> pathlib.Path:
        """
        Copy ``path`` (followed, if a link) to its place under the backups, and say where.

        :param path: a settings file about to change
        :param now: the time the backup's folder is named after
        """
        backup = self.backup_path(path, now)
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path.resolve(), backup)
        return backup

    def backup_path(self, path: pathlib.Path, now: datetime.datetime) -> pathlib.Path:
        "``backups/<timestamp>/<the file's absolute path>``, the timestamp numbered if that backup exists already."
        stamp, number = now.strftime("%Y%m%d-%H%M%S"), 1
        relative = path.absolute().relative_to(path.absolute().anchor)
        candidate = self.folder / BACKUPS / stamp / relative
        while candidate.exists():
            number += 1
            candidate = self.folder / BACKUPS / f"{stamp}-{number}" / relative
        return candidate

    def make_folder(self, folder: pathlib.Path) -> None:
        "Make ``folder`` and any missing folder above it, remembering each one made."
        missing = [f for f in (folder, *folder.parents) if not f.exists()]
        if not missing:
            return
        folder.mkdir(parents=True, exist_ok=True)
        self.write_created(self.created() | {str(f) for f in missing})

    def remove_made_folders(self, files: list[pathlib.Path]) -> list[tuple[pathlib.Path, bool]]:
        """
        Remove the folders install made above ``files`` once they are empty, deepest first.

        :param files: the settings files uninstall changed or removed
        :return: each such folder, and whether it was removed (False: kept, the user's files are in it)
        """
        created, done = self.created(), []
        folders = {f for path in files for f in path.absolute().parents if str(f) in created and f.is_dir()}
        for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
            removed = not any(folder.iterdir())
            if removed:
                folder.rmdir()
                created.discard(str(folder))
            done.append((folder, removed))
        if done:
            self.write_created(created)
        return done

    def created(self) -> set[str]:
        "The folders install made that are still remembered."
        try:
            names = json.loads((self.folder / CREATED_FOLDERS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()

    def write_created(self, names: set[str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomically(self.folder / CREATED_FOLDERS, json.dumps(sorted(names), indent=2) + "\n")
