"""Signing in: the owner's link from serve, a team's passwords through a real auth plugin, and who may read off this machine."""

import hashlib
import re
import subprocess
import sys

import pytest
import yaml
from datasette.app import Datasette
from datasette_auth_passwords.utils import hash_password

from datasette_memory import Config, Memory
from datasette_memory.cli.serve import People, is_loopback, merged, serve_config

from .test_cli import fetch, free_port

SECRET = "a-persistent-secret"
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def served(db_path, people=People("olive"), anonymous_reads=True, extra=None, token="t0k3n"):
    Memory.open(db_path, project="p", actor="claude").governed.propose_claim("auth", "uses", "postgres", evidence=["runbook"])
    settings = serve_config(db_path, Config(), people, digest(token), anonymous_reads)
    datasette = Datasette([str(db_path)], config=merged(settings, extra or {}), secret=SECRET)
    await datasette.invoke_startup()
    return datasette


async def whoami(datasette, cookies):
    return (await datasette.client.get("/-/actor.json", cookies=cookies)).json()["actor"]


async def test_the_printed_link_signs_the_owner_in_once_and_the_sign_in_outlives_a_restart(db_path):
    datasette = await served(db_path)
    signed = await datasette.client.get("/-/memory/sign-in?token=t0k3n")
    assert signed.status_code == 302 and signed.headers["location"] == "/-/memory"
    cookies = {"ds_actor": signed.cookies["ds_actor"]}
    assert await whoami(datasette, cookies) == {"id": "olive"}
    again = await datasette.client.get("/-/memory/sign-in?token=t0k3n")
    assert again.status_code == 403 and "used already" in again.text
    wrong = await datasette.client.get("/-/memory/sign-in?token=guess")
    assert wrong.status_code == 403 and "not the one" in wrong.text
    restarted = await served(db_path, token="another")
    assert await whoami(restarted, cookies) == {"id": "olive"}
    # the owner holds both person-only actions
    assert "Approve…" in (await restarted.client.get("/-/memory/review?project=p", cookies=cookies)).text
    assert await restarted.allowed(action="memory-curate", actor={"id": "olive"})


@pytest.mark.parametrize("host,loopback", [("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False), ("192.168.1.20", False)])
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


async def test_off_this_machine_anonymous_readers_are_refused_unless_public(db_path):
    private = await served(db_path, anonymous_reads=False)
    for path in ("/-/memory", "/-/memory/review.json?project=p", "/-/memory/search.json?q=auth&project=p", "/memory/entities",
                 "/memory", "/", "/memory/pending_claims"):
        assert (await private.client.get(path)).status_code == 403, path
        assert (await private.client.get(path, actor={"id": "olive"})).status_code == 200, path
        token = await private.create_token("script")
        assert (await private.client.get(path, headers={"Authorization": f"Bearer {token}"})).status_code == 200, path
    public = await served(db_path, anonymous_reads=True)
    assert (await public.client.get("/-/memory/review.json?project=p")).status_code == 200


async def test_a_team_signs_reviewers_in_with_passwords_and_they_approve_through_the_forms(db_path, tmp_path):
    "datasette-auth-passwords, configured through serve --config, as docs/datasette.md tells a team to do."
    team = {
        "plugins": {"datasette-auth-passwords": {"alice_password_hash": hash_password("correct horse")}},
    }
    datasette = await served(db_path, People("olive", approvers=("alice",)), extra=team)
    login = await datasette.client.post("/-/login", data={"username": "alice", "password": "correct horse"}, headers=SAME_SITE)
    assert login.status_code == 302
    cookies = {"ds_actor": login.cookies["ds_actor"]}
    assert await whoami(datasette, cookies) == {"id": "alice"}
    bad = await datasette.client.post("/-/login", data={"username": "alice", "password": "wrong"}, headers=SAME_SITE)
    assert "ds_actor" not in bad.cookies
    form = await datasette.client.get("/-/memory/claims/1/approve", cookies=cookies)
    assert form.status_code == 200 and "Review what will change" in form.text
    fields = {"rationale": "matches the runbook"}
    confirm = await datasette.client.post("/-/memory/claims/1/approve", data={**fields, "step": "confirm"}, cookies=cookies, headers=SAME_SITE,
                                          follow_redirects=True)
    assert "What will change" in confirm.text and "becomes <strong>approved</strong>" in confirm.text
    applied = await datasette.client.post("/-/memory/claims/1/approve", data={**fields, "step": "apply"}, cookies=cookies, headers=SAME_SITE)
    assert applied.status_code == 302 and applied.headers["location"] == "/-/memory/claims/1"
    memory = Memory.open(db_path, project="p")
    assert memory.governed.claim(1)["status"] == "approved"
    assert memory.conn.execute("SELECT actor FROM events WHERE kind = 'approve_claim'").fetchone() == ("alice",)
    # a cross-site form post carrying alice's cookie is refused by Datasette before it reaches the form
    forged = await datasette.client.post(
        "/-/memory/claims/1/reopen", data={"rationale": "x", "step": "apply"}, cookies=cookies, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert forged.status_code == 403
    assert memory.governed.claim(1)["status"] == "approved"


def test_serve_merges_a_config_file_and_prints_the_sign_in_link(db_path, tmp_path):
    extra = tmp_path / "team.yaml"
    extra.write_text(yaml.safe_dump({"plugins": {"datasette-auth-passwords": {"bob_password_hash": hash_password("pw")}}}))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette_memory", "serve", "--db", str(db_path), "--port", str(port), "--owner", "olive",
         "--config", str(extra)],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        lines = []
        while not any("Sign in as" in line for line in lines):
            lines.append(process.stderr.readline())
        link = re.search(r"Sign in as olive: (\S+)", "".join(lines))[1]
        assert link.startswith(f"http://127.0.0.1:{port}/-/memory/sign-in?token=")
        assert b"Memory" in fetch(link)  # follows the redirect to the overview
        assert b'name="username"' in fetch(f"http://127.0.0.1:{port}/-/login")  # the auth plugin's accounts were merged in
    finally:
        process.terminate()
        process.wait(timeout=10)
