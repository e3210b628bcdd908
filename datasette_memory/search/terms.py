"""A query's words: which are content, which are only the question's wording, and how FTS5 sees them."""

import re

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't cannot could did didn't do does doesn't doing don't down
    during each either else ever few for from further get gets got had has have having he her here hers
    herself him himself his how i if in into is isn't it its itself just let me more most much must
    my myself no nor not now of off on once only or other our ours ourselves out over own please same
    she should so some such tell than that the their theirs them themselves then there these
    they this those through to too under until up us use used uses using very was we were what
    when where which while who whom whose why will with would you your yours yourself yourselves
    know anything something thing things i'm i've i'd i'll
    we're we've we'd we'll you're you've they're they've won't wasn't weren't haven't hasn't hadn't
    shouldn't couldn't wouldn't mustn't needn't ain't it'll he'd she'd she'll he'll you'll they'll you'd
    they'd what're y'all
    """.split()
)
HOW_WORDS = frozenset("long often many much far big large old soon fast frequently quickly".split())  # "how long ..."
APOSTROPHES = re.compile("[\u2018\u2019\u02bc\u00b4`]")
FTS_SYNTAX = re.compile(r'["*^:()]|\b(?:AND|OR|NOT|NEAR)\b')
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")  # "don't" is one word, a stop word


def words(text: str) -> list[str]:
    "Lower-cased words, a possessive's \"'s\" dropped: \"table's\" is \"table\"."
    return [re.sub(r"'s$", "", w) for w in WORD.findall(APOSTROPHES.sub("'", text.lower()))]


def content_terms(query: str) -> list[str]:
    "The query's words without stop words or a question's \"how long\", in order, once each."
    found = words(query)
    asking = {i + 1 for i, w in enumerate(found) if w == "how" and i + 1 < len(found) and found[i + 1] in HOW_WORDS}
    return list(dict.fromkeys(w for i, w in enumerate(found) if w not in STOP_WORDS and i not in asking))


def is_fts_syntax(query: str) -> bool:
    "Whether ``query`` uses FTS5 syntax (phrases, prefixes, operators, columns)."
    return FTS_SYNTAX.search(query) is not None


def plain_words(query: str) -> list[str]:
    "The content terms of an FTS5 expression, its syntax removed."
    return content_terms(FTS_SYNTAX.sub(" ", query))


def fts_quote(text: str) -> str:
    "``text`` as one FTS5 string: a term, never syntax."
    return '"' + text.replace('"', '""') + '"'


def plural_forms(word: str) -> set[str]:
    "A word as written, and without a plural \"s\"."
    return {word, word[:-1]} if word.endswith("s") and len(word) > 3 else {word}
