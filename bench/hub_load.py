"""The hub under load: HTTP MCP clients at once against a real `serve` on loopback, replicating with Litestream.

One run, one memory file: `datasette-memory serve --replicate-to` on a free
loopback port, tokens from `datasette-memory create-token`, a graph seeded
first (--seed entities, three observations each). Then the same mix of calls
(writes: create_entities and add_observations; searches: search_nodes and
search_memory; opens: open_nodes; resume contexts: get_resume_context) is made
by one client alone, then by --clients clients at once, each making --calls
calls, spread over --processes client processes. Printed: p50 and p99 per call
kind and throughput for both, the load average, and the correctness part:
every acknowledged write is in the file, the chain verifies (a full verify),
the replica restores to the file's ledger head, and how long after the last
acknowledged write it did (the replication lag at the end, restore included);
while the clients run, the replica is restored every 10 seconds to see how
far behind it is.

    python bench/hub_load.py [--clients 16] [--calls 500] [--processes 4] [--seed 300] [--replica folder|s3]

--replica s3 replicates to moto's S3-compatible server (the test extra),
started on loopback. Needs the replicate extra (Litestream).
"""

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import pathlib
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).parent.parent
KINDS = ("write", "search", "open", "resume")
MIX = [("write", 0.30), ("search", 0.30), ("open", 0.25), ("resume", 0.15)]
S3_ENV = {"AWS_ACCESS_KEY_ID": "bench-key-id", "AWS_SECRET_ACCESS_KEY": "bench-secret-key", "AWS_REGION": "us-east-1",
          "AWS_EC2_METADATA_DISABLED": "true"}
