"""Search at scale: search_nodes and search_memory over 100,000 entities, beside raw FTS5 and the official server.

Builds a memory file through the core API (``Memory.open`` with semantic search
off, so no vectors are embedded): one project of 100,000 entities named like
``billing-worker-0421`` and typed by their role (service, job, database, queue),
created 500 per call with 5 observations each, then one ``depends on`` relation
each, 1,000 per call. The observations come from 17 sentence templates whose
slots are drawn, seeded, with Zipf frequencies from pools of teams,
technologies, domain nouns, people and 20,000 made-up jargon words, plus
numbers and ticket ids: a few words ("service", "team", "data", "runs") are in
most entities, many in some, most in a handful. The same entities and relations
are written to a ``memory.jsonl`` for the official server. A second file holds
10 observations per entity (1,000,000 observations). Both are cached under
``/tmp/datasette-memory-search-scale/``, keyed by the parameters and the newest
migration (``--rebuild`` builds them again).

Five kinds of query, drawn from the data with the seed:

- keyword: an entity's name, or one or two of its words (not numbers) that are
  in at most 1% of the observations;
- question: the question one of an entity's observations answers, 2 to 6 content
  words ("how often does the invoice job run for the payments team?");
- question, 2 common words ("who writes the reports?") and question, 4 common
  words ("which service handles requests for the team?");
- abstention: the same questions about things memory does not hold ("how often
  does the flamingo job run for the walrus team?").

Each query is timed, p50 and p95 in milliseconds, and a last table says what
``search_memory`` answered per kind: the share of queries with a match, the share
whose source entity (the one a keyword or question was drawn from) is in the top
5, and matches per query. Timed:

1. in-process: ``Memory.search_nodes(query)`` and ``Memory.search_memory(query)``;
2. raw FTS5 on the same file, the floor a hand-written SQLite search would give:
   ``SELECT rowid, bm25(observations_fts) FROM observations_fts WHERE
   observations_fts MATCH ? ORDER BY rank LIMIT 10``, the query's content words
   (its question words dropped) quoted and OR-ed, then AND-ed;
3. over MCP stdio, driven by fastmcp's Client: our server (``python -m
   datasette_memory mcp --db FILE --project bench``, no vectors) calling
   search_nodes and search_memory with the first ``--stdio-calls`` queries of each
   kind; and the official server on memory.jsonl calling search_nodes with the
   first ``--official-calls``: it reads the whole file on every call, so each call
   is given up after 120 s and the rest are skipped, as the table says.

The calls of one query take turns (in-process and raw FTS5), so a change of
load hits them alike; each door answers one untimed call first. One table per
file; its last two columns are the row's p50 over raw FTS5's p50, OR-ed and
AND-ed, on the same queries.

    python bench/search_scale.py [--entities 100000] [--observations-per-entity 5,10] [--queries 50]
        [--stdio-calls 20] [--official-calls 5] [--no-official] [--rebuild] [--seed 2025]

``--entities 1000,3000,100000`` builds a file for each size (the same generator, so
the same kinds of text and query) and ends with a table of in-process
``search_memory`` times per query kind at each size, beside the largest: a small
project should be no slower than a big one.

The official server comes from tests/official (run 'npm ci --prefix tests/official').
To time one commit while the working tree changes, put its tree first on the path:
``git archive HEAD datasette_memory mcp_bridge | tar -x -C /tmp/head`` and run with
``PYTHONPATH=/tmp/head`` (our server inherits the path).
"""

import argparse
import asyncio
import itertools
import json
import pathlib
import random
import re
import shutil
import sqlite3
import string
import sys
import tempfile
from typing import NamedTuple

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from ledger import CONFIG, CREATE_BATCH, load, log, timed
from mcp_latency import ENV, OFFICIAL, p, timed as timed_call

from datasette_memory import Memory

