"""Ranked search: query terms, IDF weights, forgotten words, candidates, fusion with the semantic arm, neighbours, and the two search tools."""
