"""What a stdio MCP server on a full disk writes to stderr: N failing writes, the bytes and tracebacks they log.

The server runs as an agent starts it (``python -m datasette_memory mcp``), in a
mount namespace of its own (``unshare --mount``, as root) whose 2 MB tmpfs holds
a new memory file (made beforehand by the code under test) and is filled but for 256 KB. Writes go on until N have
failed; the script prints how many failed, how long they took, and the size of
the server's stderr. ``--source`` runs another checkout's code, such as an
older commit's (``git archive <commit> | tar -x -C /tmp/old``), for comparison.

    python bench/full_disk_log.py [--calls 3000] [--source DIR]
"""

import argparse
import asyncio
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

ROOT = pathlib.Path(__file__).parent.parent


def server_command(disk: pathlib.Path, template: pathlib.Path) -> list[str]:
    "The shell command mounting the tmpfs, copying ``template`` in and filling the rest, then starting the server."
    q = shlex.quote
    script = "\n".join([
        f"mount -t tmpfs -o size=2M tmpfs {q(str(disk))}",
        f"cp {q(str(template))} {q(str(disk / 'memory.db'))}",
        f"free=$(df -k --output=avail {q(str(disk))} | tail -1)",
        f"dd if=/dev/zero of={q(str(disk / 'filler'))} bs=1k count=$((free - 256)) 2>/dev/null",
        f"exec {q(sys.executable)} -m datasette_memory mcp --db {q(str(disk / 'memory.db'))}",
    ])
    return ["unshare", "--mount", "sh", "-c", script]


async def fail_writes(calls: int, source: pathlib.Path, folder: pathlib.Path) -> dict[str, float]:
    "Write until ``calls`` writes have failed: ``{written, failed, seconds, stderr_bytes, tracebacks}``."
    disk, log, template = folder / "disk", folder / "stderr.txt", folder / "memory.db"
    disk.mkdir()
    env = {**os.environ, "PYTHONPATH": str(source), "DATASETTE_MEMORY_NO_VECTORS": "1"}
    made = "import sys; from datasette_memory import Memory; Memory.open(sys.argv[1]).close()"
    subprocess.run([sys.executable, "-c", made, str(template)], env=env, cwd=source, check=True)
    command = server_command(disk, template)
    written = failed = 0
    with open(log, "w") as stderr:
        transport = StdioTransport(command[0], command[1:], env=env, cwd=str(source), keep_alive=False, log_file=stderr)
        async with Client(transport) as client:
            start = time.monotonic()
            while failed < calls:
                entity = {"name": f"e{written + failed}", "entityType": "t", "observations": ["x" * 2000]}
                result = await client.call_tool("create_entities", {"entities": [entity]}, raise_on_error=False)
                failed += result.is_error
                written += not result.is_error
            seconds = time.monotonic() - start
    text = log.read_text()
    return {"written": written, "failed": failed, "seconds": seconds, "stderr_bytes": len(text.encode()),
            "tracebacks": text.count("Traceback")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="how many failing writes to make")
    parser.add_argument("--source", type=pathlib.Path, default=ROOT, help="the checkout whose code the server runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        found = asyncio.run(fail_writes(args.calls, args.source.resolve(), pathlib.Path(folder)))
    print(f"{found['failed']:,} failing writes (after {found['written']} that fit) in {found['seconds']:.1f} s: "
          f"{found['stderr_bytes']:,} bytes of stderr, {found['tracebacks']:,} tracebacks")


if __name__ == "__main__":
    main()