WORDS = ["auth", "billing", "postgres", "redis", "deploy", "rollback", "latency", "queue", "cache", "token"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(extra: dict | None = None) -> dict:
    return {**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
            **(extra or {})}


def command(*arguments: str, env: dict | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "datasette_memory", *arguments], env=env or environment(),
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


# the seeded graph and the calls


def seeded_name(i: int) -> str:
    return f"svc-{i:04d}"


def seed(path: pathlib.Path, entities: int) -> None:
    "A graph for the reads to find: ``entities`` services, three observations each."
    from datasette_memory import Config, Memory, SearchSettings

    memory = Memory.open(path, actor="seed", config=Config(search=SearchSettings(semantic=False)))
    try:
        for first in range(0, entities, 100):
            memory.create_entities([{
                "name": seeded_name(i), "entityType": "service",
                "observations": [f"{seeded_name(i)} uses {WORDS[i % 10]} and {WORDS[(i * 7) % 10]}",
                                 f"owned by team {i % 13}", f"deployed to region {i % 5}"],
            } for i in range(first, min(entities, first + 100))])
    finally:
        memory.close()


def plan(client: int, calls: int, seeded: int) -> list[tuple[str, str, dict]]:
    "One client's calls: (kind, tool, arguments), the same for a given client and count."
    rng = random.Random(client * 7919 + calls)
    kinds = [kind for kind, share in MIX for _ in range(round(share * 100))]
    made: list[str] = []
    steps = []
    for i in range(calls):
        kind = rng.choice(kinds)
        if kind == "write" and (not made or rng.random() < 0.5):
            name = f"c{client:02d}-e{i:04d}"
            made.append(name)
            steps.append((kind, "create_entities", {"entities": [{"name": name, "entityType": "note",
                                                                   "observations": [f"{name} noted {rng.choice(WORDS)}"]}]}))
        elif kind == "write":
            steps.append((kind, "add_observations", {"observations": [{"entityName": rng.choice(made),
                                                                       "contents": [f"c{client:02d} call {i} {rng.choice(WORDS)}"]}]}))
        elif kind == "search" and rng.random() < 0.5:
            steps.append((kind, "search_nodes", {"query": rng.choice(WORDS)}))
        elif kind == "search":
            steps.append((kind, "search_memory", {"query": f"which services use {rng.choice(WORDS)}?", "limit": 5}))
        elif kind == "open":
            steps.append((kind, "open_nodes", {"names": [seeded_name(rng.randrange(seeded)) for _ in range(2)]}))
        else:
            steps.append((kind, "get_resume_context", {"max_events": 20}))
    return steps


async def one_client(url: str, token: str, client: int, calls: int, seeded: int) -> dict:
    "Make one client's calls in turn: each call's kind, latency (ms) and outcome, and the writes acknowledged."
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    timings, acknowledged, errors = [], [], []
    async with Client(StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}"})) as session:
        for kind, tool, arguments in plan(client, calls, seeded):
            began, started = time.time(), time.perf_counter()
            result = await session.call_tool(tool, arguments, raise_on_error=False)
            timings.append((kind, (time.perf_counter() - started) * 1000, began, time.time()))
            if result.is_error:
                errors.append(f"{tool}: {result.content[0].text[:200]}")
            elif tool == "create_entities":
                acknowledged.append(("entity", arguments["entities"][0]["name"], arguments["entities"][0]["observations"][0]))
            elif tool == "add_observations":
                acknowledged.append(("observation", arguments["observations"][0]["entityName"], arguments["observations"][0]["contents"][0]))
    return {"timings": timings, "acknowledged": acknowledged, "errors": errors}


def client_process(url: str, token: str, clients: list[int], calls: int, seeded: int, start_at: float) -> dict:
    "A process of clients: they start together at ``start_at`` (wall clock) and run at once."
    os.environ["FASTMCP_LOG_LEVEL"] = "WARNING"
    import fastmcp  # noqa: F401  (imported before the start, not timed)

    time.sleep(max(0.0, start_at - time.time()))

    async def all_clients():
        return await asyncio.gather(*(one_client(url, token, c, calls, seeded) for c in clients))

    cpu = time.process_time()
    results = asyncio.run(all_clients())
    return {"results": results, "cpu": time.process_time() - cpu}


def drive(url: str, token: str, clients: int, calls: int, processes: int, seeded: int, first_client: int = 0) -> dict:
    "Run ``clients`` clients at once over ``processes`` processes; every call's timing, the writes acknowledged, the wall time."
    processes = max(1, min(processes, clients))
    groups = [[first_client + c for c in range(clients) if c % processes == p] for p in range(processes)]
    start_at = time.time() + 3.0  # time to import fastmcp in each process
    # spawned, not forked: the parent runs threads (the hub's output, the lag sampler)
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = [f.result() for f in [pool.submit(client_process, url, token, group, calls, seeded, start_at) for group in groups]]
    results = [r for d in done for r in d["results"]]
    timings = [t for r in results for t in r["timings"]]
    return {
        "timings": [(kind, ms) for kind, ms, _, _ in timings],
        "acknowledged": [a for r in results for a in r["acknowledged"]],
        "errors": [e for r in results for e in r["errors"]],
        # from the first call's start to the last call's end: the sessions' handshakes are not counted
        "seconds": max(t[3] for t in timings) - min(t[2] for t in timings),
        "ended": max(t[3] for t in timings),
        "client_cpu": sum(d["cpu"] for d in done),
    }


# the hub and its replica


@contextlib.contextmanager
def s3_replica():
    "moto's S3-compatible server on loopback with a bucket; the replica's URL and options."
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment(S3_ENV))
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).read()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"],
                     aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket="hub")
        yield "s3://hub/team/memory", ["--endpoint", endpoint], S3_ENV
    finally:
        server.terminate()
        server.wait(timeout=10)


class Hub:
    "``serve --replicate-to`` in a subprocess, its stderr kept."

    def __init__(self, db: pathlib.Path, url: str, options: list[str], env: dict):
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "datasette_memory", "serve", "--db", str(db), "--port", str(self.port),
             "--replicate-to", url, *options], env=environment(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(line.rstrip() for line in self.process.stderr), daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 180
        while not any("Uvicorn running" in line for line in self.lines):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("serve did not start:\n" + "\n".join(self.lines))
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{self.port}/-/memory/mcp"

    def cpu_seconds(self) -> dict:
        "CPU seconds (user and system) used so far by the server and by its Litestream."
        tick = os.sysconf("SC_CLK_TCK")

        def used(pid: int) -> float:
            fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        children = [int(c) for task in pathlib.Path(f"/proc/{self.process.pid}/task").iterdir()
                    for c in (task / "children").read_text().split()]
        return {"serve": used(self.process.pid), "litestream": sum(used(c) for c in children)}

    def stop(self) -> str:
        "SIGTERM, and the last line replication said."
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)
        self.reader.join(timeout=10)
        return next((line for line in reversed(self.lines) if line.startswith("Replication stopped")), "")