CACHE = pathlib.Path(tempfile.gettempdir()) / "datasette-memory-search-scale"
DATA_VERSION = 1  # part of the cache key: change it when the text below changes
PROJECT = "bench"
RELATION_BATCH = 1000
KEYWORD_SHARE = 0.01  # a keyword is in at most this share of the observations
OFFICIAL_TIMEOUT = 120
KINDS = ("keyword", "question", "question, 2 common words", "question, 4 common words", "abstention")

# The vocabulary, most frequent first within each pool
COMPONENTS = """billing auth search payments ledger inventory shipping checkout notifications reporting analytics
    gateway profile catalog pricing fraud identity email sms export import scheduler audit metrics storage media
    upload recommendations orders refunds invoices subscriptions onboarding support feedback sessions tokens
    loyalty tax geo""".split()
ROLES = {"worker": "job", "api": "service", "service": "service", "cron": "job", "db": "database", "queue": "queue",
         "proxy": "service", "web": "service", "consumer": "job", "producer": "job", "sync": "job", "indexer": "job"}
TEAMS = """platform payments growth data infra security mobile web search billing identity checkout ops reliability
    analytics marketing finance support fulfilment risk catalog pricing partners compliance storage media
    messaging ml frontend devex""".split()
TECH = """postgres redis kafka s3 elasticsearch rabbitmq grpc graphql terraform nginx envoy sqs sns dynamodb
    bigquery snowflake airflow celery sidekiq memcached cassandra mongodb clickhouse prometheus grafana sentry
    datadog pagerduty vault consul nomad spark flink beam dbt looker stripe twilio sendgrid okta auth0 cloudflare
    fastly varnish haproxy minio etcd zookeeper nats pulsar temporal argo jenkins buildkite circleci github
    gitlab bazel""".split()
NOUNS = """invoice payment order user account session token refund receipt webhook event report export email
    notification subscription plan price discount coupon cart checkout shipment address profile search index
    query cache queue message batch upload image thumbnail video transcript document contract customer merchant
    partner tenant workspace project ticket comment review rating feed recommendation audit log metric trace
    alert incident deploy release migration schema backup snapshot replica shard partition cluster node
    certificate secret key password permission role group policy quota limit usage billing balance ledger
    transfer payout dispute chargeback fraud score risk identity verification signup login logout password
    reset invite onboarding trial renewal cancellation upgrade downgrade tax currency exchange rate country
    region timezone locale translation template layout widget dashboard chart filter facet sort page cursor
    offset retry timeout backoff deadline heartbeat lease lock mutex job task worker scheduler cron pipeline
    stream topic consumer producer offset checkpoint watermark window aggregate rollup digest summary""".split()
FIRST_NAMES = """alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil
    trent victor walter yasmin zoe amir bea chen dara eli farah goran hana iker jin kofi lena mateo nadia omar
    priya quinn rosa sami tomas uma""".split()
