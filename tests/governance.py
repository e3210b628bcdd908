"""Helpers for governed-tier tests: reviewers come only from the real gate."""

import asyncio
import concurrent.futures

from datasette.app import Datasette
from datasette.utils.asgi import Request

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.governed.gate import reviewer_for_request
from datasette_memory.governed.person_actions import APPROVE_ACTION

PERSON = "alice"


def approver_config(*actor_ids) -> dict:
    "Datasette config granting memory-approve to ``actor_ids``."
    return {"permissions": {APPROVE_ACTION: {"id": list(actor_ids or [PERSON])}}}


def issue_reviewer(actor_id: str = PERSON):
    "A Reviewer for a signed-in person holding memory-approve, issued by the real gate in a real Datasette."

    async def issue():
        datasette = Datasette(config=approver_config(actor_id))
        await datasette.invoke_startup()
        request = Request.fake("/-/memory/claims/1/approve", method="POST")
        request.scope["actor"] = {"id": actor_id}
        return await reviewer_for_request(datasette, request)

    # in a thread of its own, so sync tests and async ones (with a running loop) can both call this
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, issue()).result()


def store_governed(db_path, target: str = "db", observation: str = "postgres 16") -> Memory:
    """
    Project p: ``auth`` and ``target`` (holding ``observation``), a relation
    between them, a pending claim (1), a rejected one (2), a fact that holds (1) and
    an invalidated one (2). The caller closes the returned memory.
    """
    agent = Memory.open(db_path, project="p", actor="claude", config=Config(search=SearchSettings(semantic=False)))
    agent.create_entities([
        {"name": "auth", "entityType": "service", "observations": ["listens on 8443"]},
        {"name": target, "entityType": "database", "observations": [observation]},
    ])
    agent.create_relations([{"from": "auth", "to": target, "relationType": "uses"}])
    agent.governed.propose_claim("auth", "port", "8443", evidence=["config file"])
    agent.governed.propose_claim("auth", "owner", "Dana")
    agent.governed.reject_claim(issue_reviewer("olive"), 2, "Dana left")
    agent.governed.record_fact(issue_reviewer("olive"), "auth", "uses", "db", "runbook")
    agent.governed.record_fact(issue_reviewer("olive"), "auth", "region", "eu-west-1", "runbook")
    agent.governed.invalidate_fact(issue_reviewer("olive"), 2, "moved")
    return agent


def ledger_length(db_path) -> int:
    "How many events the ledger of the memory file at ``db_path`` holds."
    memory = Memory.open(db_path)
    try:
        return memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        memory.close()


SIGNED_IN = {"reviewer": PERSON, "curator": "carol", "owner": "olive", "root": "root", "someone else signed in": "bob"}


async def as_actor(datasette, kind: str) -> dict:
    """
    The ``datasette.client`` arguments that make a request come from ``kind``:
    "anonymous", "agent token" or "root token" (an API token minted for that actor),
    or a person signed in (a key of :data:`SIGNED_IN`).
    """
    if kind == "anonymous":
        return {}
    if kind in ("agent token", "root token"):
        token = await datasette.create_token(kind.split()[0])
        return {"headers": {"Authorization": f"Bearer {token}"}}
    return {"actor": {"id": SIGNED_IN[kind]}}
