"""Settings: environment variables prefixed MCP_MEMORY_ (nested with __) and an optional .env file.

`Settings` (settings.py) is the root; each group of settings lives with its kind: backends.py (the
stores and the models), memory.py (summaries, search, learning, the graph), security.py (tokens,
spaces, quotas, the audit trail), serving.py (admission, observability, hooks). Import them from here.
"""

from mcp_memory.config.backends import (
    CosmosSettings,
    EmbeddingSettings,
    LLMSettings,
    LongTermSettings,
    WorkingSettings,
)
from mcp_memory.config.memory import GraphSettings, LearningSettings, SearchSettings, SummarySettings
from mcp_memory.config.security import (
    AuditSettings,
    SecuritySettings,
    SpaceSettings,
    TokenEntry,
    load_spaces,
    load_tokens,
)
from mcp_memory.config.serving import AdmissionSettings, HooksSettings, ObservabilitySettings
from mcp_memory.config.settings import (
    JSON_BYTES_PER_CHAR,
    REFERENCE_FILE_VARIABLE,
    Settings,
    reference_memory_file,
)

__all__ = [
    "JSON_BYTES_PER_CHAR",
    "REFERENCE_FILE_VARIABLE",
    "AdmissionSettings",
    "AuditSettings",
    "CosmosSettings",
    "EmbeddingSettings",
    "GraphSettings",
    "HooksSettings",
    "LLMSettings",
    "LearningSettings",
    "LongTermSettings",
    "ObservabilitySettings",
    "SearchSettings",
    "SecuritySettings",
    "Settings",
    "SpaceSettings",
    "SummarySettings",
    "TokenEntry",
    "WorkingSettings",
    "load_spaces",
    "load_tokens",
    "reference_memory_file",
]