REGIONS = "us-east-1 eu-west-1 us-west-2 eu-central-1 ap-southeast-1 ap-northeast-1 sa-east-1 ca-central-1".split()
NUMBERS = [5, 10, 15, 30, 60, 3, 2, 100, 500, 1000, 20, 45, 90, 7, 12, 250, 4, 8, 25, 50]
CONFIG_KEYS = ["timeout", "limit", "retries", "batch_size", "ttl", "max_connections", "interval"]
# (observation, the question it answers); {me} is the entity itself
TEMPLATES = [
    ("{me} runs the {noun} job every {n} minutes for the {team} team", "how often does the {noun} job run for the {team} team?"),
    ("{me} uses {tech} to store {noun} data", "where does {me} store {noun} data?"),
    ("owned by the {team} team; on-call is {person}", "who is on call for {me}?"),
    ("{me} is the {noun} service for the {team} team and handles {noun2} requests",
     "which service handles {noun2} requests for the {team} team?"),
    ("{me} depends on {other} for {noun} data", "what does {me} depend on for {noun} data?"),
    ("deployed to {region} with {tech}, behind the {component} gateway", "where is {me} deployed?"),
    ("incident {ticket}: {me} dropped {noun} requests when {tech} was slow", "why did {noun} requests fail when {tech} was slow?"),
    ("config {ident} defaults to {n}; raise it when the {noun} queue backs up", "what does {ident} default to?"),
    ("{person} decided to move {noun} data from {tech} to {tech2}", "why did we move {noun} data off {tech}?"),
    ("the {jargon} {noun} is computed nightly by the {component} service", "when is the {jargon} {noun} computed?"),
    ("{me} sends {noun} events to {other} over {tech}", "which service sends {noun} events over {tech}?"),
    ("logs {noun} errors to {tech}; alerts go to the {team} team channel", "where do {noun} errors get logged?"),
    ("the {jargon} module of {me} retries {noun} calls {n} times", "how many times does the {jargon} module retry?"),
    ("convention: {noun} ids are {jargon} strings, never integers", "what format are {noun} ids stored in?"),
    ("{me} reads {noun} data from {tech} and writes {noun2} reports", "which job writes {noun2} reports from {tech} data?"),
    ("known issue: {jargon} {jargon2} breaks when {noun} data is missing", "what breaks when {noun} data is missing?"),
    ("the {team} team runs {me} as a {noun} service with {tech}", "which team runs {me}?"),
]
# Questions made of common words only: {a} does something ({v}: "handle", "handles" as {v}s) to {o}
COMMON_ACTORS = ["service", "team", "job"]
COMMON_OBJECTS = ["data", "requests", "events", "errors", "reports"]
COMMON_VERBS = ["handle", "send", "write", "read", "store"]
TWO_COMMON = ["who {v}s the {o1}?", "where is the {a1} {o1}?", "how often does the {a1} run?", "what {v}s the {o1}?"]
FOUR_COMMON = ["which {a1} {v}s {o1} for the {a2}?", "what {o1} does the {a1} {v} for the {a2}?",
               "which {a1} {v}s the {o1} and {o2}?", "does the {a1} {v} {o1} or {o2}?"]
# Never in the data (checked after the build): what abstention questions ask about
ABSENT = """flamingo walrus giraffe saxophone tulip volcano glacier mango harpsichord meteorite cathedral origami
    pelican lagoon accordion cactus narwhal papyrus trombone avalanche marmalade tapestry chameleon obelisk
    gondola porcupine xylophone quokka igloo tambourine""".split()
# A question's wording, dropped from raw FTS5's words as a hand-written search would
QUESTION_WORDS = set("a an and are be by did do does for from get how in is it many of off often on or should the to we "
                     "what when where which who why with".split())


class Query(NamedTuple):
    text: str
    words: list[str]
    source: str | None = None  # the entity it was drawn from, which answers it


def words(text: str) -> list[str]:
    "The content words of ``text`` as FTS5 splits them, question words dropped, once each."
    return list(dict.fromkeys(w for w in re.findall(r"[^\W_]+", text.lower()) if w not in QUESTION_WORDS))


def quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def slots(template: str) -> list[str]:
    return [field for _, field, _, _ in string.Formatter().parse(template) if field]


class Zipf:
    "Draw from ``words`` with Zipf frequencies: the k-th in proportion to 1 / k ** exponent."

    def __init__(self, words: list[str], exponent: float = 1.0):
        self.words = words
        self.cumulative = list(itertools.accumulate(1 / k ** exponent for k in range(1, len(words) + 1)))

    def __call__(self, rng: random.Random) -> str:
        return rng.choices(self.words, cum_weights=self.cumulative)[0]


def made_up_words(count: int, rng: random.Random, taken: set[str]) -> list[str]:
    "``count`` pronounceable words of two or three syllables, none of them in ``taken``."
    onsets = "b c d f g k l m n p r s t v z br dr gr kr pl st tr".split()
    vowels = "a e i o u ai ea io".split()
    found: dict[str, None] = {}  # a dict, not a set: its order is the same in every run
    while len(found) < count:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(2, 3))) + rng.choice("  nrslmx").strip()
        if word not in taken:
            found[word] = None
    return list(found)


