"""Where a replica lives: a folder (``file://PATH``) or a bucket (``s3://BUCKET/PATH``), as Litestream is told it.

A URL never carries credentials: they would show in the process list and in
shell histories. An S3-compatible bucket's credentials reach Litestream
through its environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_PROFILE``), never through its command line or its
configuration file; the endpoint and region are settings of the target.
"""

import pathlib
import urllib.parse
from dataclasses import dataclass
from typing import Any

from ..core.errors import MemoryStoreError

SCHEMES = ("file", "s3")
URL_FORMS = "file:///path/to/folder or s3://bucket/path"


class ReplicationError(MemoryStoreError):
    """Replication or a restore cannot go on; the message names what is wrong and what to do."""


@dataclass(frozen=True)
class ReplicaTarget:
    """
    A replica, as parsed from its URL and the S3 settings.

    :param url: the URL as given (for messages and records; it holds no secret)
    :param scheme: ``file`` or ``s3``
    :param path: the folder (``file``), or the path inside the bucket (``s3``)
    :param bucket: the bucket (``s3`` only)
    :param endpoint: an S3-compatible service's endpoint, such as ``http://127.0.0.1:9000``; None for AWS
    :param region: the bucket's region; None lets Litestream find it (or use us-east-1 with an endpoint)
    :param path_style: address the bucket in the path (``endpoint/bucket/key``) rather than the host name;
        None: path style with an endpoint, as most S3-compatible services need, else AWS's host names
    """

    url: str
    scheme: str
    path: str
    bucket: str | None = None
    endpoint: str | None = None
    region: str | None = None
    path_style: bool | None = None

    @classmethod
    def parse(cls, url: str, endpoint: str | None = None, region: str | None = None,
              path_style: bool | None = None, option: str = "--to") -> "ReplicaTarget":
        """
        The replica ``url`` names.

        :param option: the flag that gave it, for errors
        :raises ReplicationError: naming what is wrong with it and the forms it takes
        """
        text = (url or "").strip()
        scheme = text.partition("://")[0].lower() if "://" in text else ""
        if scheme not in SCHEMES:
            raise ReplicationError(f"{option}: {text[:80]!r} is not a replica URL; give {URL_FORMS}")
        if scheme == "file":
            return cls.folder(text, option)
        return cls.bucket_path(text, option, checked_endpoint(endpoint), (region or "").strip() or None, path_style)

    @classmethod
    def folder(cls, text: str, option: str) -> "ReplicaTarget":
        "A ``file://PATH`` replica: everything after ``file://`` is the folder's path (``file:///abs``, or relative to here)."
        rest = text[len("file://"):]
        if not rest.strip():
            raise ReplicationError(f"{option}: {text!r} names no folder; give a path, such as file:///var/backups/memory")
        folder = pathlib.Path(urllib.parse.unquote(rest)).expanduser().resolve()
        if folder.is_file():
            raise ReplicationError(f"{option}: {folder} is a file; a folder replica needs a folder (Litestream writes its files in it)")
        return cls(url=text, scheme="file", path=str(folder))

    @classmethod
    def bucket_path(cls, text: str, option: str, endpoint: str | None, region: str | None,
                    path_style: bool | None) -> "ReplicaTarget":
        "An ``s3://BUCKET/PATH`` replica."
        parts = urllib.parse.urlsplit(text)
        if parts.username is not None or parts.password is not None:
            raise ReplicationError(f"{option}: put no credentials in the URL (they would show in the process list); "
                                   "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment instead")
        if parts.query or parts.fragment:
            raise ReplicationError(f"{option}: {text[:80]!r} has a query or fragment; give the endpoint and region "
                                   "with --endpoint and --region (or AWS_ENDPOINT_URL and AWS_REGION)")
        bucket, key = parts.hostname or "", parts.path.strip("/")
        if not bucket:
            raise ReplicationError(f"{option}: {text[:80]!r} names no bucket; give s3://bucket/path")
        if not key:
            raise ReplicationError(f"{option}: {text[:80]!r} names no path inside the bucket; give s3://{bucket}/path, "
                                   "so that one bucket can hold the replicas of several memory files")
        return cls(url=text, scheme="s3", path=key, bucket=bucket, endpoint=endpoint, region=region, path_style=path_style)

    def describe(self) -> str:
        "The replica for people: its URL, and for a bucket the endpoint and region it is reached at."
        if self.scheme == "file":
            return f"file://{self.path}"
        where = [f"endpoint {self.endpoint}" if self.endpoint else "AWS S3"]
        if self.region:
            where.append(f"region {self.region}")
        return f"s3://{self.bucket}/{self.path} ({', '.join(where)})"

    def litestream_replica(self) -> dict[str, Any]:
        "The replica's entry in a Litestream configuration file (no credentials: Litestream reads those from its environment)."
        if self.scheme == "file":
            return {"type": "file", "path": self.path}
        replica: dict[str, Any] = {"type": "s3", "bucket": self.bucket, "path": self.path}
        if self.endpoint:
            replica["endpoint"] = self.endpoint
        if self.region:
            replica["region"] = self.region
        path_style = self.path_style if self.path_style is not None else bool(self.endpoint)
        replica["force-path-style"] = path_style
        return replica


def checked_endpoint(endpoint: str | None) -> str | None:
    "An S3 endpoint as Litestream takes it (``http(s)://host[:port]``), or an error naming the form."
    text = (endpoint or "").strip()
    if not text:
        return None
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise ReplicationError(f"--endpoint: {text[:80]!r} is not an endpoint; give http(s)://host[:port], "
                               "such as https://s3.eu-central-003.backblazeb2.com or http://127.0.0.1:9000")
    return text.rstrip("/")
