"""The settings table of docs/configuration.md, generated from the Settings model so the two never disagree.

`python -m mcp_memory.cli.settings_table` prints it; `scripts/update-docs` writes it into the page
(docs_tables.py), and tests/unit/test_docs_current.py checks the page holds exactly this.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, SecretStr

from mcp_memory.config import Settings

COMPUTED_DEFAULTS = {
    "MCP_MEMORY_USER_ID": "your OS user name",
    "MCP_MEMORY_DATA_DIR": "the platform's user data dir (Linux: `~/.local/share/mcp-memory`)",
}


def rows(model: type[BaseModel] = Settings, prefix: str = "MCP_MEMORY_") -> Iterator[tuple[str, str, str]]:
    for name, field in model.model_fields.items():
        annotation = field.annotation
        env = prefix + name.upper()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from rows(annotation, env + "__")
            continue
        yield env, _default(env, field.default, field.default_factory is not None), field.description or ""


def _default(env: str, value: Any, computed: bool) -> str:
    if env in COMPUTED_DEFAULTS:
        return COMPUTED_DEFAULTS[env]
    if computed or value is None:
        return "(unset)"
    if isinstance(value, SecretStr):
        return "(secret)"
    return f"`{value}`"


def markdown() -> str:
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    lines += [f"| `{env}` | {default} | {meaning} |" for env, default, meaning in rows()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
