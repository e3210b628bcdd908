"""Syncing with a hub: ``datasette-memory serve`` answering at ``/-/memory/sync/``, with an API token.

Three requests, each small enough for the hub's cap on a request: what the hub
holds (``holdings.json``); what it lacks, pushed in batches (``push.json``; the
last one asks the hub to apply them); what this file lacks, pulled a batch at a
time (``pull.json``, sending what this file holds, taken as each batch comes);
and, when applying wrote local changes, those echoes pushed as well, so the hub
holds them when the sync ends.
"""

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from ..memory import Memory
from .events import SyncRefused, holdings
from .exchange import SyncReport, apply_pending, record_peer, take, to_send

BATCH_BYTES = 1_000_000  # under the hub's cap on one request (4 MB by default)
TIMEOUT_SECONDS = 300


def call(url: str, token: str, path: str, body: Any = None) -> Any:
    "One request to the hub, its JSON answer; :class:`SyncRefused` saying what the hub said or why it could not be reached."
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(url.rstrip("/") + "/-/memory/sync/" + path, data=data, method="GET" if data is None else "POST")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as e:
        try:
            said = json.loads(e.read()).get("error")
        except (ValueError, AttributeError):
            said = None
        raise SyncRefused(f"the hub at {url} refused the sync ({e.code}): {said or e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise SyncRefused(f"the hub at {url} cannot be reached ({getattr(e, 'reason', e)}); check the URL and that "
                          "datasette-memory serve runs there (nothing was changed here)") from None


def batches(events: list[dict[str, Any]], limit: int = BATCH_BYTES) -> list[list[dict[str, Any]]]:
    "``events`` in runs of at most ``limit`` bytes of JSON (an event larger than that alone)."
    runs: list[list[dict[str, Any]]] = [[]]
    size = 0
    for event in events:
        length = len(json.dumps(event, ensure_ascii=False).encode("utf-8")) + 2
        if runs[-1] and size + length > limit:
            runs.append([])
            size = 0
        runs[-1].append(event)
        size += length
    return runs


def first_batch(events: Iterator[dict[str, Any]], limit: int = BATCH_BYTES) -> tuple[list[dict[str, Any]], bool]:
    "The first run of at most ``limit`` bytes of ``events`` (read no further), and whether more follow."
    run: list[dict[str, Any]] = []
    size = 0
    for event in events:
        length = len(json.dumps(event, ensure_ascii=False).encode("utf-8")) + 2
        if run and size + length > limit:
            return run, True
        run.append(event)
        size += length
    return run, False


def sync_hub(memory: Memory, url: str, token: str, only: str | None = None) -> SyncReport:
    """
    Push what the hub lacks, pull what this file lacks, apply it.

    :param only: apply and send whole only this project's events
    """
    peer = url.rstrip("/")
    hub = call(url, token, "holdings.json")
    sending = to_send(memory.conn, hub["holdings"], only)
    runs = batches(sending)
    for position, run in enumerate(runs, 1):
        call(url, token, "push.json", {"events": run, "apply": position == len(runs)})
    received = 0
    while True:
        answer = call(url, token, "pull.json", {"holdings": holdings(memory.conn), "max_bytes": BATCH_BYTES})
        received += take(memory, answer["events"], peer)
        if not answer["more"]:
            break
    report = apply_pending(memory, peer, only)
    if report.applied:  # the changes applying wrote here go to the hub now, not at the next sync
        echoes = to_send(memory.conn, call(url, token, "holdings.json")["holdings"], only)
        for run in batches(echoes):
            call(url, token, "push.json", {"events": run, "apply": False})
        sending += echoes
    report.received, report.sent = received, len(sending)
    record_peer(memory, report)
    return report
