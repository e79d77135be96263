"""A tool's arguments that do not fit its input schema, said in plain words for the model that sent them.

The SDK checks a call's arguments with pydantic before the tool runs and, when they do not fit, answers
pydantic's own report (every error, the input echoed whole, a link to errors.pydantic.dev). `worded` says
instead, for each argument in turn, what was expected and what was got, the value echoed as a short
prefix with its length: `add_turn: thread_id should be text, got the number 5`. `MemoryServer.call_tool`
(mcp/app.py) is where the SDK's report is swapped for this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from mcp_memory.errors import bounded, shown

# What a pydantic error type expected, in words; `{...}` takes the error's context (its limits).
_EXPECTED = {
    "string_type": "text",
    "string_unicode": "valid Unicode text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "datetime_type": "an ISO 8601 date and time",
    "datetime_parsing": "an ISO 8601 date and time",
    "date_parsing": "an ISO 8601 date",
    "string_too_long": "text of at most {max_length} characters",
    "string_too_short": "text of at least {min_length} characters",
    "too_long": "at most {max_length} items",
    "too_short": "at least {min_length} items",
    "greater_than": "a number greater than {gt}",
    "greater_than_equal": "a number of at least {ge}",
    "less_than": "a number less than {lt}",
    "less_than_equal": "a number of at most {le}",
    "literal_error": "one of {expected}",
    "enum": "one of {expected}",
    "string_pattern_mismatch": "text matching {pattern}",
    "none_required": "null",
}


def worded(tool: str, error: ValidationError) -> str:
    """The tool's argument errors in words, at most ~300 characters: each names its argument."""
    problems = [_problem(tool, detail) for detail in error.errors(include_url=False)]
    text = f"{tool}: " + "; ".join(dict.fromkeys(problems))
    return bounded(text)


def _problem(tool: str, detail: Mapping[str, Any]) -> str:  # one of pydantic's ErrorDetails
    name = _argument(detail["loc"])
    kind = detail["type"]
    if kind == "missing":
        return f"{name} is required but missing"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{name} is not an argument of {tool}"
    pattern = _EXPECTED.get(kind)
    if pattern is None:  # pydantic's own short sentence, without its prefix or link
        expected = detail["msg"].removeprefix("Input should be ").removeprefix("Value error, ")
    else:
        expected = pattern.format(**{k: _plain(v) for k, v in (detail.get("ctx") or {}).items()})
    return f"{name} should be {expected}, got {_got(detail.get('input'))}"


def _argument(location: tuple[int | str, ...]) -> str:
    """`thread_id`, `types[2]`, `metadata.source`: where in the arguments the error is."""
    name = ""
    for part in location:
        if isinstance(part, int):
            name += f"[{part}]"
        else:
            name += f".{part}" if name else str(part)
    return name or "the arguments"


def _got(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "true" if value else "false"
        case int() | float():
            return f"the number {shown(value)}"
        case str():
            return f"text {shown(value)}"
        case list() | tuple():
            return f"a list of {len(value):,} item{'' if len(value) == 1 else 's'}"
        case dict():
            return f"an object of {len(value):,} key{'' if len(value) == 1 else 's'}"
    return f"a {type(value).__name__}"


def _plain(value: Any) -> str:
    return shown(value, 60) if not isinstance(value, str) else value[:60]