class Corpus:
    "The text of every entity, from the seed: the same parameters give the same file."

    def __init__(self, entities: int, per_entity: int, seed: int):
        self.entities, self.per_entity, self.seed = entities, per_entity, seed
        rng = random.Random(f"{seed}:vocabulary")
        taken = set(COMPONENTS + TEAMS + TECH + NOUNS + FIRST_NAMES + ABSENT + COMMON_ACTORS + COMMON_OBJECTS) | QUESTION_WORDS
        jargon = made_up_words(20_000, rng, taken)
        surnames = made_up_words(2_000, rng, taken | set(jargon))
        people = [f"{rng.choice(FIRST_NAMES)} {surname}" for surname in surnames]
        self.pools = {"team": Zipf(TEAMS), "tech": Zipf(TECH), "noun": Zipf(NOUNS), "jargon": Zipf(jargon, 1.05),
                      "person": Zipf(people), "component": Zipf(COMPONENTS), "region": Zipf(REGIONS),
                      "n": Zipf([str(n) for n in NUMBERS]), "key": Zipf(CONFIG_KEYS)}

    def shape(self, i: int) -> tuple[str, str]:
        "Entity ``i``'s component and role, spread evenly."
        h = (i * 2654435761 + self.seed) % 2**32
        return COMPONENTS[h % len(COMPONENTS)], list(ROLES)[(h >> 8) % len(ROLES)]

    def name(self, i: int) -> str:
        component, role = self.shape(i)
        return f"{component}-{role}-{i:04d}"

    def other(self, i: int) -> int:
        "The entity ``i`` depends on."
        return (i * 7919 + 1 + self.seed) % self.entities if self.entities > 1 else i

    def draw(self, slot: str, i: int, rng: random.Random) -> str:
        base = slot.rstrip("2")
        if base == "me":
            return self.name(i)
        if base == "other":
            return self.name(self.other(i))
        if base == "ticket":
            return f"INC-{rng.randint(1000, 99999)}"
        if base == "ident":
            return f"{self.pools['noun'](rng)}_{self.pools['jargon'](rng)}_{self.pools['key'](rng)}"
        return self.pools[base](rng)

    def filled(self, i: int) -> list[tuple[int, dict[str, str]]]:
        "Entity ``i``'s observations as ``(template number, slot values)``."
        rng = random.Random(f"{self.seed}:{i}")
        found: dict[str, tuple[int, dict[str, str]]] = {}  # observation: how it was made
        while len(found) < self.per_entity:
            number = rng.randrange(len(TEMPLATES))
            values = {slot: self.draw(slot, i, rng) for slot in slots(TEMPLATES[number][0])}
            found.setdefault(TEMPLATES[number][0].format(**values), (number, values))
        return list(found.values())

    def entity(self, i: int) -> dict:
        return {"name": self.name(i), "entityType": ROLES[self.shape(i)[1]],
                "observations": [TEMPLATES[number][0].format(**values) for number, values in self.filled(i)]}

    def relation(self, i: int) -> dict:
        return {"from": self.name(i), "to": self.name(self.other(i)), "relationType": "depends on"}


# The file


class Built(NamedTuple):
    folder: pathlib.Path
    seconds: float
    cached: bool

    @property
    def db(self) -> pathlib.Path:
        return self.folder / "memory.db"

    @property
    def jsonl(self) -> pathlib.Path:
        return self.folder / "memory.jsonl"


def write_file(folder: pathlib.Path, corpus: Corpus) -> None:
    "Create the entities and relations through Memory, and the same graph as the official server's memory.jsonl."
    memory = Memory.open(folder / "memory.db", project=PROJECT, actor="bench", config=CONFIG)
    with open(folder / "memory.jsonl", "w") as jsonl:
        for start in range(0, corpus.entities, CREATE_BATCH):
            batch = [corpus.entity(i) for i in range(start, min(start + CREATE_BATCH, corpus.entities))]
            memory.create_entities(batch)
            jsonl.writelines(json.dumps({"type": "entity", **e}) + "\n" for e in batch)
            if (start + CREATE_BATCH) % 10_000 == 0:
                log(f"{start + CREATE_BATCH:,} entities written")
        for start in range(0, corpus.entities, RELATION_BATCH):
            batch = [corpus.relation(i) for i in range(start, min(start + RELATION_BATCH, corpus.entities))]
            memory.create_relations(batch)
            jsonl.writelines(json.dumps({"type": "relation", **r}) + "\n" for r in batch)
    memory.close()


