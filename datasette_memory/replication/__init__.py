"""Replication of the memory file with Litestream, and the replica as a witness off the machine.

Litestream (the ``replicate`` extra brings its binary) streams the file's
write-ahead log to a folder or an S3-compatible bucket, and restores a copy of
it, the newest or as of a moment. This package runs it: the replica named by a
URL (:mod:`.replica_target`), the binary and its private configuration
(:mod:`.litestream`), copies restored from the replica (:mod:`.replica_copies`),
continuous replication with its lag in ledger events (:mod:`.replicator`),
restoring into a new file that is verified before it appears
(:mod:`.restoring`), and the comparison of the local ledger with the replica's,
event by event (:mod:`.off_machine`), whose findings the head witness records.
No door's framework is imported here, and nothing reads the environment: the
doors pass it in.
"""

from .litestream import Litestream
from .replica_target import ReplicaTarget, ReplicationError

__all__ = ["Litestream", "ReplicaTarget", "ReplicationError"]
