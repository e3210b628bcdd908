"""Real OS processes writing to one memory file at once."""

import multiprocessing

import pytest

from datasette_memory import Memory

PROCESSES = 8
MUTATIONS = 250  # each process's: a creation, then an observation on it, and so on
# the quick size (even, so every creation has its observation) runs everywhere; the full one is marked large
SIZES = [24, pytest.param(MUTATIONS, marks=pytest.mark.large)]


def write_many(path, worker, barrier, errors, mutations=MUTATIONS):
    try:
        barrier.wait()
        memory = Memory.open(path, actor=f"worker-{worker}", session=str(worker))
        for i in range(mutations):
            if i % 2 == 0:
                memory.create_entities([{"name": f"w{worker}-{i}", "entityType": "t", "observations": []}])
            else:
                memory.add_observations([{"entityName": f"w{worker}-{i - 1}", "contents": [f"obs {i}"]}])
        memory.close()
    except BaseException:  # reported to the parent, which fails the test
        import traceback

        errors.put(f"worker {worker}: {traceback.format_exc()}")


@pytest.mark.parametrize("mutations", SIZES)
def test_eight_processes_lose_nothing(tmp_path, mutations):
    path = str(tmp_path / "memory.db")  # fresh: the processes race to create and migrate it
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    errors = context.Queue()
    workers = [
        context.Process(target=write_many, args=(path, w, barrier, errors, mutations)) for w in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    reported = []
    while not errors.empty():
        reported.append(errors.get())
    assert reported == []
    assert [w.exitcode for w in workers] == [0] * PROCESSES

    memory = Memory.open(path)
    graph = memory.read_graph()
    assert len(graph["entities"]) == PROCESSES * mutations // 2
    assert sum(len(e["observations"]) for e in graph["entities"]) == PROCESSES * mutations // 2
    status = memory.verify_chain()
    assert status.ok and status.events == PROCESSES * mutations
    clocks = memory.conn.execute("SELECT count(DISTINCT clock), count(DISTINCT actor) FROM events").fetchone()
    assert clocks == (PROCESSES * mutations, PROCESSES)
