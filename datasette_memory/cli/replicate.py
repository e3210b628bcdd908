"""``replicate``: stream the memory file to a folder or a bucket with Litestream, until stopped; and how every door starts it."""

import pathlib
import signal
import threading
from types import FrameType
from typing import Any

import click

from ..history.file_check import CannotVerify, verify_file
from ..replication import Litestream, ReplicaTarget, ReplicationError
from ..replication.litestream import private_folder
from ..replication.off_machine import check_against, refusal
from ..replication.replica_copies import Replica
from ..replication.replicator import Replication
from .options import db_option, open_db, resolve
from .replica_options import litestream, replica_target, s3_options

REPLACE_HELP = ("Replicate even over a replica that holds history this file lacks, or another file's replica "
                "(a loss must first be acknowledged by a person at /-/memory/integrity)")


@click.command()
@db_option
@click.option("--to", "url", required=True, metavar="URL", help="Where to replicate: file:///path/to/folder or s3://bucket/path")
@s3_options
@click.option("--replace-replica", is_flag=True, help=REPLACE_HELP)
@click.option("--report-every", type=click.FloatRange(min=1), default=60, show_default=True, metavar="SECONDS",
              help="Seconds between lines about the replica's lag (a line only when it changed)")
def replicate(db_path: pathlib.Path | None, url: str, s3: dict[str, Any], replace_replica: bool, report_every: float) -> None:
    """Replicate the memory file to a folder or an S3-compatible bucket, until stopped.

    Runs Litestream (the replicate extra) with a configuration it writes itself,
    and says where it replicates and how far behind the replica is. Before it
    starts, the file must verify, and the replica's newest copy must hold no
    history the file lacks. Ctrl-C or SIGTERM uploads what is left and stops.
    """
    target = replica_target(url, s3, "--to")
    binary = litestream()
    path = resolve(db_path, creating=False)
    if not path.exists():
        raise click.ClickException(f"{path}: no such file; `datasette-memory serve` or `mcp` creates it")
    open_db(path)[1].close()  # migrated to this version and its pages checked, as every command that serves it does
    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, stopping) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        replication = begin(path, target, binary, replace_replica, "replicate", report_every)
        click.echo("Replicating until Ctrl-C or SIGTERM.", err=True)
        while not stop.wait(1):
            pass
        replication.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def begin(path: pathlib.Path, target: ReplicaTarget, binary: Litestream, replace: bool, door: str,
          report_every: float = 60.0) -> Replication:
    """
    Start replicating ``path`` to ``target`` for ``door``, after the checks every door makes: the
    replica's newest copy holds no history the file lacks (one ``Replica:`` line, what it finds
    recorded in the witness), and the file verifies (incrementally, after its first clean check).

    :raises click.ClickException: saying why replication did not start
    """
    say = lambda line: click.echo(line, err=True)  # noqa: E731
    try:
        with private_folder() as folder:
            found = check_against(path, Replica(binary, target, folder), noticed_by=f"the start of {door} (replica {target.url})")
        say(f"Replica: {found['summary']}")
        refused = refusal(found, replace)
        if refused:
            raise click.ClickException(refused)
        report = verify_file(path, since_checkpoint=True)
        if not report["ok"]:
            raise click.ClickException(not_verified(report))
        say(f"Verified: {path.name} is intact ({report['mode']}, {report['events']} event"
            f"{'' if report['events'] == 1 else 's'})")
        replication = Replication(binary, target, path, say, report_every)
        replication.start()
        return replication
    except (ReplicationError, CannotVerify) as e:
        raise click.ClickException(str(e))


def not_verified(report: dict[str, Any]) -> str:
    "Why a file that does not verify is not replicated, naming its first problem."
    failed = [check for check in report["checks"] if not check["ok"]]
    first = failed[0]
    problem = first["problems"][0] if first["problems"] else first["detail"]
    found = problem.get("found") if isinstance(problem, dict) else problem
    return (f"{report['file']} does not verify ({first['check']}: {found}); replication starts only from a file that "
            "verifies: run `datasette-memory verify` for the whole report (a divergence is acknowledged by a person at "
            "/-/memory/integrity, in serve without --replicate-to)")
