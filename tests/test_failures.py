"""Failures read as one line naming the file and what to do, never a traceback; servers log them once a minute.

Every command meets each way a file can fail (not a database, damaged pages, a
read-only folder, a full disk, a lock held by another process, an unusable
secret file) as a real subprocess, the way a person or an agent starts it. A
full disk is a 2 MB tmpfs and a read-only folder a read-only bind mount, each in
a mount namespace of its own (``unshare --mount``, as root); an ordinary user
gets a read-only folder from mode bits instead.
"""

import asyncio
import errno
import functools
import hashlib
import logging
import os
import pathlib
import shlex
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading

import httpx2
import pytest
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from datasette_memory import Config, Memory, SearchSettings, vectors
from datasette_memory.core import file_errors
from datasette_memory.core.file_errors import file_failure
from datasette_memory.core.log_throttle import LogThrottle
from datasette_memory.sqltools.snapshots import SnapshotFailed, take_snapshot

from .damage import damage
from .test_cli import fetch, free_port

ROOT = pathlib.Path(__file__).parent.parent
LEXICAL = Config(search=SearchSettings(semantic=False))
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "DATASETTE_MEMORY_NO_VECTORS": "1"}
ENV.pop("DATASETTE_SECRET", None)
ENV.pop("DATASETTE_MEMORY_DEBUG", None)
SECRET = "a fixed secret for the tests that serve on a full disk"
# every command that opens the memory file; backfill-vectors only with the extra (without it, it refuses before opening)
OPENING = ["serve", "mcp", "import", "export", "create-token", "verify"] + (["backfill-vectors"] if vectors.extra_installed() else [])


def commands(tmp_path: pathlib.Path) -> dict[str, list[str]]:
    "Every command that opens the memory file, with the arguments it needs (``--db`` is added)."
    jsonl = tmp_path / "import.jsonl"
    jsonl.write_text('{"type":"entity","name":"imported","entityType":"t","observations":["x"]}\n')
    found = {
        "serve": ["serve", "--port", str(free_port())],
        "mcp": ["mcp"],
        "import": ["import", str(jsonl)],
        "export": ["export"],
        "create-token": ["create-token", "alice"],
        "verify": ["verify"],
    }
    if "backfill-vectors" in OPENING:
        found["backfill-vectors"] = ["backfill-vectors"]
    return found


def env_for(name: str) -> dict[str, str]:
    "backfill-vectors needs the semantic arm on; the others run without it."
    return {**ENV, "DATASETTE_MEMORY_NO_VECTORS": "0" if name == "backfill-vectors" else "1"}


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "datasette_memory", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env or ENV, cwd=ROOT, timeout=timeout)


def error_line(stderr: str) -> str:
    "The one line a failure prints: no traceback, exactly one ``Error:`` line."
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def memory_file(path: pathlib.Path, entities: int = 20) -> pathlib.Path:
    memory = Memory.open(path, config=LEXICAL)
    memory.create_entities([{"name": f"e{i}", "entityType": "t", "observations": [f"note {i} " * 20]} for i in range(entities)])
    memory.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> pathlib.Path:
    return memory_file(tmp_path_factory.mktemp("template") / "memory.db")


def copy_of(template: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, folder / "memory.db")
    return folder / "memory.db"


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: pathlib.Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# SQLite's own files beside the memory file: anything else left behind is a leftover
SQLITE_FILES = {"memory.db", "memory.db-wal", "memory.db-shm"}


# Mount namespaces


@functools.cache
def mounts_refused() -> str | None:
    "Why this machine cannot mount a tmpfs in a mount namespace of its own, or None if it can."
    unshare = shutil.which("unshare")
    if unshare is None:
        return "needs unshare(1) to mount a small file system"
    trial = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"datasette-memory-mount-trial-{os.getpid()}"
    trial.mkdir(exist_ok=True)
    try:
        done = subprocess.run([unshare, "--mount", "sh", "-c", 'mount -t tmpfs -o size=1M tmpfs "$0"', str(trial)],
                              capture_output=True, text=True)
    finally:
        trial.rmdir()
    return None if done.returncode == 0 else f"cannot mount a tmpfs in a mount namespace here: {done.stderr.strip()}"


