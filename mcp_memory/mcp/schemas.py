"""Tool definitions as a client lists them: the schemas the SDK derives, without what a model never uses.

A client sends its model every listed tool's definition in every conversation, so each word costs tokens
whether the tool is called or not (bench/tool_tokens.py counts them). Pydantic's schemas carry a title for
every argument ("Thread Id" beside `thread_id`), an optional argument is spelled `anyOf: [X, null]` with
`default: null`, and docstrings keep their indentation. Listed, an input schema loses the titles and
`additionalProperties: true` (JSON Schema's default), and an optional argument is just X (the server still
accepts an explicit null: the arguments are validated against the function's own signature); an output schema loses only its titles (a client validating
`structuredContent` against it still accepts every null we send); descriptions are one line.
"""

from __future__ import annotations

import re
from typing import Any

from mcp_types import Tool

_SPACE = re.compile(r"\s+")
_NULL = {"type": "null"}


def listed(tool: Tool) -> Tool:
    """The tool's definition as clients get it."""
    return tool.model_copy(
        update={
            "description": one_line(tool.description),
            "input_schema": _slim(tool.input_schema, optional_null=True),
            "output_schema": None if tool.output_schema is None else _slim(tool.output_schema),
        }
    )


def one_line(text: str | None) -> str | None:
    return None if text is None else _SPACE.sub(" ", text).strip()


def _slim(schema: Any, *, optional_null: bool = False, in_properties: bool = False) -> Any:
    if isinstance(schema, list):
        return [_slim(item, optional_null=optional_null) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if in_properties:  # a map of names to schemas: the names are not keywords
        return {name: _slim(value, optional_null=optional_null) for name, value in schema.items()}
    slim: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "additionalProperties" and value is True and optional_null:  # the default, in inputs
            continue
        if key == "description" and isinstance(value, str):
            slim[key] = one_line(value)
            continue
        slim[key] = _slim(value, optional_null=optional_null, in_properties=key in ("properties", "$defs"))
    if optional_null:
        variants = slim.get("anyOf")
        if isinstance(variants, list) and _NULL in variants and len(variants) == 2:
            del slim["anyOf"]
            slim = {**next(v for v in variants if v != _NULL), **slim}
            if slim.get("default", ...) is None:
                del slim["default"]
    return slim
