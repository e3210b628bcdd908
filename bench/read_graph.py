"""read_graph and open_nodes timed server-side: datasette-memory's mcp and the official memory server, side by side.

Both servers read the same graph (N entities of 5 observations each, one relation
per entity): the official server's JSONL file is written directly, and ours is
made from it with 'datasette-memory import'. Each server is spawned over stdio
and spoken to in raw JSON-RPC lines: after the initialize handshake, a call is
timed from writing its request line to the arrival of the reply's newline, so
no client library's parsing is counted. For each tool at each size a fresh
process of each server answers the same calls, the two taking turns call by
call; then its peak RSS (VmHWM) is read from /proc, with the CPU time (user and
system, every thread) its calls took. The first call is shown apart, as it
also pays for what a server loads on first use: the median, minimum, CPU and
ratio are of the calls after it. The two servers' first results of each tool
must be the same text and structured content, or the run stops.

    python bench/read_graph.py [--sizes 10000,100000] [--calls 6] [--names 1,20] [--data DIR]

--data keeps the generated files in DIR and reuses them on the next run.
The official server comes from tests/official (run 'npm ci --prefix tests/official').
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).parent.parent
OFFICIAL = ROOT / "tests" / "official" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "FASTMCP_LOG_LEVEL": "WARNING", "DATASETTE_MEMORY_NO_VECTORS": "1"}
SERVERS = ("datasette-memory", "official")


def entity(i: int) -> dict:
    return {
        "type": "entity",
        "name": f"svc-{i:06d}",
        "entityType": ("service", "person", "decision", "bug", "convention")[i % 5],
        "observations": [
            f"svc-{i:06d} listens on port {10000 + i}",
            f"owned by team {i % 97}",
            f"deployed with blue-green rollout, region {i % 7}",
            f"depends on svc-{i + 1:06d} for auth",
            f"last incident ticket INC-{i * 3}",
        ],
    }


def relation(i: int, size: int) -> dict:
    return {"type": "relation", "from": f"svc-{i:06d}", "to": f"svc-{(i + 1) % size:06d}", "relationType": "depends on"}


def prepare(data: pathlib.Path, size: int) -> tuple[pathlib.Path, pathlib.Path]:
    "The official server's JSONL file and our memory file holding the same graph, made once."
    jsonl, db = data / f"official-{size}.jsonl", data / f"ours-{size}.db"
    if not jsonl.exists():
        lines = [json.dumps(entity(i)) for i in range(size)] + [json.dumps(relation(i, size)) for i in range(size)]
        jsonl.write_text("\n".join(lines))
    if not db.exists():
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "datasette_memory", "import", str(jsonl), "--db", str(db)],
            env=ENV, check=True, stdout=subprocess.DEVNULL,
        )
        print(f"  imported {size:,} entities in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return jsonl, db


class RawServer:
    """An MCP server over stdio, spoken to one JSON-RPC line at a time."""

    def __init__(self, command: list[str], env: dict[str, str]):
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0
        )
        self.fd = self.process.stdout.fileno()
        self.pending = bytearray()
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    def reply(self) -> bytes:
        "The next whole line the server writes."
        searched = 0
        while (end := self.pending.find(b"\n", searched)) < 0:
            searched = len(self.pending)
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            self.pending += chunk
        line = bytes(self.pending[:end])
        del self.pending[: end + 1]
        return line

    def request(self, method: str, params: dict) -> tuple[float, bytes]:
        "Send one request; the seconds until its whole reply arrived, and the reply."
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode() + b"\n"
        start = time.perf_counter()
        self.process.stdin.write(line)
        reply = self.reply()
        return time.perf_counter() - start, reply

    def call(self, tool: str, arguments: dict) -> tuple[float, bytes]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def cpu_seconds(self) -> float:
        "The CPU time the process has used so far, user and system (all its threads)."
        fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mb(self) -> float:
        "The process's peak resident set so far (VmHWM), in MB."
        for line in pathlib.Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM in /proc")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def start(server: str, jsonl: pathlib.Path, db: pathlib.Path) -> RawServer:
    if server == "official":
        return RawServer(["node", str(OFFICIAL)], {**os.environ, "MEMORY_FILE_PATH": str(jsonl)})
    return RawServer([sys.executable, "-m", "datasette_memory", "mcp", "--db", str(db)], ENV)


def result_of(reply: bytes) -> dict:
    message = json.loads(reply)
    if "result" not in message or message["result"].get("isError"):
        raise RuntimeError(f"the call failed: {reply[:300]!r}")
    return message["result"]


def run_tool(servers: tuple[str, ...], files: tuple[pathlib.Path, pathlib.Path], calls: list[tuple[str, dict]]) -> dict:
    """
    Time ``calls`` on a fresh process of each server, taking turns call by call
    (so a change in the machine's load falls on both alike); for each server the
    seconds of each call, the bytes of the first reply, the peak RSS and the first result.
    """
    processes = {server: start(server, *files) for server in servers}
    try:
        results = {server: {"times": [], "cpu": [], "bytes": 0, "result": None} for server in servers}
        for tool, arguments in calls:
            for server, process in processes.items():
                cpu = process.cpu_seconds()
                seconds, reply = process.call(tool, arguments)
                results[server]["times"].append(seconds)
                results[server]["cpu"].append(process.cpu_seconds() - cpu)
                if results[server]["result"] is None:
                    results[server].update(bytes=len(reply), result=result_of(reply))
        for server, process in processes.items():
            results[server]["peak_mb"] = process.peak_rss_mb()
        return results
    finally:
        for process in processes.values():
            process.close()


def compare(size: int, ours: dict, official: dict, tool: str) -> None:
    "The two servers' results must be the same text and the same structured content."
    if ours["content"] != official["content"] or ours["structuredContent"] != official["structuredContent"]:
        raise SystemExit(f"{tool} at {size:,} entities: datasette-memory's result differs from the official server's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--calls", type=int, default=6, help="timed calls per tool and size, the first included")
    parser.add_argument("--names", default="1,20", help="how many names each open_nodes call asks for")
    parser.add_argument("--data", help="a folder to keep the generated files in, and reuse")
    parser.add_argument("--only", choices=SERVERS, help="run one server (for profiling)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = pathlib.Path(args.data or tmp)
        data.mkdir(parents=True, exist_ok=True)
        for size in (int(s) for s in args.sizes.split(",")):
            files = prepare(data, size)
            tools = {"read_graph": [("read_graph", {})] * args.calls}
            for count in (int(n) for n in args.names.split(",")):
                picks = [[f"svc-{(c * 7919 + k * 104729) % size:06d}" for k in range(count)] for c in range(args.calls)]
                tools[f"open_nodes ({count})"] = [("open_nodes", {"names": names}) for names in picks]
            for tool, calls in tools.items():
                results = run_tool(SERVERS if not args.only else (args.only,), files, calls)
                for server, result in results.items():
                    print(f"  {size:>7,} {tool}: {server} {timings(result['times'])}", file=sys.stderr)
                if not args.only:
                    compare(size, results["datasette-memory"]["result"], results["official"]["result"], tool)
                rows.append((size, tool, results))
    names = SERVERS if not args.only else (args.only,)
    print("| entities | tool | reply: " + " / ".join(names) + " | " + " | ".join(f"{n}: first, then median (min)" for n in names) + " | "
          + " | ".join(f"{n}: CPU per call" for n in names) + " | "
          + " | ".join(f"{n}: peak RSS" for n in names) + (" | official / ours, median |" if not args.only else " |"))
    print("|---:|---|---:|" + "---:|" * (3 * len(names)) + ("---:|" if not args.only else ""))
    for size, tool, results in rows:
        cells = [f"{size:,}", tool, " / ".join(f"{results[n]['bytes'] / 1e6:.2f}" for n in names) + " MB"]
        cells += [timings(results[n]["times"]) for n in names]
        cells += [f"{statistics.mean(results[n]['cpu'][1:] or results[n]['cpu']) * 1000:,.0f} ms" for n in names]
        cells += [f"{results[n]['peak_mb']:.0f} MB" for n in names]
        if not args.only:
            ratio = later(results["official"]["times"]) / later(results["datasette-memory"]["times"])
            cells.append(f"{ratio:.2f}x")
        print("| " + " | ".join(cells) + " |")


def later(times: list[float]) -> float:
    "The median of the calls after the first (a server's first call also pays for what it loads lazily)."
    return statistics.median(times[1:] or times)


def timings(times: list[float]) -> str:
    rest = times[1:] or times
    return f"{times[0] * 1000:,.0f} ms, then {later(times) * 1000:,.1f} ms ({min(rest) * 1000:,.1f})"


if __name__ == "__main__":
    main()
