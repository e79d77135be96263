"""The settings root: every group of settings (backends.py, memory.py, security.py, serving.py) under
the environment variables prefixed MCP_MEMORY_ (nested with __) and an optional .env file.

Built once in cli.main() and passed down; never constructed at import time.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mcp_memory.config.backends import EmbeddingSettings, LLMSettings, LongTermSettings, WorkingSettings
from mcp_memory.config.memory import GraphSettings, LearningSettings, SearchSettings, SummarySettings
from mcp_memory.config.security import AuditSettings, SecuritySettings
from mcp_memory.config.serving import AdmissionSettings, HooksSettings, ObservabilitySettings
from mcp_memory.models import THREAD_ID_PATTERN

# A character's longest JSON spelling, \uXXXX (outside the BMP, a pair of them: 12 bytes for one).
JSON_BYTES_PER_CHAR = 6

# The reference memory server's (@modelcontextprotocol/server-memory) one setting, the file of its graph.
# A client entry written for it and kept when only the command became `mcp-memory serve` still sets it.
REFERENCE_FILE_VARIABLE = "MEMORY_FILE_PATH"


def _default_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "default"


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


def reference_memory_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The file MEMORY_FILE_PATH names (the reference memory server's setting, not one of ours), None
    when it is unset or empty. `environ`: this process's environment unless given."""
    value = (os.environ if environ is None else environ).get(REFERENCE_FILE_VARIABLE)
    return Path(value) if value else None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MCP_MEMORY_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    user_id: str = Field(default_factory=_default_user, description="Whose memories these are (stdio).")
    data_dir: Path = Field(default_factory=_default_data_dir, description="Where the SQLite file lives.")
    in_process: bool = Field(
        default=False,
        description="`serve` over stdio serves in its own process instead of relaying the session to your "
        "resident server (docs/architecture.md); also `serve --in-process`.",
    )
    sqlite_file: str = Field(default="memory.db", description="File name inside data_dir.")
    token_encoding: Literal["o200k_base", "cl100k_base"] = Field(
        default="o200k_base", description="tiktoken encoding for token counts (shipped, offline)."
    )
    max_content_chars: int = Field(
        default=1_000_000,
        ge=1,
        description="Longest turn (or remembered fact) accepted, in characters; longer is refused whole.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level (logs go to stderr)."
    )
    prompts_dir: Path | None = Field(
        default=None, description="Your own prompt templates; default: shipped ones."
    )
    tools: Literal["core", "standard", "all"] = Field(
        default="standard",
        description="Which tools clients see (each costs tokens in every conversation): core (8 daily "
        "tools), standard (15: also revisions, export/import, extraction), all (25: also forget_user and "
        "the knowledge graph's nine). Left unset with MEMORY_FILE_PATH set (the reference memory server's "
        "setting): standard plus the knowledge graph's nine. README: Tool profiles.",
    )

    working: WorkingSettings = Field(default_factory=WorkingSettings)
    long_term: LongTermSettings = Field(default_factory=LongTermSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    summary: SummarySettings = Field(default_factory=SummarySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    admission: AdmissionSettings = Field(default_factory=AdmissionSettings)
    hooks: HooksSettings = Field(default_factory=HooksSettings)

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / self.sqlite_file

    @property
    def request_body_limit(self) -> int:
        """The HTTP body limit: security.max_request_bytes, or what a longest turn needs as JSON."""
        if self.security.max_request_bytes is not None:
            return self.security.max_request_bytes
        # \uXXXX is the longest JSON spelling of a character a client may send (some escape all
        # non-ASCII); the MiB is the rest of the request: metadata (16 KiB at most), ids, the envelope.
        return self.max_content_chars * JSON_BYTES_PER_CHAR + 1024 * 1024

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, user_id: str) -> str:
        if not THREAD_ID_PATTERN.match(user_id):
            raise ValueError(f"user_id {user_id!r} must be 1-128 characters of A-Z a-z 0-9 . _ : -")
        return user_id
