"""The answers to a session's opening request (`initialize`, or `server/discover` on 2026-07-28), kept in
the data directory so that a relay which had to start the resident server (~5 s) answers its client at
once: the same server build and settings give the same answer for the same protocol version (the SDK
builds it from the server's options and the requested version only).

Written by relays from what the resident server answered them, under a key naming the settings
(relay/settings.py), the captured-session flag and the build (mcp-memory's version and the mtime of the
modules that make the answer: an editable install changes without a new version). A relay that answered
from here replays the opening request to the server and compares: a different answer replaces the entry,
and is logged.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from mcp_memory import __version__

FILE_NAME = "handshakes.json"
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"  # mcp_types.PROTOCOL_VERSION_META_KEY
OPENING_METHODS = frozenset({"initialize", "server/discover"})
MAX_SCOPES = 8  # settings x captured x build combinations kept


def opening_key(message: dict[str, Any]) -> str | None:
    """What the answer to this opening request depends on besides the server: method and version."""
    method, params = message.get("method"), message.get("params")
    if method not in OPENING_METHODS or not isinstance(params, dict):
        return None
    if method == "initialize":
        version = params.get("protocolVersion")
    else:
        meta = params.get("_meta")
        version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    return f"{method} {version}" if isinstance(version, str) else None


def build_id() -> str:
    """mcp-memory's version and when the modules that shape an opening answer last changed."""
    import mcp_memory

    package = Path(mcp_memory.__file__).parent
    stamps = [__version__]
    for module in (package / "__init__.py", package / "mcp" / "app.py", package / "mcp" / "server.py"):
        with contextlib.suppress(OSError):
            stamps.append(str(module.stat().st_mtime_ns))
    return "/".join(stamps)


class Handshakes:
    def __init__(self, hooks_dir: Path, scope: str) -> None:
        self.path = hooks_dir / FILE_NAME
        self.scope = scope

    def answer(self, key: str) -> dict[str, Any] | None:
        entry = self._read().get(self.scope, {}).get(key)
        return entry if isinstance(entry, dict) else None

    def record(self, key: str, result: dict[str, Any]) -> None:
        """Keep this answer (a no-op when it is kept already); best effort: a cache, never an error."""
        everything = self._read()
        answers = everything.pop(self.scope, None)
        answers = answers if isinstance(answers, dict) else {}
        if answers.get(key) == result:
            return
        answers[key] = result
        kept = dict(list(everything.items())[-(MAX_SCOPES - 1) :])
        kept[self.scope] = answers
        temporary = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as file:
                json.dump(kept, file)
            os.replace(temporary, self.path)

    def _read(self) -> dict[str, Any]:
        try:
            content = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return content if isinstance(content, dict) else {}
