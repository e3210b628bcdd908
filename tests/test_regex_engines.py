"""search_text's regular expressions: google-re2 in process, ripgrep beside it, one dialect, no backtracking."""

import ast
import pathlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_memory import InvalidInput
from datasette_memory.sqltools import SqlLimitExceeded, regex
from datasette_memory.sqltools.regex import check_pattern, find_matches, ripgrep

from .sql_support import assert_only_audited, path, sql_template, state, tools_for  # noqa: F401

needs_ripgrep = pytest.mark.skipif(not ripgrep(), reason="ripgrep is not installed")

VALUES = [
    "port 8080 and ٣٤ digits",
    "café naïve Straße KELVIN K ſ",
    "tab\there\x0bvertical\x0cform",
    "a_b-c d\u00a0e",
    "日本語 テキスト 123",
    "x\ny\nzz",
    "quote's \"double\" [brackets] {braces} a.b a*b",
    "emoji 🙂🙂 and surrogates' neighbours",
]
# in the dialect: every one is accepted, and means the same to RE2, ripgrep and (ASCII) Python re
SHARED = [
    r"\d+", r"\w+", r"\s", r"\S+", r"\bcaf", r"é\b", r"[^\d\s]+", r"\D+", r"\W+", r"[a-z]+", r"^y$", r"z{2}",
    r"(?i)k", r"(?i)\w+", r"(?i)STRASSE|straße", r"(?s)a.b", r"a\.b", r"a\*b", r"\[\w+\]", r"\{\w+\}", r"[]\w]+",
    r"[^]a-z ]+", r"(\d)(\d)", r"(?:ab|a)_", r"\x{1F642}+", r"\x41|\x61", r"[\x{65E5}-\x{8A9E}]+", r"(?U)\w+", r"(?m)^\w",
    # where a value's lines meet: anchors, boundaries and dots at their edges
    r"^\w+$", r"(?s:y.|x.)", r"(?i-s:Y$)", r"\w$", r"^\W", r"\b\w", r"[^a]+$", r"e\s*$",
]
UNICODE_ONLY = [r"\p{Greek}|\p{Han}+", r"\pL+", r"\p{Lu}\p{Ll}+", r"\PL+"]  # RE2 and ripgrep; Python's re lacks \p


@pytest.mark.parametrize("pattern", SHARED + UNICODE_ONLY)
@pytest.mark.parametrize("ignore_case", [False, True])
@needs_ripgrep
def test_both_engines_find_the_same_matches(pattern, ignore_case):
    check_pattern(pattern, False, ignore_case, 1000)
    assert find_matches(VALUES, pattern, ignore_case, False, 1000, 5, "python") == find_matches(
        VALUES, pattern, ignore_case, False, 1000, 5, "ripgrep")


def python_spelling(pattern):
    "Python's ASCII \\s also matches \\v; RE2's does not."
    spelled = {(r"\s", False): r"[\t\n\f\r ]", (r"\S", False): r"[^\t\n\f\r ]", (r"\s", True): r"\t\n\f\r "}
    return "".join(spelled.get((piece, in_class), piece) for _, piece, in_class in regex.pieces(pattern))


def python_re_matches(values, pattern, ignore_case):
    "The matches of Python's own re, with RE2's ASCII classes, line by line: an engine of a third kind."
    compiled = re.compile(python_spelling(pattern), re.ASCII | (re.IGNORECASE if ignore_case else 0))
    found = []
    for index, value in enumerate(values):
        offset = 0
        for line in value.split("\n"):
            found += [(index, offset + m.start(), offset + m.end()) for m in compiled.finditer(line) if m.end() > m.start()]
            offset += len(line) + 1
    return found


@pytest.mark.parametrize("pattern", [p for p in SHARED if "\\x{" not in p and "(?i)" not in p and "(?U)" not in p])
def test_re2_agrees_with_pythons_re_on_ascii_classes(pattern):
    "Left out: \\x{...} and (?U), which Python's re lacks, and (?i), where re.ASCII folds only ASCII letters (RE2 folds K to K)."
    assert find_matches(VALUES, pattern, False, False, 1000, 5, "python") == python_re_matches(VALUES, pattern, False)


texts = st.lists(st.text(alphabet=st.sampled_from("ab1 _-.\nKkſé٣\t[]"), max_size=30), min_size=1, max_size=5)
atoms = st.sampled_from(["a", "b", "1", r"\d", r"\w", r"\s", r"\W", ".", "[ab]", "[^a]", r"\b", "k", "é", r"\.", "_"])
repeats = st.sampled_from(["", "+", "*", "?", "{2}", "{1,2}", "+?"])


@st.composite
def patterns(draw):
    parts = draw(st.lists(st.tuples(atoms, repeats), min_size=1, max_size=4))
    return "".join(atom + (repeat if atom != r"\b" else "") for atom, repeat in parts)


@needs_ripgrep
@settings(max_examples=150, deadline=None)
@given(texts, patterns(), st.booleans())
def test_generated_patterns_mean_the_same_to_both_engines(values, pattern, ignore_case):
    try:
        check_pattern(pattern, False, ignore_case, 1000)
    except InvalidInput as e:
        assert "empty string" in str(e)
        return
    assert find_matches(values, pattern, ignore_case, False, 1000, 5, "python") == find_matches(
        values, pattern, ignore_case, False, 1000, 5, "ripgrep")


