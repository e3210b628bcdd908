"""Claims' and facts' subjects as links to their entity pages, where an entity goes by that name.

A claim is about anything an agent names, not only an entity; a subject that
names one (or once did: a renamed entity answers to its old name) links to its
page, and any other shows as text, so no link leads to a page that is not there.
"""

from collections.abc import Iterable
from typing import Any

from ..graph import entity_view
from .connection import call_memory


async def subject_entities(datasette: Any, project: str, subjects: Iterable[str]) -> dict[str, str]:
    """
    The entity each subject names in ``project``, by subject; subjects naming none are left out.

    :param subjects: the subjects of the claims and facts a page shows
    """
    wanted = sorted(set(subjects))

    def read(memory: Any) -> dict[str, str]:
        found = {subject: entity_view.current_name(memory.conn, project, subject) for subject in wanted}
        return {subject: name for subject, name in found.items() if name is not None}

    return await call_memory(datasette, read, project=project) if wanted else {}
