"""The governed tier: agents propose claims, only a person makes, supersedes, invalidates or revalidates facts.

Facts are bitemporal and never deleted; rejected values are remembered; the
human gate (:mod:`.gate`) is the one way to a person-only act.
"""
