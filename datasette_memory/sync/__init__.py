"""Sync by ledger: laptops and a hub exchange ledger events, each peer converging on the same memory.

Events move as a set union keyed on their origin (machine, clock): a peer keeps
what other machines sent in ``memory_sync_events``, each origin's hash chain
checked as it arrives, and never mixes them into its own ledger. What memory
holds is replayed from the union in one total order every peer computes alike
(:mod:`.order`), and the difference from the tables is written as ordinary local
events (:mod:`.converge`), so the file's own chain, its witness and ``verify``
stay what they were. Only projects a person shared leave the machine
(:mod:`.shared`); every other event goes out as an opaque link of its chain.
"""

from .events import SyncRefused

__all__ = ["SyncRefused"]
