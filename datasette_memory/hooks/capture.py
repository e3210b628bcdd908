"""What the agent did, as one ledger event per tool call: read from the PostToolUse payload, deterministically.

No language model reads the call: the event says which tool ran, the files it
touched (its ``file_path``, or the files an ``apply_patch`` names), a shell
command and its exit status, and a test run's counts when its output ends with
a summary pytest, jest, vitest, mocha, node's test runner, cargo or go test
prints. Each field is cut to a small size, and the whole event to a budget.

Text inside ``<private>...</private>`` was hidden from the whole payload before
it got here (:mod:`.private`). A field holding what looks like a credential is
left out, and the event says so; the core's scanner decides, as it does for
every other write (:mod:`.credentials`).

The event's content is one ``name: value`` line per field, so a person reads it
on the ledger page and ``search_text`` finds it line by line::

    tool: Bash
    command: pytest -q tests/test_auth.py
    exit: 1
    tests: 2 failed, 10 passed (pytest)
"""

import dataclasses
import pathlib
import re
from typing import Any

from .credentials import left_out
from .payloads import TOOL_FAILURE, Payload
from .shape import EVENT_BUDGET

DEFAULT_BUDGET = EVENT_BUDGET  # bytes of one event's content
MAX_FIELD_CHARS = {"tool": 100, "command": 300, "error": 300, "tests": 200, "exit": 40}
MAX_FILES = 10
MAX_PATH_CHARS = 200
MAX_FILES_CHARS = 500
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.MULTILINE)
EXIT_CODE = re.compile(
    r"(?:^|\n)\s*Exit code:?\s*(-?\d+)|Process exited with code (-?\d+)|exited with (?:non-zero )?(?:status )?code (-?\d+)",
    re.IGNORECASE,
)
PATH_KEYS = ("file_path", "notebook_path")
RESPONSE_PATH_KEYS = ("filePath",)
EXIT_KEYS = ("exit_code", "exitCode", "returncode", "code")
SEARCH_TOOLS = ("Grep", "Glob", "LS", "WebSearch", "WebFetch")


@dataclasses.dataclass
class Capture:
    """
    One tool call, as the ledger records it.

    :param fields: ``name: value`` lines, in order
    :param notes: what was left out and why, for stderr
    """

    fields: dict[str, str]
    notes: list[str]

    def content(self) -> str:
        "The event's content: one ``name: value`` line per field."
        return "\n".join(f"{name}: {value}" for name, value in self.fields.items())


def capture(payload: Payload, budget: int = DEFAULT_BUDGET) -> Capture:
    """
    The activity event for one PostToolUse (or PostToolUseFailure) payload.

    :param payload: the hook's payload
    :param budget: most bytes of the event's content (UTF-8)
    """
    tool_input, response, error = payload.tool_input, payload.tool_response, payload.error
    tool = payload.tool_name or "unknown"
    command = command_of(tool, tool_input)
    output = response_text(response) + ("\n" + error if error else "")
    fields = {
        "tool": tool,
        "files": files_text(touched_files(tool, tool_input, response, payload.cwd)),
        "command": one_line(command) if command else "",
        "exit": exit_status(payload, response, error) if command else ("failed" if payload.event == TOOL_FAILURE else ""),
        "tests": summary_of_tests(output) if command else "",
        "error": one_line(error) if error and payload.event == TOOL_FAILURE else "",
    }
    # scanned whole, then cut: a key cut short would pass the scanner and be stored in part
    found = Capture({name: value for name, value in fields.items() if value}, [])
    found.notes += left_out(found.fields, "the activity event")
    found.fields = {name: cut(value, MAX_FIELD_CHARS.get(name, 1000)) for name, value in found.fields.items()}
    within_budget(found, budget)
    return found


def command_of(tool: str, tool_input: Any) -> str | None:
    "The shell command a tool ran, or None (an ``apply_patch``'s command is a patch, not a command)."
    if not isinstance(tool_input, dict) or tool == "apply_patch":
        return None
    command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = " ".join(command)
    if not isinstance(command, str) or command.lstrip().startswith("*** Begin Patch"):
        return None
    return command


def touched_files(tool: str, tool_input: Any, response: Any, cwd: pathlib.Path | None) -> list[str]:
    "The files a tool call read or wrote, relative to ``cwd`` where they are under it."
    if tool in SEARCH_TOOLS:
        return []
    found: list[str] = []
    if isinstance(tool_input, dict):
        found += [tool_input[key] for key in PATH_KEYS if isinstance(tool_input.get(key), str)]
        patch = tool_input.get("command") if tool == "apply_patch" or isinstance(tool_input.get("command"), str) else None
        if isinstance(patch, str) and patch.lstrip().startswith("*** Begin Patch"):
            found += [(added or moved).strip() for added, moved in PATCH_FILE.findall(patch)]
    if isinstance(response, dict):
        found += [response[key] for key in RESPONSE_PATH_KEYS if isinstance(response.get(key), str)]
    return list(dict.fromkeys(relative(path, cwd) for path in found if path.strip()))


def relative(path: str, cwd: pathlib.Path | None) -> str:
    "``path`` relative to ``cwd`` when it is inside it, else as given."
    if cwd is None or not path.startswith("/"):
        return path
    try:
        return str(pathlib.PurePosixPath(path).relative_to(cwd))
    except ValueError:
        return path


