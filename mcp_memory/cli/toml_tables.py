"""Edit a TOML file by its tables, as text, so that every comment and every other table stays as the
user wrote it (`mcp-memory install codex` edits Codex's config.toml this way, with no TOML writer).

A table is its header line (`[mcp_servers.memory]`) and the lines up to the next header. The caller
checks every result with tomllib: an edit this simple reading cannot do is refused, never guessed.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any

TablePath = tuple[str, ...]

_HEADER = re.compile(r"^[ \t]*\[(?P<array>\[)?(?P<key>[^\[\]\n]+)\]\]?[ \t]*(#.*)?$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Table:
    path: TablePath
    start: int  # the header line's index
    end: int  # one past the table's last line


def tables(lines: list[str]) -> list[Table]:
    """The tables (and arrays of tables) of a file split into lines, in order; not the root keys."""
    headers: list[tuple[int, TablePath]] = []
    in_string: str | None = None  # inside a multi-line string, a line that looks like a header is not one
    for i, line in enumerate(lines):
        match = _HEADER.match(line.rstrip("\r\n")) if in_string is None else None
        if match:
            headers.append((i, _path(match["key"], array=bool(match["array"]))))
        for quotes in ('"""', "'''"):
            if in_string in (None, quotes) and line.count(quotes) % 2 == 1:
                in_string = quotes if in_string is None else None
    ends = [i for i, _ in headers[1:]] + ([len(lines)] if headers else [])
    return [Table(path, start, end) for (start, path), end in zip(headers, ends, strict=True)]


def _path(key: str, *, array: bool) -> TablePath:
    """A header's key as its parts, read by tomllib itself: `mcp_servers."memory"` is (mcp_servers, memory)."""
    try:
        parsed: Any = tomllib.loads(f"[[{key}]]" if array else f"[{key}]")
    except tomllib.TOMLDecodeError:
        return ()
    parts: list[str] = []
    while isinstance(parsed, dict) and len(parsed) == 1:
        name, parsed = next(iter(parsed.items()))
        parts.append(name)
        parsed = parsed[0] if isinstance(parsed, list) and parsed else parsed
    return tuple(parts)


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def remove_tables(text: str, prefix: TablePath) -> str:
    """Without the tables at `prefix` and under it. Comments and blank lines at a table's end stay (they
    usually introduce the next table), and so does the blank line before it unless two would meet."""
    lines = text.splitlines(keepends=True)
    for table in reversed(tables(lines)):
        if table.path[: len(prefix)] != prefix:
            continue
        stop = table.start + 1
        for i in range(table.start + 1, table.end):
            if _is_content(lines[i]):
                stop = i + 1
        start = table.start
        if start > 0 and not lines[start - 1].strip() and (stop == len(lines) or not lines[stop].strip()):
            start -= 1
        del lines[start:stop]
    return "".join(lines)


def append(text: str, block: str) -> str:
    """`block` (whole lines) at the end, after a blank line."""
    if text and not text.endswith("\n"):
        text += "\n"
    if text and not text.endswith("\n\n"):
        text += "\n"
    return text + block


def insert_after_header(text: str, path: TablePath, line: str) -> str | None:
    """`line` as the first line of the table at `path`; None when the file has no such header."""
    lines = text.splitlines(keepends=True)
    for table in tables(lines):
        if table.path == path:
            lines.insert(table.start + 1, line)
            return "".join(lines)
    return None


def remove_line(text: str, line: str) -> str:
    """Without the lines equal to `line` (ignoring the line ending), and without a table this leaves
    empty of keys."""
    lines = text.splitlines(keepends=True)
    emptied: list[TablePath] = []
    for table in tables(lines):
        body = lines[table.start + 1 : table.end]
        if any(b.rstrip("\r\n") == line.rstrip("\n") for b in body):
            kept = [b for b in body if b.rstrip("\r\n") != line.rstrip("\n")]
            if not any(_is_content(b) for b in kept):
                emptied.append(table.path)
    text = "".join(b for b in lines if b.rstrip("\r\n") != line.rstrip("\n"))
    for path in emptied:
        text = remove_tables(text, path) if _is_only(text, path) else text
    return text


def _is_only(text: str, path: TablePath) -> bool:
    """The table at `path` exists once and has no sub-tables (removing it removes nothing else)."""
    found = [t.path for t in tables(text.splitlines(keepends=True)) if t.path[: len(path)] == path]
    return found == [path]


def render_table(path: TablePath, values: dict[str, Any]) -> str:
    """A `[table]` with one `key = value` line per entry; nested tables inline."""
    header = ".".join(_key(part) for part in path)
    return f"[{header}]\n" + "".join(f"{_key(k)} = {render_value(v)}\n" for k, v in values.items())


def render_value(value: Any) -> str:
    """A TOML value: JSON's strings, numbers, booleans and arrays are TOML's too; objects become inline
    tables. Anything else (dates) is refused with TypeError."""
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)} = {render_value(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, bool | int | str) or (isinstance(value, float) and value == value):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot write {value!r} as TOML")


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)