def ledger_head(path: pathlib.Path) -> tuple[int, str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone() or (0, "")
    finally:
        conn.close()


class ReplicaReader:
    "The replica's newest copy, restored with the real Litestream into a private folder."

    def __init__(self, url: str, options: list[str], env: dict):
        from datasette_memory.replication import Litestream, ReplicaTarget

        endpoint = options[1] if options else None
        self.target = ReplicaTarget.parse(url, endpoint=endpoint, region=env.get("AWS_REGION"))
        self.litestream = Litestream.find(environment(env))

    def head(self) -> tuple[tuple[int, str], float]:
        "The ledger head of the replica's newest copy, and the seconds the restore took."
        from datasette_memory.replication.litestream import private_folder
        from datasette_memory.replication.replica_copies import Replica

        started = time.perf_counter()
        with private_folder() as folder:
            copy = Replica(self.litestream, self.target, folder).newest()
        return ((copy.event_id, copy.event_hash) if copy else (0, "")), time.perf_counter() - started


def sample_lag(reader: ReplicaReader, db: pathlib.Path, stop: threading.Event, samples: list, every: float = 5.0) -> None:
    "While the clients run: how many events the replica's newest copy is behind the file (at most), every few seconds."
    while not stop.wait(every):
        replica, took = reader.head()
        primary = ledger_head(db)[0]  # read after the restore: "behind" is an upper bound
        samples.append({"behind": primary - replica[0], "restore_s": took})


def wait_for_replica(reader: ReplicaReader, head: tuple[int, str], since: float, timeout: float = 120) -> dict:
    "Restore until the replica holds ``head``: seconds after ``since`` (the last acknowledged write), restore included."
    tries = 0
    while True:
        tries += 1
        found, took = reader.head()
        if found == head:
            return {"lag_s": time.time() - since, "restore_s": took, "restores": tries}
        if time.time() - since > timeout:
            return {"lag_s": None, "restore_s": took, "restores": tries, "replica_head": found[0]}


# the checks


def lost_writes(db: pathlib.Path, acknowledged: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    "Every acknowledged write that is not in the file."
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        held = set(conn.execute("SELECT e.name, o.content FROM observations o JOIN entities e ON e.id = o.entity_id"))
    finally:
        conn.close()
    return [write for write in acknowledged if (write[1], write[2]) not in held]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))] if ordered else float("nan")


def summary(run: dict) -> dict:
    "p50 and p99 per kind (ms), and calls per second."
    by_kind = {kind: [ms for k, ms in run["timings"] if k == kind] for kind in KINDS}
    return {
        "calls": len(run["timings"]),
        "seconds": run["seconds"],
        "throughput": len(run["timings"]) / run["seconds"],
        "kinds": {kind: {"calls": len(v), "p50": percentile(v, 0.5), "p99": percentile(v, 0.99),
                         "mean": statistics.fmean(v) if v else float("nan")} for kind, v in by_kind.items()},
        "client_cpu": run["client_cpu"],
        "errors": run["errors"][:5],
        "error_count": len(run["errors"]),
    }


def load() -> str:
    "The load average (1, 5 and 15 minutes), as uptime prints it."
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def run(clients: int = 16, calls: int = 500, processes: int = 4, seeded: int = 300, replica: str = "folder",
        folder: pathlib.Path | None = None, single: bool = True, sample_every: float = 10.0) -> dict:
    """
    The whole measurement (see the module); everything it found, as a dict.

    :param single: also run one client alone first, for the ratio
    """
    with contextlib.ExitStack() as stack:
        tmp = folder or pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hub-load-")))
        db = tmp / "memory.db"
        seed(db, seeded)
        if replica == "s3":
            url, options, env = stack.enter_context(s3_replica())
        else:
            url, options, env = f"file://{tmp / 'replica'}", [], {}
        token = command("create-token", "bench-agent", "--db", str(db))
        reader = ReplicaReader(url, options, env)
        load_before = load()
        hub = Hub(db, url, options, env)
        try:
            warm_up = drive(hub.url, token, 1, 20, 1, seeded, first_client=99)  # the server's first calls, not measured
            cpu = [hub.cpu_seconds()]
            alone = drive(hub.url, token, 1, calls, 1, seeded, first_client=100) if single else None
            cpu.append(hub.cpu_seconds())
            samples: list = []
            stop = threading.Event()
            sampler = threading.Thread(target=sample_lag, args=(reader, db, stop, samples, sample_every), daemon=True)
            sampler.start()
            together = drive(hub.url, token, clients, calls, processes, seeded)
            cpu.append(hub.cpu_seconds())
            stop.set()
            sampler.join()
            head = ledger_head(db)
            lag = wait_for_replica(reader, head, together["ended"])
        finally:
            stopped = hub.stop()
        load_after = load()
        from datasette_memory.history.file_check import verify_file

        started = time.perf_counter()
        verified = verify_file(db)
        verify_s = time.perf_counter() - started
        acknowledged = warm_up["acknowledged"] + (alone["acknowledged"] if alone else []) + together["acknowledged"]
        spent = [{k: after[k] - before[k] for k in after} for before, after in zip(cpu, cpu[1:])]
        return {
            "cpu": {"alone": spent[0] if single else None, "together": spent[1]},
            "clients": clients, "calls_per_client": calls, "processes": processes, "seeded": seeded, "replica": replica,
            "alone": summary(alone) if alone else None,
            "together": summary(together),
            "acknowledged_writes": len(acknowledged),
            "lost_writes": lost_writes(db, acknowledged),
            "verify_ok": verified["ok"],
            "verify_s": verify_s,
            "events": head[0],
            "primary_head": list(head),
            "lag_at_end": lag,
            "lag_during": samples,
            "replication_stopped": stopped,
            "hub_lines": [line for line in hub.lines if line.startswith(("Replica", "Litestream", "Verified", "Witness"))],
            "load_before": load_before, "load_after": load_after,
        }


