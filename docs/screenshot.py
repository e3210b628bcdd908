"""Make docs/review-page.png, the README's picture of the people's pages.

Seeds a small memory file, serves it with ``datasette-memory serve`` (as a person would),
signs in as its owner with the link serve prints, and takes Chromium's picture of a page::

    .venv/bin/python docs/screenshot.py              # the review queue, into docs/review-page.png
    .venv/bin/python docs/screenshot.py --page entity --out /tmp/entity.png

Chromium is the system's (``DATASETTE_MEMORY_CHROMIUM``, else ``chromium`` on PATH), driven by Playwright.
"""

import argparse
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from playwright.sync_api import sync_playwright

from datasette_memory import Config, Memory, SearchSettings

HERE = pathlib.Path(__file__).parent
PAGES = {
    "review": "/-/memory/review?project=my-app",
    "entity": "/-/memory/entity?project=my-app&name=auth-gateway",
    "overview": "/-/memory?project=my-app",
}


def seed(db_path: pathlib.Path) -> None:
    "A project an agent has worked in: services and their relations, claims waiting for a person, a fact."
    memory = Memory.open(db_path, project="my-app", actor="claude", session="s1",
                         config=Config(search=SearchSettings(semantic=False)))
    memory.create_entities([
        {"name": "auth-gateway", "entityType": "service",
         "observations": ["Listens on port 8443", "Issues JWTs signed with RS256"]},
        {"name": "postgres-primary", "entityType": "database", "observations": ["Postgres 15 cluster for orders"]},
        {"name": "orders", "entityType": "service", "observations": ["Takes the orders; retries payments 5 times"]},
        {"name": "deploy", "entityType": "process", "observations": ["Deploys run from GitHub Actions on every tag"]},
    ])
    memory.create_relations([
        {"from": "auth-gateway", "to": "postgres-primary", "relationType": "reads users from"},
        {"from": "orders", "to": "postgres-primary", "relationType": "writes to"},
        {"from": "orders", "to": "auth-gateway", "relationType": "authenticates through"},
        {"from": "deploy", "to": "auth-gateway", "relationType": "ships"},
    ])
    governed = memory.governed
    governed.propose_claim("auth-gateway", "listens on port", "8443", evidence=["config/gateway.yaml line 12"], confidence=0.9)
    governed.propose_claim("postgres-primary", "engine", "postgres 16", evidence=["the upgrade ticket"])
    governed.propose_claim("orders", "retries payments", "5 times", evidence=["orders/payments.py"])
    governed.propose_claim("auth-gateway", "listens on port", "9443", evidence=["an old runbook"], confidence=0.4)
    memory.checkpoint("Gateway port checked; next: the Postgres 16 upgrade")
    memory.close()


def approve_first_claim(page, base: str) -> None:
    "The owner approves claim 1 through the review form, as a person does: then a fact holds, and a later claim contradicts it."
    page.goto(f"{base}/-/memory/claims/1/approve")
    page.get_by_label("Rationale").fill("config/gateway.yaml says 8443")
    page.get_by_role("button", name="Review what will change").click()
    page.get_by_role("button", name="Confirm: Approve").click()
    page.wait_for_url(f"{base}/-/memory/claims/1")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(db_path: pathlib.Path, port: int) -> tuple[subprocess.Popen, str]:
    "Start serve on ``port``; return the process and the owner's sign-in link it prints."
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette_memory", "serve", "--db", str(db_path), "--port", str(port), "--owner", "olive"],
        env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    printed = []
    for line in process.stderr:
        printed.append(line)
        if found := re.search(r"Sign in as olive: (\S+)", line):
            break
    else:
        raise SystemExit("datasette-memory serve ended before printing its sign-in link:\n" + "".join(printed))
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/-/memory.json", timeout=5)
            return process, found[1]
        except OSError:
            time.sleep(0.1)
    process.terminate()
    raise SystemExit("datasette-memory serve did not answer")


def chromium() -> str:
    path = os.environ.get("DATASETTE_MEMORY_CHROMIUM") or shutil.which("chromium")
    if not path:
        raise SystemExit("no Chromium: install it, or set DATASETTE_MEMORY_CHROMIUM to its executable")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", choices=PAGES, default="review")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "review-page.png")
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=980)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = pathlib.Path(tmp, "memory.db")
        seed(db_path)
        port = free_port()
        process, sign_in = serve(db_path, port)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
                page = browser.new_page(viewport={"width": args.width, "height": args.height})
                page.goto(sign_in)
                approve_first_claim(page, f"http://127.0.0.1:{port}")
                page.goto(f"http://127.0.0.1:{port}{PAGES[args.page]}")
                page.screenshot(path=str(args.out))
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=10)
    print(f"{args.out}: {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
