"""Random sequences of graph operations against a simple in-memory model."""

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from datasette_memory import Config, Memory, NotFound, SearchSettings

names = st.sampled_from(["auth", "db", "Auth", "ünï", "a/b", "x y"])
texts = st.sampled_from(["port 8080", "uses postgres", "", "PORT", "ünïcode", "ÜNÏ", "x", "Ort 80"])
types = st.sampled_from(["service", "person", ""])
relation_types = st.sampled_from(["uses", "owns"])
entities = st.fixed_dictionaries(
    {"name": names, "entityType": types, "observations": st.lists(texts, max_size=3)}
)
relations = st.fixed_dictionaries({"from": names, "to": names, "relationType": relation_types})


class Model:
    "The official server's semantics, with our deduplication, in plain Python."

    def __init__(self):
        self.entities = {}  # name -> (type, [observations]), insertion-ordered
        self.relations = []

    def create_entities(self, batch):
        created = []
        for e in batch:
            if e["name"] not in self.entities:
                observations = list(dict.fromkeys(e["observations"]))
                self.entities[e["name"]] = (e["entityType"], observations)
                created.append({**e, "observations": observations})
        return created

    def create_relations(self, batch):
        created = []
        for r in batch:
            if r not in self.relations:
                self.relations.append(r)
                created.append(r)
        return created

    def add_observations(self, name, contents):
        if name not in self.entities:
            raise NotFound(name)
        stored = self.entities[name][1]
        added = [c for c in dict.fromkeys(contents) if c not in stored]
        stored.extend(added)
        return added

    def delete_entities(self, names):
        deleted = [n for n in dict.fromkeys(names) if n in self.entities]
        touching = [r for r in self.relations if r["from"] in deleted or r["to"] in deleted]
        for n in deleted:
            del self.entities[n]
        self.relations = [r for r in self.relations if r not in touching]
        return len(deleted) + len(touching)

    def delete_observations(self, name, contents):
        if name not in self.entities:
            return 0
        stored = self.entities[name][1]
        removed = [c for c in dict.fromkeys(contents) if c in stored]
        self.entities[name] = (self.entities[name][0], [c for c in stored if c not in removed])
        return len(removed)

    def delete_relations(self, batch):
        removed = [r for r in self.relations if r in batch]
        self.relations = [r for r in self.relations if r not in removed]
        return len(removed)

    def graph(self):
        return {
            "entities": [
                {"name": n, "entityType": t, "observations": list(o)}
                for n, (t, o) in self.entities.items()
            ],
            "relations": list(self.relations),
        }


class GraphMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        # the graph is under test, not the semantic arm, which would embed in the background into self.dir
        lexical = Config(search=SearchSettings(semantic=False))
        self.memory = Memory.open(f"{self.dir.name}/memory.db", project="p", actor="model", config=lexical)
        self.other = Memory.open(f"{self.dir.name}/memory.db", project="other", actor="model", config=lexical)
        self.other.create_entities([{"name": "auth", "entityType": "bystander", "observations": ["stay"]}])
        self.model = Model()
        self.expected_events = self.events()

    def events(self):
        return self.memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]

    def teardown(self):
        self.memory.close()
        self.other.close()
        self.dir.cleanup()

    @rule(batch=st.lists(entities, max_size=4))
    def create_entities(self, batch):
        created = self.memory.create_entities(batch)
        assert created == self.model.create_entities(batch)
        self.expected_events += len(created)

    @rule(batch=st.lists(relations, max_size=4))
    def create_relations(self, batch):
        created = self.memory.create_relations(batch)
        assert created == self.model.create_relations(batch)
        self.expected_events += len(created)

    @rule(name=names, contents=st.lists(texts, max_size=3))
    def add_observations(self, name, contents):
        try:
            expected = self.model.add_observations(name, contents)
        except NotFound:
            try:
                self.memory.add_observations([{"entityName": name, "contents": contents}])
            except NotFound:
                return
            raise AssertionError("expected NotFound")
        result = self.memory.add_observations([{"entityName": name, "contents": contents}])
        assert result == [{"entityName": name, "addedObservations": expected}]
        self.expected_events += len(expected)

    @rule(batch=st.lists(names, max_size=3))
    def delete_entities(self, batch):
        self.memory.delete_entities(batch)
        self.expected_events += self.model.delete_entities(batch)

    @rule(name=names, contents=st.lists(texts, max_size=3))
    def delete_observations(self, name, contents):
        self.memory.delete_observations([{"entityName": name, "observations": contents}])
        self.expected_events += self.model.delete_observations(name, contents)

    @rule(batch=st.lists(relations, max_size=3))
    def delete_relations(self, batch):
        self.memory.delete_relations(batch)
        self.expected_events += self.model.delete_relations(batch)

    @rule(query=texts)
    def search_nodes(self, query):
        names = [e["name"] for e in self.memory.search_nodes(query)["entities"]]
        q = query.lower()
        entities = self.model.graph()["entities"]
        texts = {e["name"]: [e["name"], e["entityType"], *e["observations"]] for e in entities}
        contains = [e["name"] for e in entities if any(q in t.lower() for t in texts[e["name"]])]
        if not contains:
            # nothing contains the query: at most five natural-language matches
            assert len(names) <= 5 and set(names) <= set(texts)
            return
        if q:
            # ranked: name matches, then type matches, then by matching observations
            rank = lambda n: (q in n.lower(), q in texts[n][1].lower(), sum(q in o.lower() for o in texts[n][2:]))
            contains.sort(key=rank, reverse=True)
        assert names == contains

    @invariant()
    def graph_matches_model(self):
        assert self.memory.read_graph() == self.model.graph()

    @invariant()
    def one_event_per_mutation_and_chain_verifies(self):
        assert self.events() == self.expected_events
        assert self.memory.verify_chain().ok

    @invariant()
    def other_project_untouched(self):
        assert self.other.read_graph() == {
            "entities": [{"name": "auth", "entityType": "bystander", "observations": ["stay"]}],
            "relations": [],
        }


GraphMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_graph_against_model = GraphMachine.TestCase
