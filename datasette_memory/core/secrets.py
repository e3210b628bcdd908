"""Refusing likely credentials: agents leak them into memory, and memory must not keep them.

One scanner for every path that stores or logs text. It looks at text as a
reader would see it: Unicode NFKC (full-width letters become ASCII),
invisible format characters (zero-width spaces, soft hyphens) removed, and
the formats' prefixes matched in any case. Besides the well-known key
formats it finds a key typed in groups with spaces between them, a key
encoded in base64, a database URL with a password, a JWT, a PEM key body
without its header, an AWS secret access key, and a high-entropy value after
a ``password``/``secret``/``token``/``key`` label.

The patterns are ours rather than a library's. detect-secrets 1.5.0, the
maintained scanner on PyPI, found 12 of the 27 formats and variations the
tests hold with its entropy plugins off, and flagged all 5,645 ordinary strings
of the retrieval benchmarks with them on, at 17 to 18 ms a kilobyte; these
patterns find all 27, flag none of those strings, and take 0.2 ms a kilobyte
(``python bench/secret_scanners.py`` measures both side by side).
"""

import base64
import binascii
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import plugins
from .errors import InvalidInput

# Every invisible format character, Unicode category Cf as of Unicode 14 (zero-width spaces
# and joiners, soft hyphen, word joiner, byte order mark, bidirectional marks, tags)
FORMAT_CHARACTERS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
PLACEHOLDER = re.compile(r"^(?:\$\{?\w+\}?|\{\{.*\}\}|<[^>]*>|%s|\*+|x{3,}|\.{3,}|…)$", re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    """
    One likely secret in normalized text.

    :param kind: what it looks like, such as ``GitHub token``
    :param start: where it starts in the normalized text
    :param end: where it ends
    """

    kind: str
    start: int
    end: int


def entropy(text: str) -> float:
    "Shannon entropy of ``text`` in bits per character."
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def upper_or_has_digit(text: str) -> bool:
    "A prefix matched in any case: as issued (upper case), or with a digit, so a lowercase word is not a key."
    return text.isupper() or has_digit(text)


def like_aws_secret(text: str) -> bool:
    "Forty base64 characters mixing cases and digits, not a hex digest."
    return (
        any(c.isupper() for c in text) and any(c.islower() for c in text) and has_digit(text)
        and not re.fullmatch(r"[0-9a-fA-F]+", text) and entropy(text) >= 4.0
    )


def code_like(value: str) -> bool:
    "A value that reads as code or an address, not a secret: a call, an index, an attribute, a path, a version, an email."
    return bool(
        re.search(r"[()\[\]{}@]|^[~/.]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^v?\d+(?:\.\d+)+", value)
        or re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", value)
        or ":" in value
    )


def labelled_value(text: str) -> bool:
    "A value after a strong label (password, secret, api_key...): random-looking, not a word, a number, code or a placeholder."
    value = text.strip("\"'`")
    if PLACEHOLDER.match(value) or code_like(value) or re.fullmatch(r"[A-Za-z_.\-]+|[0-9.,_\-]+", value):
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    if has_digit(value) and re.search(r"[A-Za-z]", value):
        return entropy(value) >= 3.0
    return classes >= 3 and entropy(value) >= 3.3


def weakly_labelled_value(text: str) -> bool:
    """
    A value after ``key``, ``token`` or ``pwd``, words code uses for much else: only a long value
    mixing upper and lower case and digits, as generated keys do (a hex digest or a name does not).
    """
    value = text.strip("\"'`")
    return (
        len(value) >= 16 and labelled_value(value)
        and all(re.search(p, value) for p in (r"[a-z]", r"[A-Z]", r"[0-9]")) and entropy(value) >= 3.5
    )


def real_password(text: str) -> bool:
    return not PLACEHOLDER.match(text)


# A prefix starts where no letter or digit comes before it (an underscore may: TOKEN_ghp_...).
# Quantifiers that a following literal could never match are possessive (``+`` after them),
# so a long run that fails to match is not tried again from every place inside it.
START = r"(?<![A-Za-z0-9])"
VALUE = r"[\"'`]?\s*(?:[:=]|=>)\s*[\"'`]?([^\s\"'`,;]{8,}+)"
# (kind, pattern, check on the matched text or its first group): every prefix in any case
PREFIXED = [
    ("AWS access key id", START + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b", upper_or_has_digit),
    ("GitHub token", START + r"(?:gh[pousr]_[A-Z0-9]{30,}+|github_pat_[A-Z0-9_]{22,}+)", None),
    ("GitLab token", START + r"glpat-[A-Z0-9_\-]{20,}+", None),
    ("Slack token", START + r"xox[abposr]-[A-Z0-9-]{10,}+", None),
    ("Anthropic API key", START + r"sk-ant-[A-Z0-9_\-]{20,}+", None),
    ("OpenAI API key", START + r"sk-(?:proj|svcacct|admin)-[A-Z0-9_\-]{20,}+", None),
    # a bare sk- key is letters and digits only: "sk-learn-experiments-2024" is a name
    ("OpenAI API key", START + r"sk-[A-Z0-9]{32,}+(?![\-_])", has_digit),
    ("Stripe secret key", START + r"[rs]k_live_[A-Z0-9]{16,}+", None),
    ("Google API key", START + r"AIza[0-9A-Z_\-]{35}\b", upper_or_has_digit),
    ("npm token", START + r"npm_[A-Z0-9]{36}\b", None),
    ("PyPI token", START + r"pypi-AgEIcHlwaS5vcmc[A-Z0-9_\-]{50,}+", None),
    ("Datasette API token", START + r"dstok_[A-Z0-9_\-.]{20,}+", None),
    # these two start only where their own characters do not come before them: a long run of
    # them is then tried once, not from every place inside it
    ("JSON Web Token", r"(?<![A-Za-z0-9_\-.])eyJ[A-Z0-9_\-]{5,}+\.eyJ[A-Z0-9_\-]{5,}+\.[A-Z0-9_\-]{10,}+", None),
    ("private key material", r"(?<![A-Za-z0-9+/])MII[A-Z0-9+/]{60,}+", lambda text: sum(c.isdigit() for c in text) >= 3),
]
OTHER = [
    # the whole block, header to footer (or the end of the text): its body is the secret
    (
        "private key block",
        r"(?<!-)-{3,}+\s*BEGIN\s+(?:[A-Z0-9]+\s+)*PRIVATE\s+KEY(?:\s+BLOCK)?\s*-{3,}+"
        r"(?:.*?(?<!-)-{3,}+\s*END\s+(?:[A-Z0-9]+\s+)*PRIVATE\s+KEY(?:\s+BLOCK)?\s*-{3,}+|.*)",
        None,
    ),
    ("URL with a password", r"\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@'\"<>]*+:([^\s/@'\"<>]++)@[^\s/'\"<>]+", real_password),
    ("AWS secret access key", r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", like_aws_secret),
    (
        "credential after a label",
        START + r"(?:password|passwd|passphrase|secret|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
        r"secret[_\-]?key|client[_\-]?secret|auth[_\-]?token|access[_\-]?token)(?![A-Za-z0-9])" + VALUE,
        labelled_value,
    ),
    ("credential after a label", START + r"(?:key|token|pwd)(?![A-Za-z0-9])" + VALUE, weakly_labelled_value),
]
Check = Callable[[str], bool] | None
COMPILED: list[tuple[str, re.Pattern[str], Check]] = [
    (kind, re.compile(pattern, (re.IGNORECASE if kind != "AWS secret access key" else 0) | re.DOTALL), check)
    for kind, pattern, check in PREFIXED + OTHER
]
PREFIXES_ONLY = COMPILED[: len(PREFIXED)]
# where a prefixed key may start: text without one needs no prefixed pattern, and a key typed with spaces starts here
PREFIX_START = re.compile(
    r"(?<![A-Za-z0-9])(?:A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|[rs]k_live_|AIza|npm_|"
    r"pypi-|dstok_|eyJ|MII)",
    re.IGNORECASE,
)
# each other pattern, with the text that must be present for it to match: most text has none of them
OTHER_GATES = {"private key block": "---", "URL with a password": "://", "credential after a label": (":", "=")}
# What every finding needs somewhere in the normalized text, all in one pattern, so the
# ordinary text that most writes carry is scanned once, by it alone: a prefix where
# PREFIX_START finds one, a key block's dashes, a URL's ://, a label's word followed by
# := or =>, or a run of 24 key characters (an AWS secret's 40, any base64 run).
# tests/test_secrets.py checks by property that no text it passes holds a finding.
SUSPECT = re.compile(
    PREFIX_START.pattern + r"|---|://|(?:password|passwd|passphrase|secret|key|token|pwd)[\"'`]?\s*[:=]|[A-Za-z0-9+/_\-]{24}",
    re.IGNORECASE,
)
# The same pattern in lower case, for ASCII text in lower case: the same matches, at twice the
# speed (IGNORECASE folds the case of every character it compares)
SUSPECT_IN_LOWER_CASE = re.compile(SUSPECT.pattern.lower())
SPACED_KEY_CHARS = 400  # the longest run of groups joined: a key typed in groups is far shorter
KEY_GROUP = re.compile(r"[A-Za-z0-9_\-+/=.]++")
KEY_GROUPS = re.compile(r"[A-Za-z0-9_\-+/=.]++(?:[ \t]+[A-Za-z0-9_\-+/=.]++)+")
BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{24,}={0,2}(?![A-Za-z0-9+/=_\-])")
MASK = "[secret removed: {kind}]"


def normalize(text: str) -> str:
    """
    Text as a reader sees it: NFKC, invisible format characters removed.

    :param text: any text
    """
    if not text.isascii():
        text = FORMAT_CHARACTERS.sub("", unicodedata.normalize("NFKC", text))
    return text


def find_in(text: str, patterns: list[tuple[str, re.Pattern[str], Check]]) -> list[Finding]:
    found = []
    for kind, pattern, check in patterns:
        for match in pattern.finditer(text):
            # a credential after a label or in a URL: the value alone, not its label
            group = match.lastindex or 0
            if check is None or check(match.group(group)):
                found.append(Finding(kind, match.start(group), match.end(group)))
    return found


def spaced_keys(text: str) -> list[Finding]:
    """
    Keys typed in groups with spaces between them: ``AKIA IOSF ODNN 7EXA MPLE``.

    From each place a known prefix starts (outside a run already looked at), the
    run of space-separated groups there, at most :data:`SPACED_KEY_CHARS` long, is
    joined and scanned; a key found in it counts when it holds a digit and its
    inner groups are of one length, as a key copied in groups is (words are not).
    """
    found: list[Finding] = []
    covered = 0
    for start in PREFIX_START.finditer(text):
        if start.start() < covered:
            continue
        groups = KEY_GROUPS.match(text, start.start(), start.start() + SPACED_KEY_CHARS)
        if groups is None:
            covered = KEY_GROUP.match(text, start.start(), start.start() + SPACED_KEY_CHARS).end()  # type: ignore[union-attr]
            continue
        covered = groups.end()
        positions = [i for i in range(groups.start(), groups.end()) if not text[i].isspace()]
        if len(positions) == groups.end() - groups.start():
            continue  # no space inside: the patterns themselves see it
        joined = "".join(text[i] for i in positions)
        for finding in find_in(joined, PREFIXES_ONLY):
            first, last = positions[finding.start], positions[finding.end - 1] + 1
            if has_digit(joined[finding.start : finding.end]) and in_even_groups(text[first:last]):
                found.append(Finding(finding.kind, first, last))
    return found


def in_even_groups(span: str) -> bool:
    "Text split by spaces into three or more groups whose inner ones are all of one length."
    inner = span.split()[1:-1]
    return bool(inner) and len({len(group) for group in inner}) == 1


def encoded_keys(text: str) -> list[Finding]:
    "Keys hidden in base64: each long base64 run that decodes to text is scanned too."
    found = []
    for run in BASE64_RUN.finditer(text):
        try:
            bare = run.group().rstrip("=")
            padded = bare + "=" * (-len(bare) % 4)
            decoded = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded.isprintable() and (inner := find_in(decoded, COMPILED)):
            found.append(Finding(f"{inner[0].kind}, base64-encoded", run.start(), run.end()))
    return found


def gate_open(kind: str, text: str) -> bool:
    gate = OTHER_GATES.get(kind)
    return gate is None or any(part in text for part in ((gate,) if isinstance(gate, str) else gate))


def find_secrets(text: str) -> list[Finding]:
    """
    Every likely secret in ``text``, by its position in ``normalize(text)``, in order:
    the built-in patterns' (text :data:`SUSPECT` passes has none), then those plugins
    added through ``register_secret_patterns`` (:mod:`.plugins`), on all text.

    :param text: any text
    """
    text = normalize(text)
    found = full_scan(text) if suspect(text) else []
    if added := plugins.secret_patterns():
        found = sorted(found + find_in(text, [(p.kind, p.pattern, p.check) for p in added]), key=lambda f: (f.start, -f.end))
    return found


def suspect(text: str) -> bool:
    """
    Whether normalized ``text`` holds something every finding needs (:data:`SUSPECT`):
    text without it holds no likely secret.

    :param text: text as :func:`normalize` returns it
    """
    if text.isascii():
        return SUSPECT_IN_LOWER_CASE.search(text.lower()) is not None
    return SUSPECT.search(text) is not None


def full_scan(text: str) -> list[Finding]:
    """
    Every likely secret in normalized ``text``, by every pattern, in order:
    :func:`find_secrets` calls it only for text :data:`SUSPECT` matches.

    :param text: text as :func:`normalize` returns it
    """
    found = find_in(text, PREFIXES_ONLY) + spaced_keys(text) if PREFIX_START.search(text) else []
    found += find_in(text, [pattern for pattern in COMPILED[len(PREFIXED) :] if gate_open(pattern[0], text)])
    found += encoded_keys(text)
    return sorted(found, key=lambda f: (f.start, -f.end))


def secret_kind(text: str) -> str | None:
    """
    The kind of the first likely secret in ``text``, or None.

    :param text: any stored text
    """
    found = find_secrets(text)
    return found[0].kind if found else None


def mask_text(text: str) -> str:
    """
    ``text`` with each likely secret replaced by ``[secret removed: <kind>]``;
    normalized if it held one, unchanged if not.

    :param text: any text
    """
    found = find_secrets(text)
    if not found:
        return text
    text, parts, position = normalize(text), [], 0
    for finding in found:
        if finding.start >= position:
            parts += [text[position : finding.start], MASK.format(kind=finding.kind)]
            position = finding.end
        elif finding.end > position:
            position = finding.end
    return "".join(parts) + text[position:]


def mask_secrets(value: Any) -> Any:
    """
    ``value`` with every string inside it masked by :func:`mask_text`.

    :param value: strings, lists and dicts, nested; anything else unchanged
    """
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, (list, tuple)):
        return [mask_secrets(item) for item in value]
    if isinstance(value, dict):
        return {key: mask_secrets(item) for key, item in value.items()}
    return value


def first_secret(value: Any, field: str) -> tuple[str, str] | None:
    """
    ``(field, kind)`` of the first likely secret inside ``value``, or None.

    :param value: strings, lists and dicts, nested; dict keys are checked too
    :param field: the argument's name, extended with ``[i]`` and ``.key`` for nested values
    """
    found = secret_path(value) if may_hold_secret(value) else None
    return (field + "".join(reversed(found[0])), found[1]) if found else None


def may_hold_secret(value: Any) -> bool:
    """
    Whether a string inside ``value`` (a dict's keys too) may hold a likely secret: false only
    when no plugin added patterns and :data:`SUSPECT` finds nothing in all of them, normalized
    and joined by newlines. A newline is no key character and comes before a string as nothing
    does for :data:`SUSPECT`'s lookbehind, so what it finds in one string it finds in the joined
    text: a call's thousands of strings are searched once, and each is scanned alone only if
    this is true.

    :param value: strings, lists and dicts, nested
    """
    if plugins.secret_patterns():
        return True
    return suspect("\n".join(normalize(text) for text in strings_in(value)))


def strings_in(value: Any) -> Iterator[str]:
    "Every string inside ``value`` that :func:`secret_path` scans: items, a dict's values and its string keys."
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
        yield from (key for key in value if isinstance(key, str))


def secret_path(value: Any) -> tuple[list[str], str] | None:
    "Where the first likely secret inside ``value`` is (the path's parts, innermost first) and its kind, or None."
    if isinstance(value, str):
        kind = secret_kind(value)
        return ([], kind) if kind else None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if found := secret_path(item):
                found[0].append(f"[{i}]")
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if found := secret_path(item):
                found[0].append(f".{key}")
                return found
        for key in value:
            if isinstance(key, str) and (kind := secret_kind(key)):
                return ([" (a key)"], kind)
    return None


def refuse_secrets(value: Any, field: str) -> None:
    """
    Raise :class:`InvalidInput` if any string inside ``value`` holds a likely secret.

    :param value: a call's argument: strings, lists and dicts, nested
    :param field: the argument's name, for the error
    """
    if found := first_secret(value, field):
        name, kind = found
        raise InvalidInput(
            f"{name}: looks like a credential ({kind}); memory does not store credentials. "
            "Remove it, or start the server with --allow-secrets if it is not a real secret"
        )