def newest_migration() -> str:
    "The newest schema this code writes: part of the cache key, so other code never migrates, or refuses, a cached file."
    from datasette_memory.core.migrations import migrations

    return migrations._migrations[-1].name  # as core.database reads them


def build(corpus: Corpus, rebuild: bool) -> Built:
    "The cached file for these parameters, built first (into a folder renamed when complete) if missing or ``rebuild``."
    folder = CACHE / f"{corpus.entities}x{corpus.per_entity}-seed{corpus.seed}-v{DATA_VERSION}-{newest_migration()}"
    if folder.exists() and not rebuild:
        return Built(folder, json.loads((folder / "build.json").read_text())["seconds"], True)
    partial = folder.with_name(folder.name + ".partial")
    for stale in (folder, partial):
        shutil.rmtree(stale, ignore_errors=True)
    partial.mkdir(parents=True)
    log(f"building {corpus.entities:,} entities x {corpus.per_entity} observations in {folder}")
    seconds = timed(lambda: write_file(partial, corpus))
    (partial / "build.json").write_text(json.dumps({"seconds": seconds}))
    partial.rename(folder)
    return Built(folder, seconds, False)


# The queries


def keyword(corpus: Corpus, i: int, rng: random.Random, matching: "Matching") -> Query | None:
    "Entity ``i``'s name, or one or two words (not numbers) of one of its observations that few observations hold."
    if rng.random() < 1 / 3:
        name = corpus.name(i)
        return Query(name, words(name), name)
    observation = rng.choice(corpus.entity(i)["observations"])
    few = [w for w in words(observation) if w.isalpha() and matching([w]) <= KEYWORD_SHARE * corpus.entities * corpus.per_entity]
    if not few:
        return None
    picked = rng.sample(few, min(len(few), rng.choice((1, 2))))
    return Query(" ".join(picked), picked, corpus.name(i))


def asked(template: str, values: dict[str, str], source: str | None = None) -> Query | None:
    "A question template filled in, if it has 2 to 6 content words."
    text = template.format(**values)
    found = words(text)
    return Query(text, found, source) if 2 <= len(found) <= 6 else None


def question(corpus: Corpus, i: int, rng: random.Random) -> Query | None:
    "The question one of entity ``i``'s observations answers."
    number, values = rng.choice(corpus.filled(i))
    return asked(TEMPLATES[number][1], {"me": corpus.name(i), **values}, corpus.name(i))


def absent_question(rng: random.Random) -> Query | None:
    "A question of the same shapes about things never stored."
    template = rng.choice(TEMPLATES)[1]
    return asked(template, {slot: absent_value(slot, rng) for slot in slots(template)})


def absent_value(slot: str, rng: random.Random) -> str:
    if slot.rstrip("2") in ("me", "other"):
        return "-".join(rng.sample(ABSENT, 2))
    if slot.rstrip("2") == "ident":
        return "_".join(rng.sample(ABSENT, 2) + ["timeout"])
    return rng.choice(ABSENT)


def common_question(count: int, rng: random.Random) -> Query:
    "A question made of ``count`` (2 or 4) common words only."
    (a1, a2), (o1, o2) = rng.sample(COMMON_ACTORS, 2), rng.sample(COMMON_OBJECTS, 2)
    text = rng.choice(TWO_COMMON if count == 2 else FOUR_COMMON).format(a1=a1, a2=a2, o1=o1, o2=o2, v=rng.choice(COMMON_VERBS))
    return Query(text, words(text))


