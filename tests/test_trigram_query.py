"""search_nodes looks for a long query by a few of its trigrams: it must find every row the whole phrase finds."""

import sqlite3

from hypothesis import example, given, settings
from hypothesis import strategies as st

from datasette_memory.graph.substring import COVER_FROM, trigram_query

ALPHABET = st.sampled_from(list("abcab-0 1\"'ÄäéΣσ_"))
TEXT = st.text(alphabet=ALPHABET, min_size=0, max_size=40)


def matched(rows, query):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram')")
    conn.executemany("INSERT INTO t (rowid, content) VALUES (?, ?)", list(enumerate(rows)))
    return {rowid for (rowid,) in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", [query])}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=3, max_size=24), st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=8), TEXT)
@example("svc-004321", [("", " listens"), ("depends on ", " for auth")], "svc-004322 and 004321 svc")
@example('ab"cd"efgh', [("x", "")], 'ab"cd" efgh')
def test_the_trigram_query_finds_every_row_the_phrase_finds(needle, around, other):
    needle = needle.lower()
    rows = [before + needle + after for before, after in around] + [other, other.upper()]
    phrase = '"' + needle.replace('"', '""') + '"'
    found = matched(rows, trigram_query(needle))
    assert matched(rows, phrase) <= found
    assert set(range(len(around))) <= found  # every row holding the needle


def test_short_queries_are_the_phrase_and_long_ones_a_few_trigrams_near_each_other():
    assert trigram_query("abc") == '"abc"'
    assert trigram_query("a" * (COVER_FROM - 1)) == '"' + "a" * (COVER_FROM - 1) + '"'
    assert trigram_query("svc-004321") == 'NEAR("svc" "-00" "432" "321", 6)'
    assert trigram_query('ab"cdefgh') == 'NEAR("ab""" "cde" "fgh", 5)'
