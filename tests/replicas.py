"""Replicas for the tests: a folder, and a bucket on a real S3-compatible server (moto's server mode) the test starts on loopback.

Each bucket replica gets its own bucket; the server is one per test session.
Credentials are fixed test ones, given only through the environment (as a
person gives theirs), and the AWS SDK's instance-metadata lookup is off, so
nothing leaves the machine.
"""

import contextlib
import itertools
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

from .installed import moto_server
from .test_cli import free_port

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "test-key-id",
    "AWS_SECRET_ACCESS_KEY": "test-secret-key",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
_buckets = itertools.count(1)


@dataclass
class ReplicaPlace:
    """
    Where a test replicates to.

    :param url: the replica's URL, as a person gives it
    :param options: the command options it needs besides (``--endpoint``)
    :param env: the environment the commands run with (credentials for a bucket)
    """

    url: str
    options: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def environment(self, **more: str) -> dict[str, str]:
        "The process environment for a command that reaches this replica."
        return {**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1", **self.env, **more}


def folder_replica(folder) -> ReplicaPlace:
    return ReplicaPlace(f"file://{folder}")


def bucket_replica(endpoint: str, path: str = "team/memory") -> ReplicaPlace:
    "A replica in a new, empty bucket on the test's S3 server."
    import boto3

    bucket = f"memory-{next(_buckets)}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"], aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"])
    client.create_bucket(Bucket=bucket)
    return ReplicaPlace(f"s3://{bucket}/{path}", ["--endpoint", endpoint], dict(S3_ENV))


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    "moto's S3-compatible server on a free loopback port, until the block ends; its endpoint."
    port = free_port()
    process = subprocess.Popen([*moto_server(), "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **S3_ENV})
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).read()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto's S3 server did not start")
                time.sleep(0.1)
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)


class Running:
    """
    A long-running command (``replicate``, ``serve``) in a subprocess, its stderr read as it comes.

    :param arguments: the ``datasette-memory`` command and options
    :param env: its environment
    """

    def __init__(self, arguments: list[str], env: dict[str, str]):
        self.process = subprocess.Popen([sys.executable, "-m", "datasette_memory", *arguments], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.changed = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        for line in self.process.stderr:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> str:
        "The first line holding ``text``, waiting for it; fails with what was said if the command ends first."
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = [line for line in self.lines if text in line]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self.changed.wait(0.5)):
                    raise AssertionError(f"no line with {text!r}; it said:\n" + "\n".join(self.lines))
                self.changed.wait(min(left, 0.5))

    def output(self) -> str:
        with self.changed:
            return "\n".join(self.lines)

    def stop(self, timeout: float = 90) -> int:
        "SIGTERM, and its exit code."
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=timeout)
