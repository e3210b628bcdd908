"""Memory rebuilt from the ledger: replay, verify, memory as of any moment, diffs and provenance.

The ledger is the source of truth; everything here is a read of one replay
(:mod:`.replay`), so the tables, the past and the provenance of a row all agree
with the same events.
"""
