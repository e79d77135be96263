"""Credentials out of stored text: found and replaced before anything is written.

`redact(text)` returns the text with each credential replaced by a marker naming its kind
(`[redacted:jwt]`, `[redacted:url_password]`, ...) and `<private>...</private>` spans replaced by
`[private]` (an unclosed `<private>` hides everything after it). The same input always gives the same
output, so a secret redacted on write matches the same secret redacted in a later call (deleting a graph
observation by its words, updating a memory to the same text).

Two layers:
- `redact_fast`: regular expressions only (patterns.py, the standard library), for a process that must
  start in milliseconds (a hook): PEM private keys, JWTs, passwords in URLs (`#`, `?`, `/`, `@` in them
  too) and connection strings, curl's credentials, Authorization headers, the token formats of AWS,
  GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, Google, Azure, npm, PyPI, SendGrid, Hugging Face,
  1Password, Facebook, Notion, Sourcegraph, Vault, Discord, and values assigned to secret-sounding names.
  A look-alike placeholder (`${PASSWORD}`, `<your-key>`, `ghp_xxxx...`) is kept.
- `redact`: the above, then detect-secrets (Yelp's maintained detector, detector.py) over what is left:
  its format plugins on the whole text, its keyword detector and its high-entropy plugins on the lines
  that name a secret, its false-positive filters on what they find. Imported on first use (`loaded()`
  tells), its plugins built once and used without its global settings.

Metadata: `redact_values` redacts a JSON object's strings, `stamp` records the kinds found under
REDACTED_KEY (as safety.stamp records flags), `redact_memory` does both for a memory.

Cost (a 2,000-character technical message / 50,000): redact_fast ~0.2 / ~4 ms, redact ~0.8 / ~20 ms;
the first redact ~0.2-0.3 s more, to import detect-secrets.

A credential's shape is not a hash's: git SHAs, UUIDs and digests quoted in prose, and base64 in code,
stay as they are (a high-entropy string counts only on a line that names a secret, as `token: "..."`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from mcp_memory.redaction.detector import detector, loaded
from mcp_memory.redaction.patterns import MARKER, PASSWORD_NAME, SECRET_NAME, marker, placeholder, scrub

__all__ = [
    "REDACTED_KEY",
    "Redacted",
    "loaded",
    "marked_kinds",
    "marker",
    "redact",
    "redact_fast",
    "redact_memory",
    "redact_values",
    "stamp",
]

REDACTED_KEY = "redacted"  # in a memory's metadata: the kinds its text had removed; the server owns it


class Redacted(NamedTuple):  # not a dataclass: `dataclasses` costs a hook's start 10 ms (hooks/events.py)
    text: str
    kinds: tuple[str, ...] = ()  # what was found, sorted, each once; () when nothing was


def redact_fast(text: str) -> Redacted:
    """The text with <private> spans and the credentials this module's own patterns know removed."""
    found: set[str] = set()
    redacted = scrub(text, found)
    return Redacted(redacted, tuple(sorted(found)))


def redact(text: str) -> Redacted:
    """redact_fast, then detect-secrets over what is left, line by line."""
    found: set[str] = set()
    redacted = detector().scan(scrub(text, found), found)
    return Redacted(redacted, tuple(sorted(found)))


# ---- metadata --------------------------------------------------------------------------------------

_SECRET_KEY = re.compile(r"(?:[A-Za-z0-9]+[_-])*" + SECRET_NAME + r"[A-Za-z0-9_-]{0,24}", re.IGNORECASE)


def redact_values(values: Mapping[str, Any], redactor: Callable[[str], Redacted] = redact) -> dict[str, Any]:
    """A JSON object with its strings redacted, at any depth; a string under a secret's name
    ({"password": "..."}) is replaced whole."""
    return {key: _redact_value(key, value, redactor) for key, value in values.items()}


def _redact_value(key: str, value: Any, redactor: Callable[[str], Redacted]) -> Any:
    if isinstance(value, str):
        if value and _SECRET_KEY.fullmatch(key) and not placeholder(value):
            return marker("password" if PASSWORD_NAME.search(key) else "secret")
        return redactor(value).text
    if isinstance(value, Mapping):
        return {k: _redact_value(str(k), v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(key, v, redactor) for v in value]
    return value


def marked_kinds(texts: Iterable[str]) -> list[str]:
    """The kinds whose markers these texts hold, sorted, each once."""
    kinds = {m.group(1) or "private" for text in texts for m in MARKER.finditer(text)}
    return sorted(kinds)


def stamp(metadata: Mapping[str, Any], text: str) -> dict[str, Any]:
    """The metadata to store with a redacted text: the client's, with REDACTED_KEY set by the server to
    the kinds of the markers in the text and in the metadata's own strings (absent when none)."""
    stamped = {k: v for k, v in metadata.items() if k != REDACTED_KEY}
    kinds = marked_kinds([text, *_strings(stamped)])
    if kinds:
        stamped[REDACTED_KEY] = kinds
    return stamped


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def redact_memory(content: str, metadata: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A memory's text and metadata as they may be stored: both redacted, and the kinds stamped."""
    text = redact(content).text
    return text, stamp(redact_values(metadata), text)
