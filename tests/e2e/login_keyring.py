"""A keyring backend for the sign-in tests: what an OS keyring would hold, kept in a JSON file OUTSIDE the
data directory ($TEST_KEYRING_FILE), so a test can see what went to the keyring and that nothing else
did. A `mcp-memory` process uses it with PYTHON_KEYRING_BACKEND=tests.e2e.login_keyring.FileKeyring
(and the repository on PYTHONPATH). Not viable unless $TEST_KEYRING_FILE is set, so keyring's own choice
of backend in other tests never falls on it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.compat import properties
from keyring.errors import PasswordDeleteError

VARIABLE = "TEST_KEYRING_FILE"


class FileKeyring(KeyringBackend):
    @classmethod
    def _file(cls) -> Path:
        return Path(os.environ[VARIABLE])

    # keyring reads `priority` as a class property; raising says "not here" (see the module docstring).
    @properties.classproperty
    def priority(cls) -> float:
        if not os.environ.get(VARIABLE):
            raise RuntimeError(f"{VARIABLE} is not set")
        return 1.0

    def _entries(self) -> dict[str, str]:
        try:
            entries: dict[str, str] = json.loads(self._file().read_text())
        except FileNotFoundError:
            return {}
        return entries

    def get_password(self, service: str, username: str) -> str | None:
        return self._entries().get(f"{service}|{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        entries = self._entries()
        entries[f"{service}|{username}"] = password
        self._file().write_text(json.dumps(entries))

    def delete_password(self, service: str, username: str) -> None:
        entries = self._entries()
        if entries.pop(f"{service}|{username}", None) is None:
            raise PasswordDeleteError("no such entry")
        self._file().write_text(json.dumps(entries))