def print_report(found: dict) -> None:
    alone, together = found["alone"], found["together"]
    print(f"load average before: {found['load_before']}, after: {found['load_after']}")
    print(f"{found['clients']} clients x {found['calls_per_client']} calls ({found['processes']} client processes), "
          f"{found['seeded']} entities seeded, replica: {found['replica']}; {found['events']} events at the end\n")
    print("| call kind | 1 client p50 (ms) | 1 client p99 (ms) | "
          f"{found['clients']} clients p50 (ms) | {found['clients']} clients p99 (ms) |")
    print("|---|---:|---:|---:|---:|")
    for kind in KINDS:
        one = alone["kinds"][kind] if alone else {"p50": float("nan"), "p99": float("nan")}
        many = together["kinds"][kind]
        print(f"| {kind} | {one['p50']:.1f} | {one['p99']:.1f} | {many['p50']:.1f} | {many['p99']:.1f} |")
    if alone:
        print(f"\nthroughput: 1 client {alone['throughput']:.1f} calls/s ({alone['calls']} calls in {alone['seconds']:.1f} s); "
              f"{found['clients']} clients {together['throughput']:.1f} calls/s ({together['calls']} calls in "
              f"{together['seconds']:.1f} s); ratio {together['throughput'] / alone['throughput']:.2f}x")
    for phase, run_ in (("1 client", alone), (f"{found['clients']} clients", together)):
        spent = found["cpu"]["alone" if run_ is alone else "together"]
        if spent and run_:
            print(f"CPU while {phase} ran: serve {spent['serve']:.1f} s ({spent['serve'] / run_['seconds']:.2f} of a core), "
                  f"Litestream {spent['litestream']:.1f} s ({spent['litestream'] / run_['seconds']:.2f} of a core), "
                  f"the clients {run_['client_cpu']:.1f} s ({run_['client_cpu'] / run_['seconds']:.2f} of a core)")
    print(f"errors: {(alone or {}).get('error_count', 0) + together['error_count']} {together['errors']}")
    print(f"acknowledged writes: {found['acknowledged_writes']}, lost: {len(found['lost_writes'])}")
    print(f"full verify after the run: {'ok' if found['verify_ok'] else 'FAILED'} ({found['verify_s']:.1f} s)")
    lag = found["lag_at_end"]
    print(f"replication lag at the end: the replica held the file's head {lag['lag_s']:.2f} s after the last acknowledged "
          f"write (a restore of {lag['restore_s']:.2f} s included, {lag['restores']} restore(s))"
          if lag["lag_s"] is not None else f"replication lag at the end: NOT CAUGHT UP ({lag})")
    if found["lag_during"]:
        behind = [s["behind"] for s in found["lag_during"]]
        print(f"lag while the clients ran ({len(behind)} restores): events behind max {max(behind)}, median "
              f"{statistics.median(behind)} (each restore took {statistics.median(s['restore_s'] for s in found['lag_during']):.2f} s)")
    print(found["replication_stopped"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--processes", type=int, default=4, help="client processes the clients are spread over")
    parser.add_argument("--seed", type=int, default=300, help="entities in the graph before the clients start")
    parser.add_argument("--replica", choices=["folder", "s3"], default="folder")
    parser.add_argument("--json", action="store_true", help="print everything measured as JSON too")
    arguments = parser.parse_args()
    found = run(arguments.clients, arguments.calls, arguments.processes, arguments.seed, arguments.replica)
    print_report(found)
    if arguments.json:
        print(json.dumps(found, indent=2, default=str))


if __name__ == "__main__":
    main()