class Matching:
    "How many observations hold any of some words (raw FTS5), remembered."

    def __init__(self, raw: sqlite3.Connection):
        self.raw = raw
        self.counts: dict[str, int] = {}

    def __call__(self, found: list[str]) -> int:
        expression = " OR ".join(quoted(w) for w in found)
        if expression not in self.counts:
            sql = "SELECT count(*) FROM observations_fts WHERE observations_fts MATCH ?"
            self.counts[expression] = self.raw.execute(sql, [expression]).fetchone()[0]
        return self.counts[expression]


def queries(corpus: Corpus, count: int, rng: random.Random, matching: Matching) -> dict[str, list[Query]]:
    "``count`` queries of each kind: ``{kind: [Query]}``."
    stored = [w for w in ABSENT if matching([w])]
    if stored:
        raise SystemExit(f"abstention words found in the data: {stored}; change ABSENT")
    makers = {
        "keyword": lambda: keyword(corpus, rng.randrange(corpus.entities), rng, matching),
        "question": lambda: question(corpus, rng.randrange(corpus.entities), rng),
        "question, 2 common words": lambda: common_question(2, rng),
        "question, 4 common words": lambda: common_question(4, rng),
        "abstention": lambda: absent_question(rng),
    }
    found = {}
    for kind, make in makers.items():
        made: list[Query] = []
        while len(made) < count:
            if (query := make()) is not None:
                made.append(query)
        found[kind] = made
    return found


# The measurements: {(door, tool, query kind): [milliseconds]}

RAW_SQL = "SELECT rowid, bm25(observations_fts) FROM observations_fts WHERE observations_fts MATCH ? ORDER BY rank LIMIT 10"
IN_PROCESS, RAW, OURS, OFFICIAL_SERVER = "in-process", "raw FTS5", "MCP stdio: datasette-memory", "MCP stdio: official server"
OR_ED, AND_ED = "bm25, words OR-ed", "bm25, words AND-ed"
ROWS = [(IN_PROCESS, "search_nodes"), (IN_PROCESS, "search_memory"), (RAW, OR_ED), (RAW, AND_ED),
        (OURS, "search_nodes"), (OURS, "search_memory"), (OFFICIAL_SERVER, "search_nodes")]


def in_process(memory: Memory, raw: sqlite3.Connection, found: dict[str, list[Query]]) -> dict[tuple, list[float]]:
    "Every query through Memory's two searches and raw FTS5's two, taking turns."
    calls = {
        (IN_PROCESS, "search_nodes"): lambda q: memory.search_nodes(q.text),
        (IN_PROCESS, "search_memory"): lambda q: memory.search_memory(q.text),
        (RAW, OR_ED): lambda q: raw.execute(RAW_SQL, [" OR ".join(map(quoted, q.words))]).fetchall(),
        (RAW, AND_ED): lambda q: raw.execute(RAW_SQL, [" AND ".join(map(quoted, q.words))]).fetchall(),
    }
    for call in calls.values():
        call(found["keyword"][0])
    times: dict[tuple, list[float]] = {}
    for kind, kind_queries in found.items():
        for query in kind_queries:
            for (door, tool), call in calls.items():
                times.setdefault((door, tool, kind), []).append(timed(lambda: call(query)) * 1000)
        log(f"in-process: {len(kind_queries)} {kind} queries done")
    return times


async def over_stdio(transport: StdioTransport, door: str, tools: list[str], found: dict[str, list[Query]], calls: int) -> tuple[dict, str | None]:
    """
    The first ``calls`` queries of each kind through ``tools``, over one stdio
    connection: ``(times, None)``, or with a note if a call took longer than
    ``OFFICIAL_TIMEOUT`` and the rest were skipped.
    """
    times: dict[tuple, list[float]] = {}
    try:
        async with Client(transport) as client:
            for tool in tools:
                await asyncio.wait_for(client.call_tool(tool, {"query": found["keyword"][0].text}), OFFICIAL_TIMEOUT)
            for kind, kind_queries in found.items():
                for query in kind_queries[:calls]:
                    for tool in tools:
                        elapsed = await asyncio.wait_for(timed_call(client, tool, {"query": query.text}), OFFICIAL_TIMEOUT)
                        times.setdefault((door, tool, kind), []).append(elapsed)
                log(f"{door}: {kind} done")
    except TimeoutError:
        return times, f"{door}: a call took over {OFFICIAL_TIMEOUT} s, so the rest were skipped"
    return times, None


