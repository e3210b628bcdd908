"""What every tool module shares: annotations, results, and the tool class that turns errors into tool errors.

A tool is a typed async function ``tool(bridge, <arguments>..., project=None)``
declared with :func:`bridge_tool`: fastmcp builds its input schema from the
type hints and field descriptions and checks the arguments against them;
:func:`build_tool` binds it to a :class:`~.bridge.Bridge`. Descriptions may name
an SQL cap in braces, such as ``{max_rows}``: they show the configured value.
The nine official tools keep the official server's schemas byte for byte
(:mod:`.official_schemas`), so for them the wire schema is given, not generated.
"""

import copy
import functools
import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastmcp.exceptions import FastMCPError, ToolError, ValidationError
from fastmcp.tools import FunctionTool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field, ValidationError as ArgumentsInvalid
from pydantic.json_schema import SkipJsonSchema

from datasette_memory import Config, MemoryStoreError
from datasette_memory.core.file_errors import file_failure
from datasette_memory.core.log_throttle import LogThrottle
from datasette_memory.core.stored_data import STORED_DATA_NOTE
from datasette_memory.core.validation import type_name

from .bridge import ArgumentRefused, Bridge
from .profiles import check_profile

Project = Annotated[
    str | None,
    Field(description="The project to use; defaults to the server's project. A server started with --project cannot use another."),
]
AsOf = Annotated[
    str | int | None,
    Field(description="Read memory as it was at this moment: an event id (memory just after that event) or an ISO 8601 time. "
          "Omit for memory as it is now."),
]
TYPE_NAMES = {"string_type": "string", "int_type": "integer", "int_from_float": "integer", "bool_type": "boolean",
              "list_type": "array", "float_type": "number", "dict_type": "object"}


def annotations(read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )


READ_ONLY = annotations(read_only=True, destructive=False, idempotent=True)
WRITES = annotations(read_only=False, destructive=False, idempotent=False)
DELETES = annotations(read_only=False, destructive=True, idempotent=True)


def pretty(value: Any) -> str:
    "Text as the official server writes it: ``JSON.stringify(value, null, 2)``."
    return json.dumps(value, indent=2, ensure_ascii=False)


# Where a result's text and structured content must stay the official server's, its
# metadata says what the other results say under ``note``
STORED_DATA_META = {"datasette-memory/note": STORED_DATA_NOTE}


def text_result(text: str, structured: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> ToolResult:
    "A result of ``text``, with ``structured`` as its structured content and ``meta`` as its metadata."
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=structured, meta=meta)


def stored_text_result(text: str) -> ToolResult:
    "An SQL tool's text, which carries stored values: the stored-data note ends it as one more ``#`` line."
    return text_result(f"{text}# {STORED_DATA_NOTE}\n", meta=STORED_DATA_META)


def json_result(result: Any) -> ToolResult:
    """
    Compact JSON text (the bytes a result's budget counts), and the result
    itself as structured content if it is an object.
    """
    return text_result(json.dumps(result, separators=(",", ":"), ensure_ascii=False), result if isinstance(result, dict) else None)


Refused = Callable[[Bridge, dict[str, Any], str], Awaitable[None]]


@dataclass(frozen=True)
class ToolSpec:
    """
    How a tool function is offered.

    :param title: a short human title
    :param annotations: read-only, destructive and idempotent hints, set truthfully
    :param description: the description, when not the function's docstring
    :param input_schema: the wire schema, when it must be given rather than generated
    :param output_schema: the JSON Schema of the structured result, if the tool declares one
    :param refused: ``refused(bridge, arguments, error)``, told of calls refused before the tool ran
    :param profile: the smallest tool profile offering it: ``official``, ``memory`` or ``all`` (:mod:`.profiles`)
    """

    title: str
    annotations: ToolAnnotations
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    refused: Refused | None = None
    profile: str = "memory"

    def __post_init__(self) -> None:
        check_profile(self.profile, "profile")