@settings(max_examples=150, deadline=None)
@given(texts, patterns())
def test_generated_patterns_mean_the_same_to_re2_and_pythons_re(values, pattern):
    try:
        check_pattern(pattern, False, False, 1000)
    except InvalidInput:
        return
    assert find_matches(values, pattern, False, False, 1000, 5, "python") == python_re_matches(values, pattern, False)


@pytest.mark.parametrize(
    "pattern,message",
    [
        ("(?<=a)b", "lookahead and lookbehind are not supported: both engines match in linear time"),
        ("(?!a)b", "lookahead and lookbehind are not supported"),
        ("(?P<n>a)(?P=n)", "backreferences are not supported"),
        (r"(a)\1", r"\\1 \(a backreference or an octal escape\) is not supported"),
        ("(?>ab)", "atomic groups are not supported"),
        ("(?(1)a|b)", "conditional groups are not supported"),
        ("a++", "possessive repeats are not supported"),
        ("(?x)a b", r"only the \(\?i\), \(\?m\), \(\?s\) and \(\?U\) flags are supported"),
        ("(?a)a", "only the"),
        (r"\Z", r"use \$ for the end of a line"),
        (r"\Ay", r"\\A is not supported: ripgrep reads it as the start or end of everything it searches; use \^ or \$"),
        (r"y\z", r"\\z is not supported"),
        ("(?-m:^y$)", r"turning off \(\?m\) is not supported"),
        ("(?i-sm)^y", r"turning off \(\?m\) is not supported"),
        (r"\N{DIGIT ONE}", r"\\N is not supported"),
        (r"\C", r"\\C \(any byte\) is not supported"),
        (r"\Qa.b\E", "pass fixed_strings=true"),
        ("[[:alpha:]]", r"not a valid regular expression for both engines: \[ inside a class"),
        ("[a-z&&[^aeiou]]", "set arithmetic to ripgrep"),
        ("[a~~b]", "set arithmetic to ripgrep"),
        ("a{,2}", "a brace must be a repeat"),
        ("a{1001}", r"not a valid regular expression \(invalid repetition size"),
        (r"\u0041", r"not a valid regular expression \(invalid escape sequence: \\u\)"),
        (r"\p{Alphabetic}", "not a valid regular expression"),
        ("(ab", r"not a valid regular expression \(missing \)"),
        ("x*|y?", "matches the empty string"),
        ("(?P<1>a)", "the group name '1' must start with a letter"),
        ("(?<a b>a)", "the group name 'a b' must start with a letter"),
        ("(?P<a>a)|(?<a>b)", "the group name 'a' is used twice"),
    ],
)
def test_patterns_outside_the_dialect_are_refused_naming_the_construct_and_changing_nothing(path, pattern, message):
    tools = tools_for(path)
    before = state(path)
    with pytest.raises(InvalidInput, match=f"^pattern: .*{message}"):
        tools.search_text("notes", pattern)
    assert_only_audited(before, state(path), ok=False)


@pytest.mark.parametrize("pattern", ["(?:x", "a{2}{3}", "\\", "[z-a]", "a**"])
def test_invalid_patterns_are_refused_before_any_engine_runs(pattern):
    with pytest.raises(InvalidInput, match="^pattern: not a valid regular expression"):
        check_pattern(pattern, False, False, 1000)


def test_fixed_strings_take_any_text_literally(path):
    tools = tools_for(path)
    tools.write_query("INSERT INTO notes (body) VALUES ('(?<=a)b \\1 [[:alpha:]] a{,2} \\Q')")
    text = tools.search_text("notes", "(?<=a)b \\1 [[:alpha:]] a{,2} \\Q", fixed_strings=True)
    assert "# 1 match (complete)" in text


def test_the_deadline_stops_matching_between_lines():
    values = ["a line\n" * 1000] * 50
    with pytest.raises(SqlLimitExceeded, match="took longer than the time limit"):
        find_matches(values, "line", False, False, 10**9, 0.0, "python")


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+$", "(a*)*b", "(?:a|a)+c", "(x+x+)+y"])
def test_patterns_that_backtrack_forever_elsewhere_finish_on_a_long_line(pattern):
    "Each takes exponential time in a backtracking engine on 30 a's; here, 200,000 characters."
    assert find_matches(["a" * 200_000 + "!"], pattern, False, False, 10, 5.0, "python") == []


def test_match_offsets_are_characters_across_scripts_and_lines():
    values = ["日本語\nテキスト 🙂 end", "é" * 5 + "end"]
    found = find_matches(values, "end", False, False, 10, 5, "python")
    assert [values[i][s:e] for i, s, e in found] == ["end", "end"]
    assert found == [(0, 11, 14), (1, 5, 8)]


def test_the_limit_stops_at_that_many_matches():
    assert len(find_matches(["a " * 100], "a", False, False, 7, 5, "python")) == 7


def test_no_private_re_module_is_used():
    "re._parser and sre_parse are gone: RE2 parses, and check_text reads the pattern's text."
    tree = ast.parse(pathlib.Path(regex.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {f"{node.module}.{a.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}
    assert "re2" in imported
    assert not {name for name in imported if "sre_" in name or "_parser" in name or "_constants" in name}