def namespace(script: str, *args: str) -> list[str]:
    "``unshare --mount sh -c script sh args...``, or a skip saying why mounts are not allowed here."
    if mounts_refused():
        pytest.skip(mounts_refused())
    return ["unshare", "--mount", "sh", "-c", script, "sh", *args]


def full_disk(disk: pathlib.Path, template: pathlib.Path, leave_kb: int = 0, keep_open: bool = False) -> str:
    """
    Shell lines mounting a 2 MB tmpfs on ``disk``, copying ``template`` in as
    memory.db and filling the rest but ``leave_kb`` KB. With ``keep_open``, a
    process holds the file open first, so its -wal and -shm exist (a server
    that was running when the disk filled up); ``$holder`` is its pid.
    """
    q = shlex.quote
    lines = [f"mount -t tmpfs -o size=2M tmpfs {q(str(disk))}", f"cp {q(str(template))} {q(str(disk / 'memory.db'))}"]
    if keep_open:
        hold = ("import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM entities').fetchall(); "
                "open(sys.argv[2], 'w').close(); time.sleep(60)")
        ready = disk.parent / "holder-ready"
        lines += [f"{q(sys.executable)} -c {q(hold)} {q(str(disk / 'memory.db'))} {q(str(ready))} & holder=$!",
                  f"while [ ! -e {q(str(ready))} ]; do sleep 0.05; done"]
    lines.append(f"free=$(df -k --output=avail {q(str(disk))} | tail -1)")
    lines.append(f"dd if=/dev/zero of={q(str(disk / 'filler'))} bs=1k count=$((free - {leave_kb})) 2>/dev/null || true")
    return "\n".join(lines)


def each_command(named: dict[str, list[str]], db: pathlib.Path, out: pathlib.Path) -> str:
    "Shell lines running each command on ``db``, keeping its stderr and exit code in ``out``."
    q = shlex.quote
    lines = []
    for name, args in named.items():
        semantic = "0" if name == "backfill-vectors" else "1"
        argv = " ".join(q(a) for a in [sys.executable, "-m", "datasette_memory", *args, "--db", str(db)])
        lines.append(f"DATASETTE_MEMORY_NO_VECTORS={semantic} {argv} </dev/null >/dev/null 2>{q(str(out / name))}.err; "
                     f"echo $? >{q(str(out / name))}.rc")
    return "\n".join(lines)


def outcomes(out: pathlib.Path, names) -> dict[str, tuple[int, str]]:
    return {name: (int((out / f"{name}.rc").read_text()), (out / f"{name}.err").read_text()) for name in names}


# Not a database, damaged pages


@pytest.mark.parametrize("command", OPENING)
def test_a_file_that_is_not_a_database(tmp_path, command):
    named = commands(tmp_path)
    folder = tmp_path / "files"
    folder.mkdir()
    path = folder / "memory.db"
    path.write_text("these are someone's notes, not a database\n" * 100)
    before = digest(path)
    done = run(*named[command], "--db", str(path), env=env_for(command))
    line = error_line(done.stderr)
    assert done.returncode == (2 if command == "verify" else 1), done.stderr
    assert line.startswith(f"Error: {path}: not a SQLite database"), line
    assert digest(path) == before
    assert listing(folder) == ["memory.db"]


@pytest.mark.parametrize("command", [name for name in OPENING if name != "verify"])  # verify reports damage: tests/test_verify.py
def test_a_damaged_file(tmp_path, template, command):
    named = commands(tmp_path)
    path = copy_of(template, tmp_path / "files")
    damage(path)
    before = digest(path)
    done = run(*named[command], "--db", str(path), env=env_for(command))
    assert done.returncode == 1, done.stderr
    line = error_line(done.stderr)
    assert line.startswith(f"Error: {path}: the file is damaged"), line
    assert "restore it from a snapshot or a backup" in line
    assert digest(path) == before
    assert set(listing(path.parent)) <= SQLITE_FILES