def files_text(files: list[str]) -> str:
    "The files as one field: at most :data:`MAX_FILES` in :data:`MAX_FILES_CHARS`, each cut, and how many more."
    shown = [cut(path, MAX_PATH_CHARS) for path in files[:MAX_FILES]]
    while len(shown) > 1 and len(", ".join(shown)) > MAX_FILES_CHARS:
        shown.pop()
    more = f" (+{len(files) - len(shown)} more)" if len(files) > len(shown) else ""
    return ", ".join(shown) + more


def response_text(response: Any) -> str:
    "A tool's response as text: a string as it is, Claude Code's Bash result as its stdout then stderr."
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        return "\n".join(str(response[key]) for key in ("stdout", "stderr", "output") if isinstance(response.get(key), str))
    return ""


def exit_status(payload: Payload, response: Any, error: str | None) -> str:
    "A command's exit status: its code where the payload gives or prints one, else what is known."
    if isinstance(response, dict):
        for key in EXIT_KEYS:
            if isinstance(response.get(key), int) and not isinstance(response.get(key), bool):
                return str(response[key])
        if response.get("interrupted") is True:
            return "interrupted"
    for text in (error, response if isinstance(response, str) else None):
        found = EXIT_CODE.search(text) if text else None
        if found:
            return next(code for code in found.groups() if code is not None)
    if payload.event == TOOL_FAILURE:
        return "failed"
    # Claude Code sends PostToolUse only for a command that succeeded (a failure is PostToolUseFailure)
    return "0" if isinstance(response, dict) and "stdout" in response else ""


# A test run's summary, from the last lines that hold one: (pattern, runner); each pattern's groups are counts.
PYTEST = re.compile(
    r"^=*[ \t]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)(?:, )?)+) in [\d.]+s",
    re.MULTILINE,
)
JEST = re.compile(r"^Tests:[ \t]++(.*?\d+ total)[ \t]*$", re.MULTILINE)
VITEST = re.compile(r"^[ \t]*Tests[ \t]+(\d+ (?:failed|passed|skipped)[^\n]*?\(\d+\))\s*$", re.MULTILINE)
MOCHA = re.compile(r"^[ \t]*(\d+) (passing|failing|pending)\b", re.MULTILINE)
NODE_TEST = re.compile(r"^# (pass|fail|skipped|todo) (\d+)\s*$", re.MULTILINE)
CARGO = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored", re.MULTILINE)
GO_TEST = re.compile(r"^--- (PASS|FAIL|SKIP): ", re.MULTILINE)
GO_PACKAGE = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))", re.MULTILINE)


def summary_of_tests(output: str) -> str:
    "A test run's counts, from the summary the runner printed last, with the runner's name; empty if there is none."
    if found := PYTEST.findall(output):
        return f"{found[-1]} (pytest)"
    if found := JEST.findall(output):
        return f"{found[-1]} (jest)"
    if found := VITEST.findall(output):
        return f"{found[-1]} (vitest)"
    if found := CARGO.findall(output):
        passed, failed, ignored = (sum(int(row[i]) for row in found) for i in range(3))
        return f"{passed} passed, {failed} failed, {ignored} ignored (cargo)"
    if found := NODE_TEST.findall(output):
        return ", ".join(f"{count} {word}" for word, count in found) + " (node --test)"
    if found := MOCHA.findall(output):
        return ", ".join(f"{count} {word}" for count, word in found) + " (mocha)"
    tests, packages = GO_TEST.findall(output), GO_PACKAGE.findall(output)
    return go_summary(tests, packages) if tests or packages else ""


def go_summary(tests: list[str], packages: list[str]) -> str:
    "go test's counts: tests by result where -v printed them, then packages ok and failed."
    results = {"FAIL": "failed", "PASS": "passed", "SKIP": "skipped"}
    parts = [f"{tests.count(word)} {result}" for word, result in results.items() if tests.count(word)]
    parts += [f"{packages.count(word)} package{'s' if packages.count(word) != 1 else ''} {word}"
              for word in ("ok", "FAIL") if packages.count(word)]
    return ", ".join(parts) + " (go test)"


def one_line(text: str) -> str:
    "Text on one line: its line breaks and runs of spaces become one space."
    return " ".join(text.split())


def cut(text: str, limit: int) -> str:
    "``text`` of at most ``limit`` characters, marked when cut."
    return text if len(text) <= limit else text[: limit - 1] + "…"


def within_budget(found: Capture, budget: int) -> None:
    "Cut the longest fields, then drop the last ones, until the content fits in ``budget`` bytes."
    while len(found.content().encode("utf-8")) > budget and len(found.fields) > 1:
        name, value = max(found.fields.items(), key=lambda item: len(item[1]))
        over = len(found.content().encode("utf-8")) - budget
        if name != "tool" and len(value) > 40:
            found.fields[name] = cut(value, max(40, len(value) - over - 1))
        else:
            dropped = list(found.fields)[-1]
            del found.fields[dropped]
            found.notes.append(f"left the {dropped} out of the activity event to fit its {budget}-byte budget")