def bridge_tool(title: str, hints: ToolAnnotations, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    "Declare an async function as a tool: see :class:`ToolSpec` for the options."

    def declare(function: Callable[..., Any]) -> Callable[..., Any]:
        function.spec = ToolSpec(title, hints, **options)  # type: ignore[attr-defined]
        return function

    return declare


class BridgeTool(FunctionTool):
    "A tool whose failures are tool errors in the core's words, and whose refusals its ``refused`` hook hears of."

    bridge: Annotated[SkipJsonSchema[Any], Field(exclude=True)] = None
    refused: Annotated[SkipJsonSchema[Any], Field(exclude=True)] = None

    def to_mcp_tool(self, **overrides: Any) -> Any:
        tool = super().to_mcp_tool(**overrides)
        tool.meta = None  # as the official server lists its tools
        return tool

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            try:
                return await super().run(arguments)
            except ValidationError as e:
                if not isinstance(e.__cause__, ArgumentsInvalid):
                    raise
                refusal = ArgumentRefused(argument_error(self, e.__cause__))
            except ArgumentRefused as e:
                refusal = e
            except MemoryStoreError as e:
                raise ToolError(str(e), log_level=logging.DEBUG)
            if self.refused:
                await self.refused(self.bridge, dict(arguments or {}), str(refusal))
            raise ToolError(str(refusal), log_level=logging.DEBUG)
        except FastMCPError:
            raise
        except Exception as e:
            raise failed(self, e) from e


# failures no caller caused, logged at most once a minute per kind: never a traceback per call
FAILURES = LogThrottle(logging.getLogger("mcp_bridge"))


def failed(tool: BridgeTool, error: Exception) -> ToolError:
    """
    The one-line tool error for a failure no caller caused. A file's failure (a
    full disk, a lock held too long...) is said as the core says it; anything else
    is a bug, logged with its traceback. Both are logged at most once a minute per
    kind, so a server failing every call cannot flood its stderr.
    """
    failure = file_failure(error, getattr(getattr(tool.bridge, "backend", None), "path", None))
    if failure is not None:
        FAILURES.log(failure.kind, f"{tool.name}: {failure.message}")
        return ToolError(failure.message, log_level=logging.DEBUG)
    FAILURES.log(type(error).__name__, f"{tool.name} failed: {type(error).__name__}: {error}", exc_info=error)
    return ToolError(f"{tool.name} failed ({type(error).__name__}: {error}); the server's log says where", log_level=logging.DEBUG)


def argument_error(tool: FunctionTool, error: ArgumentsInvalid) -> str:
    "The first problem with a call's arguments, named as the core names problems: the field, then what is wrong."
    first = error.errors()[0]
    head, *rest = first["loc"]
    field = str(head) + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in rest)
    kind = first["type"]
    if kind == "unexpected_keyword_argument":
        names = ", ".join(tool.parameters.get("properties", {})) or "no arguments"
        return f"{field}: unknown argument; {tool.name} takes {names}"
    if kind == "missing_argument":
        return f"{field}: required argument is missing"
    if kind in TYPE_NAMES:
        return f"{field}: must be {TYPE_NAMES[kind]}, got {type_name(first['input'])}"
    if kind == "literal_error":
        return f"{field}: must be {first['ctx']['expected']}, got {first['input']!r}"
    return f"{field}: {first['msg']}"


def describe(text: str, config: Config) -> str:
    "``text`` with each ``{cap}`` naming an SQL cap replaced by its configured value."
    caps = vars(config.sql)
    return re.sub(r"\{(\w+)\}", lambda m: str(caps[m[1]]) if m[1] in caps else m[0], text)


def docstring_text(function: Callable[..., Any]) -> str:
    "A function's docstring as a description: its lines joined, paragraphs kept."
    return re.sub(r"(?<!\n)\n(?!\n)", " ", inspect.cleandoc(function.__doc__ or ""))


def build_tool(function: Callable[..., Any], bridge: Bridge, config: Config) -> BridgeTool:
    """
    The tool ``function`` declares, bound to ``bridge``, its descriptions showing ``config``'s caps.

    :param function: declared with :func:`bridge_tool`
    :param bridge: where its calls go
    :param config: the configuration its descriptions show
    """
    spec: ToolSpec = function.spec  # type: ignore[attr-defined]
    tool = BridgeTool.from_function(
        functools.partial(function, bridge),
        name=function.__name__,
        title=spec.title,
        description=describe(spec.description or docstring_text(function), config),
        annotations=spec.annotations,
        output_schema=spec.output_schema,
    )
    parameters = copy.deepcopy(spec.input_schema or tool.parameters)
    for schema in parameters.get("properties", {}).values():
        if "description" in schema:
            schema["description"] = describe(schema["description"], config)
    return tool.model_copy(update={"parameters": parameters, "bridge": bridge, "refused": spec.refused})