def test_debug_shows_the_traceback_instead(tmp_path):
    path = tmp_path / "memory.db"
    path.write_text("not a database\n" * 100)
    plain = run("export", "--db", str(path))
    assert "Traceback" not in plain.stderr and plain.returncode == 1
    for done in (run("--debug", "export", "--db", str(path)), run("export", "--db", str(path), env={**ENV, "DATASETTE_MEMORY_DEBUG": "1"})):
        assert "Traceback (most recent call last)" in done.stderr
        assert "sqlite3.DatabaseError: file is not a database" in done.stderr
        assert done.returncode == 1


def test_export_into_a_missing_folder(tmp_path, template):
    path = copy_of(template, tmp_path / "files")
    target = tmp_path / "no such folder" / "out.jsonl"
    done = run("export", "--db", str(path), "-o", str(target))
    assert done.returncode == 1
    assert error_line(done.stderr) == (f"Error: {target}: its folder {target.parent} does not exist; "
                                       "create the folder, or give a path in one that exists")
    assert not target.parent.exists()


def test_export_writes_its_file_whole(tmp_path, template):
    path = copy_of(template, tmp_path / "files")
    target = tmp_path / "out" / "memory.jsonl"
    target.parent.mkdir()
    target.write_text("the previous export\n")
    done = run("export", "--db", str(path), "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_text().count('"type":"entity"') == 20
    assert listing(target.parent) == ["memory.jsonl"]


# A read-only folder


def in_a_read_only_folder(folder: pathlib.Path, named: dict[str, list[str]], db: pathlib.Path, out: pathlib.Path):
    """
    Run each command on ``db`` while ``folder`` cannot be written: by mode bits
    for an ordinary user; for root, who writes through mode bits, in a mount
    namespace where the folder is mounted read-only.
    """
    if os.geteuid() != 0:
        for file in folder.iterdir():
            file.chmod(0o444)
        folder.chmod(0o555)
        try:
            return {name: (done.returncode, done.stderr) for name, args in named.items()
                    for done in [run(*args, "--db", str(db), env=env_for(name))]}
        finally:
            folder.chmod(0o755)
    q = shlex.quote
    script = f"mount --bind {q(str(folder))} {q(str(folder))} && mount -o remount,ro,bind {q(str(folder))} {q(str(folder))}\n"
    done = subprocess.run(namespace(script + each_command(named, db, out)), capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert done.returncode == 0, done.stderr
    return outcomes(out, named)


def test_a_read_only_folder(tmp_path, template):
    named = commands(tmp_path)
    del named["verify"]  # it reads a read-only copy: tests/test_verify.py
    path = copy_of(template, tmp_path / "read-only")
    out = tmp_path / "out"
    out.mkdir()
    before = listing(path.parent)
    found = in_a_read_only_folder(path.parent, named, path, out)
    for name, (code, stderr) in found.items():
        assert code == 1, (name, stderr)
        line = error_line(stderr)
        assert line.startswith(f"Error: {path}: the file or its folder ({path.parent}) is read-only"), (name, line)
        assert "make the folder writable, or copy the file to a folder that is" in line
    assert listing(path.parent) == before


# A full disk


def test_a_full_disk(tmp_path, template):
    "Filled before anything opened the file: SQLite cannot even make its -shm; every command says the disk is full."
    named = commands(tmp_path)
    del named["verify"]  # it reads, and writes nothing it needs
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    q = shlex.quote
    script = "\n".join([full_disk(disk, template), each_command(named, disk / "memory.db", out), f"ls -A {q(str(disk))} > {q(str(out / 'listing'))}"])
    done = subprocess.run(namespace(script), capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert done.returncode == 0, done.stderr
    for name, (code, stderr) in outcomes(out, named).items():
        assert code == 1, (name, stderr)
        line = error_line(stderr)
        assert line.startswith(f"Error: {disk / 'memory.db'}: the disk is full ("), (name, line)
        assert line.endswith("no write was left half-done. Free some space there, then try again"), line
    assert set((out / "listing").read_text().split()) <= SQLITE_FILES | {"filler"}


def test_a_disk_that_fills_up_while_the_file_is_open(tmp_path, template):
    "The file opens, then what needs room fails: the import's write, the token secret, the export's file; none is left half-made."
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    exported = disk / "memory.jsonl"
    named = {
        "import": commands(tmp_path)["import"],
        "create-token": ["create-token", "alice"],
        "serve": ["serve", "--port", str(free_port())],
        "export": ["export", "-o", str(exported)],
    }
    q = shlex.quote
    script = "\n".join([full_disk(disk, template, keep_open=True), each_command(named, disk / "memory.db", out),
                        f"ls -A {q(str(disk))} > {q(str(out / 'listing'))}", 'kill "$holder"'])
    done = subprocess.run(namespace(script), capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert done.returncode == 0, done.stderr
    found = outcomes(out, named)
    assert all(code == 1 for code, _ in found.values()), found
    lines = {name: error_line(stderr) for name, (_, stderr) in found.items()}
    assert lines["import"].startswith(f"Error: {disk / 'memory.db'}: the disk is full")
    for name in ("create-token", "serve"):
        assert lines[name].startswith(f"Error: {disk / 'memory.db.secret'}: the disk is full"), lines[name]
    assert "Sign in as" not in found["serve"][1]
    assert lines["export"].startswith(f"Error: {exported}: the disk is full"), lines["export"]
    # no secret (empty or not), no export, no temporary file: only SQLite's files and the filler
    assert set((out / "listing").read_text().split()) <= SQLITE_FILES | {"filler", "memory.db.head.json", "memory.db.side-files.lock"}


def stdio_on_a_full_disk(disk: pathlib.Path, template: pathlib.Path, log: pathlib.Path) -> Client:
    "A real stdio server on a copy of ``template`` on a tmpfs with 256 KB left; after it ends, what the disk holds is logged."
    q = shlex.quote
    server = " ".join(q(a) for a in [sys.executable, "-m", "datasette_memory", "mcp", "--tools", "all", "--db", str(disk / "memory.db")])
    script = "\n".join([full_disk(disk, template, leave_kb=256), server, f"echo left: $(ls -A {q(str(disk))}) >&2",
                        f"echo snapshots: $(ls -A {q(str(disk / 'memory-snapshots'))}) >&2"])
    command = namespace(script)
    return Client(StdioTransport(command[0], command[1:], env=ENV, cwd=str(ROOT), keep_alive=False, log_file=log))


def entity(name: str) -> dict:
    return {"name": name, "entityType": "t", "observations": ["x" * 2000]}


async def test_a_stdio_server_on_a_full_disk_logs_each_kind_of_failure_once(tmp_path, template):
    disk = tmp_path / "disk"
    disk.mkdir()
    log = tmp_path / "stderr.txt"
    failures = []
    with open(log, "w") as stderr:
        async with stdio_on_a_full_disk(disk, template, stderr) as client:
            written = 0
            while len(failures) < 3000:
                result = await client.call_tool("create_entities", {"entities": [entity(f"new {written + len(failures)}")]},
                                                raise_on_error=False)
                if result.is_error:
                    failures.append(result.content[0].text)
                else:
                    assert not failures, "a write after the disk filled up succeeded"
                    written += 1
                    assert written < 200, "256 KB never filled up"
            read = await client.call_tool("open_nodes", {"names": ["e1"]})
            assert [e["name"] for e in read.structured_content["entities"]] == ["e1"]
            snapshot = await client.call_tool("snapshot", {"reason": "before cleaning up"}, raise_on_error=False)
    assert set(failures) == {f"{disk / 'memory.db'}: the disk is full (0 KiB free in {disk}); no write was left half-done. "
                             "Free some space there, then try again"}
    assert snapshot.is_error
    assert snapshot.content[0].text.startswith(f"{disk / 'memory-snapshots'}: the snapshot could not be written (the disk is full")
    assert "no partial snapshot was left and nothing was changed" in snapshot.content[0].text
    text = log.read_text()
    assert "Traceback" not in text
    assert text.count("the disk is full") == 1, text  # the first failed write; the snapshot's failure is the caller's to read
    assert len(text.encode()) < 2048, text  # about 2.5 KB of traceback a call before: 7.4 MB after 3,000 calls
    left = next(line for line in text.splitlines() if line.startswith("left:")).split()[1:]
    assert set(left) <= SQLITE_FILES | {"filler", "memory.db.head.json", "memory.db.side-files.lock", "memory-snapshots"}, left
    assert "snapshots:\n" in text, text  # the snapshot folder is empty: no partial or temporary file


def test_serve_on_a_full_disk_answers_one_line_over_mcp(tmp_path, template):
    "MCP over HTTP, with the scheme in lower case: each failed write a one-line tool error, the failure logged once."
    disk = tmp_path / "disk"
    disk.mkdir()
    port = free_port()
    q = shlex.quote
    serve = " ".join(q(a) for a in [sys.executable, "-m", "datasette_memory", "serve", "--db", str(disk / "memory.db"), "--port", str(port)])
    process = subprocess.Popen(namespace(f"{full_disk(disk, template, leave_kb=256)}\nexec {serve}"),
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**ENV, "DATASETTE_SECRET": SECRET})
    lines: list[str] = []
    try:
        while not any("Sign in as" in line for line in lines):
            line = process.stderr.readline()
            assert line, "serve ended before printing its sign-in link:\n" + "".join(lines)
            lines.append(line)
        threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
        fetch(f"http://127.0.0.1:{port}/-/memory.json")
        failures = asyncio.run(write_over_http(f"http://127.0.0.1:{port}/-/memory/mcp", failures=200))
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert set(failures) == {f"{disk / 'memory.db'}: the disk is full (0 KiB free in {disk}); no write was left half-done. "
                             "Free some space there, then try again"}
    text = "".join(lines)
    assert "Traceback" not in text
    assert text.count("the disk is full") == 1, text


async def write_over_http(url: str, failures: int) -> list[str]:
    token = await Datasette(secret=SECRET).create_token("alice")
    found: list[str] = []
    async with Client(StreamableHttpTransport(url, headers={"Authorization": f"bearer {token}"})) as client:
        for i in range(failures + 200):
            result = await client.call_tool("create_entities", {"entities": [entity(f"new {i}")]}, raise_on_error=False)
            if result.is_error:
                found.append(result.content[0].text)
                if len(found) == failures:
                    return found
    raise AssertionError("the disk never filled up")


def test_a_snapshot_that_cannot_be_written_leaves_nothing(tmp_path, template):
    path = copy_of(template, tmp_path / "files")
    folder = tmp_path / "snapshots"
    folder.write_text("a file where the snapshot folder should be")
    with pytest.raises(SnapshotFailed) as raised:
        take_snapshot(path, folder, "manual")
    assert str(raised.value).startswith(f"{folder}: the snapshot could not be written (")
    assert listing(tmp_path) == ["files", "snapshots"]
    assert listing(path.parent) == ["memory.db"]


# A lock held by another process


HOLD_THE_WRITE_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


async def test_a_write_lock_held_by_another_process(tmp_path, template):
    "SQLite waits 30 seconds for the lock, then the import and the MCP write each fail in one line (both wait at once)."
    path = copy_of(template, tmp_path / "files")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(path), "90"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        importing = asyncio.create_task(asyncio.to_thread(run, *commands(tmp_path)["import"], "--db", str(path)))
        log = tmp_path / "stderr.txt"
        with open(log, "w") as stderr:
            transport = StdioTransport(sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(path)], env=ENV,
                                       cwd=str(ROOT), keep_alive=False, log_file=stderr)
            async with Client(transport) as client:
                written = await client.call_tool("create_entities", {"entities": [entity("waits")]}, raise_on_error=False)
                read = await client.call_tool("open_nodes", {"names": ["e1"]})
        imported = await importing
    finally:
        holder.kill()
        holder.wait()
    locked = (f"{path}: another process held its write lock longer than the 30 s SQLite waits; the write that waited "
              f"did not happen. Try again when that process is done, or stop it (`fuser {path}` names it)")
    assert written.is_error and written.content[0].text == locked
    assert [e["name"] for e in read.structured_content["entities"]] == ["e1"]
    assert imported.returncode == 1
    assert error_line(imported.stderr) == f"Error: {locked}"
    assert "Traceback" not in log.read_text() and log.read_text().count(locked) == 1


# The secret that signs API tokens


def unreadable(secret: pathlib.Path) -> None:
    "A secret file this user cannot read: no read permission, or for root (who reads anything) a folder in its place."
    if os.geteuid() == 0:
        secret.mkdir()
    else:
        secret.write_text("0" * 64)
        secret.chmod(0)


@pytest.mark.parametrize("command", ["serve", "create-token"])
@pytest.mark.parametrize("problem", ["empty", "unreadable"])
def test_a_secret_file_that_cannot_be_used(tmp_path, template, command, problem):
    path = copy_of(template, tmp_path / "files")
    secret = path.with_name("memory.db.secret")
    if problem == "empty":
        secret.write_text("")
    else:
        unreadable(secret)
    done = run(*commands(tmp_path)[command], "--db", str(path))
    assert done.returncode == 1
    line = error_line(done.stderr)
    if problem == "empty":
        assert line.startswith(f"Error: {secret}: the secret that signs API tokens is empty"), line
    else:
        assert line.startswith(f"Error: {secret}: cannot read the secret that signs API tokens ("), line
    assert line.endswith("delete it and a new one is made at the next start (tokens signed with the old one stop "
                         "working), or set $DATASETTE_SECRET"), line
    assert "Sign in as" not in done.stderr
    secret.rmdir() if secret.is_dir() else secret.unlink()
    again = run("create-token", "alice", "--db", str(path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("dstok_")
    assert len(secret.read_text()) == 64 and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert listing(path.parent) == ["memory.db", "memory.db.secret"]


# Datasette's pages and JSON


@pytest.fixture
async def damaged_datasette(tmp_path, template):
    path = copy_of(template, tmp_path / "files")
    damage(path)
    datasette = Datasette([str(path)])
    await datasette.invoke_startup()
    yield datasette
    await datasette.invoke_shutdown()


async def test_datasette_says_a_damaged_file_in_one_line(damaged_datasette, capfd, caplog):
    message = ("memory.db: the file is damaged (SQLite: database disk image is malformed); nothing was written to it. "
               "`datasette-memory verify` lists what is wrong; restore it from a snapshot or a backup")
    for _ in range(3):
        response = await damaged_datasette.client.get("/-/memory/search.json?q=note")
        assert response.status_code == 500
        assert response.json() == {"ok": False, "error": message, "status": 500}
    page = await damaged_datasette.client.get("/-/memory/search?q=note")
    assert page.status_code == 500 and "restore it from a snapshot or a backup" in page.text
    table = await damaged_datasette.client.get("/memory/observations.json")
    assert table.status_code == 500 and table.json()["error"] == message
    printed = capfd.readouterr().err
    assert "Traceback" not in printed and "╭" not in printed  # neither Python's nor rich's
    logged = [r.getMessage() for r in caplog.records if r.name == "datasette_memory.plugin"]
    assert logged == [f"GET /-/memory/search.json: {message}"]  # once a minute at most


# Bearer tokens, in any case


@pytest.fixture
async def served(tmp_path, template):
    path = copy_of(template, tmp_path / "files")
    datasette = Datasette([str(path)])
    await datasette.invoke_startup()
    yield datasette
    await datasette.invoke_shutdown()


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_the_bearer_scheme_in_any_case(served, scheme):
    token = await served.create_token("alice")
    actor = await served.client.get("/-/actor.json", headers={"Authorization": f"{scheme} {token}"})
    assert actor.json()["actor"]["id"] == "alice"
    rows = await served.client.get("/memory/entities.json", headers={"Authorization": f"{scheme} {token}"})
    assert rows.status_code == 200 and len(rows.json()["rows"]) == 20
    forged = await served.client.get("/-/actor.json", headers={"Authorization": f"{scheme} dstok_forged"})
    assert forged.status_code == 401
    transport = StreamableHttpTransport(
        "http://localhost/-/memory/mcp",
        headers={"Authorization": f"{scheme} {token}"},
        httpx_client_factory=lambda **kwargs: httpx2.AsyncClient(transport=httpx2.ASGITransport(app=served.app()), **kwargs),
    )
    async with Client(transport) as client:
        await client.call_tool("create_entities", {"entities": [{"name": f"by {scheme}", "entityType": "t", "observations": []}]})
        opened = await client.call_tool("open_nodes", {"names": [f"by {scheme}"]})
    assert [e["name"] for e in opened.structured_content["entities"]] == [f"by {scheme}"]


# The pieces


def test_the_throttle_logs_each_kind_once_a_minute_and_counts_the_rest(caplog):
    now = [1000.0]
    throttle = LogThrottle(logging.getLogger("tests.throttle"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="tests.throttle"):
        assert throttle.log("disk full", "full")
        assert not any(throttle.log("disk full", "full") for _ in range(2999))
        assert throttle.log("locked", "locked")  # another kind is not held back
        now[0] += 59.9
        assert not throttle.log("disk full", "full")
        now[0] += 0.2
        assert throttle.log("disk full", "full")
        now[0] += 61
        assert throttle.log("disk full", "full")
    assert [r.getMessage() for r in caplog.records] == [
        "full", "locked", "full (3,000 more like this in the 60 s before were not logged)", "full",
    ]


@pytest.mark.parametrize("code, kind", [
    (errno.ENOSPC, file_errors.DISK_FULL), (errno.EROFS, file_errors.READ_ONLY), (errno.EACCES, file_errors.PERMISSION_DENIED),
    (errno.EIO, file_errors.DISK_ERROR), (errno.EPIPE, None), (errno.EEXIST, None),
])
def test_the_operating_systems_failures(tmp_path, code, kind):
    error = OSError(code, os.strerror(code), str(tmp_path / "memory.db"))
    failure = file_failure(error)
    assert (failure.kind if failure else None) == kind
    if failure:
        assert failure.message.startswith(f"{tmp_path / 'memory.db'}: ")


def test_sqlites_failures_and_what_is_not_one(tmp_path):
    conn = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as no_table:
        conn.execute("SELECT * FROM nowhere")
    assert file_failure(no_table.value) is None  # a statement's mistake is not the file's
    assert file_failure(ValueError("a bug")) is None
    text = tmp_path / "notes.db"
    text.write_text("not a database\n" * 100)
    with pytest.raises(sqlite3.DatabaseError) as not_a_database:
        sqlite3.connect(text).execute("SELECT 1 FROM sqlite_master")
    wrapped = RuntimeError("while opening")
    wrapped.__cause__ = not_a_database.value
    failure = file_failure(wrapped, text)
    assert failure.kind == file_errors.NOT_A_DATABASE and failure.file == str(text)
    assert file_failure(not_a_database.value, text, shown_as="notes.db").message.startswith("notes.db: not a SQLite database")


def test_a_missing_folder(tmp_path):
    target = tmp_path / "gone" / "memory.db"
    failure = file_failure(FileNotFoundError(errno.ENOENT, "No such file or directory", str(target)))
    assert failure.kind == file_errors.MISSING
    assert failure.message == f"{target}: its folder {target.parent} does not exist; create the folder, or give a path in one that exists"