def our_server(built: Built) -> StdioTransport:
    # run from the file's folder: with -m, the working directory would come first on sys.path
    arguments = ["-m", "datasette_memory", "mcp", "--db", str(built.db), "--project", PROJECT]
    return StdioTransport(sys.executable, arguments, env=ENV, cwd=str(built.folder), keep_alive=False)


def official_server(built: Built) -> StdioTransport:
    return StdioTransport("node", [str(OFFICIAL)], env={"MEMORY_FILE_PATH": str(built.jsonl)}, keep_alive=False)


async def stdio(built: Built, found: dict[str, list[Query]], args: argparse.Namespace) -> tuple[dict, list[str]]:
    times, notes = {}, []
    doors = [(our_server(built), OURS, ["search_nodes", "search_memory"], args.stdio_calls)]
    if args.official and OFFICIAL.exists():
        doors.append((official_server(built), OFFICIAL_SERVER, ["search_nodes"], args.official_calls))
    elif args.official:
        notes.append(f"{OFFICIAL_SERVER}: not installed; run 'npm ci --prefix tests/official'")
    for transport, door, tools, calls in doors:
        door_times, note = await over_stdio(transport, door, tools, found, calls)
        times.update(door_times)
        notes += [note] if note else []
    return times, notes


# Report


def ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def ratio(value: float) -> str:
    return f"{value:.2f}x" if value < 1 else f"{value:,.1f}x"


def megabytes(path: pathlib.Path) -> str:
    return f"{sum(f.stat().st_size for f in path.parent.glob(path.name + '*') if not f.name.endswith('.json')) / 1e6:,.0f} MB"


def print_kinds(found: dict[str, list[Query]], matching: Matching) -> None:
    print("| query kind | e.g. | content words, p50 | observations holding any of them, p50 |")
    print("|---|---|---:|---:|")
    for kind, kind_queries in found.items():
        sizes = [len(q.words) for q in kind_queries]
        held = [matching(q.words) for q in kind_queries]
        print(f"| {kind} | {kind_queries[0].text} | {p(sizes, 50):.0f} | {p(held, 50):,.0f} |")


def what_came_back(memory: Memory, found: dict[str, list[Query]]) -> dict[str, list[tuple[Query, list[str]]]]:
    "Each query with the names of search_memory's matches: ``{kind: [(query, names)]}``."
    return {
        kind: [(q, [r["entity"]["name"] for r in memory.search_memory(q.text)["results"]]) for q in kind_queries]
        for kind, kind_queries in found.items()
    }


def print_answers(came_back: dict[str, list[tuple[Query, list[str]]]]) -> None:
    "What search_memory answered, per kind: how often it matched, found the entity a query was drawn from, and how much."
    print("| query kind | queries | answered (a match) | source entity in the top 5 | matches per query |")
    print("|---|---:|---:|---:|---:|")
    for kind, pairs in came_back.items():
        answers = [names for _, names in pairs]
        drawn = [(q, names) for q, names in pairs if q.source]
        top5 = f"{sum(q.source in names[:5] for q, names in drawn) / len(drawn):.2f}" if drawn else "–"
        print(f"| {kind} | {len(pairs)} | {sum(bool(a) for a in answers) / len(answers):.2f} | {top5} | "
              f"{sum(map(len, answers)) / len(answers):.1f} |")


