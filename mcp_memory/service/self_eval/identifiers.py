"""What `mcp-memory eval` counts as an identifier, and where one is mentioned.

An identifier is a word of a session's work that names something precise enough that the agent could not
have guessed it: if it came from an earlier session, the recall had to carry it. A text is cut into tokens
(runs of letters, digits and `_ . / @ + ~ % -`, with sentence punctuation trimmed off their ends); a token
is an identifier when it is one of:

- a path: a token with a slash that starts with `/`, `~` or `.`, or has three segments or more, or has a
  segment holding `_` or `.` (`src/app/main.py`, `mcp_memory/hooks`, `github.com/acme/api`; not
  `and/or`, `client/server`). A path to a file with an extension counts as its file name
  (`/workspace/hello_world.py` is `hello_world.py`): a file is the same file whatever directory a
  session names it from;
- a file name with an extension (`hello_world.py`, `pyproject.toml`, `Dockerfile.dev`), or a dotted name
  (`os.path.join`, `HookRecall.prompt`, `Node.js`): letters, digits and `_` on each side of every dot,
  one side at least two characters long (so `e.g` and `i.e` are not);
- a snake_case name (`budget_tokens`, `__init__`, `MCP_MEMORY_DATA_DIR`), a camelCase name (`getUser`),
  a PascalCase name with two capitals or more (`HookRecall`, `PostgreSQL`);
- a version: `1.2.3` and longer, or `v` and a number with a dot (`v2.1`, `v0.1.4-rc1`);
- a number of three digits or more (`8000`, `4096`) or a number with its unit attached (`250ms`, `1.5GB`,
  `30%`, `16k`); dates and times are not (every recalled line is dated);
- a hexadecimal id of 7 characters or more with both letters and digits (a commit, a short hash);
- a name: a capitalized word of three letters or more inside a sentence (not after `.`, `!`, `?`, `:` or
  at a line's start), not a stopword (`Dana`, `Stripe`, `Redis`).

Common English words never count: a plain lower-case word, however technical (`main`, `config`), is not an
identifier, since it is found in any text about the project whether or not the recall carried it.

An identifier is mentioned in a text (an earlier session, a prompt, the injected recall) when one of the
text's tokens is it, or holds it as a run of its `/` segments (`mcp_memory/hooks` in
`mcp_memory/hooks/gemini.py`), as its file name, or as a part between dots (`HookRecall` in
`HookRecall.prompt`). Case counts: `Config` and `config` differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from mcp_memory.search.terms import STOPWORDS

_TOKEN = re.compile(r"[\w./@+~%-]+")
_LEAD = ",-+@"
_TRAIL = ".,-+@/"
_SEGMENT = re.compile(r"[\w.@+~%-]*\w[\w.@+~%-]*|\.{1,2}|~")
_DOTTED = re.compile(r"\w+(?:\.\w+)+")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,9}$")
_SNAKE = re.compile(r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|__[A-Za-z0-9]+__")
_CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*")
_PASCAL = re.compile(r"[A-Z][A-Za-z0-9]*[a-z0-9][A-Za-z0-9]*[A-Z][A-Za-z0-9]*")
_VERSION = re.compile(r"v?\d+(?:\.\d+){2,}(?:[-+.]?[A-Za-z0-9]+)*|v\d+\.\d+(?:[-+.]?[A-Za-z0-9]+)*")
_NUMBER = re.compile(r"\d{3,}")
_UNIT = re.compile(
    r"\d+(?:\.\d+)?(?:ms|s|sec|min|h|hr|d|k|m|kb|mb|gb|tb|kib|mib|gib|px|em|rem|x|%)", re.IGNORECASE
)
_HEX = re.compile(r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}.*)?")
_NAME = re.compile(r"[A-Z][a-z]{2,}")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*(?:[-*>#]+\s*|\d+[.)]\s*)?)$")
MIN_CHARS = 3


def identifiers(text: str) -> set[str]:
    """The identifiers a text holds (the module docstring says which)."""
    found: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = _trimmed(match.group())
        if len(token) < MIN_CHARS:
            continue
        identifier = _identifier(token)
        if identifier is None and _is_name(token, text[max(0, match.start() - 12) : match.start()]):
            identifier = token
        if identifier is not None:
            found.add(identifier)
    return found


def mentions(texts: Iterable[str]) -> set[str]:
    """Every form in which the texts mention something: what `identifiers` are looked up in."""
    forms: set[str] = set()
    for text in texts:
        for match in _TOKEN.finditer(text):
            token = _trimmed(match.group())
            if token:
                forms.update(_forms(token))
    return forms


def _trimmed(token: str) -> str:
    token = token.lstrip(_LEAD).rstrip(_TRAIL)
    return token.lstrip("/") if token.startswith("//") else token


def _identifier(token: str) -> str | None:
    if "/" in token:
        return _path(token)
    if _DATE.fullmatch(token):
        return None
    if _VERSION.fullmatch(token) or _UNIT.fullmatch(token) or _NUMBER.fullmatch(token):
        return token
    if _DOTTED.fullmatch(token):
        parts = token.split(".")
        return token if max(len(p) for p in parts) >= 2 and not token[0].isdigit() else None
    if _SNAKE.fullmatch(token) or _CAMEL.fullmatch(token) or _PASCAL.fullmatch(token):
        return token
    if _HEX.fullmatch(token):
        return token
    return None


def _is_name(token: str, before: str) -> bool:
    """A capitalized word inside a sentence (`before`: the text just before it)."""
    return (
        bool(_NAME.fullmatch(token)) and token.lower() not in STOPWORDS and not _SENTENCE_START.search(before)
    )


def _path(token: str) -> str | None:
    segments = [s for s in token.split("/") if s]
    if len(segments) < 2 or not all(_SEGMENT.fullmatch(s) for s in segments):
        return None
    rooted = token[0] in "/~."
    if not (rooted or len(segments) >= 3 or any("_" in s or "." in s.strip(".") for s in segments)):
        return None
    last = segments[-1]
    if _EXTENSION.search(last) and len(last) >= MIN_CHARS:
        return last
    return token.rstrip("/").removeprefix("./")


def _forms(token: str) -> Iterator[str]:
    yield token
    if "/" in token:
        segments = [s for s in token.split("/") if s]
        for start in range(len(segments)):
            for end in range(start + 1, len(segments) + 1):
                run = "/".join(segments[start:end])
                yield run
                if start == 0 and token.startswith("/"):
                    yield "/" + run
        token = segments[-1] if segments else token
        yield token
    if "." in token:
        yield from (part for part in token.split(".") if part)
