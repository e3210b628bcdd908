"""What the commands that reach a replica share: the S3 options, and the replica and Litestream they name.

The endpoint and region come from ``--endpoint`` and ``--region``, else from the
AWS variables every S3 tool reads (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``,
``AWS_REGION``, ``AWS_DEFAULT_REGION``); credentials only from the environment
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_PROFILE``), which Litestream inherits, never from a flag.
"""

import functools
import os
from collections.abc import Callable
from typing import Any

import click

from ..replication import Litestream, ReplicaTarget, ReplicationError

ENDPOINT_ENV = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
REGION_ENV = ["AWS_REGION", "AWS_DEFAULT_REGION"]
S3_KEYS = ("endpoint", "region", "path_style")


def s3_options(function: Callable[..., Any]) -> Callable[..., Any]:
    "Add ``--endpoint``, ``--region`` and ``--path-style/--virtual-host-style``; the command gets them as ``s3``, a dict."

    @functools.wraps(function)
    def command(*args: Any, **kwargs: Any) -> Any:
        kwargs["s3"] = {key: kwargs.pop(key) for key in S3_KEYS}
        return function(*args, **kwargs)

    command = click.option(
        "--path-style/--virtual-host-style", "path_style", default=None,
        help="Address an S3 bucket in the URL's path (endpoint/bucket/key) or its host name  "
        "[default: the path with --endpoint, as most S3-compatible services need; host names on AWS]",
    )(command)
    command = click.option(
        "--region", envvar=REGION_ENV, show_envvar=True,
        help="The S3 bucket's region  [default: found by Litestream, us-east-1 with --endpoint]",
    )(command)
    return click.option(
        "--endpoint", envvar=ENDPOINT_ENV, show_envvar=True, metavar="URL",
        help="An S3-compatible service's endpoint, such as http://127.0.0.1:9000  [default: AWS S3]. "
        "Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), never a flag",
    )(command)


def replica_target(url: str, s3: dict[str, Any], option: str) -> ReplicaTarget:
    "The replica ``url`` names, or a usage error naming ``option`` and the forms a URL takes."
    try:
        return ReplicaTarget.parse(url, option=option, **s3)
    except ReplicationError as e:
        raise click.BadParameter(str(e).removeprefix(f"{option}: "), param_hint=option) from None


def litestream() -> Litestream:
    "Litestream, or an error naming the extra that installs it."
    try:
        return Litestream.find(os.environ)
    except ReplicationError as e:
        raise click.ClickException(str(e)) from None