def print_times(times: dict[tuple, list[float]], notes: list[str]) -> None:
    print("| door | tool | query kind | calls | p50 ms | p95 ms | p50 vs raw FTS5 OR-ed | p50 vs raw FTS5 AND-ed |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for door, tool in ROWS:
        for kind in KINDS:
            values = times.get((door, tool, kind))
            if not values:
                if any(note.startswith(door) for note in notes):
                    print(f"| {door} | {tool} | {kind} | 0 | – | – | – | – |")
                continue
            # over the same queries: a door with fewer calls ran the first of them
            floors = [p(times[(RAW, floor, kind)][:len(values)], 50) for floor in (OR_ED, AND_ED)]
            print(f"| {door} | {tool} | {kind} | {len(values)} | {ms(p(values, 50))} | {ms(p(values, 95))} | "
                  + " | ".join(ratio(p(values, 50) / floor) for floor in floors) + " |")
    for note in notes:
        print(f"\n{note}.")


def run(corpus: Corpus, args: argparse.Namespace) -> dict[tuple, list[float]]:
    "Build (or reuse) the file for ``corpus``, time every door on it, print its tables, and return its times."
    started = load()
    built = build(corpus, args.rebuild)
    raw = sqlite3.connect(f"file:{built.db}?mode=ro", uri=True)
    matching = Matching(raw)
    found = queries(corpus, args.queries, random.Random(f"{args.seed}:queries"), matching)
    memory = Memory.open(built.db, project=PROJECT, actor="bench", config=CONFIG)
    times = in_process(memory, raw, found)
    answers = what_came_back(memory, found)
    memory.close()
    stdio_times, notes = asyncio.run(stdio(built, found, args))
    times.update(stdio_times)
    observations = corpus.entities * corpus.per_entity
    print(f"### {corpus.entities:,} entities x {corpus.per_entity} observations ({observations:,} observations, one project)\n")
    print(f"Memory file {megabytes(built.db)}, built through Memory in {built.seconds:.0f} s "
          f"({'cached by an earlier run' if built.cached else 'this run'}); the official server's memory.jsonl "
          f"{megabytes(built.jsonl)}. Semantic search off. {started} at the start, {load()} at the end.\n")
    print_kinds(found, matching)
    print()
    print_times(times, notes)
    print()
    print_answers(answers)
    print()
    raw.close()
    return times


def print_sizes(by_size: dict[Corpus, dict[tuple, list[float]]]) -> None:
    "In-process search_memory per query kind at each size, beside the largest: small projects should be no slower."
    largest = max(by_size, key=lambda c: c.entities)
    print(f"### search_memory in process, by project size (p50 / p95 ms; ratio of p50s to {largest.entities:,} entities)\n")
    print("| query kind | " + " | ".join(f"{c.entities:,} x {c.per_entity}" for c in by_size) + " |")
    print("|---|" + "---:|" * len(by_size))
    for kind in KINDS:
        cells = []
        for corpus, times in by_size.items():
            values, base = times[(IN_PROCESS, "search_memory", kind)], by_size[largest][(IN_PROCESS, "search_memory", kind)]
            cells.append(f"{ms(p(values, 50))} / {ms(p(values, 95))} ({ratio(p(values, 50) / p(base, 50))})")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", default="100000", help="entities in the file, all in one project; a comma list builds a file for each")
    parser.add_argument("--observations-per-entity", default="5,10", help="observations per entity; a comma list builds a file for each")
    parser.add_argument("--queries", type=int, default=50, help="queries of each kind, in-process and raw FTS5")
    parser.add_argument("--stdio-calls", type=int, default=20, help="queries of each kind per tool over MCP stdio, our server")
    parser.add_argument("--official-calls", type=int, default=5, help="queries of each kind for the official server")
    parser.add_argument("--official", action=argparse.BooleanOptionalAction, default=True, help="also time the official server")
    parser.add_argument("--rebuild", action="store_true", help="build the files again instead of reusing the cached ones")
    parser.add_argument("--seed", type=int, default=2025, help="seed of the text and of the queries")
    args = parser.parse_args()
    by_size = {}
    for entities in (int(n) for n in args.entities.split(",")):
        for per_entity in (int(n) for n in args.observations_per_entity.split(",")):
            corpus = Corpus(entities, per_entity, args.seed)
            by_size[corpus] = run(corpus, args)
    if len(by_size) > 1:
        print_sizes(by_size)


if __name__ == "__main__":
    main()
