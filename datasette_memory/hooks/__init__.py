"""Hooks for coding agents: memory offered and recorded without the agent having to ask.

Claude Code and Codex run a command at each of their hook events, pass it the
event as JSON on stdin, and put what it prints into the model's context. The
``datasette-memory hook`` commands (:mod:`datasette_memory.cli.hook`) are such
commands; this package is what they do, one concern per module:

- :mod:`.payloads`: the JSON a hook receives, read into one shape;
- :mod:`.private`: text marked ``<private>``, hidden from the whole payload before it is read;
- :mod:`.project`: which project a hook works on, and which rule chose it;
- :mod:`.shape`: what a hook prints: the documented output shapes, within a byte budget;
- :mod:`.kinds`: the ledger event kinds the hooks write;
- :mod:`.session_start`: the context a session starts from;
- :mod:`.recall`: memory's confident matches for a prompt, or nothing;
- :mod:`.capture` and :mod:`.activity`: what the agent did, as ledger events, and read back;
- :mod:`.credentials`: every field a hook stores, through the core's secret scanner;
- :mod:`.stop`: asking once for a checkpoint when a session changed memory.

A hook never blocks its agent: every failure becomes one line on stderr and
exit status 0 (the CLI sees to that).
"""
